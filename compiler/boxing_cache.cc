#include "compiler/boxing_cache.h"

#include "absl/strings/str_cat.h"

namespace oneflow {

const absl::StatusOr<BoxingPlan>& BoxingCache::Plan(const Shape& logical, DType dtype,
                                                    const NdSbp& src, int64_t src_placement,
                                                    const NdSbp& dst, int64_t dst_placement,
                                                    const BoxingOptions& options) {
  std::string key = absl::StrCat(logical.ToString(), DTypeName(dtype), src.ToString(), ">",
                                 dst.ToString(), "@", src_placement, ">", dst_placement, "|",
                                 BoxingOptionsKey(options));
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  return plans_
      .emplace(std::move(key),
               PlanBoxing(logical, dtype, src, (*placements_)[src_placement], dst,
                          (*placements_)[dst_placement], links_, options, &searches_))
      .first->second;
}

}  // namespace oneflow
