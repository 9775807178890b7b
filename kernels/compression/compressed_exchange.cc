#include "kernels/compression/compressed_exchange.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/reduce.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace compressed_exchange {

CollectiveOptions Encoded(const CollectiveOptions& options, const CodecOptions& codec) {
  const uint32_t group = static_cast<uint32_t>(std::min<int64_t>(codec.group_size, (int64_t{1} << 22) - 1));
  CollectiveOptions encoded = options;
  encoded.payload_format = (static_cast<uint32_t>(codec.codec) + 1) | (codec.hadamard ? 1u << 8 : 0u) |
                           (codec.stochastic_rounding ? 1u << 9 : 0u) | (group << 10);
  return encoded;
}

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

namespace {

// output op= values, in place (the accumulator first: rank order).
void Combine(ReduceOp op, const float* values, int64_t count, float* output) {
  const float* inputs[] = {output, values};
  ReduceFloats(op, inputs, output, count);
}

}  // namespace

void Compensate(const float* original, const float* residual, int64_t count, float* compensated) {
  for (int64_t i = 0; i < count; ++i) compensated[i] = original[i] + residual[i];
}

void KeepResidual(const float* compensated, const float* decoded, int64_t count, float* residual) {
  for (int64_t i = 0; i < count; ++i) {
    const float dropped = compensated[i] - decoded[i];
    residual[i] = std::isfinite(dropped) ? dropped : 0.0f;
  }
}

absl::StatusOr<CompressedTraffic> ExchangeAndReduce(Communicator& communicator,
                                                    const CodecOptions& codec,
                                                    uint64_t encoding_seed, const float* input,
                                                    const Layout& layout, float* output,
                                                    const CollectiveOptions& options,
                                                    float* residual) {
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
  // Each piece's encoding error is metered (the header's "Error"). Without error
  // feedback EncodeMeasured reads the codes back while each group is in cache (codec.h),
  // with no decode of the piece: decoding every sent piece to meter it was a pass over it
  // as long as the receiver's decode (docs/benchmarks.md, "Session 46"). With error
  // feedback the residual needs the decoded values, so the piece is decoded into
  // `scratch` (reused: no allocation beyond the largest piece) and metered against them;
  // that costs one add and one subtract per sent element more, and `compensated` one
  // more scratch buffer.
  std::vector<float> scratch, compensated;
  int64_t position = 0;
  for (int64_t d = 0; d < size; ++d) {
    if (d == rank) continue;
    for (const Piece& piece : layout[d]) {
      const float* original = input + piece.offset;
      float* kept = piece.residual != nullptr ? piece.residual
                                              : (residual != nullptr ? residual + piece.offset : nullptr);
      encoding.seed = piece.encoding_seed.value_or(encoding_seed);
      CompressedTraffic encoded;
      if (kept != nullptr) {
        if (static_cast<int64_t>(scratch.size()) < piece.count) scratch.resize(piece.count);
        if (static_cast<int64_t>(compensated.size()) < piece.count) compensated.resize(piece.count);
        Compensate(original, kept, piece.count, compensated.data());
        original = compensated.data();
        Encode(encoding, original, piece.count, send.data() + position, piece.logical_index);
        Decode(codec, send.data() + position, piece.count, scratch.data());
        AddEncodingError(original, scratch.data(), piece.count, &encoded);
        KeepResidual(original, scratch.data(), piece.count, kept);
      } else {
        EncodingErrorSums sums;
        EncodeMeasured(encoding, original, piece.count, send.data() + position, piece.logical_index, &sums);
        encoded.error_sq = sums.error_sq;
        encoded.signal_sq = sums.signal_sq;
      }
      traffic.error_sq += encoded.error_sq;
      traffic.signal_sq += encoded.signal_sq;
      if (piece.traffic != nullptr) {
        encoded.bytes_sent = EncodedBytes(codec, piece.count);
        encoded.dense_bytes_sent = piece.count * kDenseBytes;
        *piece.traffic += encoded;
      }
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
        if (piece.traffic != nullptr) {
          piece.traffic->bytes_received += EncodedBytes(codec, piece.count);
          piece.traffic->dense_bytes_received += piece.count * kDenseBytes;
        }
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

void EncodeOwnShard(const CodecOptions& encoding, const float* input, int64_t count, uint8_t* out,
                    int64_t first_index, bool error_feedback, EncodingErrorSums* measured) {
  if (error_feedback) {
    Encode(encoding, input, count, out, first_index);
  } else {
    EncodeMeasured(encoding, input, count, out, first_index, measured);
  }
}

void DecodeOwnShard(const CodecOptions& codec, const uint8_t* encoded, const float* input,
                    int64_t count, float* destination, const EncodingErrorSums* measured,
                    CompressedTraffic* traffic) {
  if (measured != nullptr) {
    Decode(codec, encoded, count, destination);
    traffic->error_sq += measured->error_sq;
    traffic->signal_sq += measured->signal_sq;
    return;
  }
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

Split SplitOf(absl::Span<const int64_t> counts) {
  return Split{ExclusiveOffsets(counts), SumOf(counts)};
}

absl::Status BalancedCounts(int64_t count, int64_t parts, std::vector<int64_t>* counts) {
  OF_ASSIGN_OR_RETURN(std::vector<Range> ranges, BalancedSplit(count, parts));
  counts->clear();
  for (const Range& range : ranges) counts->push_back(range.size());
  return absl::OkStatus();
}

absl::Status CheckResidual(const CollectiveOptions& options, absl::string_view call,
                           absl::Span<float> residual, int64_t elements) {
  if (residual.empty() || static_cast<int64_t>(residual.size()) == elements) return absl::OkStatus();
  return Invalid(options, call,
                 absl::StrCat("residual has ", residual.size(), " floats; error feedback on this call needs ",
                              elements, " (or none, for no error feedback)"));
}

float* ResidualPart(absl::Span<float> residual, int64_t offset) {
  return residual.empty() ? nullptr : residual.data() + offset;
}

}  // namespace compressed_exchange
}  // namespace oneflow
