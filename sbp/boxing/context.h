// What every boxing step of one edge shares: the tensor, the links, the options.
//
// PlanBoxing validates these once, then the search builds many candidate steps from
// them; keeping them in one struct keeps the step builders' signatures short.
#ifndef SBP_BOXING_CONTEXT_H_
#define SBP_BOXING_CONTEXT_H_

#include "oneflow_core/dtype.h"
#include "oneflow_core/shape.h"
#include "sbp/boxing_options.h"
#include "sbp/link_model.h"

namespace oneflow {
namespace boxing {

struct BoxingContext {
  Shape logical;
  DType dtype = DType::kF32;
  LinkModel links;
  BoxingOptions options;
};

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_CONTEXT_H_
