// The compressed reduce-scatter of a gradient bucket (ZeRO-2's gradients, the in-node
// first step of a 2-D chain; docs/gradient_buckets.md, "Compressed buckets"): the
// counterpart of CompressedBucketAllReduce (compressed_collectives.h) for the rank-major
// register of a reduce-scatter bucket.
//
// The register holds one chunk per rank of the group, `chunk` floats each, laid out
// alike: member m's part for rank g (counts[g] floats, its own step's chunk g) at
// g * chunk + offset. Every member is reduced exactly as CompressedReduceScatter reduces
// it alone, given its parts back to back in rank order: each part this rank sends is
// encoded by itself (its own codec groups and scales), with the member's logical element
// indices (the part's place in the member's own packed input), the member's seed mixed
// with this rank (MixSeed) and, with error feedback, the member's residual (its own
// call's: ReduceScatterResidualElements(counts) floats, indexed like that packed input);
// the sums run in rank order. So each member's reduced part holds the bits of its own
// call, its residual likewise, and the encoded bytes are the members' summed; what
// changes is that all members travel in one AllToAll: 1 communicator call per bucket
// instead of 1 per member.
#ifndef KERNELS_COMPRESSION_BUCKET_REDUCE_SCATTER_H_
#define KERNELS_COMPRESSION_BUCKET_REDUCE_SCATTER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/comm/communicator.h"

namespace oneflow {

// One tensor of a reduce-scatter bucket.
struct CompressedScatterBucketMember {
  // Where its part lies in every chunk (floats from the chunk's start).
  int64_t offset = 0;
  // Its part for each rank of the group, in rank order (its own step's counts).
  std::vector<int64_t> counts;
  // The seed its own call's codec would round with (CodecOptions::seed).
  uint64_t seed = 0;
  // Its own call's error-feedback residual, or empty: off.
  absl::Span<float> residual;
  // When set, the member's own traffic (what its own call would return) is added here.
  CompressedTraffic* traffic = nullptr;
};

// Reduces every member in place: `data` holds size() chunks of `chunk` floats; on return
// this rank's chunk holds, at each member's offset, the member's part for this rank
// reduced over the ranks. Floats of this rank's chunk outside the members' parts (the
// padding) and the other ranks' chunks are not written. Members are in increasing offset
// order and their parts do not overlap (each reserves its largest count); INVALID_ARGUMENT
// naming the member otherwise, or for counts that are not one per rank, a part past the
// chunk, or a residual of the wrong size. The traffic is the members' summed.
absl::StatusOr<CompressedTraffic> CompressedBucketReduceScatter(
    Communicator& communicator, const CodecOptions& codec, float* data, int64_t chunk,
    absl::Span<const CompressedScatterBucketMember> members, const CollectiveOptions& options);

}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_BUCKET_REDUCE_SCATTER_H_
