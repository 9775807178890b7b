#include "kernels/compression/compressed_collectives.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "absl/strings/str_cat.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/reduce.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// The codec as CollectiveOptions::payload_format (communicator.h): ranks that disagree on
// how the bytes are encoded fail with INVALID_ARGUMENT before any byte moves, even when
// the byte counts happen to match (fp8 and int8 at one group size). Bits 0-7: codec + 1
// (0 stays "dense f32"); bit 8: hadamard; bit 9: stochastic rounding; bits 10-31: group
// size (sizes past 2^22 - 1 share the top value).
CollectiveOptions Encoded(const CollectiveOptions& options, const CodecOptions& codec) {
  const uint32_t group = static_cast<uint32_t>(std::min<int64_t>(codec.group_size, (int64_t{1} << 22) - 1));
  CollectiveOptions encoded = options;
  encoded.payload_format = (static_cast<uint32_t>(codec.codec) + 1) | (codec.hadamard ? 1u << 8 : 0u) |
                           (codec.stochastic_rounding ? 1u << 9 : 0u) | (group << 10);
  return encoded;
}

constexpr int64_t kDenseBytes = sizeof(float);

// A run of elements one rank sends to one destination: `count` floats at `offset` of the
// sender's buffer, whose first element has logical index `logical_index` in the tensor
// (the key of stochastic rounding). Every rank has the same pieces: they come from the
// counts, which every rank passes alike.
struct Piece {
  int64_t offset = 0;
  int64_t count = 0;
  int64_t logical_index = 0;
};
// pieces[d]: what each rank sends to rank d, in order; rank d reduces piece j over the
// senders into the j-th run of its output.
using Layout = std::vector<std::vector<Piece>>;

absl::Status Invalid(const CollectiveOptions& options, absl::string_view call,
                     absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(
      options.description, options.description.empty() ? "" : ": ", call, ": ", message));
}

absl::Status CheckArguments(const CollectiveOptions& options, absl::string_view call,
                            const CodecOptions& codec, absl::Span<const int64_t> counts,
                            int64_t group_size, const float* input, int64_t input_count,
                            const float* output, int64_t output_count) {
  absl::Status status = CheckCodecOptions(codec);
  if (status.ok()) status = CheckCounts("counts", counts, group_size);
  if (status.ok()) status = CheckBuffer("input", input, input_count);
  if (status.ok()) status = CheckBuffer("output", output, output_count);
  if (!status.ok()) return Invalid(options, call, status.message());
  return absl::OkStatus();
}

int64_t EncodedBytesOf(const CodecOptions& codec, const std::vector<Piece>& pieces) {
  int64_t bytes = 0;
  for (const Piece& piece : pieces) bytes += EncodedBytes(codec, piece.count);
  return bytes;
}

int64_t ElementsOf(const std::vector<Piece>& pieces) {
  int64_t elements = 0;
  for (const Piece& piece : pieces) elements += piece.count;
  return elements;
}

bool Overlaps(const float* a, int64_t a_count, const float* b, int64_t b_count) {
  return a_count > 0 && b_count > 0 && a < b + b_count && b < a + a_count;
}

// output op= values, in place (the accumulator first: rank order).
void Combine(ReduceOp op, const float* values, int64_t count, float* output) {
  const float* inputs[] = {output, values};
  ReduceFloats(op, inputs, output, count);
}

// Error feedback on one encoding (the header's "Error feedback"): `compensated` =
// `original` + `residual`, the values to encode.
void Compensate(const float* original, const float* residual, int64_t count, float* compensated) {
  for (int64_t i = 0; i < count; ++i) compensated[i] = original[i] + residual[i];
}

// ... and after it: residual = compensated - decoded, what the codec dropped. A value
// that decoded non-finite (its group held a NaN or Inf) leaves 0: a NaN carried on would
// poison every later step, while the step that saw it fails or is skipped anyway.
void KeepResidual(const float* compensated, const float* decoded, int64_t count, float* residual) {
  for (int64_t i = 0; i < count; ++i) {
    const float dropped = compensated[i] - decoded[i];
    residual[i] = std::isfinite(dropped) ? dropped : 0.0f;
  }
}

// The compressed reduce-scatter step over one communicator: every rank encodes its pieces
// for each other rank (its own stay dense), one AllToAll moves them, and every rank
// reduces its pieces over the senders in rank order into `output` (the pieces of
// layout[rank] back to back; it must not overlap `input`). With `residual` (null: no
// error feedback; else indexed like `input`), each sent piece is encoded with its
// residual added and leaves what its encoding dropped there.
absl::StatusOr<CompressedTraffic> ExchangeAndReduce(Communicator& communicator,
                                                    const CodecOptions& codec,
                                                    uint64_t encoding_seed, const float* input,
                                                    const Layout& layout, float* output,
                                                    const CollectiveOptions& options,
                                                    float* residual = nullptr) {
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  std::vector<int64_t> bytes_to(size);  // encoded bytes every rank sends to rank d
  for (int64_t d = 0; d < size; ++d) bytes_to[d] = EncodedBytesOf(codec, layout[d]);

  CompressedTraffic traffic;
  std::vector<uint8_t> send;
  for (int64_t d = 0; d < size; ++d) {
    if (d == rank) continue;
    traffic.bytes_sent += bytes_to[d];
    traffic.dense_bytes_sent += ElementsOf(layout[d]) * kDenseBytes;
  }
  traffic.bytes_received = (size - 1) * bytes_to[rank];
  traffic.dense_bytes_received = (size - 1) * ElementsOf(layout[rank]) * kDenseBytes;

  CodecOptions encoding = codec;
  encoding.seed = encoding_seed;
  send.resize(traffic.bytes_sent);
  // Each piece is decoded once more, here, to meter its error (the header's "Error");
  // `scratch` is reused, so the cost is one decode per sent element and no allocation
  // beyond the largest piece.
  // With error feedback that decode is also what the residual needs: it costs one add
  // and one subtract per sent element more, and `compensated` one more scratch buffer.
  std::vector<float> scratch, compensated;
  int64_t position = 0;
  for (int64_t d = 0; d < size; ++d) {
    if (d == rank) continue;
    for (const Piece& piece : layout[d]) {
      const float* original = input + piece.offset;
      if (static_cast<int64_t>(scratch.size()) < piece.count) scratch.resize(piece.count);
      if (residual != nullptr) {
        if (static_cast<int64_t>(compensated.size()) < piece.count) compensated.resize(piece.count);
        Compensate(original, residual + piece.offset, piece.count, compensated.data());
        original = compensated.data();
      }
      Encode(encoding, original, piece.count, send.data() + position, piece.logical_index);
      Decode(codec, send.data() + position, piece.count, scratch.data());
      AddEncodingError(original, scratch.data(), piece.count, &traffic);
      if (residual != nullptr) KeepResidual(original, scratch.data(), piece.count, residual + piece.offset);
      position += EncodedBytes(codec, piece.count);
    }
  }

  std::vector<int64_t> byte_counts(size * size, 0);
  for (int64_t s = 0; s < size; ++s) {
    for (int64_t d = 0; d < size; ++d) byte_counts[s * size + d] = s == d ? 0 : bytes_to[d];
  }
  std::vector<uint8_t> received(traffic.bytes_received);
  OF_RETURN_IF_ERROR(communicator.AllToAll(send.data(), received.data(), byte_counts, Encoded(options, codec)));

  // Reduce in rank order. `received` holds, for each sender s != rank in order, the
  // encodings of layout[rank]'s pieces back to back.
  const std::vector<Piece>& mine = layout[rank];
  std::vector<float> decoded;
  if (options.reduce_op != ReduceOp::kSum) decoded.resize(ElementsOf(mine));
  position = 0;
  for (int64_t s = 0; s < size; ++s) {
    int64_t out = 0;
    for (const Piece& piece : mine) {
      float* destination = output + out;
      if (s == rank) {
        if (s == 0) {
          if (piece.count > 0) {
            std::memcpy(destination, input + piece.offset, piece.count * sizeof(float));
          }
        } else {
          Combine(options.reduce_op, input + piece.offset, piece.count, destination);
        }
      } else {
        const uint8_t* encoded = received.data() + position;
        position += EncodedBytes(codec, piece.count);
        if (s == 0) {
          Decode(codec, encoded, piece.count, destination);
        } else if (options.reduce_op == ReduceOp::kSum) {
          DecodeAccumulate(codec, encoded, piece.count, destination);
        } else {
          Decode(codec, encoded, piece.count, decoded.data());
          Combine(options.reduce_op, decoded.data(), piece.count, destination);
        }
      }
      out += piece.count;
    }
  }
  return traffic;
}

// Decodes this rank's gathered shard into `destination`, its place in the output, and
// meters the encoding against `input` on the way: the decode every gather needs anyway.
// In place (`input` is `destination`) it decodes into scratch first, so that the original
// is still there to compare with.
void DecodeOwnShard(const CodecOptions& codec, const uint8_t* encoded, const float* input,
                    int64_t count, float* destination, CompressedTraffic* traffic) {
  if (!Overlaps(input, count, destination, count)) {
    Decode(codec, encoded, count, destination);
    AddEncodingError(input, destination, count, traffic);
    return;
  }
  std::vector<float> decoded(count);
  Decode(codec, encoded, count, decoded.data());
  AddEncodingError(input, decoded.data(), count, traffic);
  std::memcpy(destination, decoded.data(), count * sizeof(float));
}

// Per-rank offsets of a tensor split by `counts`, and its total.
struct Split {
  std::vector<int64_t> offsets;
  int64_t total = 0;
};
Split SplitOf(absl::Span<const int64_t> counts) {
  return Split{ExclusiveOffsets(counts), SumOf(counts)};
}

absl::Status BalancedCounts(int64_t count, int64_t parts, std::vector<int64_t>* counts) {
  OF_ASSIGN_OR_RETURN(std::vector<Range> ranges, BalancedSplit(count, parts));
  counts->clear();
  for (const Range& range : ranges) counts->push_back(range.size());
  return absl::OkStatus();
}

// Error feedback's residual: empty (off) or exactly `elements` floats.
absl::Status CheckResidual(const CollectiveOptions& options, absl::string_view call,
                           absl::Span<float> residual, int64_t elements) {
  if (residual.empty() || static_cast<int64_t>(residual.size()) == elements) return absl::OkStatus();
  return Invalid(options, call,
                 absl::StrCat("residual has ", residual.size(), " floats; error feedback on this call needs ",
                              elements, " (or none, for no error feedback)"));
}

// The residual's part [offset, offset + count), or null when error feedback is off.
float* ResidualPart(absl::Span<float> residual, int64_t offset) {
  return residual.empty() ? nullptr : residual.data() + offset;
}

// The flat all-gather; with `residual` (null: off; counts[rank] floats) the shard is
// encoded with its residual added, which then keeps what the encoding dropped.
absl::StatusOr<CompressedTraffic> GatherEncoded(Communicator& communicator, const CodecOptions& codec,
                                                const float* input, float* output,
                                                absl::Span<const int64_t> counts,
                                                const CollectiveOptions& options, float* residual);

absl::StatusOr<TwoLevelTraffic> TwoLevelGatherEncoded(Communicator& in_node, Communicator& cross_node,
                                                      const TwoLevelCodecs& codecs, const float* input,
                                                      float* output, absl::Span<const int64_t> counts,
                                                      const CollectiveOptions& options, float* residual);

}  // namespace

double CompressedTraffic::RelativeError() const {
  // As RoundTripRelativeError: an all-zero input has no scale to be relative to.
  if (signal_sq == 0.0) return error_sq == 0.0 ? 0.0 : std::sqrt(error_sq);
  return std::sqrt(error_sq / signal_sq);
}

CompressedTraffic& CompressedTraffic::operator+=(const CompressedTraffic& other) {
  bytes_sent += other.bytes_sent;
  bytes_received += other.bytes_received;
  dense_bytes_sent += other.dense_bytes_sent;
  dense_bytes_received += other.dense_bytes_received;
  error_sq += other.error_sq;
  signal_sq += other.signal_sq;
  return *this;
}

void AddEncodingError(const float* original, const float* decoded, int64_t count,
                      CompressedTraffic* traffic) {
  // In double, as RoundTripRelativeError (a float square overflows beyond |x| ~ 1.8e19).
  // With AVX: four lanes at a time in two independent chains per sum, so that the adds'
  // latency does not bound the loop (one chain would be slower than the decode it meters).
  double error = 0.0, signal = 0.0;
  int64_t i = 0;
#if defined(__AVX__)
  __m256d error_a = _mm256_setzero_pd(), error_b = error_a, signal_a = error_a, signal_b = error_a;
  for (; i + 8 <= count; i += 8) {
    const __m256d x_a = _mm256_cvtps_pd(_mm_loadu_ps(original + i));
    const __m256d x_b = _mm256_cvtps_pd(_mm_loadu_ps(original + i + 4));
    const __m256d d_a = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(decoded + i)), x_a);
    const __m256d d_b = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(decoded + i + 4)), x_b);
    error_a = _mm256_add_pd(error_a, _mm256_mul_pd(d_a, d_a));
    error_b = _mm256_add_pd(error_b, _mm256_mul_pd(d_b, d_b));
    signal_a = _mm256_add_pd(signal_a, _mm256_mul_pd(x_a, x_a));
    signal_b = _mm256_add_pd(signal_b, _mm256_mul_pd(x_b, x_b));
  }
  alignas(32) double lanes[2][4];
  _mm256_store_pd(lanes[0], _mm256_add_pd(error_a, error_b));
  _mm256_store_pd(lanes[1], _mm256_add_pd(signal_a, signal_b));
  for (int lane = 0; lane < 4; ++lane) {
    error += lanes[0][lane];
    signal += lanes[1][lane];
  }
#endif
  for (; i < count; ++i) {
    const double difference = static_cast<double>(decoded[i]) - original[i];
    error += difference * difference;
    signal += static_cast<double>(original[i]) * original[i];
  }
  traffic->error_sq += error;
  traffic->signal_sq += signal;
}

TwoLevelTraffic& TwoLevelTraffic::operator+=(const TwoLevelTraffic& other) {
  in_node += other.in_node;
  cross_node += other.cross_node;
  return *this;
}

int64_t ReduceScatterResidualElements(absl::Span<const int64_t> counts) { return SumOf(counts); }

int64_t AllReduceResidualElements(int64_t count, int64_t size, int64_t rank) {
  std::vector<int64_t> counts;
  if (!BalancedCounts(count, size, &counts).ok() || rank < 0 || rank >= size) return 0;
  return count + counts[rank];
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

absl::StatusOr<CompressedTraffic> CompressedReduceScatter(Communicator& communicator,
                                                          const CodecOptions& codec,
                                                          const float* input, float* output,
                                                          absl::Span<const int64_t> counts,
                                                          const CollectiveOptions& options,
                                                          absl::Span<float> residual) {
  constexpr absl::string_view kCall = "compressed reduce_scatter";
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  const bool counts_ok = static_cast<int64_t>(counts.size()) == size;
  const Split split = SplitOf(counts);
  OF_RETURN_IF_ERROR(CheckArguments(options, kCall, codec, counts, size,
                                    input, split.total, output, counts_ok ? counts[rank] : 0));
  OF_RETURN_IF_ERROR(CheckResidual(options, kCall, residual, ReduceScatterResidualElements(counts)));
  Layout layout(size);
  for (int64_t d = 0; d < size; ++d) {
    layout[d].push_back(Piece{split.offsets[d], counts[d], split.offsets[d]});
  }
  const int64_t mine = counts[rank];
  if (!Overlaps(input, split.total, output, mine)) {
    return ExchangeAndReduce(communicator, codec, MixSeed(codec.seed, rank), input, layout,
                             output, options, ResidualPart(residual, 0));
  }
  std::vector<float> reduced(mine);
  OF_ASSIGN_OR_RETURN(CompressedTraffic traffic,
                      ExchangeAndReduce(communicator, codec, MixSeed(codec.seed, rank), input,
                                        layout, reduced.data(), options, ResidualPart(residual, 0)));
  std::memcpy(output, reduced.data(), mine * sizeof(float));  // mine > 0: they overlap
  return traffic;
}

absl::StatusOr<CompressedTraffic> CompressedAllGather(Communicator& communicator,
                                                      const CodecOptions& codec,
                                                      const float* input, float* output,
                                                      absl::Span<const int64_t> counts,
                                                      const CollectiveOptions& options) {
  return GatherEncoded(communicator, codec, input, output, counts, options, /*residual=*/nullptr);
}

namespace {

absl::StatusOr<CompressedTraffic> GatherEncoded(Communicator& communicator, const CodecOptions& codec,
                                                const float* input, float* output,
                                                absl::Span<const int64_t> counts,
                                                const CollectiveOptions& options, float* residual) {
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  const bool counts_ok = static_cast<int64_t>(counts.size()) == size;
  const Split split = SplitOf(counts);
  OF_RETURN_IF_ERROR(CheckArguments(options, "compressed all_gather", codec, counts, size, input,
                                    counts_ok ? counts[rank] : 0, output, split.total));
  std::vector<int64_t> byte_counts(size);
  int64_t gathered_bytes = 0;
  for (int64_t r = 0; r < size; ++r) {
    byte_counts[r] = EncodedBytes(codec, counts[r]);
    gathered_bytes += byte_counts[r];
  }
  CompressedTraffic traffic;
  traffic.bytes_sent = (size - 1) * byte_counts[rank];
  traffic.bytes_received = gathered_bytes - byte_counts[rank];
  traffic.dense_bytes_sent = (size - 1) * counts[rank] * kDenseBytes;
  traffic.dense_bytes_received = (split.total - counts[rank]) * kDenseBytes;

  // The shard is encoded straight into its place in the gathered buffer (in place).
  std::vector<uint8_t> gathered(gathered_bytes);
  int64_t own_position = 0;
  for (int64_t r = 0; r < rank; ++r) own_position += byte_counts[r];
  CodecOptions encoding = codec;
  encoding.seed = MixSeed(codec.seed, rank);
  std::vector<float> compensated;
  if (residual != nullptr) {
    compensated.resize(counts[rank]);
    Compensate(input, residual, counts[rank], compensated.data());
    input = compensated.data();
  }
  Encode(encoding, input, counts[rank], gathered.data() + own_position, split.offsets[rank]);
  OF_RETURN_IF_ERROR(communicator.AllGather(gathered.data() + own_position, gathered.data(),
                                            byte_counts, Encoded(options, codec)));
  float* own = output + split.offsets[rank];
  DecodeOwnShard(codec, gathered.data() + own_position, input, counts[rank], own, &traffic);
  // The own shard's place holds its decode (the input, compensated, is a separate buffer).
  if (residual != nullptr) KeepResidual(input, own, counts[rank], residual);
  int64_t position = 0;
  for (int64_t r = 0; r < size; ++r) {
    if (r != rank) Decode(codec, gathered.data() + position, counts[r], output + split.offsets[r]);
    position += byte_counts[r];
  }
  return traffic;
}

}  // namespace

absl::StatusOr<CompressedTraffic> CompressedAllReduce(Communicator& communicator,
                                                      const CodecOptions& codec,
                                                      const float* input, float* output,
                                                      int64_t count,
                                                      const CollectiveOptions& options,
                                                      absl::Span<float> residual) {
  constexpr absl::string_view kCall = "compressed all_reduce";
  absl::Status status = CheckCodecOptions(codec);
  if (status.ok()) status = CheckBuffer("input", input, count);
  if (status.ok()) status = CheckBuffer("output", output, count);
  if (!status.ok()) return Invalid(options, kCall, status.message());
  OF_RETURN_IF_ERROR(CheckResidual(options, kCall, residual,
                                   AllReduceResidualElements(count, communicator.size(), communicator.rank())));
  std::vector<int64_t> counts;
  OF_RETURN_IF_ERROR(BalancedCounts(count, communicator.size(), &counts));
  std::vector<float> shard(counts[communicator.rank()]);
  // The residual: the reduce-scatter's (`count`, like the input), then the gathered shard's.
  OF_ASSIGN_OR_RETURN(CompressedTraffic traffic,
                      CompressedReduceScatter(communicator, codec, input, shard.data(), counts,
                                              options, residual.empty() ? residual : residual.subspan(0, count)));
  OF_ASSIGN_OR_RETURN(CompressedTraffic gather,
                      GatherEncoded(communicator, codec, shard.data(), output, counts, options,
                                    ResidualPart(residual, count)));
  traffic += gather;
  return traffic;
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
  Encode(encoding, input, counts[rank], gathered.data() + own_offset, split.offsets[rank]);
  OF_RETURN_IF_ERROR(cross_node.AllGather(gathered.data() + own_offset,
                                          gathered.data() + block_offset, cross_bytes, Encoded(options, codec)));
  OF_RETURN_IF_ERROR(in_node.AllGather(gathered.data() + block_offset, gathered.data(),
                                       block_bytes, Encoded(options, codec)));
  float* own = output + split.offsets[rank];
  DecodeOwnShard(codec, gathered.data() + own_offset, input, counts[rank], own, &traffic.in_node);
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
