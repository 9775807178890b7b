#include "compiler/auto_parallel/peak_bytes.h"

#include <algorithm>
#include <cmath>

namespace oneflow::auto_parallel {

double BackwardHeldBytes(const std::vector<HeldUnit>& units, double bucket_bytes) {
  double kept = 0;  // of the units not yet run backward
  for (const HeldUnit& unit : units) kept += unit.kept_bytes;
  double made = 0;  // gradients made so far
  double gradients = 0;
  for (const HeldUnit& unit : units) gradients += unit.gradient_bytes;
  double most = kept;  // before backward starts: every activation, no gradient
  for (auto unit = units.rbegin(); unit != units.rend(); ++unit) {
    made += unit->gradient_bytes;
    // The buckets started by now, whole (the last one no larger than what is left).
    const double held = bucket_bytes > 0 && made > 0
                            ? std::min(gradients, std::ceil(made / bucket_bytes) * bucket_bytes)
                            : made;
    most = std::max(most, kept + held);  // while the unit runs: its activations are read
    kept -= unit->kept_bytes;
  }
  return most;
}

int64_t ArenaCopies(const proto::AutoParallelLayout& layout, int64_t stage, int64_t register_count) {
  if (layout.pp() > 1 && layout.micro_batches() > 1) return std::max<int64_t>(1, layout.pp() - stage);
  return std::max<int64_t>(1, register_count);
}

double DevicePeakBytes(const proto::AutoParallelLayout& layout, const PeakTerms& terms) {
  const double dp = static_cast<double>(layout.dp());
  const double whole = terms.parameter_bytes;
  const double shard = whole / dp;
  const double gradients = terms.gradient_bytes;
  const bool one_micro_batch = layout.micro_batches() == 1;
  const bool sharded = layout.zero() >= 1 && layout.dp() > 1;
  const double parameters = layout.zero() >= 3 ? shard : whole;
  const double state = (layout.zero() >= 1 ? shard : whole) * static_cast<double>(terms.optimizer_state_copies);
  double slot = (terms.backward_held_bytes >= 0 ? terms.backward_held_bytes : terms.kept_bytes + gradients) +
                terms.largest_recomputed_bytes;
  if (one_micro_batch) {
    // ZeRO-3's gathers for the unit running, or every unit's when forward's gathered
    // copies are kept for backward (with micro-batches the gathered parameters are a
    // per-iteration value below), and tp's gathered weights.
    if (layout.zero() >= 3) slot += layout.zero3_kept() ? whole : terms.largest_gathered_bytes;
    slot += terms.gathered_bytes;
  }
  if (one_micro_batch && sharded) {
    // The end of the iteration, after backward. ZeRO-1: the reduced gradients in their
    // all-reduce bucket, which the shard's updates read, and the whole parameters gathered
    // from the updated shards. ZeRO 2 and 3: the reduce-scatter, whose gradients are no
    // bucket views (the act packs each rank's part) beside the bucket they are packed
    // into, and with ZeRO-2 the shard it reduces to.
    const double end = layout.zero() == 1   ? gradients + whole
                       : layout.zero() == 2 ? 2 * gradients + shard
                                            : 2 * gradients;
    slot = std::max(slot, end);
  }
  const double copies = static_cast<double>(ArenaCopies(layout, terms.stage, terms.register_count));
  double per_iteration = 0;
  if (!one_micro_batch) {
    per_iteration += gradients + terms.gathered_bytes;  // the accumulated gradients, tp's gathers
    // tp's reduce-scatter bucket of the gathered weights' gradients copies them.
    per_iteration += std::max(0.0, gradients - whole);
    if (layout.zero() >= 2 && layout.dp() > 1) per_iteration += gradients;  // a reduce-scatter bucket's copy
    if (layout.zero() >= 1) {
      per_iteration += whole + shard * (1 + static_cast<double>(terms.optimizer_state_copies));
    }
  }
  return parameters + state + copies * (slot + terms.received_bytes) + per_iteration;
}

}  // namespace oneflow::auto_parallel
