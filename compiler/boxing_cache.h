// Memoized sbp/PlanBoxing for the compiler. The SBP choice pass prices many candidate
// signatures of many ops, and transformer layers repeat the same (shape, SBP pair,
// compression options) questions, so planning each distinct conversion once keeps
// compilation linear in the number of ops.
#ifndef COMPILER_BOXING_CACHE_H_
#define COMPILER_BOXING_CACHE_H_

#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "sbp/boxing.h"

namespace oneflow {

class BoxingCache {
 public:
  // `placements` is the logical graph's placement table; indices refer to it.
  BoxingCache(const std::vector<Placement>* placements, LinkModel links)
      : placements_(placements), links_(links) {}

  // PlanBoxing(logical, dtype, src, placements[src_placement], dst, placements[dst_placement],
  // links, options), computed once per distinct question. The reference stays valid
  // while the cache lives. Precondition: every `options` given to one cache carries the
  // same codec throughput table (one compilation's), which the key leaves out.
  const absl::StatusOr<BoxingPlan>& Plan(const Shape& logical, DType dtype, const NdSbp& src,
                                         int64_t src_placement, const NdSbp& dst,
                                         int64_t dst_placement, const BoxingOptions& options);

 private:
  const std::vector<Placement>* placements_;
  LinkModel links_;
  absl::node_hash_map<std::string, absl::StatusOr<BoxingPlan>> plans_;
  // Shared by the questions with the same source: one search answers all their targets.
  BoxingSearchCache searches_;
};

}  // namespace oneflow

#endif  // COMPILER_BOXING_CACHE_H_
