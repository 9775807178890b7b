#include "compiler/auto_parallel/gradient_buckets.h"

#include <algorithm>
#include <cmath>

#include "compiler/passes/gradient_bucketing_pass.h"

namespace oneflow::auto_parallel {

PricedGradientBuckets PricedGradientBucketsOf(double bytes, int64_t tensors, double bucket_mb) {
  PricedGradientBuckets buckets;
  const double limit = static_cast<double>(BucketBytesLimit(bucket_mb));
  if (limit <= 0) {
    buckets.count = std::max<int64_t>(1, tensors);
    buckets.last_bytes = bytes / static_cast<double>(buckets.count);
    return buckets;
  }
  const double first = static_cast<double>(FirstBucketBytesLimit(static_cast<int64_t>(limit)));
  if (bytes <= first) {
    buckets.last_bytes = bytes;
    return buckets;
  }
  const int64_t later = static_cast<int64_t>(std::ceil((bytes - first) / limit));
  buckets.count = 1 + later;
  buckets.last_bytes = bytes - first - static_cast<double>(later - 1) * limit;
  return buckets;
}

double LastBucketShare(double bytes, int64_t tensors, double bucket_mb) {
  const PricedGradientBuckets buckets = PricedGradientBucketsOf(bytes, tensors, bucket_mb);
  return bytes <= 0 || buckets.count <= 1 || bucket_mb <= 0 ? 1.0 : buckets.last_bytes / bytes;
}

}  // namespace oneflow::auto_parallel
