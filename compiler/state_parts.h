// The parts of the Compilation state a pass reads and writes (CompilerPass::Reads and
// Writes). The pipeline makes the declarations the truth rather than documentation:
//   - before running, every part a pass reads must be written by an earlier pass (or be
//     provided by whoever runs the pipeline: the job always is);
//   - while a pass runs, the parts it neither reads nor writes are moved out of the
//     Compilation, so the pass sees them empty and cannot depend on them by accident;
//     writing into one of them is a compiler bug reported with the pass's name;
//   - with CompileOptions::check_read_parts (builds with assertions), a part a pass only
//     reads is fingerprinted before and after, and a change is a compiler bug as well.
// The compile options, the link model and the cluster and default placements are the
// configuration every pass sees; they are not parts.
#ifndef COMPILER_STATE_PARTS_H_
#define COMPILER_STATE_PARTS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/strings/string_view.h"
#include "compiler/compilation.h"

namespace oneflow {

enum class StatePart : int {
  kJob,                   // Compilation::job
  kGraph,                 // graph (the indexed logical graph, SBPs, input boxings)
  kGradients,             // gradients (variable -> gradient names)
  kBoxingCache,           // boxing_cache
  kBoxings,               // boxings
  kBuckets,               // buckets and boxing_step_bucket
  kDevices,               // devices (per-device physical programs)
  kBoxingStepActors,      // boxing_step_actors
  kDeviceRegisterCount,   // device_register_count
  kPipelineSchedule,      // pipeline_schedule
  kBoxingStepCollective,  // boxing_step_collective
  kBucketCollective,      // bucket_collective
  kPlan,                  // plan and verified_plan_checks
};
inline constexpr int kStatePartCount = static_cast<int>(StatePart::kPlan) + 1;

// The part's name as it appears in errors and docs: "job", "graph", "boxing_step_actors"...
absl::string_view StatePartName(StatePart part);

// A set of parts.
class StateParts {
 public:
  constexpr StateParts() = default;
  StateParts(std::initializer_list<StatePart> parts) {
    for (StatePart part : parts) bits_ |= Bit(part);
  }
  static StateParts All() {
    StateParts all;
    all.bits_ = (uint32_t{1} << kStatePartCount) - 1;
    return all;
  }

  bool Contains(StatePart part) const { return (bits_ & Bit(part)) != 0; }
  bool empty() const { return bits_ == 0; }
  StateParts operator|(StateParts other) const { return FromBits(bits_ | other.bits_); }
  StateParts operator-(StateParts other) const { return FromBits(bits_ & ~other.bits_); }
  StateParts& operator|=(StateParts other) {
    bits_ |= other.bits_;
    return *this;
  }
  bool operator==(StateParts other) const { return bits_ == other.bits_; }

  // "graph, boxings" (declaration order); "none" when empty.
  std::string ToString() const;

 private:
  static constexpr uint32_t Bit(StatePart part) { return uint32_t{1} << static_cast<int>(part); }
  static StateParts FromBits(uint32_t bits) {
    StateParts parts;
    parts.bits_ = bits;
    return parts;
  }
  uint32_t bits_ = 0;
};

// True when `part` of `compilation` holds nothing (as in a fresh Compilation).
bool PartIsEmpty(const Compilation& compilation, StatePart part);

// A hash of everything `part` holds: equal contents give equal fingerprints, and a
// change of any field changes it with overwhelming probability.
uint64_t PartFingerprint(const Compilation& compilation, StatePart part);

// Holds parts moved out of a Compilation while one pass runs (moves keep every pointer
// into them valid: LogicalOp::def points into the job). One Take, one Restore: whatever
// a misbehaving pass wrote into an emptied part goes back into the stash on Restore and
// is dropped with it.
class StashedParts {
 public:
  // Moves `parts` out of `compilation`, leaving them empty there.
  void Take(Compilation* compilation, StateParts parts);
  // The first stashed part that `compilation` no longer holds empty (the running pass
  // wrote into it), if any.
  bool WrittenWhileStashed(const Compilation& compilation, StatePart* part) const;
  // Moves the stashed parts back into `compilation`.
  void Restore(Compilation* compilation);

 private:
  StateParts parts_;
  Compilation held_;
};

}  // namespace oneflow

#endif  // COMPILER_STATE_PARTS_H_
