#include "compiler/passes/epilogue_fusion_pass.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// One matmul -> bias_add (-> relu) chain, by op index; relu -1 when not fused.
struct Chain {
  int64_t matmul = -1;
  int64_t bias_add = -1;
  int64_t relu = -1;
  int64_t last() const { return relu >= 0 ? relu : bias_add; }
};

// Whether tensor `t`, read by op `reader`, can disappear into a fused op: an f32 op
// output that only `reader` reads, on `reader`'s placement, laid out exactly as
// `reader` reads it, and nothing the user or a later pass names (a hint, the loss, a
// gradient).
bool Disappears(const Compilation& compilation, int64_t t, int64_t reader) {
  const LogicalGraph& graph = compilation.graph;
  const LogicalTensor& tensor = graph.tensors[t];
  const LogicalOp& op = graph.ops[reader];
  if (tensor.kind != LogicalTensor::Kind::kOpOutput || tensor.type.dtype != DType::kF32 ||
      t == graph.loss || tensor.is_gradient || tensor.consumers.size() != 1 ||
      tensor.consumers[0] != reader || tensor.placement != op.placement) {
    return false;
  }
  const proto::TensorDef& def = compilation.job.tensors(static_cast<int>(t));
  if (def.has_sbp_hint() || def.has_placement() ||
      def.compression() != proto::TensorDef::COMPRESSION_UNSET || !def.sparse_rows().empty()) {
    return false;
  }
  const LogicalOp& producer = graph.ops[tensor.producer];
  return producer.output_sbps[tensor.producer_output] == op.input_sbps[0];
}

std::vector<Chain> FindChains(const Compilation& compilation) {
  const LogicalGraph& graph = compilation.graph;
  std::vector<Chain> chains;
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    const LogicalOp& op = graph.ops[o];
    if (op.type != "bias_add") continue;
    const int64_t x = op.inputs[0];
    if (!Disappears(compilation, x, static_cast<int64_t>(o))) continue;
    const int64_t producer = graph.tensors[x].producer;
    if (graph.ops[producer].type != "matmul") continue;
    Chain chain{producer, static_cast<int64_t>(o), -1};
    const LogicalTensor& sum = graph.tensors[op.outputs[0]];
    if (sum.consumers.size() == 1 && graph.ops[sum.consumers[0]].type == "relu" &&
        Disappears(compilation, op.outputs[0], sum.consumers[0])) {
      chain.relu = sum.consumers[0];
    }
    chains.push_back(chain);
  }
  return chains;
}

// The fused op's definition in the job: the matmul's name, attributes and source line,
// its a and b, the bias_add's bias, the chain's last output.
proto::OpDef FusedOpDef(const proto::Job& job, const Chain& chain) {
  const proto::OpDef& matmul = job.ops(static_cast<int>(chain.matmul));
  const proto::OpDef& bias_add = job.ops(static_cast<int>(chain.bias_add));
  const proto::OpDef& last = job.ops(static_cast<int>(chain.last()));
  proto::OpDef fused;
  fused.set_name(matmul.name());
  fused.set_type("fused_matmul_bias");
  (*fused.mutable_inputs())["a"] = matmul.inputs().at("a");
  (*fused.mutable_inputs())["b"] = matmul.inputs().at("b");
  (*fused.mutable_inputs())["bias"] = bias_add.inputs().at("bias");
  (*fused.mutable_outputs())["out"] = last.outputs().at("out");
  *fused.mutable_attrs() = matmul.attrs();
  (*fused.mutable_attrs())["relu"] = AttrToProto(AttrValue(chain.relu >= 0));
  *fused.mutable_location() = matmul.location();
  return fused;
}

// The SBPs sbp_choice gave every tensor and op, by name, to carry over the re-indexing.
struct ChosenSbps {
  absl::flat_hash_map<std::string, NdSbp> tensors;
  absl::flat_hash_map<std::string, std::pair<std::vector<NdSbp>, std::vector<NdSbp>>> ops;
};

}  // namespace

absl::StatusOr<bool> EpilogueFusionPass::Run(Compilation* compilation) {
  if (!compilation->options.fuse_epilogues) return false;
  const std::vector<Chain> chains = FindChains(*compilation);
  if (chains.empty()) return false;
  const LogicalGraph& graph = compilation->graph;
  const proto::Job& job = compilation->job;

  ChosenSbps chosen;
  for (const LogicalTensor& tensor : graph.tensors) chosen.tensors[tensor.name] = tensor.sbp;
  for (const LogicalOp& op : graph.ops) chosen.ops[op.name] = {op.input_sbps, op.output_sbps};
  // Op index -> its chain; tensors fused away.
  absl::flat_hash_map<int64_t, const Chain*> chain_of;
  absl::flat_hash_set<int64_t> fused_tensors;
  for (const Chain& chain : chains) {
    const LogicalOp& matmul = graph.ops[chain.matmul];
    const LogicalOp& bias_add = graph.ops[chain.bias_add];
    const LogicalOp& last = graph.ops[chain.last()];
    chain_of[chain.matmul] = chain_of[chain.bias_add] = &chain;
    fused_tensors.insert(matmul.outputs[0]);
    if (chain.relu >= 0) {
      chain_of[chain.relu] = &chain;
      fused_tensors.insert(bias_add.outputs[0]);
    }
    chosen.ops[matmul.name] = {{matmul.input_sbps[0], matmul.input_sbps[1], bias_add.input_sbps[1]},
                               {last.output_sbps[0]}};
  }

  proto::Job fused = job;
  fused.clear_ops();
  fused.clear_tensors();
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    auto found = chain_of.find(static_cast<int64_t>(o));
    if (found == chain_of.end()) {
      *fused.add_ops() = job.ops(static_cast<int>(o));
    } else if (found->second->last() == static_cast<int64_t>(o)) {
      // At the chain's last position every input (the bias may be computed after the
      // matmul) is ready, and every reader of the output still comes later.
      *fused.add_ops() = FusedOpDef(job, *found->second);
    }
  }
  for (int t = 0; t < job.tensors_size(); ++t) {
    if (!fused_tensors.contains(t)) *fused.add_tensors() = job.tensors(t);
  }
  const std::vector<Placement> placements = graph.placements;
  compilation->job = std::move(fused);
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));

  LogicalGraph& indexed = compilation->graph;
  // Only unhinted tensors went, so the placement table (which the boxing cache of
  // sbp_choice refers to by index) is the one sbp_choice saw.
  if (indexed.placements != placements) {
    return absl::InternalError("epilogue fusion changed the job's placement table");
  }
  for (LogicalTensor& tensor : indexed.tensors) {
    auto found = chosen.tensors.find(tensor.name);
    if (found == chosen.tensors.end()) {
      return absl::InternalError(absl::StrCat("epilogue fusion: tensor '", tensor.name, "' has no SBP"));
    }
    tensor.sbp = found->second;
    tensor.sbp_chosen = true;
  }
  for (LogicalOp& op : indexed.ops) {
    auto found = chosen.ops.find(op.name);
    if (found == chosen.ops.end()) {
      return absl::InternalError(absl::StrCat("epilogue fusion: op '", op.name, "' has no SBP signature"));
    }
    op.input_sbps = found->second.first;
    op.output_sbps = found->second.second;
  }
  return true;
}

}  // namespace oneflow
