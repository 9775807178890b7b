// How the cost model counts the gradient buckets of a group of reductions, as
// compiler/passes/gradient_bucketing packs them (ZeRO 0 and 1: all-reduces, 2 and 3:
// reduce-scatters, one collective per bucket either way): the first bucket holds at most
// FirstBucketBytesLimit (DDP's 1 MiB, so backward overlaps its collective early), each
// later one the --bucket_mb limit; without a limit every variable is its own call.
// (Members are whole variables, so real buckets close a little earlier.)
#ifndef COMPILER_AUTO_PARALLEL_GRADIENT_BUCKETS_H_
#define COMPILER_AUTO_PARALLEL_GRADIENT_BUCKETS_H_

#include <cstdint>

namespace oneflow::auto_parallel {

struct PricedGradientBuckets {
  int64_t count = 1;
  double last_bytes = 0;
};

// The buckets of `bytes` of gradients of `tensors` variables (one device's for the
// data-parallel sync, a tp group's for its reductions) under --bucket_mb=`bucket_mb`.
PricedGradientBuckets PricedGradientBucketsOf(double bytes, int64_t tensors, double bucket_mb);

// The share of such a group in its last bucket, which starts only when backward has
// produced it; 1 when it is one bucket or every variable runs its own call where its
// update needs it (bucket_mb 0).
double LastBucketShare(double bytes, int64_t tensors, double bucket_mb);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_GRADIENT_BUCKETS_H_
