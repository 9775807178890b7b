#include "kernels/compression/compressed_collectives.h"

#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "kernels/compression/compressed_exchange.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

// The flat forms (one group); the two-level forms are in
// two_level_compressed_collectives.cc, the shared steps in compressed_exchange.{h,cc}.

namespace oneflow {

using compressed_exchange::Encoded;
using compressed_exchange::kDenseBytes;
using compressed_exchange::Piece;
using compressed_exchange::Layout;
using compressed_exchange::Invalid;
using compressed_exchange::CheckArguments;
using compressed_exchange::Overlaps;
using compressed_exchange::Compensate;
using compressed_exchange::KeepResidual;
using compressed_exchange::ExchangeAndReduce;
using compressed_exchange::DecodeOwnShard;
using compressed_exchange::Split;
using compressed_exchange::SplitOf;
using compressed_exchange::BalancedCounts;
using compressed_exchange::CheckResidual;
using compressed_exchange::ResidualPart;

namespace {

// The flat all-gather; with `residual` (null: off; counts[rank] floats) the shard is
// encoded with its residual added, which then keeps what the encoding dropped.
absl::StatusOr<CompressedTraffic> GatherEncoded(Communicator& communicator, const CodecOptions& codec,
                                                const float* input, float* output,
                                                absl::Span<const int64_t> counts,
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

int64_t ReduceScatterResidualElements(absl::Span<const int64_t> counts) { return SumOf(counts); }

int64_t AllReduceResidualElements(int64_t count, int64_t size, int64_t rank) {
  std::vector<int64_t> counts;
  if (!BalancedCounts(count, size, &counts).ok() || rank < 0 || rank >= size) return 0;
  return count + counts[rank];
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

}  // namespace oneflow
