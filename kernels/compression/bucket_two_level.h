// The two-level compressed reductions of a gradient bucket (docs/gradient_buckets.md,
// "Compressed buckets"): the bucketed forms of TwoLevelCompressedAllReduce and
// TwoLevelCompressedReduceScatter (compressed_collectives.h), for a group of `nodes`
// nodes x `local_size` devices given as its in-node and cross-node communicators.
//
// Every member is reduced exactly as its own two-level call reduces it: the in-node
// exchange encodes each piece (the member's chunks for the ranks of one local index) by
// itself with the in-node codec, the member's in-node seed mixed with the rank, its
// logical indices and its residual; the node partial sums are encoded per member with the
// cross-node codec and the member's cross-node seed; an all-reduce's gathered shards per
// member with the gather codec and the member's gather seed. Sums run in local order, then
// node order, as alone. So each member's output and residual have the bits of its own
// call and the encoded bytes are the members' summed; what changes is that all members
// travel in one in-node and one cross-node call per phase: 2 calls per bucket for a
// reduce-scatter (4 for an all-reduce) instead of 2 (4) per member.
#ifndef KERNELS_COMPRESSION_BUCKET_TWO_LEVEL_H_
#define KERNELS_COMPRESSION_BUCKET_TWO_LEVEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/comm/communicator.h"

namespace oneflow {

// One tensor of a two-level bucket. The codecs' seeds are each member's own: what its own
// call's TwoLevelCodecs would carry (in_node.seed, cross_node.seed, gather.seed).
struct TwoLevelBucketMember {
  // All-reduce: `count` floats at `offset` of the register. Reduce-scatter: its part for
  // group rank g (counts[g] floats; group rank = node * local_size + local) at
  // g * chunk + offset.
  int64_t offset = 0;
  int64_t count = 0;
  std::vector<int64_t> counts;
  uint64_t in_node_seed = 0;
  uint64_t cross_node_seed = 0;
  uint64_t gather_seed = 0;
  // Its own call's residual (TwoLevelAllReduceResidualElements or
  // TwoLevelReduceScatterResidualElements floats), or empty: off.
  absl::Span<float> residual;
  // When set, the member's own traffic (what its own call would return) is added here.
  TwoLevelTraffic* traffic = nullptr;
};

// In place, like CompressedBucketAllReduce: members in increasing offset order, apart;
// floats between them are not touched.
absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedBucketAllReduce(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs, float* data,
    absl::Span<const TwoLevelBucketMember> members, const CollectiveOptions& options);

// In place over nodes * local_size chunks of `chunk` floats, like
// CompressedBucketReduceScatter: this rank's chunk receives each member's reduced part at
// its offset; nothing else is written.
absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedBucketReduceScatter(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs, float* data, int64_t chunk,
    absl::Span<const TwoLevelBucketMember> members, const CollectiveOptions& options);

}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_BUCKET_TWO_LEVEL_H_
