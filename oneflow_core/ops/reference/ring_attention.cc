// Reference kernels of ring_shift and ring_causal_mask (oneflow_core/ops/ring_attention.cc).
#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {

// Whole along `axis`: the roll. One block of it (split over the ring): what the compiler's
// send/recv delivered is already the block this device holds after the shift, so a copy.
Outputs RingShift(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const int64_t axis = GetIntAttr(args.attrs, "axis", 0);
  const int64_t blocks = GetIntAttr(args.attrs, "blocks", 1);
  const int64_t shift = GetIntAttr(args.attrs, "shift", 1);
  const int64_t logical = args.input_layouts[0].logical.dim(axis);
  const int64_t held = x.shape.dim(axis);
  if (held * blocks == logical && held != logical) return std::vector<Dense>{x};
  if (held != logical) {
    return absl::InvalidArgumentError(absl::StrCat("ring_shift: x holds ", held, " of ", logical,
                                                   " along axis ", axis, ", neither all nor one of ", blocks,
                                                   " blocks"));
  }
  const int64_t block = logical / blocks;
  const int64_t by = ((shift % blocks + blocks) % blocks) * block;
  Dense out = x;
  for (int64_t i = 0; i < x.shape.NumElements(); ++i) {
    std::vector<int64_t> c = Unravel(i, x.shape);
    c[axis] = (c[axis] + by) % logical;
    out.values[Ravel(c, x.shape)] = x.values[i];
  }
  return std::vector<Dense>{out};
}

// Logical block index from the layout's offset on `axis`; positions within the blocks
// from the offsets of the last two axes (whole under every signature, read all the same).
Outputs RingCausalMask(const KernelArgs& args) {
  const Dense& x = args.in(0);
  const int64_t axis = GetIntAttr(args.attrs, "axis", 0);
  const int64_t step = GetIntAttr(args.attrs, "step", 0);
  const double fill = GetFloatAttr(args.attrs, "fill", -1e9);
  const int64_t rank = x.shape.rank();
  const TensorLayout& layout = args.input_layouts[0];
  const int64_t blocks = layout.logical.dim(axis);
  Dense out = x;
  for (int64_t i = 0; i < x.shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, x.shape);
    const int64_t query_block = c[axis] + layout.slice.range(axis).begin;
    const int64_t key_block = ((query_block - step) % blocks + blocks) % blocks;
    const int64_t row = c[rank - 2] + layout.slice.range(rank - 2).begin;
    const int64_t column = c[rank - 1] + layout.slice.range(rank - 1).begin;
    if (key_block > query_block || (key_block == query_block && column > row)) out.values[i] = fill;
  }
  return std::vector<Dense>{out};
}

}  // namespace reference
}  // namespace oneflow
