// The pieces the flat (compressed_collectives.cc) and two-level
// (two_level_compressed_collectives.cc) compressed collectives share: argument and
// residual checks, the codec as a payload format, error feedback's compensate / keep,
// and the exchange-and-reduce step both reduce-scatters are made of. Private to the
// compressed_collectives library; the contracts are in compressed_collectives.h.
#ifndef KERNELS_COMPRESSION_COMPRESSED_EXCHANGE_H_
#define KERNELS_COMPRESSION_COMPRESSED_EXCHANGE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/comm/communicator.h"

namespace oneflow {
namespace compressed_exchange {

// The codec as CollectiveOptions::payload_format (communicator.h): ranks that disagree on
// how the bytes are encoded fail with INVALID_ARGUMENT before any byte moves, even when
// the byte counts happen to match (fp8 and int8 at one group size). Bits 0-7: codec + 1
// (0 stays "dense f32"); bit 8: hadamard; bit 9: stochastic rounding; bits 10-31: group
// size (sizes past 2^22 - 1 share the top value).
CollectiveOptions Encoded(const CollectiveOptions& options, const CodecOptions& codec);

constexpr int64_t kDenseBytes = sizeof(float);

// A run of elements one rank sends to one destination: `count` floats at `offset` of the
// sender's buffer, whose first element has logical index `logical_index` in the tensor
// (the key of stochastic rounding). Every rank has the same pieces: they come from the
// counts, which every rank passes alike.
struct Piece {
  int64_t offset = 0;
  int64_t count = 0;
  int64_t logical_index = 0;
  // A bucketed call (CompressedBucketAllReduce) packs several tensors' pieces into one
  // exchange; each piece is then encoded as its own tensor's call would encode it: with
  // that tensor's error-feedback residual (`count` floats; null: the call's `residual`
  // at `offset`, if any) and that tensor's encoding seed (unset: the call's).
  float* residual = nullptr;
  std::optional<uint64_t> encoding_seed;
  // When set, also receives this piece's bytes (sent and received) and encoding error,
  // so that a bucketed call can meter each tensor apart.
  CompressedTraffic* traffic = nullptr;
};
// pieces[d]: what each rank sends to rank d, in order; rank d reduces piece j over the
// senders into the j-th run of its output.
using Layout = std::vector<std::vector<Piece>>;

absl::Status Invalid(const CollectiveOptions& options, absl::string_view call,
                     absl::string_view message);

absl::Status CheckArguments(const CollectiveOptions& options, absl::string_view call,
                            const CodecOptions& codec, absl::Span<const int64_t> counts,
                            int64_t group_size, const float* input, int64_t input_count,
                            const float* output, int64_t output_count);

int64_t EncodedBytesOf(const CodecOptions& codec, const std::vector<Piece>& pieces);

int64_t ElementsOf(const std::vector<Piece>& pieces);

bool Overlaps(const float* a, int64_t a_count, const float* b, int64_t b_count);

// Error feedback on one encoding (compressed_collectives.h, "Error feedback"):
// `compensated` = `original` + `residual`, the values to encode.
void Compensate(const float* original, const float* residual, int64_t count, float* compensated);

// ... and after it: residual = compensated - decoded, what the codec dropped. A value
// that decoded non-finite (its group held a NaN or Inf) leaves 0: a NaN carried on would
// poison every later step, while the step that saw it fails or is skipped anyway.
void KeepResidual(const float* compensated, const float* decoded, int64_t count, float* residual);

// The compressed reduce-scatter step over one communicator: every rank encodes its pieces
// for each other rank (its own stay dense), one AllToAll moves them, and every rank
// reduces its pieces over the senders in rank order into `output` (the pieces of
// layout[rank] back to back; it must not overlap `input`). With `residual` (null: no
// error feedback; else indexed like `input`), each sent piece is encoded with its
// residual added and leaves what its encoding dropped there; a piece's own `residual`
// and `encoding_seed`, when set, take the place of the call's for that piece.
absl::StatusOr<CompressedTraffic> ExchangeAndReduce(Communicator& communicator,
                                                    const CodecOptions& codec,
                                                    uint64_t encoding_seed, const float* input,
                                                    const Layout& layout, float* output,
                                                    const CollectiveOptions& options,
                                                    float* residual = nullptr);

// Encodes this rank's shard for a gather. Without error feedback it meters the encoding
// as it makes it (EncodeMeasured, into *measured); with it (error_feedback true) the
// metering waits for DecodeOwnShard, whose decode the residual needs anyway.
void EncodeOwnShard(const CodecOptions& encoding, const float* input, int64_t count, uint8_t* out,
                    int64_t first_index, bool error_feedback, EncodingErrorSums* measured);

// Decodes this rank's gathered shard into `destination`, its place in the output (the
// decode every gather needs anyway), and adds its metering to *traffic: `measured` when
// EncodeOwnShard took it (null with error feedback), else measured here against `input`.
// In place (`input` is `destination`) that decodes into scratch first, so that the
// original is still there to compare with.
void DecodeOwnShard(const CodecOptions& codec, const uint8_t* encoded, const float* input,
                    int64_t count, float* destination, const EncodingErrorSums* measured,
                    CompressedTraffic* traffic);

// Per-rank offsets of a tensor split by `counts`, and its total.
struct Split {
  std::vector<int64_t> offsets;
  int64_t total = 0;
};
Split SplitOf(absl::Span<const int64_t> counts);

absl::Status BalancedCounts(int64_t count, int64_t parts, std::vector<int64_t>* counts);

// Error feedback's residual: empty (off) or exactly `elements` floats.
absl::Status CheckResidual(const CollectiveOptions& options, absl::string_view call,
                           absl::Span<float> residual, int64_t elements);

// The residual's part [offset, offset + count), or null when error feedback is off.
float* ResidualPart(absl::Span<float> residual, int64_t offset);

}  // namespace compressed_exchange
}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_COMPRESSED_EXCHANGE_H_
