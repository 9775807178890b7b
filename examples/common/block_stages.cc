#include "examples/common/block_stages.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "oneflow_core/sbp.h"

namespace oneflow::examples {

std::vector<std::string> BlocksInOrder(const proto::Job& job) {
  std::vector<std::string> blocks;
  std::set<std::string> seen;
  for (const proto::OpDef& op : job.ops()) {
    if (!op.block().empty() && seen.insert(op.block()).second) blocks.push_back(op.block());
  }
  return blocks;
}

absl::Status PlaceBlocksOnStages(const ParallelLayout& layout, proto::Job* job) {
  if (layout.pp() == 1) return absl::OkStatus();
  if (layout.cp() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("--pp=", layout.pp(), " with --cp=", layout.cp(),
                                                   ": a graph's blocks are put on pipeline stages only without context "
                                                   "parallelism; print the graph with the same --pp and --cp instead"));
  }
  const std::vector<std::string> blocks = BlocksInOrder(*job);
  if (static_cast<int64_t>(blocks.size()) < layout.pp()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--pp=", layout.pp(), " needs a block per pipeline stage, and the graph has ", blocks.size(),
        " block(s) (ops marked block=NAME); valid: --pp up to ", std::max<size_t>(blocks.size(), 1)));
  }
  if (absl::Status checked = layout.CheckStages(static_cast<int64_t>(blocks.size()), "blocks"); !checked.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the graph has ", blocks.size(), " blocks: ", checked.message()));
  }
  std::map<std::string, int64_t> block_stage;
  for (size_t index = 0; index < blocks.size(); ++index) {
    block_stage[blocks[index]] = layout.StageOf(static_cast<int64_t>(index), static_cast<int64_t>(blocks.size()));
  }
  std::map<std::string, int> tensor_index;
  for (int index = 0; index < job->tensors_size(); ++index) {
    const proto::TensorDef& tensor = job->tensors(index);
    if (tensor.has_placement()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "' has its own placement; --pp puts a "
                                                     "graph's blocks on stages only when no tensor names a placement"));
    }
    tensor_index[tensor.name()] = index;
  }
  std::set<std::string> variables;
  for (const proto::VariableDef& variable : job->variables()) variables.insert(variable.tensor());

  // Stages of the activations and ops, with the latest block each activation comes from
  // (-1: none; data-source tensors come from no block and live on stage 0).
  struct Source {
    int64_t stage = 0;
    int64_t block = -1;
  };
  std::map<std::string, int64_t> block_index;
  for (size_t index = 0; index < blocks.size(); ++index) block_index[blocks[index]] = static_cast<int64_t>(index);
  std::map<std::string, Source> activation;
  for (const proto::DataSourceDef& source : job->data_sources()) {
    for (const std::string& output : source.outputs()) activation[output] = Source{};
  }
  std::vector<int64_t> op_stage(job->ops_size(), 0);
  std::map<std::string, int64_t> variable_stage;
  for (int index = 0; index < job->ops_size(); ++index) {
    const proto::OpDef& op = job->ops(index);
    Source source;
    if (!op.block().empty()) {
      source = Source{block_stage.at(op.block()), block_index.at(op.block())};
    } else {
      // Outside the blocks: with what comes from the latest block (the loss after the
      // last block though it also reads the targets; the embedding before the first).
      const std::map<std::string, std::string> arguments(op.inputs().begin(), op.inputs().end());
      for (const auto& [argument, input] : arguments) {
        const auto produced = activation.find(input);
        if (produced != activation.end() && produced->second.block > source.block) source = produced->second;
      }
    }
    op_stage[index] = source.stage;
    for (const auto& [argument, input] : op.inputs()) {
      if (variables.count(input) > 0) variable_stage.emplace(input, source.stage);
    }
    for (const auto& [argument, output] : op.outputs()) activation[output] = source;
  }

  // The identities: one per activation and stage it enters a block on.
  std::map<std::pair<std::string, int64_t>, std::string> entered;
  std::vector<proto::OpDef> ops;
  std::vector<int64_t> stages;
  for (int index = 0; index < job->ops_size(); ++index) {
    proto::OpDef op = job->ops(index);
    const int64_t stage = op_stage[index];
    if (!op.block().empty()) {
      // Arguments in name order, so the identities' order is the job's, not the map's.
      std::map<std::string, std::string> arguments(op.inputs().begin(), op.inputs().end());
      for (auto& [argument, input] : arguments) {
        const auto produced = activation.find(input);
        if (produced == activation.end() || produced->second.stage == stage) continue;
        const auto key = std::make_pair(input, stage);
        auto known = entered.find(key);
        if (known == entered.end()) {
          const std::string name = absl::StrCat(input, "/to_stage", stage);
          if (tensor_index.count(name) > 0) {
            return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' exists already; it is the name the move of '",
                                                           input, "' onto pipeline stage ", stage, " takes"));
          }
          const proto::TensorDef& from = job->tensors(tensor_index.at(input));
          proto::TensorDef moved;
          moved.set_name(name);
          *moved.mutable_shape() = from.shape();
          moved.set_dtype(from.dtype());
          *moved.mutable_location() = op.location();
          const bool rows_divide = from.shape_size() > 0 && from.shape(0) % layout.dp() == 0;
          *moved.mutable_sbp_hint() =
              layout.Sbp(rows_divide ? Sbp::Split(0) : Sbp::Broadcast(), Sbp::Broadcast()).ToProto();
          tensor_index[name] = job->tensors_size();
          *job->add_tensors() = std::move(moved);
          proto::OpDef identity;
          identity.set_name(name);
          identity.set_type("identity");
          (*identity.mutable_inputs())["x"] = input;
          (*identity.mutable_outputs())["out"] = name;
          *identity.mutable_location() = op.location();
          ops.push_back(std::move(identity));
          stages.push_back(stage);
          known = entered.emplace(key, name).first;
        }
        (*op.mutable_inputs())[argument] = known->second;
      }
    }
    ops.push_back(std::move(op));
    stages.push_back(stage);
  }

  // Every tensor an op of a later stage writes takes that stage's placement, as do the
  // moves and every variable; the activations of stage 0 before the first move stay on
  // the default, as the builders leave them (an identity's gradient moves back only to an
  // input that names a placement: IdentityGradient). After it (a chunk back on stage 0,
  // the targets read by the loss) they name stage 0, since the compiler would otherwise
  // run an op where its first input lives.
  auto place = [&](const std::string& tensor, int64_t stage) {
    *job->mutable_tensors(tensor_index.at(tensor))->mutable_placement() = layout.StagePlacement(stage).ToProto();
  };
  bool moved = false;
  for (size_t index = 0; index < ops.size(); ++index) {
    moved = moved || stages[index] != 0;
    if (!moved && stages[index] == 0) continue;
    for (const auto& [argument, output] : ops[index].outputs()) place(output, stages[index]);
  }
  for (const auto& [variable, stage] : variable_stage) place(variable, stage);
  job->clear_ops();
  for (proto::OpDef& op : ops) *job->add_ops() = std::move(op);
  return absl::OkStatus();
}

}  // namespace oneflow::examples
