#include "kernels/compression/bucket_two_level.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/compression/compressed_exchange.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

// The bucketed two-level forms, made of the same exchange step as the others
// (compressed_exchange.h); the single-tensor forms they reproduce member by member are
// in two_level_compressed_collectives.cc.

namespace oneflow {

using compressed_exchange::BalancedCounts;
using compressed_exchange::CheckResidual;
using compressed_exchange::Compensate;
using compressed_exchange::DecodeOwnShard;
using compressed_exchange::EncodeOwnShard;
using compressed_exchange::ElementsOf;
using compressed_exchange::Encoded;
using compressed_exchange::ExchangeAndReduce;
using compressed_exchange::Invalid;
using compressed_exchange::kDenseBytes;
using compressed_exchange::KeepResidual;
using compressed_exchange::Layout;
using compressed_exchange::Piece;
using compressed_exchange::Split;
using compressed_exchange::SplitOf;

namespace {

// The group: nodes x local_size, this rank's place in it.
struct GroupShape {
  int64_t nodes = 0;
  int64_t local_size = 0;
  int64_t node = 0;
  int64_t local = 0;
  int64_t rank() const { return node * local_size + local; }
  int64_t Global(int64_t node_index, int64_t local_index) const { return node_index * local_size + local_index; }
};

// One member's two-level reduce-scatter: where its chunk for each group rank lies in the
// input, its residual (null: off; the in-node part indexed like its packed input, then
// its node partial sums'), its seeds and its traffic.
struct ScatterSpec {
  std::vector<int64_t> counts;
  std::vector<int64_t> input_offsets;
  float* residual = nullptr;
  uint64_t in_node_seed = 0;
  uint64_t cross_node_seed = 0;
  TwoLevelTraffic* traffic = nullptr;
};

// Every member's two-level reduce-scatter in one in-node and one cross-node exchange, as
// TwoLevelCompressedReduceScatter runs each alone: in the node, local rank d reduces the
// members' chunks of the ranks with local index d (member after member, node by node)
// into node partial sums; across nodes, node m reduces the members' partial sums of its
// rank. `output` receives each member's part for this rank, member after member.
absl::StatusOr<TwoLevelTraffic> ScatterMembers(Communicator& in_node, Communicator& cross_node,
                                               const TwoLevelCodecs& codecs, const GroupShape& shape,
                                               const float* input, const std::vector<ScatterSpec>& specs,
                                               float* output, const CollectiveOptions& options) {
  const int64_t rank = shape.rank();
  std::vector<Split> splits;
  Layout in_layout(shape.local_size);
  for (const ScatterSpec& spec : specs) {
    splits.push_back(SplitOf(spec.counts));
    const Split& split = splits.back();
    for (int64_t d = 0; d < shape.local_size; ++d) {
      for (int64_t m = 0; m < shape.nodes; ++m) {
        const int64_t global = shape.Global(m, d);
        Piece piece{spec.input_offsets[global], spec.counts[global], split.offsets[global]};
        if (spec.residual != nullptr) piece.residual = spec.residual + split.offsets[global];
        piece.encoding_seed = MixSeed(spec.in_node_seed, rank);
        piece.traffic = spec.traffic != nullptr ? &spec.traffic->in_node : nullptr;
        in_layout[d].push_back(piece);
      }
    }
  }
  std::vector<float> partial(ElementsOf(in_layout[shape.local]));
  TwoLevelTraffic traffic;
  OF_ASSIGN_OR_RETURN(traffic.in_node, ExchangeAndReduce(in_node, codecs.in_node, MixSeed(codecs.in_node.seed, rank),
                                                         input, in_layout, partial.data(), options));
  Layout cross_layout(shape.nodes);
  int64_t position = 0;  // in `partial`: member after member, node by node
  for (size_t s = 0; s < specs.size(); ++s) {
    const ScatterSpec& spec = specs[s];
    int64_t own = 0;  // in the member's own partial sums
    for (int64_t m = 0; m < shape.nodes; ++m) {
      const int64_t global = shape.Global(m, shape.local);
      Piece piece{position, spec.counts[global], splits[s].offsets[global]};
      if (spec.residual != nullptr) piece.residual = spec.residual + splits[s].total + own;
      piece.encoding_seed = MixSeed(spec.cross_node_seed, rank);
      piece.traffic = spec.traffic != nullptr ? &spec.traffic->cross_node : nullptr;
      cross_layout[m].push_back(piece);
      position += spec.counts[global];
      own += spec.counts[global];
    }
  }
  OF_ASSIGN_OR_RETURN(traffic.cross_node,
                      ExchangeAndReduce(cross_node, codecs.cross_node, MixSeed(codecs.cross_node.seed, rank),
                                        partial.data(), cross_layout, output, options));
  return traffic;
}

// What TwoLevelCompressedAllGather's exchanges weigh for one member: `encoded` its
// encoded bytes per group rank, `counts` its floats.
TwoLevelTraffic GatherBytes(const GroupShape& shape, const std::vector<int64_t>& counts,
                            const std::vector<int64_t>& encoded) {
  const int64_t rank = shape.rank();
  int64_t block_bytes = 0, block_elements = 0, total_bytes = 0, total = 0;
  for (int64_t m = 0; m < shape.nodes; ++m) {
    block_bytes += encoded[shape.Global(m, shape.local)];
    block_elements += counts[shape.Global(m, shape.local)];
  }
  for (size_t g = 0; g < counts.size(); ++g) {
    total_bytes += encoded[g];
    total += counts[g];
  }
  TwoLevelTraffic traffic;
  traffic.cross_node.bytes_sent = (shape.nodes - 1) * encoded[rank];
  traffic.cross_node.bytes_received = block_bytes - encoded[rank];
  traffic.cross_node.dense_bytes_sent = (shape.nodes - 1) * counts[rank] * kDenseBytes;
  traffic.cross_node.dense_bytes_received = (block_elements - counts[rank]) * kDenseBytes;
  traffic.in_node.bytes_sent = (shape.local_size - 1) * block_bytes;
  traffic.in_node.bytes_received = total_bytes - block_bytes;
  traffic.in_node.dense_bytes_sent = (shape.local_size - 1) * block_elements * kDenseBytes;
  traffic.in_node.dense_bytes_received = (total - block_elements) * kDenseBytes;
  return traffic;
}

// The arguments every bucketed two-level call checks before communicating.
absl::StatusOr<GroupShape> CheckBucket(Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
                                       absl::string_view call, const CollectiveOptions& options) {
  const std::pair<const char*, const CodecOptions*> named[] = {
      {"codecs.in_node", &codecs.in_node}, {"codecs.cross_node", &codecs.cross_node}, {"codecs.gather", &codecs.gather}};
  for (const auto& [name, codec] : named) {
    absl::Status status = CheckCodecOptions(*codec);
    if (!status.ok()) return Invalid(options, call, absl::StrCat(name, ": ", status.message()));
  }
  return GroupShape{cross_node.size(), in_node.size(), cross_node.rank(), in_node.rank()};
}

}  // namespace

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedBucketReduceScatter(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs, float* data, int64_t chunk,
    absl::Span<const TwoLevelBucketMember> members, const CollectiveOptions& options) {
  constexpr absl::string_view kCall = "two-level compressed bucket reduce_scatter";
  OF_ASSIGN_OR_RETURN(const GroupShape shape, CheckBucket(in_node, cross_node, codecs, kCall, options));
  const int64_t ranks = shape.nodes * shape.local_size;
  absl::Status status = chunk < 0 ? absl::InvalidArgumentError(absl::StrCat("chunk is ", chunk, " floats"))
                                  : CheckBuffer("data", data, ranks * chunk);
  if (!status.ok()) return Invalid(options, kCall, status.message());
  std::vector<ScatterSpec> specs;
  int64_t end = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    const TwoLevelBucketMember& member = members[m];
    const std::string who = absl::StrCat("member ", m);
    if (absl::Status counts = CheckCounts(absl::StrCat(who, " counts"), member.counts, ranks); !counts.ok()) {
      return Invalid(options, kCall, counts.message());
    }
    const int64_t largest = *std::max_element(member.counts.begin(), member.counts.end());
    if (member.offset < end || member.offset + largest > chunk) {
      return Invalid(options, kCall,
                     absl::StrCat(who, " covers [", member.offset, ", ", member.offset + largest, ") of each chunk of ",
                                  chunk, " floats; members must be in order, apart and inside the chunk"));
    }
    end = member.offset + largest;
    OF_RETURN_IF_ERROR(
        CheckResidual(options, absl::StrCat(kCall, " ", who), member.residual,
                      TwoLevelReduceScatterResidualElements(member.counts, shape.local_size, shape.local)));
    ScatterSpec spec;
    spec.counts = member.counts;
    for (int64_t g = 0; g < ranks; ++g) spec.input_offsets.push_back(g * chunk + member.offset);
    spec.residual = member.residual.empty() ? nullptr : member.residual.data();
    spec.in_node_seed = member.in_node_seed;
    spec.cross_node_seed = member.cross_node_seed;
    spec.traffic = member.traffic;
    specs.push_back(std::move(spec));
  }
  std::vector<float> reduced;
  for (const TwoLevelBucketMember& member : members) reduced.resize(reduced.size() + member.counts[shape.rank()]);
  OF_ASSIGN_OR_RETURN(TwoLevelTraffic traffic,
                      ScatterMembers(in_node, cross_node, codecs, shape, data, specs, reduced.data(), options));
  int64_t position = 0;
  for (const TwoLevelBucketMember& member : members) {
    const int64_t count = member.counts[shape.rank()];
    if (count > 0) {
      std::memcpy(data + shape.rank() * chunk + member.offset, reduced.data() + position, count * sizeof(float));
    }
    position += count;
  }
  return traffic;
}

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedBucketAllReduce(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs, float* data,
    absl::Span<const TwoLevelBucketMember> members, const CollectiveOptions& options) {
  constexpr absl::string_view kCall = "two-level compressed bucket all_reduce";
  OF_ASSIGN_OR_RETURN(const GroupShape shape, CheckBucket(in_node, cross_node, codecs, kCall, options));
  const int64_t ranks = shape.nodes * shape.local_size;
  const int64_t rank = shape.rank();
  // Per member: its balanced split over the group (as its own call splits it).
  std::vector<std::vector<int64_t>> counts(members.size());
  std::vector<int64_t> scatter_elements(members.size());
  std::vector<ScatterSpec> specs;
  int64_t end = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    const TwoLevelBucketMember& member = members[m];
    if (member.offset < end || member.count < 0) {
      return Invalid(options, kCall,
                     absl::StrCat("member ", m, " covers [", member.offset, ", ", member.offset + member.count,
                                  "); members must be in order, apart, with counts >= 0"));
    }
    end = member.offset + member.count;
    OF_RETURN_IF_ERROR(
        CheckResidual(options, absl::StrCat(kCall, " member ", m), member.residual,
                      TwoLevelAllReduceResidualElements(member.count, shape.nodes, shape.local_size, shape.node,
                                                        shape.local)));
    OF_RETURN_IF_ERROR(BalancedCounts(member.count, ranks, &counts[m]));
    scatter_elements[m] = TwoLevelReduceScatterResidualElements(counts[m], shape.local_size, shape.local);
    ScatterSpec spec;
    spec.counts = counts[m];
    const Split split = SplitOf(counts[m]);
    for (int64_t g = 0; g < ranks; ++g) spec.input_offsets.push_back(member.offset + split.offsets[g]);
    spec.residual = member.residual.empty() ? nullptr : member.residual.data();
    spec.in_node_seed = member.in_node_seed;
    spec.cross_node_seed = member.cross_node_seed;
    spec.traffic = member.traffic;
    specs.push_back(std::move(spec));
  }
  if (absl::Status status = CheckBuffer("data", data, end); !status.ok()) {
    return Invalid(options, kCall, status.message());
  }
  // Reduce-scatter phase: this rank's shard of every member, member after member.
  std::vector<int64_t> shard_offsets;
  int64_t shard_total = 0;
  for (const std::vector<int64_t>& member_counts : counts) {
    shard_offsets.push_back(shard_total);
    shard_total += member_counts[rank];
  }
  std::vector<float> shards(shard_total);
  OF_ASSIGN_OR_RETURN(TwoLevelTraffic traffic,
                      ScatterMembers(in_node, cross_node, codecs, shape, data, specs, shards.data(), options));

  // Gather phase, as TwoLevelCompressedAllGather's encoded form: each shard encoded once by
  // its owner (gather codec), gathered across nodes, the encodings forwarded through the
  // node. The gathered bytes: block l (local index l) holds node by node, member by
  // member, the encodings of rank (m, l)'s shards.
  const CodecOptions& codec = codecs.gather;
  std::vector<std::vector<int64_t>> encoded(members.size(), std::vector<int64_t>(ranks));
  std::vector<int64_t> cross_bytes(shape.nodes, 0), block_bytes(shape.local_size, 0);
  for (size_t s = 0; s < members.size(); ++s) {
    for (int64_t g = 0; g < ranks; ++g) encoded[s][g] = EncodedBytes(codec, counts[s][g]);
    for (int64_t m = 0; m < shape.nodes; ++m) {
      for (int64_t l = 0; l < shape.local_size; ++l) block_bytes[l] += encoded[s][shape.Global(m, l)];
      cross_bytes[m] += encoded[s][shape.Global(m, shape.local)];
    }
    TwoLevelTraffic bytes = GatherBytes(shape, counts[s], encoded[s]);
    traffic += bytes;
    if (members[s].traffic != nullptr) *members[s].traffic += bytes;
  }
  int64_t total_bytes = 0, block_offset = 0;
  for (int64_t l = 0; l < shape.local_size; ++l) {
    if (l < shape.local) block_offset += block_bytes[l];
    total_bytes += block_bytes[l];
  }
  int64_t own_offset = block_offset;
  for (int64_t m = 0; m < shape.node; ++m) own_offset += cross_bytes[m];
  std::vector<uint8_t> gathered(total_bytes);
  std::vector<std::vector<float>> compensated(members.size());
  std::vector<const float*> encoded_from(members.size());
  std::vector<EncodingErrorSums> measured(members.size());
  int64_t position = own_offset;
  for (size_t s = 0; s < members.size(); ++s) {
    const int64_t count = counts[s][rank];
    encoded_from[s] = shards.data() + shard_offsets[s];
    if (!members[s].residual.empty()) {
      compensated[s].resize(count);
      Compensate(encoded_from[s], members[s].residual.data() + scatter_elements[s], count, compensated[s].data());
      encoded_from[s] = compensated[s].data();
    }
    CodecOptions encoding = codec;
    encoding.seed = MixSeed(members[s].gather_seed, rank);
    EncodeOwnShard(encoding, encoded_from[s], count, gathered.data() + position, SplitOf(counts[s]).offsets[rank],
                   !members[s].residual.empty(), &measured[s]);
    position += encoded[s][rank];
  }
  OF_RETURN_IF_ERROR(cross_node.AllGather(gathered.data() + own_offset, gathered.data() + block_offset, cross_bytes,
                                          Encoded(options, codec)));
  OF_RETURN_IF_ERROR(
      in_node.AllGather(gathered.data() + block_offset, gathered.data(), block_bytes, Encoded(options, codec)));
  position = 0;
  for (int64_t l = 0; l < shape.local_size; ++l) {
    for (int64_t m = 0; m < shape.nodes; ++m) {
      const int64_t global = shape.Global(m, l);
      for (size_t s = 0; s < members.size(); ++s) {
        const int64_t count = counts[s][global];
        float* destination = data + members[s].offset + SplitOf(counts[s]).offsets[global];
        const uint8_t* bytes = gathered.data() + position;
        position += encoded[s][global];
        if (global != rank) {
          Decode(codec, bytes, count, destination);
          continue;
        }
        CompressedTraffic decoded;
        DecodeOwnShard(codec, bytes, encoded_from[s], count, destination,
                       members[s].residual.empty() ? &measured[s] : nullptr, &decoded);
        traffic.in_node += decoded;
        if (members[s].traffic != nullptr) members[s].traffic->in_node += decoded;
        if (!members[s].residual.empty()) {
          KeepResidual(encoded_from[s], destination, count, members[s].residual.data() + scatter_elements[s]);
        }
      }
    }
  }
  return traffic;
}

}  // namespace oneflow
