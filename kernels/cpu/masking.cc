// Kernels whose values depend on where the device's slice sits in the logical tensor:
// dropout and dropout_grad (the mask is a function of seed, iteration and logical
// element index, so every layout drops the same elements and no mask is stored), and
// causal_mask (compares logical rows and columns).
#include <algorithm>
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

// out = x * mask / (1 - rate), the mask drawn by logical index exactly as the reference
// draws it: kept iff LogicalRandom(seed, stream = step).Uniform(index) >= rate, computed
// as an integer comparison (KeepThreshold, philox.h).
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
  const PhiloxWordZero random(static_cast<uint64_t>(GetIntAttr(attrs, "seed", 0)),
                              static_cast<uint64_t>(context.step));
  const float* in = x.As<const float>();
  float* out = context.outputs[0].As<float>();
  ForEachContiguousRun(
      x.layout.logical, x.layout.slice, [&](int64_t local, int64_t logical, int64_t length) {
        const float* from = in + local;
        float* to = out + local;
#if defined(__AVX2__)
        // Eight mask words at a time (philox.h), the tail through the same code.
        for (int64_t i = 0; i < length; i += kLanes) {
          uint32_t words[kLanes];
          random.Eight(static_cast<uint64_t>(logical + i), words);
          UInt8 bits;
          std::memcpy(&bits, words, sizeof(bits));
          const Int8 keep = (bits >> 8) >= threshold;
          const int64_t n = length - i;
          const Float8 values = n >= kLanes ? Load(from + i) : LoadPartial(from + i, n, 0.0f);
          const Float8 result = keep ? values * scale : Float8{};
          if (n >= kLanes) {
            Store(to + i, result);
          } else {
            StorePartial(to + i, n, result);
          }
        }
#else
        for (int64_t i = 0; i < length; ++i) {
          const bool keep = (random(static_cast<uint64_t>(logical + i)) >> 8) >= threshold;
          to[i] = keep ? from[i] * scale : 0.0f;
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
