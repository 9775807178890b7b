#include "oneflow_core/ops/reference/dense.h"

namespace oneflow {

Dense Dense::Zeros(const Shape& shape, DType dtype) {
  return Dense{shape, std::vector<double>(shape.NumElements(), 0.0), dtype};
}

std::vector<int64_t> Unravel(int64_t index, const Shape& shape) {
  std::vector<int64_t> coordinate(shape.rank());
  for (int64_t axis = shape.rank() - 1; axis >= 0; --axis) {
    coordinate[axis] = index % shape.dim(axis);
    index /= shape.dim(axis);
  }
  return coordinate;
}

int64_t Ravel(const std::vector<int64_t>& coordinate, const Shape& shape) {
  int64_t index = 0;
  for (int64_t axis = 0; axis < shape.rank(); ++axis) {
    index = index * shape.dim(axis) + coordinate[axis];
  }
  return index;
}

Dense SliceOf(const Dense& whole, const TensorSlice& slice) {
  Dense part = Dense::Zeros(slice.shape(), whole.dtype);
  ForEachContiguousRun(whole.shape, slice, [&](int64_t at, int64_t offset, int64_t length) {
    for (int64_t i = 0; i < length; ++i) part.values[at + i] = whole.values[offset + i];
  });
  return part;
}

}  // namespace oneflow
