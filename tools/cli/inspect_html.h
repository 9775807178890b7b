// `oneflow inspect PLAN --format=html`: the plan as one self-contained HTML page (inline
// CSS and JS, no network) with the logical graph, a device x order view of the actors,
// register lifetimes and memory, the collective order per group and totals per device.
//
// The page is a fixed template (inspect_html_page.cc) around one JSON blob of the plan's
// data (PlanViewerData); the page's script renders lazily from it, so a plan of 64
// devices and 600k actors opens without freezing the browser. docs/inspect.md describes
// the views and the blob.
//
//   OF_ASSIGN_OR_RETURN(proto::Plan plan, ReadPlanFile("a.plan"));
//   OF_ASSIGN_OR_RETURN(std::string html, InspectPlanHtml(plan));
#ifndef TOOLS_CLI_INSPECT_HTML_H_
#define TOOLS_CLI_INSPECT_HTML_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/plan.pb.h"
#include "plan/plan_index.h"

namespace oneflow::cli {

// Checks `plan` with CheckPlanForInspection and renders the page. Deterministic: a pure
// function of the plan.
absl::StatusOr<std::string> InspectPlanHtml(const proto::Plan& plan);

// The page for a plan that passed CheckPlanForInspection.
std::string RenderHtml(const proto::Plan& plan, const PlanIndex& index);

// The compact JSON the page renders from (schema in docs/inspect.md, "The plan viewer"),
// already safe inside a <script> element: every '<', '>' and '&' (they occur only inside
// strings) is written as \u003c, \u003e, \u0026, so no "</script" or "<!--" can appear.
std::string PlanViewerData(const proto::Plan& plan, const PlanIndex& index);

// The page template around the data (inspect_html_page.cc): everything before the JSON
// blob and everything after it.
absl::string_view PlanViewerPageHead();
absl::string_view PlanViewerPageTail();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_INSPECT_HTML_H_
