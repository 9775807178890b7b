#include "tools/cli/graph_text_job.h"

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_replace.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/status.h"

namespace oneflow::cli {
namespace {

// The parser's locations are "<text>:LINE"; the user's file is FILE.
constexpr absl::string_view kParsedFile = "<text>";

void NameLocations(const std::string& file_name, proto::Job* job) {
  for (proto::TensorDef& tensor : *job->mutable_tensors()) {
    if (tensor.location().file() == kParsedFile) tensor.mutable_location()->set_file(file_name);
  }
  for (proto::OpDef& op : *job->mutable_ops()) {
    if (op.location().file() == kParsedFile) op.mutable_location()->set_file(file_name);
  }
}

absl::Status InFile(const absl::Status& status, const std::string& file_name) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(file_name, ": ",
                                   absl::StrReplaceAll(status.message(),
                                                       {{absl::StrCat(kParsedFile, ":"), absl::StrCat(file_name, ":")}})));
}

}  // namespace

absl::StatusOr<proto::Job> JobFromGraphText(absl::string_view text, const std::string& file_name,
                                            const examples::ParallelLayout& layout, std::string* tensor_parallel_note) {
  absl::StatusOr<std::unique_ptr<Graph>> parsed = ParseGraphText(text);
  if (!parsed.ok()) return InFile(parsed.status(), file_name);
  Graph& graph = **parsed;
  if (!graph.default_placement().has_value()) {
    graph.SetDefaultPlacement(layout.placement());
  } else if (!(*graph.default_placement() == layout.placement())) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": the graph's placement ", graph.default_placement()->ToString(),
        " is not the layout's ", layout.placement().ToString(), " (from --nodes=", layout.cluster().num_nodes(),
        " --devices_per_node=", layout.cluster().devices_per_node(), " --dp=", layout.dp(), " --tp=", layout.tp(),
        layout.pp() > 1 ? absl::StrCat(" --pp=", layout.pp()) : "",
        "); give the flags it was written for, or remove its `placement` line and its sbp hints"));
  }
  graph.SetMicroBatches(layout.micro_batches());
  absl::StatusOr<proto::Job> job = graph.Build();
  if (!job.ok()) return InFile(job.status(), file_name);
  absl::StatusOr<std::string> note = examples::HintTensorParallelism(layout, &*job);
  if (!note.ok()) return InFile(note.status(), file_name);
  if (tensor_parallel_note != nullptr) *tensor_parallel_note = *note;
  if (layout.zero() > 0) {
    if (!job->has_optimizer()) {
      return absl::InvalidArgumentError(absl::StrCat(file_name, ": --zero=", layout.zero(),
                                                     " shards optimizer state, but the graph has no `optimizer` line"));
    }
    const int stage = job->optimizer().zero_stage();
    if (stage != 0 && stage != layout.zero()) {
      return absl::InvalidArgumentError(absl::StrCat(file_name, ": --zero=", layout.zero(),
                                                     " but the graph's optimizer line says zero=", stage,
                                                     "; give one of them"));
    }
    job->mutable_optimizer()->set_zero_stage(static_cast<int32_t>(layout.zero()));
    job->mutable_optimizer()->set_zero_axis(static_cast<int32_t>(layout.dp_axis()));
  }
  NameLocations(file_name, &*job);
  OF_RETURN_IF_ERROR(InFile(examples::ResolveDataFiles(&*job), file_name));
  return job;
}

proto::Job RecipeJob(proto::Job job, const std::string& tensor_parallel_note) {
  if (!tensor_parallel_note.empty()) examples::ClearSbpHints(&job);
  return job;
}

absl::StatusOr<examples::AutoParallelResult> AutoParallelFromGraphText(absl::string_view text,
                                                                       const std::string& file_name,
                                                                       const examples::AutoParallelRequest& request,
                                                                       std::string* tensor_parallel_note) {
  absl::StatusOr<std::unique_ptr<Graph>> parsed = ParseGraphText(text);
  if (!parsed.ok()) return InFile(parsed.status(), file_name);
  if ((*parsed)->default_placement().has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": --auto_parallel gives each layout its own placement, but the graph has `placement ",
        (*parsed)->default_placement()->ToString(),
        "`; remove that line (and sbp hints written for one layout), or compile without --auto_parallel"));
  }
  examples::AutoParallelRequest pipeline_free = request;
  pipeline_free.max_pipeline_stages = 1;
  pipeline_free.max_micro_batches = 1;
  const examples::JobBuilder build = [&](const examples::ParallelLayout& layout) {
    return JobFromGraphText(text, file_name, layout);
  };
  OF_ASSIGN_OR_RETURN(examples::AutoParallelResult result, examples::AutoParallelCompile(build, pipeline_free));
  {
    std::string note;
    OF_ASSIGN_OR_RETURN(const proto::Job chosen, JobFromGraphText(text, file_name, result.layout, &note));
    if (!note.empty()) result.job = RecipeJob(chosen, note);
    if (tensor_parallel_note != nullptr) *tensor_parallel_note = note;
  }
  if (result.layout.zero() > 0) {
    // The stage may be the text's own (its optimizer line's zero=N, which the chosen
    // layout only repeats): then the result's layout is the one without it, so that the
    // recipe (Plan.recipe.zero) says the stage is the model's and a search run again on
    // fewer nodes (launch_shrink.cc, LayoutFreeGraphText) keeps it rather than choosing.
    examples::ParallelFlags flags = examples::FlagsOfLayout(result.layout);
    flags.zero = 0;
    OF_ASSIGN_OR_RETURN(examples::ParallelLayout without_zero, examples::ParallelLayout::Create(flags));
    OF_ASSIGN_OR_RETURN(const proto::Job text_job, JobFromGraphText(text, file_name, without_zero));
    if (text_job.optimizer().zero_stage() == result.layout.zero()) result.layout = std::move(without_zero);
  }
  return result;
}

std::string LayoutFreeGraphText(absl::string_view recipe_text, bool zero_from_layout) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(recipe_text, '\n')) {
    if (absl::StartsWith(line, "placement ")) continue;
    std::string kept(line);
    if (zero_from_layout && absl::StartsWith(line, "optimizer ")) {
      // Graph::ToText writes " zero=N zero_axis=A" last on the line.
      const size_t zero = kept.find(" zero=");
      if (zero != std::string::npos) {
        size_t end = kept.find(" zero_axis=", zero);
        end = end == std::string::npos ? std::string::npos : kept.find(' ', end + 1);
        kept.erase(zero, end == std::string::npos ? std::string::npos : end - zero);
      }
    }
    lines.push_back(std::move(kept));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace oneflow::cli
