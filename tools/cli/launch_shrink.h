// `oneflow launch --elastic=shrink --min_nodes=K` (docs/elastic.md): when a node is lost
// and no spare is left, the job is compiled again for the nodes that survive, from the
// recipe the plan carries (Plan.recipe, examples/common/compile_recipe.h), and resumes
// from the newest checkpoint (checkpoints load on any layout). These are the parts the
// launch's policy (launch_command.cc) uses, each testable without a cluster.
#ifndef TOOLS_CLI_LAUNCH_SHRINK_H_
#define TOOLS_CLI_LAUNCH_SHRINK_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace oneflow::cli {

struct ElasticPolicy {
  // --elastic=shrink: re-plan on the survivors; off: a lost node with no spare ends the launch.
  bool shrink = false;
  // The fewest nodes a re-planned job may run on (--min_nodes; 1 when not given).
  int64_t min_nodes = 1;
};

// --elastic and --min_nodes (as written; empty: not given) for a job on `node_count`
// nodes. INVALID_ARGUMENT naming what was written and what is valid:
//   --elastic=grow is not one of: off, shrink
//   --min_nodes=4 is above the job's 3 nodes (--nodes); valid: 1..3
//   --min_nodes=0 is below 1; valid: 1..3
//   --min_nodes=2 is for --elastic=shrink ...
//   --elastic=shrink needs --checkpoint_dir and --checkpoint_every ...
absl::StatusOr<ElasticPolicy> ParseElasticPolicy(const std::string& elastic, const std::string& min_nodes,
                                                 int64_t node_count, bool has_checkpoint_dir);

// A plan compiled again for fewer nodes.
struct Replan {
  proto::Plan plan;
  // What changed, for the recovery's action: "re-planned for the 2 surviving nodes (dp 3 -> 2,
  // micro-batches 1 -> 2: global batch 48, 12 rows per device's micro-batch (was 16))".
  std::string action;
  // The nodes the new plan runs on: the first `nodes` survivors (fewer than the survivors
  // when the batch divides only by a smaller dp: shrink_rule.h).
  int64_t nodes = 0;
  // `oneflow inspect`'s text of the new plan's layout: its header, cluster, links,
  // predicted step time and every logical op's SBP (the text before its boxings).
  std::string layout_text;
};

// Compiles `plan`'s recipe for the first `survivors` nodes: the same devices per node,
// tp, cp, pp and compile settings, the same global batch, dp and micro-batches by the
// shrink rule (shrink_rule.h: dp reduced to the replicas the survivors hold, or the
// largest smaller dp the batch divides by; micro-batches raised so no device's
// micro-batch grows, the recorded text re-cut to the new micro-batch rows). The new plan
// carries its own recipe (it can shrink again), is sealed and passes the full verifier.
// Errors, each naming the flag or figure at fault and what would be valid:
//   FAILED_PRECONDITION: no recipe (a plan written before recipes); the survivors' devices
//     do not hold whole tp x cp x pp replicas; dp 1 would drop the hierarchy axis the
//     model's SBP hints were written for; ZeRO with dp 1; no dp keeps the global batch
//     (naming the batch, the survivors and the dp counts that divide it);
//   RESOURCE_EXHAUSTED: a device's planned peak is above the recipe's --device_memory
//     (the model does not fit the survivors);
//   the compiler's errors, prefixed with the new layout.
absl::StatusOr<Replan> ReplanForSurvivors(const proto::Plan& plan, int64_t survivors);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_LAUNCH_SHRINK_H_
