#include "tools/cli/graph_text_job.h"

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_replace.h"
#include "examples/common/block_stages.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/micro_batch_split.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/placement.h"
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

bool HasTensorPlacement(const proto::Job& job) {
  for (const proto::TensorDef& tensor : job.tensors()) {
    if (tensor.has_placement()) return true;
  }
  return false;
}

// The Job of a built text (Graph::Build, without the layout's placement) for `layout`:
// what JobFromGraphText does after parsing, so that a search builds the text once.
// Without `stage_and_cut`, a whole-batch text keeps its rows and a text without stage
// placements stays unstaged (what a plan's recipe records of a search's text:
// JobFromGraphText stages and cuts it again for the recipe's flags).
absl::StatusOr<proto::Job> JobOfLayout(proto::Job built, const std::string& file_name,
                                       const examples::ParallelLayout& layout, std::string* tensor_parallel_note,
                                       bool stage_and_cut = true) {
  absl::StatusOr<proto::Job> job = std::move(built);
  if (!job->has_default_placement()) {
    *job->mutable_default_placement() = layout.placement().ToProto();
  } else {
    OF_ASSIGN_OR_RETURN(const Placement placement, Placement::FromProto(job->default_placement()));
    if (!(placement == layout.placement())) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_name, ": the graph's placement ", placement.ToString(),
          " is not the layout's ", layout.placement().ToString(), " (from --nodes=", layout.cluster().num_nodes(),
          " --devices_per_node=", layout.cluster().devices_per_node(), " --dp=", layout.dp(), " --tp=", layout.tp(),
          layout.pp() > 1 ? absl::StrCat(" --pp=", layout.pp()) : "",
          "); give the flags it was written for, or remove its `placement` line and its sbp hints"));
    }
  }
  if (layout.micro_batches() > 1 && stage_and_cut) {
    if (examples::HoldsWholeBatch(*job)) {
      // Inputs of the `batch` line's rows: the whole batch, cut into the layout's micro-batches.
      absl::StatusOr<proto::Job> split = examples::SplitIntoMicroBatches(*job, layout.micro_batches());
      if (!split.ok()) {
        return absl::Status(split.status().code(),
                            absl::StrCat(file_name, ": --micro_batches=", layout.micro_batches(),
                                         ": the graph's inputs hold the whole batch of ", job->batch_size(),
                                         " rows, and cutting them into micro-batches is refused: ",
                                         split.status().message()));
      }
      job = *std::move(split);
    } else {
      job->set_micro_batches(layout.micro_batches());  // The text is one micro-batch's (ToText's print).
    }
  }
  absl::StatusOr<std::string> note = examples::HintTensorParallelism(layout, &*job);
  if (!note.ok()) return InFile(note.status(), file_name);
  if (tensor_parallel_note != nullptr) *tensor_parallel_note = *note;
  if (layout.pp() > 1 && stage_and_cut && !HasTensorPlacement(*job)) {
    // A text without stage placements: its blocks go on the stages as the builders put them.
    OF_RETURN_IF_ERROR(InFile(examples::PlaceBlocksOnStages(layout, &*job), file_name));
  }
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

// The search's request for a text: pipeline stages where it has blocks to cut (at least
// two), micro-batches where its inputs hold the whole batch (its `batch` line's rows) and
// the smallest cut of them into micro-batches is sound (examples::SplitIntoMicroBatches).
// `note`, when given, receives a line per family the text leaves out and why.
examples::AutoParallelRequest PipelinesATextAllows(const proto::Job& job, const examples::AutoParallelRequest& request,
                                                   std::string* note) {
  examples::AutoParallelRequest searched = request;
  std::string why;
  const size_t blocks = examples::BlocksInOrder(job).size();
  if (blocks < 2) {
    searched.max_pipeline_stages = 1;
    absl::StrAppend(&why, "pipelines not searched: the graph has ", blocks,
                    " block(s) (ops marked block=NAME); pipeline stages cut between blocks\n");
  }
  const int64_t rows = examples::BatchRows(job);
  int64_t smallest = 2;
  while (rows > 1 && rows % smallest != 0) ++smallest;
  if (!examples::HoldsWholeBatch(job)) {
    searched.max_micro_batches = 1;
    absl::StrAppend(&why, "micro-batches not searched: the graph's inputs are not the whole batch of a `batch` line "
                          "(a `batch N` line and inputs of N rows)\n");
  } else if (rows < 2) {
    searched.max_micro_batches = 1;
    absl::StrAppend(&why, "micro-batches not searched: the batch has ", rows, " row\n");
  } else if (absl::Status split = examples::SplitIntoMicroBatches(job, smallest).status(); !split.ok()) {
    searched.max_micro_batches = 1;
    absl::StrAppend(&why, "micro-batches not searched: ", split.message(), "\n");
  }
  if (note != nullptr) *note = why;
  return searched;
}

}  // namespace

absl::StatusOr<proto::Job> JobFromGraphText(absl::string_view text, const std::string& file_name,
                                            const examples::ParallelLayout& layout, std::string* tensor_parallel_note) {
  absl::StatusOr<std::unique_ptr<Graph>> parsed = ParseGraphText(text);
  if (!parsed.ok()) return InFile(parsed.status(), file_name);
  absl::StatusOr<proto::Job> built = (*parsed)->Build();
  if (!built.ok()) return InFile(built.status(), file_name);
  return JobOfLayout(*std::move(built), file_name, layout, tensor_parallel_note);
}

proto::Job RecipeJob(proto::Job job, const std::string& tensor_parallel_note) {
  if (!tensor_parallel_note.empty()) examples::ClearSbpHints(&job);
  return job;
}

absl::StatusOr<examples::AutoParallelResult> AutoParallelFromGraphText(absl::string_view text,
                                                                       const std::string& file_name,
                                                                       const examples::AutoParallelRequest& request,
                                                                       std::string* tensor_parallel_note,
                                                                       std::string* search_note) {
  absl::StatusOr<std::unique_ptr<Graph>> parsed = ParseGraphText(text);
  if (!parsed.ok()) return InFile(parsed.status(), file_name);
  if ((*parsed)->default_placement().has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": --auto_parallel gives each layout its own placement, but the graph has `placement ",
        (*parsed)->default_placement()->ToString(),
        "`; remove that line (and sbp hints written for one layout), or compile without --auto_parallel"));
  }
  absl::StatusOr<proto::Job> built = (*parsed)->Build();  // once: each layout's Job starts from it
  if (!built.ok()) return InFile(built.status(), file_name);
  // A text of one micro-batch (`--print_graph --micro_batches=M` prints the `batch N` line
  // and inputs of N / M rows, not M) is searched as the model of its whole batch, grown
  // back (examples::ResizeMicroBatches), so that micro-batches are the search's to choose
  // and dp splits the batch rather than one micro-batch of it. Where growing it back is
  // refused (1-row micro-batches), its micro-batch is the search's batch, as the note says.
  std::string grown_note;
  if (const int64_t micro_batches = examples::MicroBatchesOfInputs(*built);
      micro_batches > 1 && built->micro_batches() <= 1) {
    proto::Job micro_batch = *built;
    micro_batch.set_micro_batches(micro_batches);
    absl::StatusOr<proto::Job> whole = examples::ResizeMicroBatches(micro_batch, 1);
    if (whole.ok()) {
      grown_note = absl::StrCat("searched as the whole batch: the graph's inputs hold ", built->batch_size() / micro_batches,
                                " rows, one micro-batch of its batch of ", built->batch_size(), "\n");
      built = *std::move(whole);
    }
  }
  const examples::AutoParallelRequest searched = PipelinesATextAllows(*built, request, search_note);
  if (search_note != nullptr) *search_note = absl::StrCat(grown_note, *search_note);
  const examples::JobBuilder build = [&](const examples::ParallelLayout& layout) {
    return JobOfLayout(*built, file_name, layout, nullptr);
  };
  OF_ASSIGN_OR_RETURN(examples::AutoParallelResult result, examples::AutoParallelCompile(build, searched));
  {
    // The recipe's job: the chosen layout's before its blocks are staged and its batch
    // cut, so that a re-plan can search pipelines and micro-batches again.
    std::string note;
    OF_ASSIGN_OR_RETURN(const proto::Job chosen,
                        JobOfLayout(*built, file_name, result.layout, &note, /*stage_and_cut=*/false));
    result.job = RecipeJob(chosen, note);
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
    OF_ASSIGN_OR_RETURN(const proto::Job text_job, JobOfLayout(*built, file_name, without_zero, nullptr));
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
