// Boxes inside device slices: the pieces a boxing step moves between devices.
//
// A device holds one slice of the logical tensor (oneflow_core/tensor_slice.h) as a dense
// row-major buffer. The part it exchanges with a peer is the intersection of two slices,
// a box, which is contiguous in the buffer only when it spans whole rows of every axis
// after its first non-trivial one (a split on the outermost axis). Otherwise the box is
// packed into a dense buffer before the collective and unpacked after, one contiguous
// run (a stretch of the innermost axis) at a time with ForEachContiguousRun.
#ifndef KERNELS_BOXING_SLICE_BOXES_H_
#define KERNELS_BOXING_SLICE_BOXES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "oneflow_core/tensor_slice.h"

namespace oneflow {

// The elements in both slices (a box with empty ranges when they do not overlap).
TensorSlice Intersect(const TensorSlice& a, const TensorSlice& b);

// True when every element of `inner` lies in `outer` (always for an empty `inner`).
bool Contains(const TensorSlice& outer, const TensorSlice& inner);

// Where `box` (inside `slice`) starts in the slice's row-major buffer, in elements, when
// the box occupies one contiguous stretch of it; nullopt otherwise.
std::optional<int64_t> ContiguousOffset(const TensorSlice& slice, const TensorSlice& box);

// When the non-empty `boxes` lie back to back in `slice`'s buffer, in order, the element
// offset where the first one starts (0 when all are empty): their packed form is then a
// stretch of the buffer itself. nullopt otherwise.
std::optional<int64_t> BackToBackOffset(const TensorSlice& slice,
                                        const std::vector<TensorSlice>& boxes);

// Copies `box` (inside `slice`) out of `buffer`, the slice's dense buffer, into `packed`
// (box.NumElements() elements, row-major). `element_size` is in bytes.
void PackBox(const TensorSlice& slice, const void* buffer, const TensorSlice& box,
             int64_t element_size, void* packed);

// The inverse: copies `packed` into `box` of `slice`'s buffer.
void UnpackBox(const void* packed, const TensorSlice& box, const TensorSlice& slice,
               int64_t element_size, void* buffer);

// Copies `box` from one slice's buffer straight into another's (both contain the box).
void CopyBox(const TensorSlice& from, const void* from_buffer, const TensorSlice& box,
             const TensorSlice& to, int64_t element_size, void* to_buffer);

// A collective's view of `boxes` of one slice buffer, back to back in order:
//  - SendBufferFor: a pointer into `buffer` when they already lie back to back there
//    (no copy), else `scratch` with the boxes packed into it;
//  - ReceiveBufferFor: where the collective should write them: into `buffer` itself when
//    that is where they belong, else into `scratch`; UnpackReceived then moves them from
//    `scratch` to their places (nothing to do when `scratch` was not used).
const void* SendBufferFor(const TensorSlice& slice, const void* buffer,
                          const std::vector<TensorSlice>& boxes, int64_t element_size,
                          std::vector<char>* scratch);
void* ReceiveBufferFor(const TensorSlice& slice, void* buffer,
                       const std::vector<TensorSlice>& boxes, int64_t element_size,
                       std::vector<char>* scratch);
void UnpackReceived(const std::vector<char>& scratch, const std::vector<TensorSlice>& boxes,
                    const TensorSlice& slice, int64_t element_size, void* buffer);

}  // namespace oneflow

#endif  // KERNELS_BOXING_SLICE_BOXES_H_
