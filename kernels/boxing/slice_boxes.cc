#include "kernels/boxing/slice_boxes.h"

#include <algorithm>
#include <cstring>

namespace oneflow {
namespace {

// `box` in the coordinates of `slice`: the same sub-box, ranges relative to the slice's
// begins, so ForEachContiguousRun over (slice.shape(), relative) walks the slice buffer.
TensorSlice Relative(const TensorSlice& slice, const TensorSlice& box) {
  std::vector<Range> ranges;
  for (int64_t axis = 0; axis < box.rank(); ++axis) {
    const int64_t begin = slice.range(axis).begin;
    ranges.push_back(Range{box.range(axis).begin - begin, box.range(axis).end - begin});
  }
  return TensorSlice(std::move(ranges));
}

}  // namespace

TensorSlice Intersect(const TensorSlice& a, const TensorSlice& b) {
  std::vector<Range> ranges;
  for (int64_t axis = 0; axis < a.rank(); ++axis) {
    const int64_t begin = std::max(a.range(axis).begin, b.range(axis).begin);
    const int64_t end = std::min(a.range(axis).end, b.range(axis).end);
    ranges.push_back(Range{begin, std::max(begin, end)});
  }
  return TensorSlice(std::move(ranges));
}

bool Contains(const TensorSlice& outer, const TensorSlice& inner) {
  if (inner.NumElements() == 0) return true;
  for (int64_t axis = 0; axis < inner.rank(); ++axis) {
    if (inner.range(axis).begin < outer.range(axis).begin ||
        inner.range(axis).end > outer.range(axis).end) {
      return false;
    }
  }
  return true;
}

std::optional<int64_t> ContiguousOffset(const TensorSlice& slice, const TensorSlice& box) {
  const int64_t rank = box.rank();
  // Past the first axis (from the inside) where the box is narrower than the slice, the
  // box must have extent 1, or its rows are separated by the slice's other elements.
  int64_t axis = rank - 1;
  while (axis >= 0 && box.range(axis) == slice.range(axis)) --axis;
  for (int64_t outer = axis - 1; outer >= 0; --outer) {
    if (box.range(outer).size() > 1) return std::nullopt;
  }
  const std::vector<int64_t> strides = slice.shape().Strides();
  int64_t offset = 0;
  for (int64_t a = 0; a < rank; ++a) {
    offset += (box.range(a).begin - slice.range(a).begin) * strides[a];
  }
  return offset;
}

std::optional<int64_t> BackToBackOffset(const TensorSlice& slice,
                                        const std::vector<TensorSlice>& boxes) {
  std::optional<int64_t> start;
  int64_t next = 0;
  for (const TensorSlice& box : boxes) {
    const int64_t count = box.NumElements();
    if (count == 0) continue;
    const std::optional<int64_t> offset = ContiguousOffset(slice, box);
    if (!offset.has_value()) return std::nullopt;
    if (!start.has_value()) {
      start = next = *offset;
    } else if (*offset != next) {
      return std::nullopt;
    }
    next += count;
  }
  return start.value_or(0);
}

void PackBox(const TensorSlice& slice, const void* buffer, const TensorSlice& box,
             int64_t element_size, void* packed) {
  const char* from = static_cast<const char*>(buffer);
  char* to = static_cast<char*>(packed);
  const int64_t count = box.NumElements();
  if (count == 0) return;
  if (const std::optional<int64_t> offset = ContiguousOffset(slice, box)) {  // one run
    std::memcpy(to, from + *offset * element_size, count * element_size);
    return;
  }
  ForEachContiguousRun(
      slice.shape(), Relative(slice, box), [&](int64_t local, int64_t offset, int64_t length) {
        std::memcpy(to + local * element_size, from + offset * element_size, length * element_size);
      });
}

void UnpackBox(const void* packed, const TensorSlice& box, const TensorSlice& slice,
               int64_t element_size, void* buffer) {
  const char* from = static_cast<const char*>(packed);
  char* to = static_cast<char*>(buffer);
  const int64_t count = box.NumElements();
  if (count == 0) return;
  if (const std::optional<int64_t> offset = ContiguousOffset(slice, box)) {  // one run
    std::memcpy(to + *offset * element_size, from, count * element_size);
    return;
  }
  ForEachContiguousRun(
      slice.shape(), Relative(slice, box), [&](int64_t local, int64_t offset, int64_t length) {
        std::memcpy(to + offset * element_size, from + local * element_size, length * element_size);
      });
}

void CopyBox(const TensorSlice& from, const void* from_buffer, const TensorSlice& box,
             const TensorSlice& to, int64_t element_size, void* to_buffer) {
  // The runs of the box are the same (same order, same lengths) in both slices: collect
  // the destination offsets, then copy run by run from the source.
  std::vector<int64_t> to_offsets;
  ForEachContiguousRun(to.shape(), Relative(to, box),
                       [&](int64_t, int64_t offset, int64_t) { to_offsets.push_back(offset); });
  const char* source = static_cast<const char*>(from_buffer);
  char* destination = static_cast<char*>(to_buffer);
  size_t run = 0;
  ForEachContiguousRun(from.shape(), Relative(from, box),
                       [&](int64_t, int64_t offset, int64_t length) {
                         std::memcpy(destination + to_offsets[run++] * element_size,
                                     source + offset * element_size, length * element_size);
                       });
}

namespace {

int64_t TotalBytes(const std::vector<TensorSlice>& boxes, int64_t element_size) {
  int64_t bytes = 0;
  for (const TensorSlice& box : boxes) bytes += box.NumElements() * element_size;
  return bytes;
}

}  // namespace

const void* SendBufferFor(const TensorSlice& slice, const void* buffer,
                          const std::vector<TensorSlice>& boxes, int64_t element_size,
                          std::vector<char>* scratch) {
  if (const std::optional<int64_t> offset = BackToBackOffset(slice, boxes)) {
    return static_cast<const char*>(buffer) + *offset * element_size;
  }
  scratch->resize(TotalBytes(boxes, element_size));
  char* next = scratch->data();
  for (const TensorSlice& box : boxes) {
    PackBox(slice, buffer, box, element_size, next);
    next += box.NumElements() * element_size;
  }
  return scratch->data();
}

void* ReceiveBufferFor(const TensorSlice& slice, void* buffer,
                       const std::vector<TensorSlice>& boxes, int64_t element_size,
                       std::vector<char>* scratch) {
  if (const std::optional<int64_t> offset = BackToBackOffset(slice, boxes)) {
    scratch->clear();
    return static_cast<char*>(buffer) + *offset * element_size;
  }
  scratch->resize(TotalBytes(boxes, element_size));
  return scratch->data();
}

void UnpackReceived(const std::vector<char>& scratch, const std::vector<TensorSlice>& boxes,
                    const TensorSlice& slice, int64_t element_size, void* buffer) {
  if (scratch.empty()) return;
  const char* next = scratch.data();
  for (const TensorSlice& box : boxes) {
    UnpackBox(next, box, slice, element_size, buffer);
    next += box.NumElements() * element_size;
  }
}

}  // namespace oneflow
