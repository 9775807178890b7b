#include "compiler/passes/bucket_cap.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "plan/plan_format.h"
#include "sbp/collective_cost.h"

namespace oneflow {
namespace {

// The bucket's collective as the runtime runs it, for a register of `bytes`: an
// all-reduce sends 2(n-1)/n of it to the busiest device ((n-1) x it in one round when
// small), a reduce-scatter (n-1)/n.
CollectiveCost PriceBucket(const LinkModel& links, const Placement& placement, int64_t axis, BoxingKind kind,
                           int64_t bytes) {
  const int64_t members = placement.hierarchy().dim(axis);
  int64_t wire = 0;
  if (kind == BoxingKind::kAllReduce) {
    wire = bytes <= kFlatOneRoundAllReduceBytes ? (members - 1) * bytes : 2 * (members - 1) * bytes / members;
  } else {
    wire = (members - 1) * bytes / members;
  }
  return PriceDenseCollective(links, placement, axis, kind, bytes, wire);
}

}  // namespace

BucketCap BucketCapFor(const LinkModel& links, const Placement& placement, int64_t axis, BoxingKind kind,
                       int64_t limit, bool given, BucketGroupBytes group) {
  if (given) return {limit, "--bucket_mb (given)"};
  if (!AxisCrossesNodes(placement, axis)) return {limit, "--bucket_mb (default; the group is inside one node)"};
  // The time one bucket may take: 40 ms, or, where the limit crosses within that (a fast
  // link), less where that is more than an eighth of the whole group's (bucket_cap.h).
  double target = kNodeCrossingBucketSeconds;
  std::string why_target;
  const CollectiveCost limit_price = PriceBucket(links, placement, axis, kind, limit);
  const CollectiveCost whole =
      group.total > 0 ? PriceBucket(links, placement, axis, kind, group.total) : CollectiveCost{};
  // Reduce-scatters: also on a slow link, where the group takes longer than one bucket may.
  const bool eighth = limit_price.seconds() <= kNodeCrossingBucketSeconds ||
                      (kind == BoxingKind::kReduceScatter && whole.seconds() > kNodeCrossingBucketSeconds);
  if (group.total > 0 && eighth) {
    const double share = whole.seconds() / kNodeCrossingBucketsPerGroup;
    if (share < target) {
      target = std::max(share, kNodeCrossingBucketMinSeconds);
      why_target = absl::StrCat(" (the group's ", FormatBytes(group.total), " are priced ",
                                FormatMilliseconds(whole.seconds()), ": at most 1/", kNodeCrossingBucketsPerGroup,
                                " of that per bucket, not below ", FormatMilliseconds(kNodeCrossingBucketMinSeconds),
                                ")");
    }
  }
  const CollectiveCost& at_limit = limit_price;
  if (at_limit.seconds() <= target) {
    return {limit, absl::StrCat("--bucket_mb (default): a bucket of that size crosses nodes in ",
                                FormatMilliseconds(at_limit.seconds()), " <= ", FormatMilliseconds(target),
                                why_target, " (", at_limit.text, ")")};
  }
  // The largest 64-byte multiple the cost model prices within the target (the price grows
  // with the bytes), at least the first bucket's size. A member larger than that is a
  // bucket of one, which runs on its own as early as a bucket would (kAloneEarly).
  const int64_t floor_bytes = FirstBucketBytesLimit(limit);
  int64_t low = floor_bytes / 64;  // Fits (or is the floor).
  int64_t high = limit / 64;       // Does not fit.
  while (high - low > 1) {
    const int64_t middle = low + (high - low) / 2;
    if (PriceBucket(links, placement, axis, kind, middle * 64).seconds() <= target) {
      low = middle;
    } else {
      high = middle;
    }
  }
  const int64_t bytes = std::max(floor_bytes, low * 64);
  const CollectiveCost at_cap = PriceBucket(links, placement, axis, kind, bytes);
  const bool at_floor = bytes == floor_bytes && at_cap.seconds() > target;
  return {bytes, absl::StrCat("link rate: the group crosses nodes at ", FormatBandwidth(links.inter_node_bandwidth),
                              ", ", FormatMilliseconds(links.inter_node_latency), " per round; ", FormatBytes(bytes),
                              " is priced ", FormatMilliseconds(at_cap.seconds()), " (", at_cap.text, "), the most within ",
                              FormatMilliseconds(target), why_target,
                              at_floor ? " but not below the first bucket's size" : "",
                              "; --bucket_mb gives ", FormatBytes(limit))};
}

double DenseBucketSeconds(const LinkModel& links, const Placement& placement, int64_t axis, bool reduce_scatter,
                          int64_t size_bytes) {
  const int64_t members = std::max<int64_t>(1, placement.hierarchy().dim(axis));
  const int64_t chunk = (size_bytes + members - 1) / members;
  return PriceDenseCollective(links, placement, axis,
                              reduce_scatter ? BoxingKind::kReduceScatter : BoxingKind::kAllReduce, size_bytes,
                              (reduce_scatter ? 1 : 2) * (members - 1) * chunk)
      .seconds();
}

}  // namespace oneflow
