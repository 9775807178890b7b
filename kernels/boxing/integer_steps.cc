// The reducing kinds for integer tensors (i32, i64, u8). The communicator reduces floats
// only, so the members' parts travel as raw bytes and every member reduces them itself,
// in rank order ((x0 op x1) op x2 ...) as the float collectives do, so all members end
// with the same bits:
//   all_reduce      AllGather of every member's whole slice; member g receives
//                   (n - 1) * S bytes, against 2 (n - 1) / n * S for a ring all-reduce.
//   reduce_scatter  AllToAll, chunk (g -> h) = member h's dst slice cut out of member g's
//                   src slice; (n - 1) / n * S bytes, as a reduce-scatter.
// The integer tensors that reach a reduction are labels and token ids, tiny next to the
// float activations, so all_reduce's extra traffic buys not touching the Communicator
// interface (step_support.h says what is supported).
//
// A sum wraps modulo 2^bits: it is computed in the unsigned type of the same width,
// where overflow is defined and gives the two's complement bits of the signed sum.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/boxing/group_step.h"
#include "kernels/boxing/slice_boxes.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace boxing_internal {
namespace {

// output = parts[0] op parts[1] op ... op parts[n - 1], where part g is `count` elements
// of E at parts + g * count. Elements are read and written with memcpy: the output is
// the caller's buffer, which need not be aligned for E.
template <typename E, typename Op>
void ReduceParts(const char* parts, int64_t n, int64_t count, Op op, void* output) {
  if (count == 0) return;
  char* out = static_cast<char*>(output);
  std::memcpy(out, parts, count * sizeof(E));
  for (int64_t g = 1; g < n; ++g) {
    const char* part = parts + g * count * sizeof(E);
    for (int64_t i = 0; i < count; ++i) {
      E a;
      E b;
      std::memcpy(&a, out + i * sizeof(E), sizeof(E));
      std::memcpy(&b, part + i * sizeof(E), sizeof(E));
      a = op(a, b);
      std::memcpy(out + i * sizeof(E), &a, sizeof(E));
    }
  }
}

template <typename T>
void ReduceAs(ReduceOp reduce_op, const char* parts, int64_t n, int64_t count, void* output) {
  using Unsigned = std::make_unsigned_t<T>;
  switch (reduce_op) {
    case ReduceOp::kSum:  // unsigned: wraps, never undefined
      ReduceParts<Unsigned>(
          parts, n, count, [](Unsigned a, Unsigned b) { return static_cast<Unsigned>(a + b); },
          output);
      return;
    case ReduceOp::kMax:
      ReduceParts<T>(
          parts, n, count, [](T a, T b) { return std::max(a, b); }, output);
      return;
    case ReduceOp::kMin:
      ReduceParts<T>(
          parts, n, count, [](T a, T b) { return std::min(a, b); }, output);
      return;
  }
}

absl::Status ReduceInRankOrder(const GroupStep& step, DType dtype, const char* parts, int64_t count,
                               void* output) {
  switch (dtype) {
    case DType::kI32:
      ReduceAs<int32_t>(step.reduce_op, parts, step.size(), count, output);
      return absl::OkStatus();
    case DType::kI64:
      ReduceAs<int64_t>(step.reduce_op, parts, step.size(), count, output);
      return absl::OkStatus();
    case DType::kU8:
      ReduceAs<uint8_t>(step.reduce_op, parts, step.size(), count, output);
      return absl::OkStatus();
    default:  // CheckStepSupported let through a dtype this file does not reduce
      return absl::InternalError(
          absl::StrCat(step.name, ": no integer reduction for ", DTypeName(dtype)));
  }
}

}  // namespace

absl::Status RunIntegerAllReduce(const GroupStep& step, const BoxingStepArgs& args) {
  // P -> B: every member's src and dst slices are the same slice.
  const int64_t count = step.dst[step.me].NumElements();
  const int64_t bytes = count * step.element_size;
  std::vector<char>& gathered = step.receive_scratch;
  gathered.resize(step.size() * bytes);
  OF_RETURN_IF_ERROR(args.communicator->AllGather(args.input, gathered.data(),
                                                  std::vector<int64_t>(step.size(), bytes),
                                                  StepOptions(step, args)));
  return ReduceInRankOrder(step, args.dtype, gathered.data(), count, args.output);
}

absl::Status RunIntegerReduceScatter(const GroupStep& step, const BoxingStepArgs& args) {
  // Every member holds the same src slice X; member h's dst slice is its part of X.
  const int64_t n = step.size();
  std::vector<int64_t> matrix(n * n);
  for (int64_t g = 0; g < n; ++g) {
    for (int64_t h = 0; h < n; ++h)
      matrix[g * n + h] = step.dst[h].NumElements() * step.element_size;
  }
  const void* send =
      SendBufferFor(step.src[step.me], args.input, step.dst, step.element_size, &step.send_scratch);
  // Each incoming chunk is this member's whole dst slice, dense: the output's layout.
  const int64_t count = step.dst[step.me].NumElements();
  std::vector<char>& received = step.receive_scratch;
  received.resize(n * count * step.element_size);
  OF_RETURN_IF_ERROR(
      args.communicator->AllToAll(send, received.data(), matrix, StepOptions(step, args)));
  return ReduceInRankOrder(step, args.dtype, received.data(), count, args.output);
}

}  // namespace boxing_internal
}  // namespace oneflow
