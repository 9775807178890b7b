// One loop for broadcasting, reducing, transposing and slicing: walk a row-major index
// space in contiguous runs while each operand steps through memory at its own strides.
//
// An index space of shape `dims` is visited in row-major order; operand k is at element
// offset sum_axis(coordinate[axis] * strides[k][axis]). A stride of 0 means the operand
// does not move along that axis (it is broadcast along it, or reduced over it). Before
// walking, axes of size 1 are dropped and neighbouring axes merged wherever every
// operand allows it (stride[outer] == stride[inner] * dims[inner]), so that the innermost
// run is as long as possible: adding a [7] bias to a [5, 7] tensor is 5 runs of 7, and
// adding two [5, 7] tensors is a single run of 35. Kernels then write the inner loop for
// the run with plain pointers, which the compiler vectorizes.
#ifndef KERNELS_CPU_STRIDED_LOOP_H_
#define KERNELS_CPU_STRIDED_LOOP_H_

#include <cstdint>
#include <vector>

#include "oneflow_core/shape.h"

namespace oneflow {
namespace cpu {

class StridedLoop {
 public:
  // `strides` holds one vector of dims.size() strides per operand.
  StridedLoop(const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& strides);

  // Elements per run, and how many runs cover the index space (0 when it is empty). Run r
  // covers row-major positions [r * inner(), (r + 1) * inner()).
  int64_t inner() const { return dims_.back(); }
  int64_t runs() const { return runs_; }
  // Operand k's stride within a run.
  int64_t inner_stride(size_t k) const { return strides_[k].back(); }
  // The merged axes and operand k's strides along them.
  const std::vector<int64_t>& dims() const { return dims_; }
  const std::vector<int64_t>& strides(size_t k) const { return strides_[k]; }

  // Calls fn(run, offsets) for every run in order; offsets[k] is operand k's offset at
  // the run's first element.
  template <typename Fn>
  void ForEachRun(Fn&& fn) const {
    std::vector<int64_t> offsets(strides_.size(), 0);
    std::vector<int64_t> index(dims_.size() - 1, 0);
    for (int64_t run = 0; run < runs_; ++run) {
      fn(run, static_cast<const int64_t*>(offsets.data()));
      Advance(&index, &offsets);
    }
  }

  // As ForEachRun, calling fn(run, offsets, ahead_offsets) where ahead_offsets are the
  // offsets of run + ahead (of the last run near the end): where to prefetch from.
  template <typename Fn>
  void ForEachRunLookingAhead(int64_t ahead, Fn&& fn) const {
    std::vector<int64_t> offsets(strides_.size(), 0), ahead_offsets = offsets;
    std::vector<int64_t> index(dims_.size() - 1, 0), ahead_index = index;
    int64_t lead = 0;
    for (; lead < ahead && lead + 1 < runs_; ++lead) Advance(&ahead_index, &ahead_offsets);
    for (int64_t run = 0; run < runs_; ++run) {
      fn(run, static_cast<const int64_t*>(offsets.data()),
         static_cast<const int64_t*>(ahead_offsets.data()));
      Advance(&index, &offsets);
      if (run + lead + 1 < runs_) Advance(&ahead_index, &ahead_offsets);
    }
  }

 private:
  // Steps the odometer over the outer axes (innermost first) to the next run.
  void Advance(std::vector<int64_t>* index, std::vector<int64_t>* offsets) const {
    for (int64_t axis = static_cast<int64_t>(dims_.size()) - 2; axis >= 0; --axis) {
      if (++(*index)[axis] < dims_[axis]) {
        for (size_t k = 0; k < strides_.size(); ++k) (*offsets)[k] += strides_[k][axis];
        return;
      }
      for (size_t k = 0; k < strides_.size(); ++k) {
        (*offsets)[k] -= strides_[k][axis] * (dims_[axis] - 1);
      }
      (*index)[axis] = 0;
    }
  }

  std::vector<int64_t> dims_;                  // Merged axes, never empty.
  std::vector<std::vector<int64_t>> strides_;  // [operand][merged axis].
  int64_t runs_ = 0;
};

// Row-major strides of `shape` for an index space of rank `rank` >= shape.rank(), aligned
// at the last axis (numpy broadcasting): 0 on axes where `shape` has size 1 or no axis.
std::vector<int64_t> BroadcastStrides(const Shape& shape, int64_t rank);

// Whether `shape` broadcasts to `to` under numpy rules: aligned at the last axis, every
// dimension equal to the target's or 1, no more axes than the target.
bool BroadcastsTo(const Shape& shape, const Shape& to);

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_STRIDED_LOOP_H_
