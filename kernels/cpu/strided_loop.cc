#include "kernels/cpu/strided_loop.h"

namespace oneflow {
namespace cpu {

StridedLoop::StridedLoop(const std::vector<int64_t>& dims,
                         const std::vector<std::vector<int64_t>>& strides)
    : strides_(strides.size()) {
  runs_ = 1;
  for (int64_t dim : dims) runs_ *= dim;
  // Merge from the outermost axis inwards; axes of size 1 contribute nothing.
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if (dims[axis] == 1) continue;
    bool merges = !dims_.empty();
    for (size_t k = 0; merges && k < strides.size(); ++k) {
      merges = strides_[k].back() == strides[k][axis] * dims[axis];
    }
    if (merges) {
      dims_.back() *= dims[axis];
      for (size_t k = 0; k < strides.size(); ++k) strides_[k].back() = strides[k][axis];
    } else {
      dims_.push_back(dims[axis]);
      for (size_t k = 0; k < strides.size(); ++k) strides_[k].push_back(strides[k][axis]);
    }
  }
  if (dims_.empty()) {  // A scalar, or only axes of size 1: one run of one element.
    dims_.push_back(1);
    for (std::vector<int64_t>& s : strides_) s.push_back(0);
  }
  runs_ = dims_.back() == 0 || runs_ == 0 ? 0 : runs_ / dims_.back();
}

std::vector<int64_t> BroadcastStrides(const Shape& shape, int64_t rank) {
  std::vector<int64_t> strides(rank, 0);
  const int64_t lead = rank - shape.rank();
  int64_t stride = 1;
  for (int64_t axis = shape.rank() - 1; axis >= 0; --axis) {
    if (shape.dim(axis) != 1) strides[axis + lead] = stride;
    stride *= shape.dim(axis);
  }
  return strides;
}

bool BroadcastsTo(const Shape& shape, const Shape& to) {
  const int64_t lead = to.rank() - shape.rank();
  if (lead < 0) return false;
  for (int64_t axis = 0; axis < shape.rank(); ++axis) {
    if (shape.dim(axis) != 1 && shape.dim(axis) != to.dim(axis + lead)) return false;
  }
  return true;
}

}  // namespace cpu
}  // namespace oneflow
