#include "tools/cli/launch_shrink.h"

#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/compiler.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/common/compile_recipe.h"
#include "examples/common/micro_batch_split.h"
#include "examples/common/parallel_layout.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/status.h"
#include "plan/plan_format.h"
#include "plan/plan_verifier.h"
#include "tools/cli/graph_text_job.h"
#include "tools/cli/inspect.h"
#include "tools/cli/shrink_rule.h"

namespace oneflow::cli {

absl::StatusOr<ElasticPolicy> ParseElasticPolicy(const std::string& elastic, const std::string& min_nodes,
                                                 int64_t node_count, bool has_checkpoint_dir) {
  ElasticPolicy policy;
  if (elastic != "off" && elastic != "shrink") {
    return absl::InvalidArgumentError(absl::StrCat("--elastic=", elastic, " is not one of: off, shrink"));
  }
  policy.shrink = elastic == "shrink";
  const std::string valid = absl::StrCat("valid: 1..", node_count);
  if (!min_nodes.empty()) {
    if (!policy.shrink) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--min_nodes=", min_nodes,
          " is for --elastic=shrink (the fewest nodes a re-planned job may run on); with --elastic=off a lost "
          "node with no spare left ends the launch"));
    }
    int64_t value = 0;
    if (!absl::SimpleAtoi(min_nodes, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("--min_nodes=", min_nodes, " is not a number of nodes; ", valid));
    }
    if (value < 1) return absl::InvalidArgumentError(absl::StrCat("--min_nodes=", min_nodes, " is below 1; ", valid));
    if (value > node_count) {
      return absl::InvalidArgumentError(absl::StrCat("--min_nodes=", min_nodes, " is above the job's ", node_count,
                                                     node_count == 1 ? " node" : " nodes", " (--nodes); ", valid));
    }
    policy.min_nodes = value;
  }
  if (policy.shrink && !has_checkpoint_dir) {
    return absl::InvalidArgumentError(
        "--elastic=shrink needs --checkpoint_dir and --checkpoint_every: the re-planned job resumes from the newest "
        "checkpoint");
  }
  return policy;
}

namespace {

// `oneflow inspect`'s text up to its boxings: what the layout is, not how it moves data.
absl::StatusOr<std::string> LayoutText(const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(std::string text, InspectPlan(plan, InspectOptions()));
  const size_t boxings = text.find("\nboxings (");
  if (boxings != std::string::npos) text.resize(boxings + 1);
  return text;
}

// A plan the search chose whose recipe records the model before its layout's stages and
// micro-batches (`oneflow compile --auto_parallel` of a graph text, or any layout of one
// stage and one micro-batch): the search runs again on the survivors' devices, with the
// links, compile settings and --device_memory it ran with, over the recipe's text made
// layout-free. The chosen layout may differ in more than dp (a ZeRO stage that now fits,
// tp where the text's hints allow, pipeline stages and micro-batches).
absl::StatusOr<Replan> SearchForSurvivors(const proto::Plan& plan, int64_t survivors) {
  const proto::CompileRecipe& recipe = plan.recipe();
  examples::AutoParallelRequest request;
  request.cluster = examples::LayoutFlagsFromRecipe(recipe);
  request.cluster.nodes = survivors;
  request.settings = examples::SettingsFromRecipe(recipe);
  // Each layout the search tries sets its own.
  request.settings.recompute = examples::CompileSettings().recompute;
  request.settings.pp_schedule = examples::CompileSettings().pp_schedule;
  request.device_memory = plan.auto_parallel().device_memory();
  const std::string where = absl::StrCat("re-planning for the ", survivors, " surviving nodes (--nodes=", survivors,
                                         " --auto_parallel, searched again)");
  const std::string text = LayoutFreeGraphText(recipe.graph_text(), /*zero_from_layout=*/recipe.zero() > 0);
  absl::StatusOr<examples::AutoParallelResult> result = AutoParallelFromGraphText(text, "the plan's recipe", request);
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kResourceExhausted ||
        result.status().code() == absl::StatusCode::kFailedPrecondition) {
      return absl::Status(result.status().code(),
                          absl::StrCat("the model does not fit the ", survivors,
                                       " surviving nodes: the --auto_parallel search found no layout that fits: ",
                                       result.status().message()));
    }
    return absl::Status(result.status().code(), absl::StrCat(where, ": ", result.status().message()));
  }
  const examples::CompileSettings chosen =
      examples::SettingsForLayout(request.settings, result->plan.auto_parallel().chosen().layout());
  OF_ASSIGN_OR_RETURN(const proto::CompileRecipe next_recipe,
                      examples::MakeRecipe(result->job, result->layout, chosen, /*auto_parallel=*/true));
  OF_RETURN_IF_ERROR(examples::AttachRecipe(next_recipe, &result->plan));
  if (absl::Status verified = VerifyPlan(result->plan); !verified.ok()) {
    return absl::InternalError(absl::StrCat(where, ": the new plan fails verification: ", verified.message()));
  }
  Replan replan;
  const std::string before = plan.has_auto_parallel()
                                 ? auto_parallel::LayoutFlags(plan.auto_parallel().chosen().layout())
                                 : absl::StrCat("--dp=", recipe.dp(), " --tp=", recipe.tp());
  replan.action = absl::StrCat("re-planned for the ", survivors,
                               " surviving nodes (the --auto_parallel search ran again: ",
                               auto_parallel::LayoutFlags(result->plan.auto_parallel().chosen().layout()), "; was ",
                               before, ")");
  OF_ASSIGN_OR_RETURN(const std::string layout, LayoutText(result->plan));
  replan.layout_text =
      absl::StrCat(examples::AutoParallelSummary(result->plan.auto_parallel(), result->search_seconds), layout);
  replan.plan = std::move(result->plan);
  return replan;
}

// Whether the recipe's text is the model before the layout's pipeline stages and
// micro-batches (what `oneflow compile --auto_parallel` of a graph text records: the whole
// batch, no stage placements), which the search can lay out again; an example binary's
// search records them done (one micro-batch's rows, stage placements), kept by a shrink.
bool RecordsTheWholeModel(const proto::CompileRecipe& recipe) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(recipe.graph_text());
  if (!graph.ok()) return false;
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  if (!job.ok()) return false;
  for (const proto::TensorDef& tensor : job->tensors()) {
    if (tensor.has_placement()) return false;
  }
  return recipe.micro_batches() <= 1 || examples::HoldsWholeBatch(*job);
}

// The global batch: the recorded text's `batch` line, else its first input's rows times
// the micro-batches (a text written without one).
int64_t BatchOf(const std::string& text, int64_t micro_batches) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    int64_t batch = 0;
    if (absl::ConsumePrefix(&line, "batch ") && absl::SimpleAtoi(line, &batch) && batch > 0) return batch;
  }
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t input = line.find(" = input ");
    const size_t open = line.find('[', input == absl::string_view::npos ? line.size() : input);
    if (input == absl::string_view::npos || open == absl::string_view::npos) continue;
    const size_t close = line.find_first_of(",]", open);
    int64_t rows = 0;
    if (close != absl::string_view::npos && absl::SimpleAtoi(line.substr(open + 1, close - open - 1), &rows)) {
      return rows * micro_batches;
    }
  }
  return micro_batches;
}

std::string FirstLine(absl::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

// A shrink choice made concrete: its flags and layout, the recorded text with the old
// stage placements moved to the new ones, and that text's Job.
struct Layouted {
  examples::ParallelFlags flags;
  examples::ParallelLayout layout;
  std::string text;
  absl::StatusOr<proto::Job> job;
  std::string tensor_parallel_note;  // JobFromGraphText's: the split it inferred, if any
};

absl::StatusOr<Layouted> LayoutForChoice(const proto::CompileRecipe& recipe, const examples::ParallelLayout& old_layout,
                                         const examples::ParallelFlags& before, const ShrinkChoice& choice) {
  examples::ParallelFlags after = before;
  after.nodes = choice.nodes;
  after.dp = choice.dp;
  after.micro_batches = choice.micro_batches;
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(after));
  // The recorded text names the old stage placements (the `placement` line, per-op
  // placement= of pipeline stages); each becomes the same stage's on the survivors.
  std::vector<std::pair<std::string, std::string>> placements;
  for (int64_t stage = 0; stage < layout.pp(); ++stage) {
    const std::string from = old_layout.StagePlacement(stage).ToString();
    const std::string to = layout.StagePlacement(stage).ToString();
    placements.emplace_back(absl::StrCat("placement ", from, "\n"), absl::StrCat("placement ", to, "\n"));
    placements.emplace_back(absl::StrCat("placement=\"", from, "\""), absl::StrCat("placement=\"", to, "\""));
  }
  std::string text = absl::StrReplaceAll(recipe.graph_text(), placements);
  std::string note;
  absl::StatusOr<proto::Job> job = JobFromGraphText(text, "the plan's recipe", layout, &note);
  return Layouted{after, std::move(layout), std::move(text), std::move(job), std::move(note)};
}

}  // namespace

absl::StatusOr<Replan> ReplanForSurvivors(const proto::Plan& plan, int64_t survivors) {
  if (!plan.has_recipe() || plan.recipe().graph_text().empty()) {
    return absl::FailedPreconditionError(
        "the plan carries no recipe (Plan.recipe) to compile it again for the survivors: it was written before "
        "plans recorded their model; compile it again with this version's `oneflow compile` or example binary");
  }
  const proto::CompileRecipe& recipe = plan.recipe();
  if (recipe.auto_parallel() && ((recipe.pp() == 1 && recipe.micro_batches() == 1) || RecordsTheWholeModel(recipe))) {
    return SearchForSurvivors(plan, survivors);
  }
  const examples::ParallelFlags before = examples::LayoutFlagsFromRecipe(recipe);
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout old_layout, examples::ParallelLayout::Create(before));
  const int64_t replica = before.tp * before.cp * before.pp;
  const int64_t devices = survivors * before.devices_per_node;
  const std::string replica_text =
      absl::StrCat("--tp=", before.tp, " x --cp=", before.cp, " x --pp=", before.pp, " (", replica, " devices)");
  if (survivors < 1 || devices < replica || devices % replica != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ", survivors, " surviving nodes x ", before.devices_per_node, " devices per node (", devices,
        " devices) do not hold whole replicas of ", replica_text, "; valid: a multiple of ", replica, " devices"));
  }
  if (before.dp > 1 && devices / replica == 1 && (before.tp > 1 || before.cp > 1)) {
    // Axes of size 1 leave the hierarchy ([dp, tp] becomes [tp]), and the SBP hints of
    // the recorded text have one entry per axis of the layout it was written for.
    return absl::FailedPreconditionError(absl::StrCat(
        "re-planning --dp=", before.dp, " as --dp=1 on the ", survivors,
        " surviving nodes drops the data-parallel axis of the hierarchy the model's SBP hints were written for; "
        "valid: at least ",
        2 * replica, " surviving devices (2 replicas of ", replica_text, ")"));
  }
  if (devices / replica == 1 && before.zero > 0) {
    return absl::FailedPreconditionError(absl::StrCat("--zero=", before.zero, " shards over data parallelism, and the ",
                                                      survivors, " surviving nodes hold one replica (--dp=1); valid: at least ",
                                                      2 * replica, " surviving devices"));
  }
  // The shrink rule (shrink_rule.h): the global batch kept, dp reduced, micro-batches
  // raised so no device's micro-batch grows.
  ShrinkInputs inputs;
  inputs.batch = BatchOf(recipe.graph_text(), before.micro_batches);
  inputs.dp = before.dp;
  inputs.micro_batches = before.micro_batches;
  inputs.tp = before.tp;
  inputs.cp = before.cp;
  inputs.pp = before.pp;
  inputs.zero = before.zero;
  inputs.devices_per_node = before.devices_per_node;
  inputs.survivors = survivors;
  absl::StatusOr<ShrinkChoice> choice = ChooseShrinkLayout(inputs);
  if (!choice.ok()) return choice.status();
  absl::StatusOr<Layouted> layouted = LayoutForChoice(recipe, old_layout, before, *choice);
  if (!layouted.ok()) return layouted.status();
  std::string recut_note;
  if (choice->micro_batches != before.micro_batches) {
    // The recorded text is one micro-batch's: re-cut its batch rows (every tensor and
    // reshape target that carries them, examples::ResizeMicroBatches). A text whose ops
    // would not make the batch from the new micro-batches is refused there, and the
    // micro-batches stay as they were.
    const absl::StatusOr<std::string> recut =
        RecutMicroBatches(layouted->text, inputs.batch, before.micro_batches, choice->micro_batches);
    std::string recut_tensor_parallel_note;
    absl::StatusOr<proto::Job> recut_job =
        recut.ok() ? JobFromGraphText(*recut, "the plan's recipe", layouted->layout, &recut_tensor_parallel_note)
                   : absl::StatusOr<proto::Job>(recut.status());
    if (recut_job.ok()) {
      layouted->job = *std::move(recut_job);
      layouted->tensor_parallel_note = std::move(recut_tensor_parallel_note);
    } else {
      inputs.micro_batches_fixed = true;
      choice = ChooseShrinkLayout(inputs);
      if (!choice.ok()) {
        return absl::Status(choice.status().code(),
                            absl::StrCat(choice.status().message(), " (the recorded text's micro-batch rows cannot be re-cut: ",
                                         FirstLine(recut_job.status().message()), ")"));
      }
      recut_note = absl::StrCat("the recorded text's micro-batch rows cannot be re-cut (",
                                FirstLine(recut_job.status().message()), "), so the micro-batches stay ",
                                before.micro_batches);
      layouted = LayoutForChoice(recipe, old_layout, before, *choice);
      if (!layouted.ok()) return layouted.status();
    }
  }
  const examples::ParallelFlags after = layouted->flags;
  const examples::ParallelLayout& layout = layouted->layout;
  const std::string where = absl::StrCat("re-planning for the ", survivors, " surviving nodes (--nodes=", after.nodes,
                                         " --dp=", after.dp, " --micro_batches=", after.micro_batches, ")");
  auto in_replan = [&where](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
  };
  absl::StatusOr<proto::Job> job = std::move(layouted->job);
  const std::string tensor_parallel_note = layouted->tensor_parallel_note;
  if (!job.ok()) return in_replan(job.status());
  const examples::CompileSettings settings = examples::SettingsFromRecipe(recipe);
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, settings, &dump);
  if (!options.ok()) return in_replan(options.status());
  absl::StatusOr<proto::Plan> compiled = Compile(*job, *options);
  if (!compiled.ok()) return in_replan(compiled.status());
  if (settings.device_memory > 0) {
    for (const proto::DevicePlan& device : compiled->devices()) {
      if (device.peak_bytes() <= settings.device_memory) continue;
      return absl::ResourceExhaustedError(absl::StrCat(
          "the model does not fit the ", survivors, " surviving nodes: with --dp=", after.dp, " device ",
          DeviceIdText(device.device()), " needs a peak of ", device.peak_bytes(), " bytes, above the plan's --device_memory=",
          settings.device_memory, "; valid: --device_memory >= ", device.peak_bytes(),
          " when compiling, or a --min_nodes that ends the launch instead"));
    }
  }
  OF_ASSIGN_OR_RETURN(const proto::CompileRecipe next_recipe,
                      examples::MakeRecipe(RecipeJob(*job, tensor_parallel_note), layout, settings,
                                           recipe.auto_parallel()));
  OF_RETURN_IF_ERROR(examples::AttachRecipe(next_recipe, &*compiled));
  if (absl::Status verified = VerifyPlan(*compiled); !verified.ok()) {
    return absl::InternalError(absl::StrCat(where, ": the new plan fails verification: ", verified.message()));
  }
  Replan replan;
  replan.nodes = after.nodes;
  std::string notes;
  for (const std::string& note : {choice->note, recut_note}) {
    if (!note.empty()) absl::StrAppend(&notes, "; ", note);
  }
  replan.action = absl::StrCat("re-planned for the ", survivors, " surviving nodes (", ShrinkChoiceText(inputs, *choice),
                               recipe.auto_parallel() ? " of the --auto_parallel layout; the search does not run again: the "
                                                        "recorded text fixes its pipeline stages"
                                                      : "",
                               notes, ")");
  OF_ASSIGN_OR_RETURN(replan.layout_text, LayoutText(*compiled));
  replan.plan = *std::move(compiled);
  return replan;
}

}  // namespace oneflow::cli
