// Reference kernels of the ops that move, cut, join, reduce and broadcast elements.
// They index by physical shapes, so on a device they act on its slices exactly as the
// signatures promise (a slice of an axis the op keeps whole keeps the op's begin).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "oneflow_core/ops/op_util.h"
#include "oneflow_core/ops/reference/kernels.h"

namespace oneflow {
namespace reference {
namespace {

// Sums `x` into `out` (zeroed), element c of x landing at map(c).
Dense SumInto(const Dense& x, Dense out,
              const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& map) {
  for (int64_t i = 0; i < x.shape.NumElements(); ++i) {
    out.values[Ravel(map(Unravel(i, x.shape)), out.shape)] += x.values[i];
  }
  return out;
}

absl::StatusOr<Dense> Reduce(const KernelArgs& args) {
  const Dense& x = args.in(0);
  absl::StatusOr<std::vector<int64_t>> axes = op_util::NormalizeAxes(
      "axes", GetIntsAttr(args.attrs, "axes"), x.shape.rank(), /*empty_means_all=*/true);
  if (!axes.ok()) return axes.status();
  const bool keep = GetBoolAttr(args.attrs, "keep_dims", false);
  return SumInto(x, args.NewOutput(0), [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> oc;
    for (int64_t axis = 0; axis < x.shape.rank(); ++axis) {
      const bool reduced = std::binary_search(axes->begin(), axes->end(), axis);
      if (!reduced) oc.push_back(c[axis]);
      if (reduced && keep) oc.push_back(0);
    }
    return oc;
  });
}

}  // namespace

Outputs Reshape(const KernelArgs& args) {
  Dense out = args.NewOutput(0);
  if (out.values.size() != args.in(0).values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", args.in(0).shape.ToString(),
                                                   " to ", out.shape.ToString()));
  }
  out.values = args.in(0).values;
  return std::vector<Dense>{out};
}

Outputs Transpose(const KernelArgs& args) {
  const std::vector<int64_t> perm = GetIntsAttr(args.attrs, "perm");
  const Dense& x = args.in(0);
  Dense out = args.NewOutput(0);
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, out.shape);
    std::vector<int64_t> ic(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) ic[perm[j]] = c[j];
    out.values[i] = x.values[Ravel(ic, x.shape)];
  }
  return std::vector<Dense>{out};
}

Outputs ReduceSum(const KernelArgs& args) {
  absl::StatusOr<Dense> out = Reduce(args);
  if (!out.ok()) return out.status();
  return std::vector<Dense>{*out};
}

// Divides by the logical count of reduced elements, so the partial sums of devices
// holding parts of a reduced axis add up to the mean.
Outputs ReduceMean(const KernelArgs& args) {
  absl::StatusOr<Dense> out = Reduce(args);
  if (!out.ok()) return out.status();
  const Shape& logical = args.input_layouts[0].logical;
  const std::vector<int64_t> axes = *op_util::NormalizeAxes(
      "axes", GetIntsAttr(args.attrs, "axes"), logical.rank(), /*empty_means_all=*/true);
  double count = 1;
  for (int64_t axis : axes) count *= static_cast<double>(logical.dim(axis));
  for (double& v : out->values) v /= count;
  return std::vector<Dense>{*out};
}

Outputs Slice(const KernelArgs& args) {
  const std::vector<int64_t> begin = GetIntsAttr(args.attrs, "begin");
  const Dense& x = args.in(0);
  Dense out = args.NewOutput(0);
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    std::vector<int64_t> c = Unravel(i, out.shape);
    for (size_t axis = 0; axis < c.size(); ++axis) c[axis] += begin[axis];
    out.values[i] = x.values[Ravel(c, x.shape)];
  }
  return std::vector<Dense>{out};
}

Outputs SliceGrad(const KernelArgs& args) {
  const std::vector<int64_t> begin = GetIntsAttr(args.attrs, "begin");
  return std::vector<Dense>{SumInto(args.in(0), args.NewOutput(0), [&](std::vector<int64_t> c) {
    for (size_t axis = 0; axis < c.size(); ++axis) c[axis] += begin[axis];
    return c;
  })};
}

Outputs Concat(const KernelArgs& args) {
  const Dense& a = args.in(0);
  const Dense& b = args.in(1);
  int64_t axis = GetIntAttr(args.attrs, "axis", 0);
  if (axis < 0) axis += a.shape.rank();
  Dense out = args.NewOutput(0);
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    std::vector<int64_t> c = Unravel(i, out.shape);
    if (c[axis] < a.shape.dim(axis)) {
      out.values[i] = a.values[Ravel(c, a.shape)];
    } else {
      c[axis] -= a.shape.dim(axis);
      out.values[i] = b.values[Ravel(c, b.shape)];
    }
  }
  return std::vector<Dense>{out};
}

// Sums x over the axes where the output (like's shape) has size 1 or no axis at all.
Outputs ReduceSumLike(const KernelArgs& args) {
  Dense out = args.NewOutput(0);
  const int64_t lead = args.in(0).shape.rank() - out.shape.rank();
  const Shape out_shape = out.shape;
  return std::vector<Dense>{SumInto(args.in(0), std::move(out), [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> oc(c.begin() + lead, c.end());
    for (int64_t axis = 0; axis < out_shape.rank(); ++axis) {
      if (out_shape.dim(axis) == 1) oc[axis] = 0;
    }
    return oc;
  })};
}

// out[c] = x[c without the axes], or with them at 0 when x kept them as size 1.
Outputs BroadcastLike(const KernelArgs& args) {
  const Dense& x = args.in(0);
  Dense out = args.NewOutput(0);
  const std::vector<int64_t> axes = *op_util::NormalizeAxes(
      "axes", GetIntsAttr(args.attrs, "axes"), out.shape.rank(), /*empty_means_all=*/false);
  const bool keep_dims = x.shape.rank() == out.shape.rank();
  for (int64_t i = 0; i < out.shape.NumElements(); ++i) {
    const std::vector<int64_t> c = Unravel(i, out.shape);
    std::vector<int64_t> xc;
    for (int64_t axis = 0; axis < out.shape.rank(); ++axis) {
      const bool reduced = std::binary_search(axes.begin(), axes.end(), axis);
      if (!reduced) xc.push_back(c[axis]);
      if (reduced && keep_dims) xc.push_back(0);
    }
    out.values[i] = x.values[Ravel(xc, x.shape)];
  }
  return std::vector<Dense>{out};
}

}  // namespace reference
}  // namespace oneflow
