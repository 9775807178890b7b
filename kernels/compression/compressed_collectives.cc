#include "kernels/compression/compressed_collectives.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

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
using compressed_exchange::EncodeOwnShard;
using compressed_exchange::Split;
using compressed_exchange::SplitOf;
using compressed_exchange::BalancedCounts;
using compressed_exchange::CheckResidual;
using compressed_exchange::ResidualPart;

namespace {

// One tensor of a (bucketed) encoded all-gather: its shards' counts per rank, where its
// gathered output starts, this rank's shard, the seed its encoding rounds with (before
// the rank is mixed in) and its error-feedback residual (null: off; counts[rank] floats:
// the shard is encoded with it added, and it keeps what the encoding dropped).
struct GatherMember {
  std::vector<int64_t> counts;
  int64_t output_offset = 0;
  const float* shard = nullptr;
  uint64_t seed = 0;
  float* residual = nullptr;
  CompressedTraffic* traffic = nullptr;  // when set, receives this member's traffic too
};

// The flat all-gather of every member in one AllGather: each rank's block holds its
// members' encoded shards back to back, each encoded exactly as a gather of that member
// alone would encode it (its own groups, logical indices and seed), so every member's
// output has the bits of its own gather. Arguments are the caller's to check.
absl::StatusOr<CompressedTraffic> GatherMembers(Communicator& communicator, const CodecOptions& codec,
                                                const std::vector<GatherMember>& members, float* output,
                                                const CollectiveOptions& options);

// CompressedBucketAllReduce once its arguments are checked: one AllToAll (the members'
// reduce-scatters) and one AllGather (their gathers).
absl::StatusOr<CompressedTraffic> BucketAllReduce(Communicator& communicator, const CodecOptions& codec,
                                                  const float* input, float* output,
                                                  absl::Span<const CompressedBucketMember> members,
                                                  const CollectiveOptions& options);

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

int64_t AllGatherResidualElements(absl::Span<const int64_t> counts, int64_t rank) {
  if (rank < 0 || rank >= static_cast<int64_t>(counts.size())) return 0;
  return counts[rank];
}

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
                                                      const CollectiveOptions& options,
                                                      absl::Span<float> residual) {
  constexpr absl::string_view kCall = "compressed all_gather";
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  const bool counts_ok = static_cast<int64_t>(counts.size()) == size;
  OF_RETURN_IF_ERROR(CheckArguments(options, kCall, codec, counts, size, input,
                                    counts_ok ? counts[rank] : 0, output, SumOf(counts)));
  OF_RETURN_IF_ERROR(CheckResidual(options, kCall, residual, AllGatherResidualElements(counts, rank)));
  GatherMember member;
  member.counts.assign(counts.begin(), counts.end());
  member.shard = input;
  member.seed = codec.seed;
  member.residual = residual.empty() ? nullptr : residual.data();
  return GatherMembers(communicator, codec, {member}, output, options);
}

namespace {

absl::StatusOr<CompressedTraffic> GatherMembers(Communicator& communicator, const CodecOptions& codec,
                                                const std::vector<GatherMember>& members, float* output,
                                                const CollectiveOptions& options) {
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  std::vector<Split> splits;
  std::vector<int64_t> byte_counts(size, 0);
  int64_t gathered_bytes = 0;
  CompressedTraffic traffic;
  for (const GatherMember& member : members) {
    splits.push_back(SplitOf(member.counts));
    for (int64_t r = 0; r < size; ++r) byte_counts[r] += EncodedBytes(codec, member.counts[r]);
    traffic.dense_bytes_sent += (size - 1) * member.counts[rank] * kDenseBytes;
    traffic.dense_bytes_received += (splits.back().total - member.counts[rank]) * kDenseBytes;
  }
  for (int64_t r = 0; r < size; ++r) gathered_bytes += byte_counts[r];
  traffic.bytes_sent = (size - 1) * byte_counts[rank];
  traffic.bytes_received = gathered_bytes - byte_counts[rank];
  std::vector<int64_t> block(size, 0);  // where rank r's block starts in `gathered`
  for (int64_t r = 1; r < size; ++r) block[r] = block[r - 1] + byte_counts[r - 1];

  // The shards are encoded straight into their place in the gathered buffer (in place).
  std::vector<uint8_t> gathered(gathered_bytes);
  std::vector<std::vector<float>> compensated(members.size());
  std::vector<const float*> encoded_from(members.size());
  std::vector<EncodingErrorSums> measured(members.size());
  int64_t position = block[rank];
  for (size_t m = 0; m < members.size(); ++m) {
    const GatherMember& member = members[m];
    const int64_t count = member.counts[rank];
    encoded_from[m] = member.shard;
    if (member.residual != nullptr) {
      compensated[m].resize(count);
      Compensate(member.shard, member.residual, count, compensated[m].data());
      encoded_from[m] = compensated[m].data();
    }
    CodecOptions encoding = codec;
    encoding.seed = MixSeed(member.seed, rank);
    EncodeOwnShard(encoding, encoded_from[m], count, gathered.data() + position, splits[m].offsets[rank],
                   member.residual != nullptr, &measured[m]);
    position += EncodedBytes(codec, count);
  }
  OF_RETURN_IF_ERROR(communicator.AllGather(gathered.data() + block[rank], gathered.data(), byte_counts,
                                            Encoded(options, codec)));
  std::vector<int64_t> read = block;  // per rank, the next member's encoding in its block
  for (size_t m = 0; m < members.size(); ++m) {
    const GatherMember& member = members[m];
    float* out = output + member.output_offset;
    for (int64_t r = 0; r < size; ++r) {
      const int64_t count = member.counts[r];
      const uint8_t* encoded = gathered.data() + read[r];
      read[r] += EncodedBytes(codec, count);
      if (r != rank) {
        Decode(codec, encoded, count, out + splits[m].offsets[r]);
        continue;
      }
      float* own = out + splits[m].offsets[rank];
      CompressedTraffic decoded;
      DecodeOwnShard(codec, encoded, encoded_from[m], count, own,
                     member.residual != nullptr ? nullptr : &measured[m], &decoded);
      traffic.error_sq += decoded.error_sq;
      traffic.signal_sq += decoded.signal_sq;
      if (member.traffic != nullptr) {
        int64_t others = 0;
        for (int64_t p = 0; p < size; ++p) others += p == rank ? 0 : EncodedBytes(codec, member.counts[p]);
        decoded.bytes_sent = (size - 1) * EncodedBytes(codec, count);
        decoded.bytes_received = others;
        decoded.dense_bytes_sent = (size - 1) * count * kDenseBytes;
        decoded.dense_bytes_received = (splits[m].total - count) * kDenseBytes;
        *member.traffic += decoded;
      }
      // The own shard's place holds its decode (the compensated input is a separate buffer).
      if (member.residual != nullptr) KeepResidual(encoded_from[m], own, count, member.residual);
    }
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
  // One member: the bucketed form with a single tensor is this call (and so a bucket's
  // members get exactly the bits of their own calls).
  const CompressedBucketMember whole{0, count, codec.seed, residual};
  return BucketAllReduce(communicator, codec, input, output, {&whole, 1}, options);
}

absl::StatusOr<CompressedTraffic> CompressedBucketAllReduce(Communicator& communicator,
                                                            const CodecOptions& codec, const float* input,
                                                            float* output,
                                                            absl::Span<const CompressedBucketMember> members,
                                                            const CollectiveOptions& options) {
  constexpr absl::string_view kCall = "compressed bucket all_reduce";
  absl::Status status = CheckCodecOptions(codec);
  int64_t end = 0;
  for (size_t m = 0; m < members.size() && status.ok(); ++m) {
    const CompressedBucketMember& member = members[m];
    if (member.offset < end || member.count < 0) {
      return Invalid(options, kCall,
                     absl::StrCat("member ", m, " covers [", member.offset, ", ", member.offset + member.count,
                                  "); members must be in order, apart, with counts >= 0"));
    }
    end = member.offset + member.count;
    OF_RETURN_IF_ERROR(
        CheckResidual(options, absl::StrCat(kCall, " member ", m), member.residual,
                      AllReduceResidualElements(member.count, communicator.size(), communicator.rank())));
  }
  if (status.ok()) status = CheckBuffer("input", input, end);
  if (status.ok()) status = CheckBuffer("output", output, end);
  if (!status.ok()) return Invalid(options, kCall, status.message());
  return BucketAllReduce(communicator, codec, input, output, members, options);
}

namespace {

absl::StatusOr<CompressedTraffic> BucketAllReduce(Communicator& communicator, const CodecOptions& codec,
                                                  const float* input, float* output,
                                                  absl::Span<const CompressedBucketMember> members,
                                                  const CollectiveOptions& options) {
  const int64_t size = communicator.size();
  const int64_t rank = communicator.rank();
  // Reduce-scatter phase: every member split by BalancedSplit over the ranks, as its own
  // call splits it; rank d receives every member's chunk d, in member order, back to back
  // in `shards`. Each piece keeps its member's logical index, seed and residual (the
  // reduce-scatter's part of it: `count` floats indexed like the member).
  Layout layout(size);
  std::vector<GatherMember> gather(members.size());
  int64_t shard_total = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    const CompressedBucketMember& member = members[m];
    OF_RETURN_IF_ERROR(BalancedCounts(member.count, size, &gather[m].counts));
    const Split split = SplitOf(gather[m].counts);
    for (int64_t d = 0; d < size; ++d) {
      Piece piece{member.offset + split.offsets[d], gather[m].counts[d], split.offsets[d]};
      if (!member.residual.empty()) piece.residual = member.residual.data() + split.offsets[d];
      piece.encoding_seed = MixSeed(member.seed, rank);
      piece.traffic = member.traffic;
      layout[d].push_back(piece);
    }
    gather[m].output_offset = member.offset;
    gather[m].seed = member.seed;
    gather[m].traffic = member.traffic;
    // The gathered shard's residual follows the reduce-scatter's.
    if (!member.residual.empty()) gather[m].residual = member.residual.data() + member.count;
    shard_total += gather[m].counts[rank];
  }
  std::vector<float> shards(shard_total);
  OF_ASSIGN_OR_RETURN(CompressedTraffic traffic,
                      ExchangeAndReduce(communicator, codec, MixSeed(codec.seed, rank), input, layout,
                                        shards.data(), options));
  int64_t position = 0;
  for (GatherMember& member : gather) {
    member.shard = shards.data() + position;
    position += member.counts[rank];
  }
  OF_ASSIGN_OR_RETURN(CompressedTraffic gathered, GatherMembers(communicator, codec, gather, output, options));
  traffic += gathered;
  return traffic;
}

}  // namespace

}  // namespace oneflow
