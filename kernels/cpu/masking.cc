// Kernels whose values depend on where the device's slice sits in the logical tensor:
// dropout and dropout_grad (the mask is a function of seed, iteration and logical
// element index, so every layout drops the same elements and no mask is stored), and
// causal_mask (compares logical rows and columns).
#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/f32x8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/philox.h"
#include "kernels/cpu/stream_store.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace cpu {
namespace {

// The mask's arguments for one kernel call.
struct Mask {
  const PhiloxBlocks& random;
  uint32_t threshold;  // KeepThreshold(rate)
  float scale;         // 1 / (1 - rate)
};

// The elements of `block` on, its first `skip` words left out, one block at a time, up to
// `length` elements; returns how many: heads that start inside a block, and everything
// where there is no vector code.
inline int64_t DropoutByBlock(const Mask& mask, const float* from, float* to, uint64_t block,
                              int64_t skip, int64_t length) {
  int64_t i = 0;
  for (; i < length; ++block, skip = 0) {
    const std::array<uint32_t, 4> words = mask.random(block);
    for (int64_t k = skip; k < 4 && i < length; ++k, ++i) {
      to[i] = (words[k] >> 8) >= mask.threshold ? from[i] * mask.scale : 0.0f;
    }
  }
  return i;
}

#if defined(__AVX2__)
// Eight words of Blocks' applied to the n elements at `from` (n < 8: in part): the kept
// ones scaled, the others 0. (word >> 8) < 2^24 and threshold <= 2^24, so a signed
// comparison against threshold - 1 is exact.
inline __attribute__((always_inline)) F32x8 ApplyWords(__m256i words, const float* from, int64_t n,
                                                        I32x8 below, F32x8 scales) {
  I32x8 bits;
  std::memcpy(&bits, &words, sizeof(bits));
  const I32x8 keep = (I32x8)((U32x8)bits >> 8) > below;
  return keep ? (n >= kLanes ? Load(from) : LoadPartial(from, n, 0.0f)) * scales : F32x8{};
}

// Whole steps of 16 * kGroups elements, from the first element of `block`, while they fit
// in `length`; returns the elements done. Blocks computed together, in groups of four: on
// AVX2, two groups (eight blocks, 32 elements) were fastest here, 0.55 ns per element
// against 0.68 for one group (rounds wait on the multiplier's latency) and 0.56-0.64 for
// three or four (registers spill).
constexpr int kGroups = 2;
inline int64_t DropoutSteps(const Mask& mask, const float* from, float* to, uint64_t block,
                            int64_t length) {
  constexpr int64_t kStep = 16 * kGroups;
  const I32x8 below = I32x8{} + static_cast<int32_t>(mask.threshold) - 1;
  const F32x8 scales = Splat<F32x8>(mask.scale);
  __m256i words[2 * kGroups];
  int64_t i = 0;
  for (; i + kStep <= length; i += kStep, block += 4 * kGroups) {
    mask.random.Blocks<kGroups>(block, words);
    for (int k = 0; k < 2 * kGroups; ++k) {
      Store(to + i + k * kLanes,
            ApplyWords(words[k], from + i + k * kLanes, kLanes, below, scales));
    }
  }
  return i;
}

#if defined(OF_AVX512_CODE)
// DropoutSteps with Blocks512 (philox.h), compiled for AVX-512 and run where
// CpuHasAvx512() (cpu_features.h): six groups (24 blocks, 96 elements) a step, which the
// 32 registers hold. Six groups were 0.42 ns per element on [4096, 4096] where four were
// 0.43-0.46 and three 0.53 (the AVX2 steps: 0.62).
constexpr int kGroups512 = 6;
OF_TARGET_AVX512 int64_t DropoutSteps512(const Mask& mask, const float* from, float* to,
                                         uint64_t block, int64_t length) {
  constexpr int64_t kStep = 16 * kGroups512;
  const I32x8 below = I32x8{} + static_cast<int32_t>(mask.threshold) - 1;
  const F32x8 scales = Splat<F32x8>(mask.scale);
  __m256i words[2 * kGroups512];
  int64_t i = 0;
  for (; i + kStep <= length; i += kStep, block += 4 * kGroups512) {
    mask.random.Blocks512<kGroups512>(block, words);
    for (int k = 0; k < 2 * kGroups512; ++k) {
      Store(to + i + k * kLanes,
            ApplyWords(words[k], from + i + k * kLanes, kLanes, below, scales));
    }
  }
  return i;
}
#endif
#endif  // __AVX2__

// One contiguous run of `length` elements from logical index `logical` (ApplyDropoutMask):
// the rest of a block it starts inside of, whole vector steps, then the last step in
// part. Each block is computed once for its four elements.
//
// The output is stored plainly, even where it is larger than the caches: streaming stores
// (stream_store.h) made this kernel slower (0.47-0.49 ns per element on [4096, 4096]
// against 0.39-0.41), unlike the kernels that do little arithmetic per element.
void DropoutRun(const Mask& mask, bool avx512, const float* from, float* to, uint64_t logical,
                int64_t length) {
  uint64_t block = logical / 4;
  int64_t i = 0;
  if (const int64_t skip = logical % 4; skip != 0) {
    i = DropoutByBlock(mask, from, to, block++, skip, std::min<int64_t>(length, 4 - skip));
  }
#if defined(__AVX2__)
  int64_t done = 0;
#if defined(OF_AVX512_CODE)
  if (avx512) done = DropoutSteps512(mask, from + i, to + i, block, length - i);
#else
  (void)avx512;
#endif
  i += done;
  block += done / 4;
  done = DropoutSteps(mask, from + i, to + i, block, length - i);
  i += done;
  block += done / 4;
  if (i < length) {
    // The last step in part: one vector step's words, applied to what is left.
    __m256i words[2 * kGroups];
    mask.random.Blocks<kGroups>(block, words);
    const I32x8 below = I32x8{} + static_cast<int32_t>(mask.threshold) - 1;
    const F32x8 scales = Splat<F32x8>(mask.scale);
    for (int k = 0; i < length; ++k, i += kLanes) {
      const int64_t n = std::min<int64_t>(kLanes, length - i);
      StorePartial(to + i, n, ApplyWords(words[k], from + i, n, below, scales));
    }
  }
#else
  (void)avx512;
  DropoutByBlock(mask, from + i, to + i, block, 0, length - i);
#endif
}

// out = x * mask / (1 - rate), the mask drawn by logical index exactly as the reference
// draws it: kept iff LogicalRandom(seed, stream = step).BulkUniform(index) >= rate, that
// is word index % 4 of Philox block index / 4, computed as an integer comparison
// (KeepThreshold, philox.h). Each block is computed once for its four elements: a run
// that starts inside a block takes the block's remaining words one by one, then whole
// blocks 24 (AVX-512) or 8 (AVX2) at a time. An element's result is one float product or
// zero whichever path it takes, so every layout (and either instruction set) gives every
// element the same bits.
absl::Status ApplyDropoutMask(const KernelContext& context, const char* kernel, const char* input) {
  OF_RETURN_IF_ERROR(CheckArguments(kernel, context, {{input}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  OF_RETURN_IF_ERROR(CheckLayout(kernel, input, x));
  OF_RETURN_IF_ERROR(CheckShape(kernel, "out", context.outputs[0].shape, x.shape,
                                absl::StrCat("the shape of ", input)));
  const AttrMap& attrs = AttrsOf(context);
  const double rate = GetFloatAttr(attrs, "rate", 0.0);
  if (!(rate >= 0.0 && rate < 1.0)) {
    return KernelError(kernel, "attribute rate=", rate, " is out of range; valid: 0 <= rate < 1");
  }
  const uint32_t threshold = KeepThreshold(rate);
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  const PhiloxBlocks random(static_cast<uint64_t>(GetIntAttr(attrs, "seed", 0)),
                            static_cast<uint64_t>(context.step));
  const Mask mask{random, threshold, scale};
  const bool avx512 = CpuHasAvx512();
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  ForEachContiguousRun(
      x.layout.logical, x.layout.slice, [&](int64_t local, int64_t logical, int64_t length) {
        DropoutRun(mask, avx512, in + local, out + local, static_cast<uint64_t>(logical), length);
      });
  return absl::OkStatus();
}

}  // namespace

absl::Status Dropout(const KernelContext& context) {
  return ApplyDropoutMask(context, "dropout", "x");
}

// The same mask as the forward op of the same seed and iteration.
absl::Status DropoutGrad(const KernelContext& context) {
  return ApplyDropoutMask(context, "dropout_grad", "dy");
}

// x [..., s, s]: entries whose logical column exceeds their logical row become `fill`.
// The last two axes are whole under every signature the op offers, but the offsets are
// read from the layout all the same, as the reference does.
absl::Status CausalMask(const KernelContext& context) {
  constexpr char kKernel[] = "causal_mask";
  OF_RETURN_IF_ERROR(CheckArguments(kKernel, context, {{"x"}}, {{"out"}}));
  const KernelArgument& x = context.inputs[0];
  const int64_t rank = x.shape.rank();
  if (rank < 2) {
    return KernelError(kKernel, "input 'x' must have rank >= 2, got ", x.shape.ToString());
  }
  OF_RETURN_IF_ERROR(CheckLayout(kKernel, "x", x));
  OF_RETURN_IF_ERROR(CheckShape(kKernel, "out", context.outputs[0].shape, x.shape, "x's shape"));
  const float fill = static_cast<float>(GetFloatAttr(AttrsOf(context), "fill", -1e9));
  const int64_t row_offset = x.layout.slice.range(rank - 2).begin;
  const int64_t col_offset = x.layout.slice.range(rank - 1).begin;
  const int64_t rows = x.shape.dim(rank - 2);
  const int64_t cols = x.shape.dim(rank - 1);
  const int64_t matrices = rows * cols == 0 ? 0 : x.NumElements() / (rows * cols);
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  // One vector loop per row, each lane x or fill by its column (rather than a copy and a
  // fill, which split the row at an arbitrary column), streaming for large outputs
  // (stream_store.h).
  const F32x8 fills = Splat<F32x8>(fill);
  const I32x8 lanes{0, 1, 2, 3, 4, 5, 6, 7};
  WithStreaming(ShouldStream(x.NumElements() * int64_t{sizeof(float)}), [&](auto stream) {
    for (int64_t m = 0; m < matrices; ++m) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t at = (m * rows + r) * cols;
        // Local columns c with c + col_offset <= r + row_offset keep their value.
        const int64_t kept = std::clamp<int64_t>(r + row_offset - col_offset + 1, 0, cols);
        const float* from = in + at;
        WriteLanes<stream()>(out + at, cols, [&](int64_t i, int64_t count) {
          const I32x8 keep = lanes < static_cast<int32_t>(std::min<int64_t>(kept - i, kLanes));
          return keep ? LoadLanes(from, i, count) : fills;
        });
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
