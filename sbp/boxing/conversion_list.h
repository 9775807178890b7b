// The ordered list of per-axis conversions: the one place that says which exist.
//
// An explicit list in code, not a static-init registry: the order is visible, a missing
// conversion is a compile error rather than a lookup failure at run time, and adding
// one is one line here plus its file pair (docs/sbp_and_boxing.md, "Adding a
// conversion"). The first conversion whose CanHandle accepts a pair is used; the
// conversions are disjoint today, and conversions_test.cc checks that every pair
// src != dst of {S(i), B, P} has exactly one.
#ifndef SBP_BOXING_CONVERSION_LIST_H_
#define SBP_BOXING_CONVERSION_LIST_H_

#include <vector>

#include "oneflow_core/sbp.h"
#include "sbp/boxing/axis_conversion.h"

namespace oneflow {
namespace boxing {

// Every conversion, in the order they are tried. The objects live for the program.
const std::vector<const AxisConversion*>& AxisConversions();

// The first conversion that handles src -> dst, or nullptr (src == dst has none).
const AxisConversion* FindAxisConversion(const Sbp& src, const Sbp& dst);

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_CONVERSION_LIST_H_
