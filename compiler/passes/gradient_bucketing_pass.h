#ifndef COMPILER_PASSES_GRADIENT_BUCKETING_PASS_H_
#define COMPILER_PASSES_GRADIENT_BUCKETING_PASS_H_

#include <cstdint>
#include <vector>

#include "compiler/pass.h"

namespace oneflow {

// Packs the gradient reductions of each communicator group into buckets of at most
// CompileOptions::bucket_mb MiB (PyTorch DDP's gradient buckets), so that a data-parallel
// step issues a few large all-reduces instead of one small one per variable, and the
// first bucket's collective runs while backward still computes the gradients of the next.
//
// Candidates: step 0 of a boxing of a gradient (a variable's gradient, f32), or of the
// loss into the loss sink (its reduction waits for backward anyway, so it joins a bucket
// rather than issue a collective of its own), that is a P -> B all_reduce or
// P -> S reduce_scatter (ZeRO-2's gradients, the in-node first step of a 2-D chain),
// dense or compressed (one level or two-level), and not row-sparse; then, level by level,
// step s of a chain whose steps before it were all reductions. A compressed reduction
// shares a bucket only with steps of the same kind and codecs (both levels', and the
// error-feedback marking): the bucket's collective encodes each member's chunks by
// themselves (CompressedBucketAllReduce, CompressedBucketReduceScatter, their two-level
// forms), so no codec group spans two members and every member gets the bits of its own
// step. Candidates with
// the same placement, hierarchy axis (the same communicator groups), kind and wire
// format form a group; each group is walked in the order backward produces the
// gradients (their producing op's position, ties by boxing id) and cut greedily into
// buckets: a candidate joins the open bucket unless that would take the bucket past the
// limit (for the group's first bucket: min(limit, kFirstBucketBytes)) on some device
// (members 64-byte aligned, as actor_graph packs them), or it is produced no earlier
// than a member of the bucket is first needed (the bucket runs between its last member's
// producer and its first member's consumer), or its tensor is already in the bucket, or
// (a later level) it is ready after the bucket's members and the bucket is at least half
// full: its members, ready when their bucket of the level before ran, do not wait for a
// later one (gpt_dp3tp2 at 1 Gbit/s: ten block gradients waited for the layer norms'
// in-node bucket at the end of backward). A
// bucket of one member is no bucket: that step runs on its own, but early, right after
// its input exists (kAloneEarly, IsEarlyStep), so its collective keeps its place in
// backward order instead of waiting for the step's consumer (e.g. the first weight
// gradient of a node-crossing group, larger than the 1 MiB first bucket, ran after every
// bucket and held up its update). Every step runs on its own, where its consumer needs
// it, when bucket_mb is 0 (the plans before buckets).
//
// A reduce_scatter bucket's register is rank-major: one chunk per rank of the group, each
// laid out alike with every member's part for that rank (its destination slice there) at
// a 64-byte aligned offset that reserves the member's largest part on any rank (an uneven
// split's first ranks hold one row more); the chunk ends aligned. One in-place
// reduce-scatter of the register leaves each rank's chunk reduced, and a member's view is
// its part in this device's chunk (GradientBucket::chunk_bytes, part_offsets). The limit
// applies to the whole register (group size x chunk).
//
// Fills Compilation::buckets (ids in the order lowering emits them: by `after_op`, the
// producer of their last member) and boxing_step_bucket. Lowering then emits one bucket
// node in place of the members' step nodes; actor_graph makes it one actor with one
// register and a view of it per member; collective_ordering gives it one collective per
// group at its place in the program; the plan lists it in Plan.buckets.
class GradientBucketingPass : public CompilerPass {
 public:
  absl::string_view name() const override { return "gradient_bucketing"; }
  absl::StatusOr<bool> Run(Compilation* compilation) override;
  StateParts Reads() const override { return {StatePart::kJob, StatePart::kGraph, StatePart::kBoxings}; }
  StateParts Writes() const override { return {StatePart::kBuckets}; }
};

// The first bucket of each group holds at most this much (DDP's first_bucket_bytes,
// 1 MiB), or the limit when that is smaller: it closes after the first gradients backward
// produces, so its collective starts while most of backward is still to run.
inline constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
int64_t FirstBucketBytesLimit(int64_t limit);

// Compilation::boxing_step_bucket of a reduction that would have joined a bucket but stood
// alone in it: it runs on its own, early (IsEarlyStep). Not a bucket id: BucketOf < 0.
inline constexpr int64_t kAloneEarly = -2;

// The last step of `boxing` that runs in a gradient bucket, or -1 (none does).
int64_t LastBucketedStep(const Compilation& compilation, int64_t boxing);

// A step that lowering emits early: it runs on its own (in no bucket) before a step of
// its boxing that runs in a bucket (e.g. the in-node reduce-scatter of a gradient whose
// cross-node all-reduce is bucketed), or it is a reduction left alone in its bucket
// (kAloneEarly). It runs right after its input exists: step 0 right
// after the tensor's producer, a later one right after its previous step (or the bucket
// that ran it), so the bucket after it finds its input there. Lowering and
// collective_ordering both place it so; every other step of the boxing keeps its place.
bool IsEarlyStep(const Compilation& compilation, int64_t boxing, int64_t step);

// Per op + 1 (index 0: before every op), the boxings, by id, whose step 0 is early and
// so runs right after that op.
std::vector<std::vector<int64_t>> EarlyBoxingsAfterOps(const Compilation& compilation);

// The end of the run of early steps of `boxing` that starts at step `from` (== from
// when step `from` is not early).
int64_t EarlyStepsEnd(const Compilation& compilation, int64_t boxing, int64_t from);

// Bytes of `bucket_mb` MiB, rounded to the nearest byte (0 for 0).
int64_t BucketBytesLimit(double bucket_mb);

// Where the next member starts in the bucket register when the previous one ended at
// byte `end`: members start at 64-byte aligned offsets (kernels may use aligned loads).
inline int64_t BucketMemberOffset(int64_t end) { return (end + 63) / 64 * 64; }

}  // namespace oneflow

#endif  // COMPILER_PASSES_GRADIENT_BUCKETING_PASS_H_
