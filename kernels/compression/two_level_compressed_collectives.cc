// The two-level forms of the compressed collectives (compressed_collectives.h: in-node
// 8-bit, cross-node 4-bit), made of the same exchange step as the flat forms
// (compressed_exchange.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/compression/compressed_collectives.h"
#include "kernels/compression/compressed_exchange.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

namespace oneflow {

using compressed_exchange::Encoded;
using compressed_exchange::kDenseBytes;
using compressed_exchange::Piece;
using compressed_exchange::Layout;
using compressed_exchange::Invalid;
using compressed_exchange::CheckArguments;
using compressed_exchange::ElementsOf;
using compressed_exchange::Compensate;
using compressed_exchange::KeepResidual;
using compressed_exchange::ExchangeAndReduce;
using compressed_exchange::DecodeOwnShard;
using compressed_exchange::EncodeOwnShard;
using compressed_exchange::Split;
using compressed_exchange::SplitOf;
using compressed_exchange::BalancedCounts;
using compressed_exchange::CheckResidual;
using compressed_exchange::ResidualPart;

namespace {

absl::StatusOr<TwoLevelTraffic> TwoLevelGatherEncoded(Communicator& in_node, Communicator& cross_node,
                                                      const TwoLevelCodecs& codecs, const float* input,
                                                      float* output, absl::Span<const int64_t> counts,
                                                      const CollectiveOptions& options, float* residual);

}  // namespace

TwoLevelTraffic& TwoLevelTraffic::operator+=(const TwoLevelTraffic& other) {
  in_node += other.in_node;
  cross_node += other.cross_node;
  return *this;
}

int64_t TwoLevelReduceScatterResidualElements(absl::Span<const int64_t> counts, int64_t local_size,
                                              int64_t local) {
  int64_t partial = 0;
  for (size_t g = static_cast<size_t>(local); local_size > 0 && g < counts.size(); g += local_size) {
    partial += counts[g];
  }
  return SumOf(counts) + partial;
}

int64_t TwoLevelAllReduceResidualElements(int64_t count, int64_t nodes, int64_t local_size, int64_t node,
                                          int64_t local) {
  std::vector<int64_t> counts;
  if (!BalancedCounts(count, nodes * local_size, &counts).ok() || node < 0 || node >= nodes || local < 0 ||
      local >= local_size) {
    return 0;
  }
  return TwoLevelReduceScatterResidualElements(counts, local_size, local) + counts[node * local_size + local];
}

namespace {

// The two groups' shape, checked against the counts.
struct TwoLevelShape {
  int64_t nodes = 0;
  int64_t local_size = 0;
  int64_t node = 0;
  int64_t local = 0;
  int64_t rank() const { return node * local_size + local; }
  int64_t Global(int64_t node_index, int64_t local_index) const {
    return node_index * local_size + local_index;
  }
};

TwoLevelShape ShapeOf(const Communicator& in_node, const Communicator& cross_node) {
  return TwoLevelShape{cross_node.size(), in_node.size(), cross_node.rank(), in_node.rank()};
}

absl::Status CheckTwoLevel(const CollectiveOptions& options, absl::string_view call,
                           const TwoLevelCodecs& codecs, const TwoLevelShape& shape,
                           absl::Span<const int64_t> counts) {
  const std::pair<const char*, const CodecOptions*> named_codecs[] = {
      {"codecs.in_node", &codecs.in_node},
      {"codecs.cross_node", &codecs.cross_node},
      {"codecs.gather", &codecs.gather}};
  for (const auto& [name, codec] : named_codecs) {
    absl::Status status = CheckCodecOptions(*codec);
    if (!status.ok()) return Invalid(options, call, absl::StrCat(name, ": ", status.message()));
  }
  if (static_cast<int64_t>(counts.size()) != shape.nodes * shape.local_size) {
    return Invalid(options, call,
                   absl::StrCat("counts has ", counts.size(), " entries; the in-node group (",
                                shape.local_size, " ranks) times the cross-node group (",
                                shape.nodes, " ranks) is ", shape.nodes * shape.local_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedReduceScatter(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
    const float* input, float* output, absl::Span<const int64_t> counts,
    const CollectiveOptions& options, absl::Span<float> residual) {
  constexpr absl::string_view kCall = "two-level compressed reduce_scatter";
  const TwoLevelShape shape = ShapeOf(in_node, cross_node);
  OF_RETURN_IF_ERROR(CheckTwoLevel(options, kCall, codecs, shape, counts));
  const Split split = SplitOf(counts);
  const int64_t rank = shape.rank();
  OF_RETURN_IF_ERROR(CheckArguments(options, kCall, codecs.in_node, counts, counts.size(), input,
                                    split.total, output, counts[rank]));
  OF_RETURN_IF_ERROR(CheckResidual(options, kCall, residual,
                                   TwoLevelReduceScatterResidualElements(counts, shape.local_size, shape.local)));
  const uint64_t seed = MixSeed(codecs.in_node.seed, rank);

  // In the node: local rank d gets, from every device of this node, the chunks of the
  // ranks with local index d on every node, and reduces them into node partial sums
  // (partial[m] for the chunk of rank (m, local)).
  Layout in_layout(shape.local_size);
  for (int64_t d = 0; d < shape.local_size; ++d) {
    for (int64_t m = 0; m < shape.nodes; ++m) {
      const int64_t global = shape.Global(m, d);
      in_layout[d].push_back(Piece{split.offsets[global], counts[global], split.offsets[global]});
    }
  }
  std::vector<float> partial(ElementsOf(in_layout[shape.local]));
  TwoLevelTraffic traffic;
  // The residual: the in-node exchange's (like the input), then the node partial sums'.
  OF_ASSIGN_OR_RETURN(traffic.in_node,
                      ExchangeAndReduce(in_node, codecs.in_node, seed, input, in_layout,
                                        partial.data(), options, ResidualPart(residual, 0)));

  // Across nodes: node m gets partial[m] from every node and reduces in node order.
  Layout cross_layout(shape.nodes);
  int64_t offset = 0;
  for (int64_t m = 0; m < shape.nodes; ++m) {
    const int64_t global = shape.Global(m, shape.local);
    cross_layout[m].push_back(Piece{offset, counts[global], split.offsets[global]});
    offset += counts[global];
  }
  CodecOptions cross = codecs.cross_node;
  OF_ASSIGN_OR_RETURN(traffic.cross_node,
                      ExchangeAndReduce(cross_node, cross, MixSeed(cross.seed, rank),
                                        partial.data(), cross_layout, output, options,
                                        ResidualPart(residual, split.total)));
  return traffic;
}

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedAllGather(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
    const float* input, float* output, absl::Span<const int64_t> counts,
    const CollectiveOptions& options) {
  return TwoLevelGatherEncoded(in_node, cross_node, codecs, input, output, counts, options,
                               /*residual=*/nullptr);
}

namespace {

absl::StatusOr<TwoLevelTraffic> TwoLevelGatherEncoded(Communicator& in_node, Communicator& cross_node,
                                                      const TwoLevelCodecs& codecs, const float* input,
                                                      float* output, absl::Span<const int64_t> counts,
                                                      const CollectiveOptions& options, float* residual) {
  constexpr absl::string_view kCall = "two-level compressed all_gather";
  const TwoLevelShape shape = ShapeOf(in_node, cross_node);
  OF_RETURN_IF_ERROR(CheckTwoLevel(options, kCall, codecs, shape, counts));
  const Split split = SplitOf(counts);
  const int64_t rank = shape.rank();
  OF_RETURN_IF_ERROR(CheckArguments(options, kCall, codecs.gather, counts, counts.size(), input,
                                    counts[rank], output, split.total));
  const CodecOptions& codec = codecs.gather;
  std::vector<int64_t> encoded(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) encoded[r] = EncodedBytes(codec, counts[r]);

  // Across nodes: the encodings of the shards of local index `local`, in node order.
  std::vector<int64_t> cross_bytes(shape.nodes);
  // In the node: block l = the encodings of local index l's shards, node after node.
  std::vector<int64_t> block_bytes(shape.local_size, 0);
  for (int64_t m = 0; m < shape.nodes; ++m) {
    for (int64_t l = 0; l < shape.local_size; ++l) block_bytes[l] += encoded[shape.Global(m, l)];
    cross_bytes[m] = encoded[shape.Global(m, shape.local)];
  }
  int64_t total_bytes = 0, block_offset = 0;
  for (int64_t l = 0; l < shape.local_size; ++l) {
    if (l < shape.local) block_offset += block_bytes[l];
    total_bytes += block_bytes[l];
  }
  int64_t own_offset = block_offset;  // this shard's encoding inside this rank's block
  for (int64_t m = 0; m < shape.node; ++m) own_offset += cross_bytes[m];

  TwoLevelTraffic traffic;
  traffic.cross_node.bytes_sent = (shape.nodes - 1) * encoded[rank];
  traffic.cross_node.bytes_received = block_bytes[shape.local] - encoded[rank];
  traffic.cross_node.dense_bytes_sent = (shape.nodes - 1) * counts[rank] * kDenseBytes;
  int64_t block_elements = 0;
  for (int64_t m = 0; m < shape.nodes; ++m) block_elements += counts[shape.Global(m, shape.local)];
  traffic.cross_node.dense_bytes_received = (block_elements - counts[rank]) * kDenseBytes;
  traffic.in_node.bytes_sent = (shape.local_size - 1) * block_bytes[shape.local];
  traffic.in_node.bytes_received = total_bytes - block_bytes[shape.local];
  traffic.in_node.dense_bytes_sent = (shape.local_size - 1) * block_elements * kDenseBytes;
  traffic.in_node.dense_bytes_received = (split.total - block_elements) * kDenseBytes;

  // Every encoding lands in its final place; both gathers are in place.
  std::vector<uint8_t> gathered(total_bytes);
  CodecOptions encoding = codec;
  encoding.seed = MixSeed(codec.seed, rank);
  std::vector<float> compensated;
  if (residual != nullptr) {
    compensated.resize(counts[rank]);
    Compensate(input, residual, counts[rank], compensated.data());
    input = compensated.data();
  }
  EncodingErrorSums measured;
  EncodeOwnShard(encoding, input, counts[rank], gathered.data() + own_offset, split.offsets[rank],
                 residual != nullptr, &measured);
  OF_RETURN_IF_ERROR(cross_node.AllGather(gathered.data() + own_offset,
                                          gathered.data() + block_offset, cross_bytes, Encoded(options, codec)));
  OF_RETURN_IF_ERROR(in_node.AllGather(gathered.data() + block_offset, gathered.data(),
                                       block_bytes, Encoded(options, codec)));
  float* own = output + split.offsets[rank];
  DecodeOwnShard(codec, gathered.data() + own_offset, input, counts[rank], own,
                 residual != nullptr ? nullptr : &measured, &traffic.in_node);
  if (residual != nullptr) KeepResidual(input, own, counts[rank], residual);
  int64_t position = 0;
  for (int64_t l = 0; l < shape.local_size; ++l) {
    for (int64_t m = 0; m < shape.nodes; ++m) {
      const int64_t global = shape.Global(m, l);
      if (global != rank) {
        Decode(codec, gathered.data() + position, counts[global], output + split.offsets[global]);
      }
      position += encoded[global];
    }
  }
  return traffic;
}

}  // namespace

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedAllReduce(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
    const float* input, float* output, int64_t count, const CollectiveOptions& options,
    absl::Span<float> residual) {
  constexpr absl::string_view kCall = "two-level compressed all_reduce";
  absl::Status status = CheckBuffer("input", input, count);
  if (status.ok()) status = CheckBuffer("output", output, count);
  if (!status.ok()) return Invalid(options, kCall, status.message());
  const TwoLevelShape shape = ShapeOf(in_node, cross_node);
  OF_RETURN_IF_ERROR(CheckResidual(
      options, kCall, residual,
      TwoLevelAllReduceResidualElements(count, shape.nodes, shape.local_size, shape.node, shape.local)));
  std::vector<int64_t> counts;
  OF_RETURN_IF_ERROR(BalancedCounts(count, shape.nodes * shape.local_size, &counts));
  std::vector<float> shard(counts[shape.rank()]);
  // The residual: the reduce-scatter's (its input and node partial sums), then the
  // gathered shard's.
  const int64_t scatter_elements = TwoLevelReduceScatterResidualElements(counts, shape.local_size, shape.local);
  OF_ASSIGN_OR_RETURN(TwoLevelTraffic traffic,
                      TwoLevelCompressedReduceScatter(
                          in_node, cross_node, codecs, input, shard.data(), counts, options,
                          residual.empty() ? residual : residual.subspan(0, scatter_elements)));
  OF_ASSIGN_OR_RETURN(TwoLevelTraffic gather,
                      TwoLevelGatherEncoded(in_node, cross_node, codecs, shard.data(), output, counts,
                                            options, ResidualPart(residual, scatter_elements)));
  traffic += gather;
  return traffic;
}

}  // namespace oneflow
