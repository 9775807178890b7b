// Kernels whose values depend on where the device's slice sits in the logical tensor:
// dropout and dropout_grad (the mask is a function of seed, iteration and logical
// element index, so every layout drops the same elements and no mask is stored), and
// causal_mask (compares logical rows and columns).
#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/float8.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/philox.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace cpu {
namespace {

// Blocks computed together by the vector loop, in groups of four: two groups (eight
// blocks, 32 elements) were fastest here, 0.55 ns per element against 0.68 for one group
// (rounds wait on the multiplier's latency) and 0.56-0.64 for three or four (registers
// spill).
constexpr int kGroups = 2;
constexpr int64_t kStep = 2 * kGroups * kLanes;  // Elements per step.

// out = x * mask / (1 - rate), the mask drawn by logical index exactly as the reference
// draws it: kept iff LogicalRandom(seed, stream = step).BulkUniform(index) >= rate, that
// is word index % 4 of Philox block index / 4, computed as an integer comparison
// (KeepThreshold, philox.h). Each block is computed once for its four elements: a run
// that starts inside a block takes the block's remaining words one by one, then whole
// blocks eight at a time. An element's result is one float product or zero whichever
// path it takes, so every layout gives every element the same bits.
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
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  ForEachContiguousRun(
      x.layout.logical, x.layout.slice, [&](int64_t local, int64_t logical, int64_t length) {
        const float* from = in + local;
        float* to = out + local;
        uint64_t block = static_cast<uint64_t>(logical) / 4;
        int64_t i = 0;
        // A start inside a block: the block's remaining words.
        if (const int64_t skip = logical % 4; skip != 0) {
          const std::array<uint32_t, 4> words = random(block++);
          for (int64_t k = skip; k < 4 && i < length; ++k, ++i) {
            to[i] = (words[k] >> 8) >= threshold ? from[i] * scale : 0.0f;
          }
        }
#if defined(__AVX2__)
        // Eight blocks, 32 elements, a step (PhiloxBlocks::Blocks); the last step in part.
        // (word >> 8) < 2^24 and threshold <= 2^24, so a signed comparison is exact.
        const Int8 below = Int8{} + static_cast<int32_t>(threshold) - 1;
        // Eight words of Blocks', applied to the n elements from `at` (n < 8: in part).
        const Float8 scales = Splat<Float8>(scale);
        const auto apply = [from, to, below, scales](__m256i words, int64_t at, int64_t n) {
          Int8 bits;
          std::memcpy(&bits, &words, sizeof(bits));
          const Int8 keep = (Int8)((UInt8)bits >> 8) > below;
          if (n >= kLanes) {
            Store(to + at, keep ? Load(from + at) * scales : Float8{});
          } else {
            StorePartial(to + at, n, keep ? LoadPartial(from + at, n, 0.0f) * scales : Float8{});
          }
        };
        __m256i words[2 * kGroups];
        for (; i + kStep <= length; i += kStep, block += 4 * kGroups) {
          random.Blocks<kGroups>(block, words);
          for (int k = 0; k < 2 * kGroups; ++k) apply(words[k], i + k * kLanes, kLanes);
        }
        if (i < length) {
          random.Blocks<kGroups>(block, words);
          for (int k = 0; k < 2 * kGroups && i + k * kLanes < length; ++k) {
            apply(words[k], i + k * kLanes, std::min<int64_t>(kLanes, length - i - k * kLanes));
          }
        }
#else
        for (; i < length; block += 1) {
          const std::array<uint32_t, 4> words = random(block);
          for (int k = 0; k < 4 && i < length; ++k, ++i) {
            to[i] = (words[k] >> 8) >= threshold ? from[i] * scale : 0.0f;
          }
        }
#endif
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
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = (m * rows + r) * cols;
      // Local columns c with c + col_offset <= r + row_offset keep their value.
      const int64_t kept = std::clamp<int64_t>(r + row_offset - col_offset + 1, 0, cols);
      std::copy(in + at, in + at + kept, out + at);
      std::fill(out + at + kept, out + at + cols, fill);
    }
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace oneflow
