#include "sbp/boxing/axis_conversion.h"

#include "oneflow_core/balanced_splitter.h"

namespace oneflow {
namespace boxing {

int64_t LargestPartElements(const Shape& tensor, int64_t axis, int64_t parts) {
  int64_t elements = BalancedPart(tensor.dim(axis), parts, 0).size();
  for (int64_t other = 0; other < tensor.rank(); ++other) {
    if (other != axis) elements *= tensor.dim(other);
  }
  return elements;
}

}  // namespace boxing
}  // namespace oneflow
