#include "tools/cli/inspect_auto_parallel.h"

#include "absl/strings/str_cat.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/price.h"
#include "compiler/auto_parallel/search.h"
#include "compiler/passes/pipeline_schedule_pass.h"
#include "sbp/collective_cost.h"

namespace oneflow::cli {
namespace {

using auto_parallel::BytesText;

std::string StepText(const proto::AutoParallelPrediction& prediction) {
  return absl::StrCat("predicted step ", FormatMilliseconds(auto_parallel::StepSeconds(prediction)), " = compute ",
                      FormatMilliseconds(prediction.compute_seconds()), " + exposed communication ",
                      FormatMilliseconds(prediction.exposed_communication_seconds()), " + bubble ",
                      FormatMilliseconds(prediction.bubble_seconds()));
}

void WriteLayout(const proto::AutoParallelLayout& layout, JsonWriter& json) {
  json.BeginObject();
  json.Key("dp");
  json.Int(layout.dp());
  json.Key("tp");
  json.Int(layout.tp());
  json.Key("pp");
  json.Int(layout.pp());
  json.Key("pp_schedule");
  json.String(PipelineScheduleName(layout.schedule()));
  json.Key("micro_batches");
  json.Int(layout.micro_batches());
  json.Key("zero");
  json.Int(layout.zero());
  json.Key("zero3_regather");  // false: ZeRO-3 keeps forward's gathered parameters
  json.Bool(!layout.zero3_kept());
  json.Key("recompute");
  json.String(auto_parallel::RecomputeName(layout.recompute()));
  json.EndObject();
}

void WritePrediction(const proto::AutoParallelPrediction& prediction, JsonWriter& json) {
  json.BeginObject();
  json.Key("layout");
  WriteLayout(prediction.layout(), json);
  json.Key("step_seconds");
  json.Double(auto_parallel::StepSeconds(prediction));
  json.Key("compute_seconds");
  json.Double(prediction.compute_seconds());
  json.Key("exposed_communication_seconds");
  json.Double(prediction.exposed_communication_seconds());
  json.Key("bubble_seconds");
  json.Double(prediction.bubble_seconds());
  json.Key("peak_bytes");
  json.Int(prediction.peak_bytes());
  json.Key("lost_because");
  json.String(prediction.lost_because());
  json.Key("edges");
  json.BeginArray();
  for (const proto::AutoParallelEdge& edge : prediction.edges()) {
    json.BeginObject();
    json.Key("unit");
    json.String(edge.unit());
    json.Key("tensor");
    json.String(edge.tensor());
    json.Key("codec");
    json.String(edge.codec());
    json.Key("seconds");
    json.Double(edge.seconds());
    json.Key("dense_seconds");
    json.Double(edge.dense_seconds());
    json.Key("decision");
    json.String(edge.decision());
    json.Key("per_iteration");
    json.Bool(edge.per_iteration());
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

}  // namespace

void AppendAutoParallelText(const proto::Plan& plan, std::string* out) {
  if (!plan.has_auto_parallel()) return;
  const proto::AutoParallelDecision& decision = plan.auto_parallel();
  absl::StrAppend(out, "\nauto-parallel decision (", decision.candidates(), " layouts priced");
  if (decision.device_memory() > 0) {
    absl::StrAppend(out, ", ", decision.over_memory(), " over --device_memory=", BytesText(decision.device_memory()));
  }
  absl::StrAppend(out, ")\n");
  const proto::AutoParallelPrediction& chosen = decision.chosen();
  absl::StrAppend(out, "  chosen: ", auto_parallel::LayoutName(chosen.layout()), "\n");
  absl::StrAppend(out, "    ", StepText(chosen), "\n");
  absl::StrAppend(out, "    peak: predicted ", BytesText(chosen.peak_bytes()), ", planned ",
                  BytesText(decision.planned_peak_bytes()), "\n");
  absl::StrAppend(out, "    host terms: ", auto_parallel::HostTermsText(decision), "\n");
  // The tp edges (per micro-batch), then the data-parallel collectives (per iteration).
  for (const bool per_iteration : {false, true}) {
    int64_t count = 0;
    for (const proto::AutoParallelEdge& edge : chosen.edges()) count += edge.per_iteration() == per_iteration;
    if (count == 0) continue;
    absl::StrAppend(out, per_iteration ? "    data-parallel collectives priced with codecs (" : "    tp edges priced with codecs (",
                    count, per_iteration ? "), per iteration:\n" : "), per micro-batch:\n");
    for (const proto::AutoParallelEdge& edge : chosen.edges()) {
      if (edge.per_iteration() == per_iteration) absl::StrAppend(out, "      ", auto_parallel::EdgeText(edge), "\n");
    }
  }
  if (decision.alternatives_size() > 0) {
    absl::StrAppend(out, "  alternatives (", decision.alternatives_size(), "), why each lost:\n");
    for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) {
      absl::StrAppend(out, "    ", alternative.lost_because(), "\n");
    }
  }
  if (decision.refused_size() > 0) {
    absl::StrAppend(out, "  refused when compiled (", decision.refused_size(), "):\n");
    for (const proto::AutoParallelPrediction& entry : decision.refused()) {
      absl::StrAppend(out, "    ", auto_parallel::LayoutName(entry.layout()), ": ", entry.lost_because(), "\n");
    }
  }
}

void WriteAutoParallelJson(const proto::Plan& plan, JsonWriter& json) {
  // Absent, not null, in plans without a decision: their JSON stays as it was.
  if (!plan.has_auto_parallel()) return;
  json.Key("auto_parallel");
  const proto::AutoParallelDecision& decision = plan.auto_parallel();
  json.BeginObject();
  json.Key("candidates");
  json.Int(decision.candidates());
  json.Key("device_memory");
  json.Int(decision.device_memory());
  json.Key("over_memory");
  json.Int(decision.over_memory());
  json.Key("planned_peak_bytes");
  json.Int(decision.planned_peak_bytes());
  json.Key("chosen");
  WritePrediction(decision.chosen(), json);
  // null: priced without host terms (acts free, every device its own core).
  json.Key("host_terms");
  if (decision.has_host_terms()) {
    const proto::AutoParallelHostTerms& terms = decision.host_terms();
    json.BeginObject();
    json.Key("act_seconds");
    json.Double(terms.act_seconds());
    json.Key("collective_call_seconds");
    json.Double(terms.collective_call_seconds());
    json.Key("host_cores");
    json.Int(terms.host_cores());
    json.Key("host_core_share");  // 0: the line had none (the cores)
    json.Double(terms.host_core_share());
    json.Key("measured_devices");
    json.Int(terms.measured_devices());
    json.Key("shared_machine_nodes");  // 0: a host line's terms; else nodes of one machine
    json.Int(terms.shared_machine_nodes());
    json.Key("calibration_file");
    json.String(terms.calibration_file());
    json.EndObject();
  } else {
    json.Null();
  }
  json.Key("alternatives");
  json.BeginArray();
  for (const proto::AutoParallelPrediction& alternative : decision.alternatives()) WritePrediction(alternative, json);
  json.EndArray();
  json.Key("refused");
  json.BeginArray();
  for (const proto::AutoParallelPrediction& entry : decision.refused()) WritePrediction(entry, json);
  json.EndArray();
  json.EndObject();
}

}  // namespace oneflow::cli
