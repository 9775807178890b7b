// Dense: a tensor's values in double precision, the currency of the reference
// evaluator (reference.h) and of the tests that check ops, signatures and gradients.
#ifndef ONEFLOW_CORE_OPS_REFERENCE_DENSE_H_
#define ONEFLOW_CORE_OPS_REFERENCE_DENSE_H_

#include <cstdint>
#include <vector>

#include "oneflow_core/dtype.h"
#include "oneflow_core/ops/op_definition.h"
#include "oneflow_core/shape.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {

// Row-major values of `shape`. Integer dtypes (ids, labels) hold exact integers; the
// dtype only matters for type inference, the arithmetic is always double.
struct Dense {
  Shape shape;
  std::vector<double> values;
  DType dtype = DType::kF32;

  static Dense Zeros(const Shape& shape, DType dtype = DType::kF32);
  TensorType type() const { return {shape, dtype}; }
};

// Coordinate of row-major element `index` of `shape`, and back.
std::vector<int64_t> Unravel(int64_t index, const Shape& shape);
int64_t Ravel(const std::vector<int64_t>& coordinate, const Shape& shape);

// The part of `whole` inside `slice` (a device's share), as a dense tensor.
Dense SliceOf(const Dense& whole, const TensorSlice& slice);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_REFERENCE_DENSE_H_
