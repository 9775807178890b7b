#ifndef COMPILER_AUTO_PARALLEL_LAYOUT_CHECK_H_
#define COMPILER_AUTO_PARALLEL_LAYOUT_CHECK_H_

// Whether the cost model can price a layout at all, before any price: its degrees use
// the cluster's devices, its stages and micro-batches fit the model, its ZeRO options
// name a stage they apply to. The error names the layout (LayoutName) and what would
// be valid; a layout a user gives (--predict_step) reaches it as well as the search's.

#include "absl/status/status.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
#include "proto/plan.pb.h"

namespace oneflow::auto_parallel {

absl::Status CheckLayout(const ModelProfile& profile, const PriceOptions& options,
                         const proto::AutoParallelLayout& layout);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_LAYOUT_CHECK_H_
