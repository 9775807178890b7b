// Test helpers shared by the compressed collectives' tests: a communicator wrapper that
// counts the bytes of AllToAll and AllGather, reproducible data, the codecs under test,
// and the sequential reference of one contribution's trip over the wire. The groups of
// every backend come from comm_testing::CommunicatorFactory.
#ifndef KERNELS_COMPRESSION_COMPRESSED_COLLECTIVES_TESTING_H_
#define KERNELS_COMPRESSION_COMPRESSED_COLLECTIVES_TESTING_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/comm/in_process/communicator.h"

namespace oneflow {
namespace compression_testing {

// Forwards every call and counts the bytes this rank sends to and receives from other
// ranks in AllToAll and AllGather (the calls compressed collectives use).
class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(Communicator* inner) : inner_(inner) {}

  int64_t sent = 0;
  int64_t received = 0;

  int64_t size() const override { return inner_->size(); }
  int64_t rank() const override { return inner_->rank(); }
  std::string Name() const override { return inner_->Name(); }
  absl::Status AllReduce(const float* input, float* output, int64_t count,
                         const CollectiveOptions& options) override {
    return inner_->AllReduce(input, output, count, options);
  }
  absl::Status ReduceScatter(const float* input, float* output, absl::Span<const int64_t> counts,
                             const CollectiveOptions& options) override {
    return inner_->ReduceScatter(input, output, counts, options);
  }
  absl::Status AllGather(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                         const CollectiveOptions& options) override {
    for (int64_t r = 0; r < size(); ++r) {
      if (r == rank()) {
        sent += (size() - 1) * byte_counts[r];
      } else {
        received += byte_counts[r];
      }
    }
    return inner_->AllGather(input, output, byte_counts, options);
  }
  absl::Status AllToAll(const void* input, void* output, absl::Span<const int64_t> byte_counts,
                        const CollectiveOptions& options) override {
    for (int64_t peer = 0; peer < size(); ++peer) {
      if (peer == rank()) continue;
      sent += byte_counts[rank() * size() + peer];
      received += byte_counts[peer * size() + rank()];
    }
    return inner_->AllToAll(input, output, byte_counts, options);
  }
  absl::Status Broadcast(void* buffer, int64_t bytes, int64_t root,
                         const CollectiveOptions& options) override {
    return inner_->Broadcast(buffer, bytes, root, options);
  }
  absl::Status Send(const void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override {
    return inner_->Send(data, bytes, peer, options);
  }
  absl::Status Recv(void* data, int64_t bytes, int64_t peer,
                    const CollectiveOptions& options) override {
    return inner_->Recv(data, bytes, peer, options);
  }
  void Abort(const absl::Status& cause) override { inner_->Abort(cause); }

 private:
  Communicator* inner_;
};

// Groups of in-process communicators, owned until this is destroyed: for tests of one
// backend only (compression_error_meter_test). Tests of every backend take their groups
// from comm_testing::CommunicatorFactory (oneflow_core/comm/testing/communicator_factory.h).
class InProcessBackend {
 public:
  std::vector<Communicator*> MakeGroup(int64_t ranks, const std::string& name) {
    groups_.push_back(std::move(InProcessGroup::Create(ranks, name)).value());
    std::vector<Communicator*> communicators;
    for (int64_t r = 0; r < ranks; ++r) communicators.push_back(&groups_.back()->communicator(r));
    return communicators;
  }

 private:
  std::vector<std::unique_ptr<InProcessGroup>> groups_;
};

// Data: a Gaussian-looking, reproducible value per (rank, element) (a sum of uniforms).
inline float Value(int64_t rank, int64_t element) {
  uint64_t state =
      static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull + element * 0xD1B54A32D192ED03ull;
  float sum = 0.0f;
  for (int k = 0; k < 4; ++k) {
    state ^= state >> 31;
    state *= 0xBF58476D1CE4E5B9ull;
    state ^= state >> 29;
    sum += static_cast<float>(state >> 40) / 16777216.0f - 0.5f;
  }
  return sum * 1.7f;
}

inline std::vector<float> RankInput(int64_t rank, int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = Value(rank, i);
  return values;
}

// Uneven per-rank counts with an empty rank: e.g. 4 ranks -> {3, 0, 5, 2} * scale + extra.
inline std::vector<int64_t> UnevenCounts(int64_t ranks, int64_t scale) {
  std::vector<int64_t> counts(ranks);
  for (int64_t r = 0; r < ranks; ++r) counts[r] = ((r * 5 + 3) % 7 % 6) * scale + (r % 3);
  if (ranks > 1) counts[1] = 0;
  return counts;
}

inline std::vector<int64_t> Offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  return offsets;
}

inline int64_t Sum(const std::vector<int64_t>& counts) {
  int64_t sum = 0;
  for (int64_t count : counts) sum += count;
  return sum;
}

// What rank `sender` contributes after the wire: its values encoded with its seed and
// the logical index of the first element, then decoded.
inline std::vector<float> ThroughTheWire(const CodecOptions& codec, int64_t sender,
                                         const float* values, int64_t count, int64_t first_index) {
  CodecOptions encoding = codec;
  encoding.seed = MixSeed(codec.seed, sender);
  std::vector<uint8_t> encoded(EncodedBytes(codec, count));
  Encode(encoding, values, count, encoded.data(), first_index);
  std::vector<float> decoded(count);
  Decode(codec, encoded.data(), count, decoded.data());
  return decoded;
}

struct NamedCodec {
  const char* name;
  CodecOptions options;
  double bound;  // relative L2 error of one encoding, with margin
};

inline std::vector<NamedCodec> Codecs() {
  CodecOptions stochastic{Codec::kInt4, 64, /*hadamard=*/true, /*stochastic_rounding=*/true, 7};
  return {
      {"fp8e4m3", {Codec::kFp8E4M3, 128}, 0.04},
      {"fp8e5m2_hadamard", {Codec::kFp8E5M2, 32, true}, 0.08},
      {"int8_hadamard", {Codec::kInt8, 128, true}, 0.015},
      {"int4_odd_groups", {Codec::kInt4, 5}, 0.2},
      {"int4_stochastic", stochastic, 0.25},
      {"fp8e4m3_hadamard", {Codec::kFp8E4M3, 32, true}, 0.04},
      {"bf16", {Codec::kBf16, 1}, 0.004},  // 2^-8 per element at most
  };
}

inline double Norm(const float* values, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += static_cast<double>(values[i]) * values[i];
  return std::sqrt(sum);
}

inline double Distance(const float* a, const float* b, int64_t count) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double difference = static_cast<double>(a[i]) - b[i];
    sum += difference * difference;
  }
  return std::sqrt(sum);
}

}  // namespace compression_testing
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_COMPRESSED_COLLECTIVES_TESTING_H_
