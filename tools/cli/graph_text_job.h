// A model file in the graph text format (docs/graph_text.md) as the Job that `oneflow
// compile` compiles: parsed, fitted to the layout the flags describe, its data files
// resolved. Flag-free, so tests compile a text and a C++ graph side by side.
#ifndef TOOLS_CLI_GRAPH_TEXT_JOB_H_
#define TOOLS_CLI_GRAPH_TEXT_JOB_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"

namespace oneflow::cli {

// Parses `text` (read from `file_name`) and builds its Job for `layout`:
// - a graph without a `placement` line gets the layout's (stage 0's with --pp > 1); one
//   with a placement must have the layout's, since its SBP hints were written for it;
// - with --pp > 1, a graph whose tensors name no placement gets its blocks put on the
//   stages (examples::PlaceBlocksOnStages); one with placements keeps them (a text
//   printed for the same --pp);
// - the Job gets the layout's micro-batches: a graph whose inputs hold its `batch` line's
//   rows is cut into one micro-batch's graph (examples::SplitIntoMicroBatches, refused
//   naming the op that mixes rows); otherwise its inputs are one micro-batch (as ToText
//   prints a graph built for micro-batches);
// - --zero > 0 sets the optimizer's ZeRO stage over the data-parallel axis, unless the
//   text's optimizer line already names another stage (an error); --zero=0 keeps the text's;
// - a graph without any sbp hint that splits (none, or only `sbp=B`, which a one-device
//   --print_graph writes; those are dropped), on a layout with --tp > 1 (and --cp=1), gets Megatron's
//   split of its weights (compiler/tensor_parallel_hints.h) and its data split by rows over
//   dp and replicated over tp; `tensor_parallel_note`, when given, receives a line saying
//   which weights were split how ("" when nothing was inferred);
// - every source location is FILE:LINE, so compiler errors point into the file;
// - data files are made absolute and checked (examples::ResolveDataFiles).
// Errors start with the file name, and parse errors with the line:
//   mlp.txt: line 5: unknown op type 'matmull'; known: matmul, add, ...
absl::StatusOr<proto::Job> JobFromGraphText(absl::string_view text, const std::string& file_name,
                                            const examples::ParallelLayout& layout,
                                            std::string* tensor_parallel_note = nullptr);

// The job a plan's recipe prints (Plan.recipe.graph_text, examples::MakeRecipe) for a job
// JobFromGraphText built: without its sbp hints when it inferred them (`tensor_parallel_note`
// not empty), so that a re-plan (`oneflow launch --elastic=shrink`) infers them again for
// its own layout, as the user's text would; else `job` as it is.
proto::Job RecipeJob(proto::Job job, const std::string& tensor_parallel_note);

// `oneflow compile GRAPH.txt --auto_parallel`: the search of the examples' --auto_parallel
// (examples/common/auto_parallel_driver.h) over the layouts a graph text can be built for.
// The text must have no `placement` line (each layout gives its own). The search chooses
// dp, tp (where the text's sbp hints shard variables and a layout accepts them, or, in a
// text without hints, where Megatron's split applies: JobFromGraphText), pipeline stages
// (a text with at least two blocks: JobFromGraphText puts them on the stages,
// examples::PlaceBlocksOnStages), micro-batches (a text whose inputs hold its `batch`
// line's rows and whose ops keep rows apart up to the loss's mean:
// examples::SplitIntoMicroBatches), the ZeRO stage (the text needs an `optimizer` line) and
// recomputation (a text with blocks). `search_note`, when given, receives a line for each
// of pipelines and micro-batches the text leaves out of the search, saying why ("" when
// both are searched). Layouts the text cannot be built for are skipped,
// each with JobFromGraphText's error in the decision record. When the text's optimizer
// line names a ZeRO stage and the chosen layout repeats it, the result's layout is the
// one without a stage (the same Job): the stage is the model's, and a recipe made from
// the result says so (a re-search keeps it). The result's job is RecipeJob of the chosen
// layout's before its blocks are put on stages and its batch cut into micro-batches (a
// recipe of the whole batch without stage placements, which JobFromGraphText stages and
// cuts again for the recipe's --pp and --micro_batches, and a re-plan searches again; the
// compiled plan keeps the compiled job, hints included, in Plan.job); `tensor_parallel_note`, when
// given, receives JobFromGraphText's note for that layout. Errors: the parse error, a
// `placement` line (naming it), and AutoParallelCompile's.
absl::StatusOr<examples::AutoParallelResult> AutoParallelFromGraphText(absl::string_view text,
                                                                       const std::string& file_name,
                                                                       const examples::AutoParallelRequest& request,
                                                                       std::string* tensor_parallel_note = nullptr,
                                                                       std::string* search_note = nullptr);

// The layout-free text of a plan's recipe (CompileRecipe.graph_text, printed from the Job
// of one layout), for AutoParallelFromGraphText: without its `placement` line, and, when
// `zero_from_layout` (the layout set a ZeRO stage, which the printer writes on the
// optimizer line), without the optimizer line's `zero=N zero_axis=A`, which the search
// chooses again. A `zero=` the text's author wrote is not the layout's (see
// AutoParallelFromGraphText) and stays, unless the plan was compiled before that rule.
std::string LayoutFreeGraphText(absl::string_view recipe_text, bool zero_from_layout);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_GRAPH_TEXT_JOB_H_
