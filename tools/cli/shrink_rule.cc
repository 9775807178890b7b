#include "tools/cli/shrink_rule.h"

#include <memory>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "examples/common/micro_batch_split.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/status.h"

namespace oneflow::cli {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Why dp `dp` cannot be used at all, or "" when it can.
std::string RefusedDp(const ShrinkInputs& in, int64_t dp) {
  if (dp == 1 && in.dp > 1 && (in.tp > 1 || in.cp > 1)) {
    return "dp 1 drops the data-parallel axis of the hierarchy the model's SBP hints were written for";
  }
  if (dp == 1 && in.zero > 0) return absl::StrCat("--zero=", in.zero, " shards over data parallelism and needs dp > 1");
  return "";
}

}  // namespace

absl::StatusOr<ShrinkChoice> ChooseShrinkLayout(const ShrinkInputs& in) {
  const int64_t replica = in.tp * in.cp * in.pp;
  const int64_t surviving_devices = in.survivors * in.devices_per_node;
  const int64_t most = surviving_devices / replica;
  // A device's micro-batch before the loss (the largest part, should the old split have been uneven).
  const int64_t rows_before = CeilDiv(in.batch / in.micro_batches, in.dp);
  std::vector<std::string> refusals;
  std::vector<int64_t> dividing;  // dp counts that split the batch evenly, however many micro-batches
  for (int64_t dp = most; dp >= 1; --dp) {
    const int64_t devices = dp * replica;
    if (devices % in.devices_per_node != 0) continue;  // the layout uses whole nodes
    if (in.batch % dp == 0) dividing.push_back(dp);
    const std::string refused = RefusedDp(in, dp);
    if (!refused.empty()) {
      refusals.push_back(refused);
      continue;
    }
    int64_t chosen_micro_batches = 0;
    if (in.micro_batches_fixed) {
      if (in.batch % (dp * in.micro_batches) == 0) chosen_micro_batches = in.micro_batches;
    } else {
      for (int64_t m = in.micro_batches; dp * m <= in.batch; ++m) {
        if (in.batch % (dp * m) == 0 && in.batch / (dp * m) <= rows_before) {
          chosen_micro_batches = m;
          break;
        }
      }
    }
    if (chosen_micro_batches == 0) continue;
    ShrinkChoice choice;
    choice.dp = dp;
    choice.nodes = devices / in.devices_per_node;
    choice.micro_batches = chosen_micro_batches;
    if (dp != most) {
      const int64_t idle = in.survivors - choice.nodes;
      choice.note = absl::StrCat("the global batch of ", in.batch, " does not split evenly over dp ", most,
                                 in.micro_batches_fixed ? absl::StrCat(" x ", in.micro_batches, " micro-batches") : "",
                                 "; dp ", dp, " is the largest that does", idle > 0 ? absl::StrCat(" (", idle, " of the ", in.survivors, " surviving nodes idle)") : "");
    }
    return choice;
  }
  std::string valid = dividing.empty() ? "none" : absl::StrJoin(dividing, ", ");
  std::set<std::string> reasons(refusals.begin(), refusals.end());
  return absl::FailedPreconditionError(absl::StrCat(
      "the global batch of ", in.batch, " cannot be kept on the ", in.survivors, " surviving nodes x ",
      in.devices_per_node, in.devices_per_node == 1 ? " device" : " devices", " (replicas of --tp=", in.tp, " x --cp=",
      in.cp, " x --pp=", in.pp, ", at most dp ", most, "): ",
      in.micro_batches_fixed ? absl::StrCat("no dp splits it evenly into ", in.micro_batches, " micro-batches")
                             : absl::StrCat("no dp splits it evenly into micro-batches of at most ", rows_before,
                                            " rows per device (the old layout's)"),
      reasons.empty() ? "" : absl::StrCat("; ", absl::StrJoin(reasons, "; ")), "; dp counts up to ", most,
      " that divide the batch: ", valid));
}

std::string ShrinkChoiceText(const ShrinkInputs& in, const ShrinkChoice& choice) {
  const int64_t rows_before = CeilDiv(in.batch / in.micro_batches, in.dp);
  const int64_t rows_after = in.batch / (choice.dp * choice.micro_batches);
  return absl::StrCat("dp ", in.dp, " -> ", choice.dp, ", micro-batches ", in.micro_batches, " -> ",
                      choice.micro_batches, ": global batch ", in.batch, ", ", rows_after,
                      rows_after == 1 ? " row" : " rows", " per device's micro-batch (was ", rows_before, ")");
}

absl::StatusOr<std::string> RecutMicroBatches(absl::string_view text, int64_t batch, int64_t old_micro_batches,
                                              int64_t new_micro_batches) {
  OF_ASSIGN_OR_RETURN(const std::unique_ptr<Graph> parsed, ParseGraphText(text));
  OF_ASSIGN_OR_RETURN(proto::Job job, parsed->Build());
  if (job.batch_size() == 0) job.set_batch_size(batch);
  job.set_micro_batches(old_micro_batches);
  OF_ASSIGN_OR_RETURN(const proto::Job recut, examples::ResizeMicroBatches(job, new_micro_batches));
  OF_ASSIGN_OR_RETURN(const std::unique_ptr<Graph> graph, Graph::FromJob(recut));
  // A recipe's text carries every op's source location; a text without any stays without.
  return graph->ToText(absl::StrContains(text, " loc=") ? Graph::Locations::kPrint : Graph::Locations::kOmit);
}

}  // namespace oneflow::cli
