#include "oneflow_core/comm/reduce.h"

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "oneflow_core/simd_lanes.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace oneflow {
namespace {

// Eight floats as one value (F32x8, oneflow_core/simd_lanes.h). Written out because -O2's
// cost model does not vectorize a loop of unknown trip count on its own (it left the
// first version of this loop scalar, 4x slower than memory bandwidth).
constexpr int64_t kLanes = 8;
// Elements per step of the main loop: two cache lines, so the loop over inputs and the
// loop over outputs are paid once per 128 bytes, and a streaming step writes whole lines.
constexpr int64_t kStep = 4 * kLanes;
// Streaming stores start where outputs[0] is aligned to a cache line.
constexpr uintptr_t kLineBytes = 64;

F32x8 Load(const float* at) { return *reinterpret_cast<const F32x8Unaligned*>(at); }
void Store(float* at, F32x8 value) { *reinterpret_cast<F32x8Unaligned*>(at) = value; }

// `at` is 32-byte aligned.
void StreamStore(float* at, F32x8 value) {
#if defined(__AVX__)
  _mm256_stream_ps(at, value);
#else
  Store(at, value);
#endif
}

void FenceStreamingStores() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}

// Elements [begin, end) one at a time: the ends that do not fill a step.
template <typename Op>
void ReduceScalars(absl::Span<const float* const> inputs, absl::Span<float* const> outputs,
                   int64_t begin, int64_t end, Op op) {
  for (int64_t i = begin; i < end; ++i) {
    float value = inputs[0][i];
    for (size_t input = 1; input < inputs.size(); ++input) value = op(value, inputs[input][i]);
    for (float* output : outputs) output[i] = value;
  }
}

// Elements [begin, end), a multiple of kStep long. Every input is loaded at a step's
// indices before any output is stored there, which makes outputs that are inputs safe.
// streamed[j]: outputs[j] + begin is 32-byte aligned and is to be written around the
// caches.
template <typename Op>
void ReduceSteps(absl::Span<const float* const> inputs, absl::Span<float* const> outputs,
                 const char* streamed, int64_t begin, int64_t end, Op op) {
  for (int64_t i = begin; i < end; i += kStep) {
    const float* first = inputs[0] + i;
    F32x8 v0 = Load(first), v1 = Load(first + kLanes), v2 = Load(first + 2 * kLanes),
          v3 = Load(first + 3 * kLanes);
    for (size_t input = 1; input < inputs.size(); ++input) {
      const float* next = inputs[input] + i;
      v0 = op(v0, Load(next));
      v1 = op(v1, Load(next + kLanes));
      v2 = op(v2, Load(next + 2 * kLanes));
      v3 = op(v3, Load(next + 3 * kLanes));
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      float* out = outputs[j] + i;
      if (streamed[j]) {
        StreamStore(out, v0);
        StreamStore(out + kLanes, v1);
        StreamStore(out + 2 * kLanes, v2);
        StreamStore(out + 3 * kLanes, v3);
      } else {
        Store(out, v0);
        Store(out + kLanes, v1);
        Store(out + 2 * kLanes, v2);
        Store(out + 3 * kLanes, v3);
      }
    }
  }
}

template <typename Op>
void Reduce(absl::Span<const float* const> inputs, absl::Span<float* const> outputs, int64_t count,
            ReduceStores stores, Op op) {
  // Streaming: a scalar head up to the first cache line of outputs[0]; outputs whose
  // address is not 32-byte aligned there (another allocator's) take cached stores.
  int64_t head = 0;
  absl::InlinedVector<char, 8> streamed(outputs.size(), 0);
  bool streaming = false;
  if (stores == ReduceStores::kStreaming) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(outputs[0]);
    head = static_cast<int64_t>(((kLineBytes - address % kLineBytes) % kLineBytes) / sizeof(float));
    if (head > count) head = count;
    for (size_t j = 0; j < outputs.size(); ++j) {
      streamed[j] = reinterpret_cast<uintptr_t>(outputs[j] + head) % 32 == 0;
      streaming |= streamed[j] != 0;
    }
  }
  const int64_t steps_end = head + (count - head) / kStep * kStep;
  ReduceScalars(inputs, outputs, 0, head, op);
  ReduceSteps(inputs, outputs, streamed.data(), head, steps_end, op);
  ReduceScalars(inputs, outputs, steps_end, count, op);
  if (streaming) FenceStreamingStores();
}

}  // namespace

// Each op works on one float and on F32x8 alike. max/min propagate NaN from any input
// (b != b is the NaN test); `|` rather than `||` so that it also works lane-wise.
void ReduceFloatsToAll(ReduceOp op, absl::Span<const float* const> inputs,
                       absl::Span<float* const> outputs, int64_t count, ReduceStores stores) {
  if (count <= 0) return;
  switch (op) {
    case ReduceOp::kSum:
      Reduce(inputs, outputs, count, stores, [](auto a, auto b) { return a + b; });
      return;
    case ReduceOp::kMax:
      Reduce(inputs, outputs, count, stores,
             [](auto a, auto b) { return (b > a) | (b != b) ? b : a; });
      return;
    case ReduceOp::kMin:
      Reduce(inputs, outputs, count, stores,
             [](auto a, auto b) { return (b < a) | (b != b) ? b : a; });
      return;
  }
}

void ReduceFloats(ReduceOp op, absl::Span<const float* const> inputs, float* output,
                  int64_t count) {
  ReduceFloatsToAll(op, inputs, absl::MakeConstSpan(&output, 1), count, ReduceStores::kCached);
}

}  // namespace oneflow
