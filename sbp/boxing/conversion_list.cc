#include "sbp/boxing/conversion_list.h"

#include "sbp/boxing/all_gather.h"
#include "sbp/boxing/all_reduce.h"
#include "sbp/boxing/all_to_all.h"
#include "sbp/boxing/local_partial.h"
#include "sbp/boxing/local_slice.h"
#include "sbp/boxing/reduce_scatter.h"
#include "sbp/boxing/split_to_partial.h"

namespace oneflow {
namespace boxing {

const std::vector<const AxisConversion*>& AxisConversions() {
  // Function-local statics: built on first use, never destroyed (no exit-time order).
  static const auto* const kConversions = new std::vector<const AxisConversion*>{
      new AllReduce(),  new ReduceScatter(), new AllGather(),      new AllToAll(),
      new LocalSlice(), new LocalPartial(),  new SplitToPartial(),
  };
  return *kConversions;
}

const AxisConversion* FindAxisConversion(const Sbp& src, const Sbp& dst) {
  for (const AxisConversion* conversion : AxisConversions()) {
    if (conversion->CanHandle(src, dst)) return conversion;
  }
  return nullptr;
}

}  // namespace boxing
}  // namespace oneflow
