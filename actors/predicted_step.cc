#include "actors/predicted_step.h"

#include "absl/strings/str_format.h"

namespace oneflow::actors {

std::string PredictedStepLine(const proto::Plan& plan, const MeasuredStep& measured) {
  if (!plan.has_auto_parallel() || measured.steps() == 0) return "";
  const proto::AutoParallelDecision& decision = plan.auto_parallel();
  const proto::AutoParallelPrediction& chosen = decision.chosen();
  const double predicted_ms =
      1e3 * (chosen.compute_seconds() + chosen.exposed_communication_seconds() + chosen.bubble_seconds());
  std::string terms = "none";
  if (decision.has_host_terms()) {
    const proto::AutoParallelHostTerms& host = decision.host_terms();
    terms = absl::StrFormat("act %.3g us, collective call %.3g us, %d host cores", 1e6 * host.act_seconds(),
                            1e6 * host.collective_call_seconds(), host.host_cores());
    if (host.host_core_share() > 0) absl::StrAppendFormat(&terms, ", core share %.3g", host.host_core_share());
  }
  const double measured_ms = measured.mean_ms();
  return absl::StrFormat(
      "auto-parallel: predicted step %.3f ms (compute %.3f + exposed communication %.3f + bubble %.3f; host terms: "
      "%s), measured %.3f ms (mean of %d iterations after the first): measured / predicted %.2fx\n",
      predicted_ms, 1e3 * chosen.compute_seconds(), 1e3 * chosen.exposed_communication_seconds(),
      1e3 * chosen.bubble_seconds(), terms, measured_ms, measured.steps(),
      predicted_ms > 0 ? measured_ms / predicted_ms : 0);
}

}  // namespace oneflow::actors
