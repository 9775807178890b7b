#include "oneflow_core/comm/reduce.h"

#include <algorithm>
#include <cstring>

namespace oneflow {
namespace {

// 2048 floats = 8 KiB: the accumulator and one block of each input stay in L1.
constexpr int64_t kBlock = 2048;

// Eight floats as one value (GCC/Clang vector extension): one AVX register under
// -march=x86-64-v3, two SSE registers elsewhere. Written out because -O2's cost model
// does not vectorize a loop of unknown trip count on its own (it left this one scalar,
// 4x slower than memory bandwidth).
using Lanes = float __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;

template <typename Op>
void ReduceBlocks(absl::Span<const float* const> inputs, float* output, int64_t count, Op op) {
  alignas(32) float accumulator[kBlock];
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t length = std::min(kBlock, count - begin);
    std::memcpy(accumulator, inputs[0] + begin, length * sizeof(float));
    for (size_t input = 1; input < inputs.size(); ++input) {
      const float* source = inputs[input] + begin;
      int64_t i = 0;
      for (; i + kLanes <= length; i += kLanes) {
        Lanes sum;
        Lanes next;
        std::memcpy(&sum, accumulator + i, sizeof(Lanes));
        std::memcpy(&next, source + i, sizeof(Lanes));  // unaligned load
        sum = op(sum, next);
        std::memcpy(accumulator + i, &sum, sizeof(Lanes));
      }
      for (; i < length; ++i) accumulator[i] = op(accumulator[i], source[i]);
    }
    std::memcpy(output + begin, accumulator, length * sizeof(float));
  }
}

}  // namespace

// Each op works on one float and on Lanes alike. max/min propagate NaN from any input
// (b != b is the NaN test); `|` rather than `||` so that it also works lane-wise.
void ReduceFloats(ReduceOp op, absl::Span<const float* const> inputs, float* output,
                  int64_t count) {
  switch (op) {
    case ReduceOp::kSum:
      ReduceBlocks(inputs, output, count, [](auto a, auto b) { return a + b; });
      return;
    case ReduceOp::kMax:
      ReduceBlocks(inputs, output, count,
                   [](auto a, auto b) { return (b > a) | (b != b) ? b : a; });
      return;
    case ReduceOp::kMin:
      ReduceBlocks(inputs, output, count,
                   [](auto a, auto b) { return (b < a) | (b != b) ? b : a; });
      return;
  }
}

}  // namespace oneflow
