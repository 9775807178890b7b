#include "examples/common/tensor_parallel_hinting.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/tensor_parallel_hints.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {

absl::StatusOr<std::string> HintTensorParallelism(const ParallelLayout& layout, proto::Job* job) {
  if (layout.tp() < 2 || layout.cp() > 1) return std::string();
  for (const proto::TensorDef& tensor : job->tensors()) {
    if (!tensor.has_sbp_hint()) continue;
    OF_ASSIGN_OR_RETURN(const NdSbp hint, NdSbp::FromProto(tensor.sbp_hint()));
    if (!hint.IsAllBroadcast()) return std::string();
  }
  // Hints that split nothing (`sbp=B` everywhere: what --print_graph writes for one
  // device) say nothing of tp, and would replicate every tp device's work: they go.
  ClearSbpHints(job);
  OF_ASSIGN_OR_RETURN(const auto splits, InferTensorParallelSplits(*job, layout.tp()));
  if (splits.empty()) {
    return absl::StrCat("tensor parallelism: the graph has no sbp hint that splits and no weight Megatron's split "
                        "applies to over --tp=",
                        layout.tp(), "; the tp axis runs as more data parallelism");
  }
  std::set<std::string> data, variables;
  for (const proto::DataSourceDef& source : job->data_sources()) data.insert(source.outputs().begin(), source.outputs().end());
  for (const proto::VariableDef& variable : job->variables()) variables.insert(variable.tensor());
  std::vector<std::string> split_names;
  for (proto::TensorDef& tensor : *job->mutable_tensors()) {
    if (const auto split = splits.find(tensor.name()); split != splits.end()) {
      *tensor.mutable_sbp_hint() = layout.Sbp(Sbp::Broadcast(), split->second).ToProto();
      split_names.push_back(absl::StrCat(tensor.name(), " ", split->second.ToString()));
    } else if (variables.count(tensor.name()) > 0) {
      *tensor.mutable_sbp_hint() = layout.Sbp(Sbp::Broadcast(), Sbp::Broadcast()).ToProto();
    } else if (data.count(tensor.name()) > 0) {
      *tensor.mutable_sbp_hint() = layout.Sbp(Sbp::Split(0), Sbp::Broadcast()).ToProto();
    }
  }
  return absl::StrCat("tensor parallelism: the graph has no sbp hint that splits; split over --tp=", layout.tp(),
                      " as Megatron would: ", absl::StrJoin(split_names, ", "), "; every other variable replicated");
}

void ClearSbpHints(proto::Job* job) {
  for (proto::TensorDef& tensor : *job->mutable_tensors()) tensor.clear_sbp_hint();
}

}  // namespace oneflow::examples
