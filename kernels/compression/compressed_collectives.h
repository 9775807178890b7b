// Compressed collectives: reduce-scatter, all-gather and all-reduce whose payload travels
// encoded by a codec (codec.h), over the one Communicator interface. They use only
// AllToAll and AllGather with byte counts, which every backend has (in-process threads,
// Gloo, hierarchical), so this one implementation serves all of them.
//
//   reduce-scatter  every rank encodes each destination's chunk of its input (not its own
//                   chunk, which stays dense) -> one AllToAll of the encodings -> every
//                   rank decodes what it received and reduces in fp32, in rank order:
//                   out = ((c_0 + c_1) + c_2) + ... where c_r is rank r's chunk, decoded
//                   (or this rank's own, exact).
//   all-gather      every rank encodes its shard once -> AllGather of the encodings ->
//                   every rank decodes every shard, its own included, from the same bytes:
//                   the output has the same bits on every rank.
//   all-reduce      reduce-scatter over the balanced split of `count` (BalancedSplit),
//                   then all-gather of the reduced shards: same bits on every rank; the
//                   error is one encoding per contribution plus one of each reduced shard.
//
// Two-level forms, for a group that spans `nodes` nodes of `local_size` devices (group
// rank = node * local_size + local, as in the hierarchical communicator), following
// SDP4Bit's TLq-HS and ZeRO++'s qgZ / hpZ (REFERENCES.md): they take the in-node group
// (ranks = local index) and the cross-node group (the devices with this local index on
// every node; ranks = node index) and
//   reduce-scatter  in-node AllToAll with codecs.in_node (8-bit) of the chunks grouped by
//                   destination local index -> decode, reduce in local order -> cross-node
//                   AllToAll of those node partial sums re-encoded with codecs.cross_node
//                   (4-bit) -> decode, reduce in node order. The sum is associated
//                   (x_0 + ... + x_{L-1}) + (x_L + ...) + ..., like the hierarchical
//                   communicator's; the network carries 4 bits per element, the node 8.
//   all-gather      each shard is encoded once by its owner with codecs.gather, gathered
//                   across nodes, and the encoded bytes are forwarded through the node
//                   (no second quantization); every rank decodes every shard from the same
//                   bytes, so the output has the same bits on every rank.
//   all-reduce      two-level reduce-scatter + two-level all-gather over the balanced
//                   split of `count` into nodes * local_size shards.
//
// Common rules:
//  - Counts are per rank (size() entries, >= 0, the same on every rank), like
//    Communicator::ReduceScatter: uneven and empty ranks are ordinary.
//  - Reductions follow options.reduce_op (sum, max, min) on the decoded values, in fp32.
//  - Stochastic rounding (int4) keys element i of the tensor by its logical index, with
//    the seed mixed with the encoding rank (MixSeed, codec.h): the same call gives the same
//    bits every time, and different ranks' rounding errors are independent, so they
//    average out in the sum instead of adding up. Vary codec.seed per step.
//  - In place as in Communicator: reduce-scatter output == input + offset of this rank's
//    chunk, all-gather input == output + offset of this rank's shard, all-reduce output ==
//    input.
//  - Errors: INVALID_ARGUMENT naming the argument for bad options, counts or buffers
//    (every rank sees the same arguments, so all fail alike, before communicating);
//    failures of the communicator pass through unchanged (they start with
//    options.description). A failed call leaves the output unspecified.
//
// Bytes: every call returns the encoded bytes this rank exchanged with other ranks (the
// logical payload of the AllToAll / AllGather calls: a backend may route them through
// rings or relays, docs/collectives.md) and what the same exchanges weigh as dense f32,
// so the caller can add both to its metrics.
//
// Error: every call also returns the squared error of the encodings this rank made, so
// the metrics can say what compression costs in accuracy (docs/sbp_and_boxing.md,
// "Measured error in the metrics"). Codecs are pure functions (codec.h), so what the
// encoder reads back from its own bytes is exactly what every receiver decodes: the
// measure is of the real encoding, not a model, and needs no exchange. Without error
// feedback every encoding is metered as it is made (EncodeMeasured, codec.h: each group's
// codes read back while in cache, the error taken in the rotated domain, which the
// rotation's orthonormality makes the error of the decode), so metering adds no decode
// pass; equal to the decode-and-compare to float rounding. With error feedback the
// residual needs the decoded values anyway: a reduce-scatter decodes each chunk it sends
// into scratch and an all-gather its own shard, and each is compared with what was
// encoded. What is measured is each encoding against what was encoded: the caller's
// chunks, a two-level node partial sum, a reduced shard. A rank's own reduce-scatter
// chunk is never encoded and adds nothing. Metering reads the inputs and writes only
// scratch: the outputs have the same bits with or without it.
//
// Error feedback (EF; Seide et al. 2014 "1-bit SGD", Karimireddy et al. 2019 "EF-SGD";
// SDP4Bit's weight differences are the implicit form, REFERENCES.md): the reductions and
// the all-gather take a `residual`, this rank's memory of what its own encodings dropped.
// At every stage where this rank quantizes, it encodes x + r instead of x and keeps
// r' = (x + r) - decode(encode(x + r)), so nothing a codec drops is lost: it travels one
// call later. The
// sum over calls of what was decoded then tracks the sum of the true inputs with an error
// bounded by one call's quantization error (the last residual), where without EF a
// deterministic codec's bias adds up call after call. The stages and the residual's
// layout (floats, back to back; *ResidualElements below give its size):
//   reduce-scatter            the input's extent (sum(counts)); the own chunk is never
//                             encoded and its part stays 0.
//   all-gather                this rank's shard (counts[rank]): the shard owner's memory
//                             (the server side of DoubleSqueeze / 1-bit Adam's two-sided
//                             feedback), for a gradient gathered after its reduction (a
//                             chain reduce-scatter over one axis, all-reduce over another,
//                             all-gather over the first: the gathered shard is a reduced
//                             gradient, the same every iteration in kind).
//   all-reduce                the reduce-scatter's (count), then this rank's shard of the
//                             balanced split, encoded for the all-gather.
//   two-level reduce-scatter  the input's extent (in-node exchange), then the node
//                             partial sums this rank encodes across nodes (sum over nodes
//                             of the counts of its local index).
//   two-level all-reduce      the two-level reduce-scatter's, then the gathered shard's.
// The caller owns the residual (allocated once, zero at the start of training, kept from
// call to call and checkpointed with the optimizer state); an empty span turns EF off and
// any other size is INVALID_ARGUMENT. The residual is per rank: every rank keeps its own.
// A value whose encoding decoded non-finite leaves a residual of 0 (a NaN kept would
// poison every later call). Metering then measures each encoding against what was
// encoded (x + r). Only gradients may use EF: a residual carried into another tensor of
// the next iteration (an activation of other data) would be an error, not a correction;
// the compiler marks the steps (proto::Compression.error_feedback).
#ifndef KERNELS_COMPRESSION_COMPRESSED_COLLECTIVES_H_
#define KERNELS_COMPRESSION_COMPRESSED_COLLECTIVES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/compression/codec.h"
#include "oneflow_core/comm/communicator.h"

namespace oneflow {

struct CompressedTraffic {
  // Encoded bytes this rank addressed to other ranks (its AllToAll row without its own
  // entry; its shard once per peer for an all-gather) and received from them.
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  // The same exchanges as dense f32 (4 bytes per element).
  int64_t dense_bytes_sent = 0;
  int64_t dense_bytes_received = 0;
  // Over every element x this rank encoded: sum((decode(encode(x)) - x)^2) and sum(x^2),
  // in double. NaN when an encoded group held a NaN or Inf (it decodes to NaN, codec.h).
  double error_sq = 0;
  double signal_sq = 0;

  // sqrt(error_sq / signal_sq): the relative L2 error of all these encodings together, as
  // RoundTripRelativeError defines it for one (0 when nothing was encoded or all was 0).
  double RelativeError() const;

  // Every field adds (bytes, and the two sums: errors of separate calls combine as one).
  CompressedTraffic& operator+=(const CompressedTraffic& other);
};

// Adds sum((decoded - original)^2) and sum(original^2) over `count` elements to `traffic`:
// the metering of the collectives, public for benchmarks and for callers that encode
// themselves. In double; the order of the additions is fixed but not
// RoundTripRelativeError's, so the two agree to rounding, not bit for bit.
void AddEncodingError(const float* original, const float* decoded, int64_t count,
                      CompressedTraffic* traffic);

// Bytes per level: in_node the in-node exchanges, cross_node the cross-node ones. Error by
// codec: cross_node meters the encodings made with codecs.cross_node (the node partial
// sums), in_node those made with codecs.in_node and codecs.gather (a gathered shard is
// encoded once and travels both levels; ZeRO++'s qwZ and the boxing steps give it the
// in-node precision, kernels/boxing/boxing_step.h), so that a caller that labels in_node
// with the in-node codec and cross_node with the cross-node one labels every error right.
struct TwoLevelTraffic {
  CompressedTraffic in_node;
  CompressedTraffic cross_node;

  TwoLevelTraffic& operator+=(const TwoLevelTraffic& other);
};

// MixSeed (codec.h) gives the seed rank `rank` encodes with when the codec rounds
// stochastically: MixSeed(codec.seed, rank).

// Floats of the residual of each call with error feedback (the header's "Error
// feedback"), for this rank; 0 for arguments the call itself would refuse.
int64_t ReduceScatterResidualElements(absl::Span<const int64_t> counts);
int64_t AllGatherResidualElements(absl::Span<const int64_t> counts, int64_t rank);
int64_t AllReduceResidualElements(int64_t count, int64_t size, int64_t rank);
int64_t TwoLevelReduceScatterResidualElements(absl::Span<const int64_t> counts, int64_t local_size,
                                              int64_t local);
int64_t TwoLevelAllReduceResidualElements(int64_t count, int64_t nodes, int64_t local_size, int64_t node,
                                          int64_t local);

// `input` holds sum(counts) floats, chunk r (counts[r] floats) for rank r; `output`
// receives this rank's chunk reduced over ranks. `residual`: error feedback (empty: off).
absl::StatusOr<CompressedTraffic> CompressedReduceScatter(Communicator& communicator,
                                                          const CodecOptions& codec,
                                                          const float* input, float* output,
                                                          absl::Span<const int64_t> counts,
                                                          const CollectiveOptions& options,
                                                          absl::Span<float> residual = {});

// `input` holds this rank's counts[rank()] floats; `output` receives sum(counts) floats,
// every rank's shard in rank order, decoded. `residual`: error feedback on this rank's
// shard (counts[rank()] floats; empty: off); the shard is encoded with it added, so the
// output's own shard is decode(encode(input + residual)) on every rank alike.
absl::StatusOr<CompressedTraffic> CompressedAllGather(Communicator& communicator,
                                                      const CodecOptions& codec,
                                                      const float* input, float* output,
                                                      absl::Span<const int64_t> counts,
                                                      const CollectiveOptions& options,
                                                      absl::Span<float> residual = {});

// output[i] = reduce over ranks of input[i], i in [0, count), every rank the same count.
absl::StatusOr<CompressedTraffic> CompressedAllReduce(Communicator& communicator,
                                                      const CodecOptions& codec,
                                                      const float* input, float* output,
                                                      int64_t count,
                                                      const CollectiveOptions& options,
                                                      absl::Span<float> residual = {});

// One tensor of a gradient bucket reduced by CompressedBucketAllReduce: `count` floats at
// `offset` of the bucket, the seed its own call's codec would round with (CodecOptions::
// seed), and its own call's error-feedback residual (AllReduceResidualElements(count,
// size, rank) floats, or empty: off).
struct CompressedBucketMember {
  int64_t offset = 0;
  int64_t count = 0;
  uint64_t seed = 0;
  absl::Span<float> residual;
  // When set, the member's own traffic (what its own call would return) is added here.
  CompressedTraffic* traffic = nullptr;
};

// The compressed all-reduce of a gradient bucket (docs/gradient_buckets.md): every member
// is reduced exactly as CompressedAllReduce reduces it alone (codec with the member's
// seed, its slice of `input` and `output`, its residual): same balanced split, same
// groups (each member's chunks are encoded by themselves, so no codec group straddles
// two tensors and no scale is shared between a bias and a weight), same logical indices,
// same rank order of the sums. The output and residuals are bit for bit those of the
// members' own calls, and so are the encoded bytes; what changes is that the members'
// reduce-scatters travel in one AllToAll and their gathers in one AllGather: 2
// communicator calls per bucket instead of 2 per member. Members are in increasing
// offset order and do not overlap; floats between them are not touched. In place
// (output == input) is allowed. The traffic is the members' summed.
absl::StatusOr<CompressedTraffic> CompressedBucketAllReduce(Communicator& communicator,
                                                            const CodecOptions& codec, const float* input,
                                                            float* output,
                                                            absl::Span<const CompressedBucketMember> members,
                                                            const CollectiveOptions& options);

// The codecs of the two-level forms. Defaults follow SDP4Bit (int8 in groups of 512 in
// the node, int4 in groups of 128 across nodes, both rotated) and ZeRO++'s qwZ for the
// gathered shards (int8, groups of 128).
struct TwoLevelCodecs {
  CodecOptions in_node{Codec::kInt8, 512, /*hadamard=*/true};
  CodecOptions cross_node{Codec::kInt4, 128, /*hadamard=*/true};
  CodecOptions gather{Codec::kInt8, 128};
};

// As the flat forms, over nodes * local_size ranks given as their in-node group
// (size local_size, rank = local index) and cross-node group (size nodes, rank = node
// index); `counts` has nodes * local_size entries in group rank order. INVALID_ARGUMENT
// when the counts do not match the two groups' sizes.
absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedReduceScatter(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
    const float* input, float* output, absl::Span<const int64_t> counts,
    const CollectiveOptions& options, absl::Span<float> residual = {});

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedAllGather(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
    const float* input, float* output, absl::Span<const int64_t> counts,
    const CollectiveOptions& options);

absl::StatusOr<TwoLevelTraffic> TwoLevelCompressedAllReduce(
    Communicator& in_node, Communicator& cross_node, const TwoLevelCodecs& codecs,
    const float* input, float* output, int64_t count, const CollectiveOptions& options,
    absl::Span<float> residual = {});

}  // namespace oneflow

#endif  // KERNELS_COMPRESSION_COMPRESSED_COLLECTIVES_H_
