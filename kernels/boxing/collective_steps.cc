// The collective kinds of RunBoxingStep. Each maps the step onto one communicator call
// whose chunks are the pieces the group members exchange:
//   all_reduce      the whole slice, reduced; no packing (src and dst slices are the same).
//   reduce_scatter  chunk g = member g's dst slice, cut out of the common src slice X.
//   all_gather      piece g = member g's src slice (∩ the common dst slice D).
//   all_to_all      chunk (g -> h) = member g's src slice ∩ member h's dst slice.
// The two reductions are the f32 ones; integer tensors go to integer_steps.cc, as the
// communicator reduces floats only. Compressed, each is the one call of
// kernels/compression on the same chunks: flat over `communicator`, or two-level over
// the in-node and cross-node communicators.
// Chunks are sent straight from the input and received straight into the output when
// they lie back to back there (a split on the outermost non-trivial axis); otherwise they
// are packed into / unpacked from a scratch buffer, which costs one extra pass over the
// bytes exchanged. Bytes on the wire are the collective's (docs/collectives.md).
#include <vector>

#include "kernels/boxing/group_step.h"
#include "kernels/boxing/slice_boxes.h"
#include "kernels/compression/codec.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace boxing_internal {
namespace {

// Elements -> bytes for each box.
std::vector<int64_t> ByteCounts(const std::vector<TensorSlice>& boxes, int64_t element_size) {
  std::vector<int64_t> counts;
  for (const TensorSlice& box : boxes) counts.push_back(box.NumElements() * element_size);
  return counts;
}

bool Compressed(const BoxingStepArgs& args) { return args.compression.codec != Codec::kNone; }

// The step's error-feedback residual (empty: none; boxing_step.h).
absl::Span<float> Residual(const GroupStep& step) { return absl::MakeSpan(step.residual); }

// Adds an act's compressed traffic to the step's totals.
absl::Status Account(const GroupStep& step, const absl::StatusOr<CompressedTraffic>& traffic) {
  if (!traffic.ok()) return traffic.status();
  step.traffic += *traffic;
  return absl::OkStatus();
}

absl::Status Account(const GroupStep& step, const absl::StatusOr<TwoLevelTraffic>& traffic) {
  if (!traffic.ok()) return traffic.status();
  step.traffic += traffic->in_node;
  step.cross_node_traffic += traffic->cross_node;
  return absl::OkStatus();
}

// The codecs of a two-level step (boxing_step.h, BoxingStepArgs::cross_node_compression):
// the all-gather phase of an all-reduce uses the in-node settings.
TwoLevelCodecs CodecsOf(const BoxingStepArgs& args) {
  TwoLevelCodecs codecs;
  codecs.in_node = args.compression;
  codecs.cross_node = args.cross_node_compression;
  codecs.gather = args.compression;
  return codecs;
}

}  // namespace

absl::Status RunAllReduce(const GroupStep& step, const BoxingStepArgs& args) {
  if (args.dtype != DType::kF32) return RunIntegerAllReduce(step, args);
  if (args.two_level()) {
    return Account(step, TwoLevelCompressedAllReduce(
                             *args.in_node_communicator, *args.cross_node_communicator, CodecsOf(args),
                             static_cast<const float*>(args.input), static_cast<float*>(args.output),
                             step.dst[step.me].NumElements(), StepOptions(step, args), Residual(step)));
  }
  if (Compressed(args)) {
    const auto* input = static_cast<const float*>(args.input);
    const int64_t count = step.dst[step.me].NumElements();
    return Account(step,
                   CompressedAllReduce(*args.communicator, args.compression, input,
                                       static_cast<float*>(args.output), count, StepOptions(step, args),
                                       Residual(step)));
  }
  return args.communicator->AllReduce(static_cast<const float*>(args.input),
                                      static_cast<float*>(args.output),
                                      step.dst[step.me].NumElements(), StepOptions(step, args));
}

absl::Status RunReduceScatter(const GroupStep& step, const BoxingStepArgs& args) {
  if (args.dtype != DType::kF32) return RunIntegerReduceScatter(step, args);
  std::vector<int64_t> counts;
  for (const TensorSlice& box : step.dst) counts.push_back(box.NumElements());
  const void* send =
      SendBufferFor(step.src[step.me], args.input, step.dst, step.element_size, &step.send_scratch);
  if (args.two_level()) {
    // Group rank = node * local_size + local (CheckCompression), the order of `counts`.
    return Account(step, TwoLevelCompressedReduceScatter(
                             *args.in_node_communicator, *args.cross_node_communicator, CodecsOf(args),
                             static_cast<const float*>(send), static_cast<float*>(args.output), counts,
                             StepOptions(step, args), Residual(step)));
  }
  if (Compressed(args)) {
    const auto* input = static_cast<const float*>(send);
    return Account(step,
                   CompressedReduceScatter(*args.communicator, args.compression, input,
                                           static_cast<float*>(args.output), counts, StepOptions(step, args),
                                           Residual(step)));
  }
  return args.communicator->ReduceScatter(static_cast<const float*>(send),
                                          static_cast<float*>(args.output), counts,
                                          StepOptions(step, args));
}

absl::Status RunAllGather(const GroupStep& step, const BoxingStepArgs& args) {
  const TensorSlice& destination = step.dst[step.me];
  std::vector<TensorSlice> pieces;
  for (const TensorSlice& source : step.src) pieces.push_back(Intersect(source, destination));
  const void* send = SendBufferFor(step.src[step.me], args.input, {pieces[step.me]},
                                   step.element_size, &step.send_scratch);
  void* receive =
      ReceiveBufferFor(destination, args.output, pieces, step.element_size, &step.receive_scratch);
  if (Compressed(args)) {
    std::vector<int64_t> counts;
    for (const TensorSlice& piece : pieces) counts.push_back(piece.NumElements());
    const auto* input = static_cast<const float*>(send);
    OF_RETURN_IF_ERROR(Account(step,
                               CompressedAllGather(*args.communicator, args.compression, input,
                                                   static_cast<float*>(receive), counts, StepOptions(step, args),
                                                   Residual(step))));
  } else {
    OF_RETURN_IF_ERROR(args.communicator->AllGather(send, receive, ByteCounts(pieces, step.element_size),
                                                    StepOptions(step, args)));
  }
  UnpackReceived(step.receive_scratch, pieces, destination, step.element_size, args.output);
  return absl::OkStatus();
}

absl::Status RunAllToAll(const GroupStep& step, const BoxingStepArgs& args) {
  const int64_t n = step.size();
  std::vector<int64_t> matrix(n * n);
  for (int64_t g = 0; g < n; ++g) {
    for (int64_t h = 0; h < n; ++h) {
      matrix[g * n + h] = Intersect(step.src[g], step.dst[h]).NumElements() * step.element_size;
    }
  }
  std::vector<TensorSlice> outgoing;  // to member h, in h order
  std::vector<TensorSlice> incoming;  // from member g, in g order
  for (int64_t h = 0; h < n; ++h) outgoing.push_back(Intersect(step.src[step.me], step.dst[h]));
  for (int64_t g = 0; g < n; ++g) incoming.push_back(Intersect(step.src[g], step.dst[step.me]));
  const void* send =
      SendBufferFor(step.src[step.me], args.input, outgoing, step.element_size, &step.send_scratch);
  void* receive = ReceiveBufferFor(step.dst[step.me], args.output, incoming, step.element_size,
                                   &step.receive_scratch);
  const absl::Status status =
      args.communicator->AllToAll(send, receive, matrix, StepOptions(step, args));
  if (!status.ok()) return status;
  UnpackReceived(step.receive_scratch, incoming, step.dst[step.me], step.element_size, args.output);
  return absl::OkStatus();
}

}  // namespace boxing_internal
}  // namespace oneflow
