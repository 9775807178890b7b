// What compiling a plan again needs, carried in the plan (Plan.recipe): the model as the
// graph text `oneflow compile` reads, the layout flags and the compile settings. Every
// compile path (example_main.cc, `oneflow compile`) attaches it, from the same Job and
// layout, so the model compiled from C++ and from its printed text keep writing the same
// plan bytes. `oneflow launch --elastic=shrink` reads it back to re-plan a job for the
// nodes that survive a node loss (tools/cli/launch_shrink.h, docs/elastic.md).
#ifndef EXAMPLES_COMMON_COMPILE_RECIPE_H_
#define EXAMPLES_COMMON_COMPILE_RECIPE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::examples {

// The layout flags `layout` was created from (ParallelLayout::Create(FlagsOfLayout(l))
// gives the same layout).
ParallelFlags FlagsOfLayout(const ParallelLayout& layout);

// The recipe of `job` compiled for `layout` with `settings`; `auto_parallel`: the layout
// was chosen by the search. Errors: the job cannot be printed as graph text.
absl::StatusOr<proto::CompileRecipe> MakeRecipe(const proto::Job& job, const ParallelLayout& layout,
                                                const CompileSettings& settings, bool auto_parallel);

// Sets plan->recipe and seals the plan again (plan/plan_checksum.h).
absl::Status AttachRecipe(const proto::CompileRecipe& recipe, proto::Plan* plan);

// The recipe read back: the layout flags and the compile settings (no --dump_after; the
// CPU check of --precision=bf16 is this machine's).
ParallelFlags LayoutFlagsFromRecipe(const proto::CompileRecipe& recipe);
CompileSettings SettingsFromRecipe(const proto::CompileRecipe& recipe);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_COMPILE_RECIPE_H_
