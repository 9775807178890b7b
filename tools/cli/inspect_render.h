// The renderers behind InspectPlan, one file each (inspect_text.cc, inspect_json.cc,
// inspect_dot.cc). Private to //tools/cli:inspect.
//
// Each takes a plan that passed CheckPlanForInspection and an index over it, and never
// fails: every id it follows exists and every SBP or placement it prints converts.
#ifndef TOOLS_CLI_INSPECT_RENDER_H_
#define TOOLS_CLI_INSPECT_RENDER_H_

#include <optional>
#include <string>

#include "proto/plan.pb.h"
#include "tools/cli/inspect.h"
#include "plan/plan_index.h"

namespace oneflow::cli {

// `device`: only that index of plan.devices in the per-device section; all when absent.
// `measured`: the trace's figures for the pipeline stages section, when given.
std::string RenderText(const proto::Plan& plan, const PlanIndex& index, std::optional<int> device,
                       const std::optional<TraceBubble>& measured);
std::string RenderJson(const proto::Plan& plan, const PlanIndex& index, std::optional<int> device,
                       const std::optional<TraceBubble>& measured);

// The logical graph: ops as nodes, tensors as edges labeled with their SBP, boxings as
// box-shaped nodes on the edges they convert.
std::string RenderLogicalDot(const proto::Plan& plan, const PlanIndex& index);
// The actor graph of plan.devices(device): actors as nodes, registers as edges.
std::string RenderDeviceDot(const proto::Plan& plan, const PlanIndex& index, int device);

// "device 0 (0:0)": how every format names a device (index for --device, and its id).
std::string DeviceTitle(const proto::Plan& plan, int device);

// What a gradient bucket's collective is, as every format names it: "reduce_scatter"
// (ZeRO-2 and 3) or "all_reduce".
std::string BucketKindText(const proto::GradientBucketDef& bucket, const PlanIndex& index);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_INSPECT_RENDER_H_
