#include "compiler/auto_parallel/peak_bytes.h"

#include <algorithm>

namespace oneflow::auto_parallel {

double DevicePeakBytes(const proto::AutoParallelLayout& layout, const PeakTerms& terms) {
  const double dp = static_cast<double>(layout.dp());
  const double whole = terms.parameter_bytes;
  const double shard = whole / dp;
  const double parameters = layout.zero() >= 3 ? shard + terms.largest_gathered_bytes : whole;
  const double gradients = layout.zero() >= 2 ? shard : whole;
  const double state = (layout.zero() >= 1 ? shard : whole) * static_cast<double>(terms.optimizer_state_copies);
  const double slots = static_cast<double>(std::max<int64_t>(1, terms.register_count));
  const double activations =
      (terms.kept_bytes * static_cast<double>(terms.in_flight) + terms.largest_recomputed_bytes) * slots;
  double per_iteration = 0;
  if (layout.micro_batches() > 1) {
    per_iteration += whole;  // the accumulated gradients
    if (layout.zero() >= 2 && layout.dp() > 1) per_iteration += whole;  // a reduce-scatter bucket's copy
    if (layout.zero() >= 1) {
      per_iteration += whole + shard * (1 + static_cast<double>(terms.optimizer_state_copies));
    }
  }
  return parameters + gradients + state + activations + per_iteration;
}

}  // namespace oneflow::auto_parallel
