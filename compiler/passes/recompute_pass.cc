#include "compiler/passes/recompute_pass.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"
#include "sbp/compute_cost.h"

namespace oneflow {
namespace {

int64_t TensorBytes(const LogicalTensor& tensor) {
  return tensor.type.shape.NumElements() * SizeOf(tensor.type.dtype);
}

// 2 m n k for a matmul-shaped op, one per output element otherwise.
double OpFlops(const LogicalGraph& graph, const LogicalOp& op) {
  const TensorType& out = graph.tensors[op.outputs[0]].type;
  if (IsGemmKernel(op.type)) {
    const TensorType& a = graph.tensors[op.inputs[0]].type;
    return GemmFlops(a.shape.NumElements(), out.shape.dim(out.shape.rank() - 1));
  }
  double flops = 0;
  for (int64_t t : op.outputs) flops += static_cast<double>(graph.tensors[t].type.shape.NumElements());
  return flops;
}

// The mode that applies to op `o`: its block's override, else the option (ops outside
// blocks: none).
proto::RecomputeMode ModeOf(const Compilation& compilation, const proto::OpDef& def) {
  if (def.block().empty()) return proto::RECOMPUTE_NONE;
  if (def.block_recompute() != proto::RECOMPUTE_UNSET) return def.block_recompute();
  return compilation.options.recompute;
}

// Whether forward op `o` may be re-run in backward (recompute_pass.h).
bool IsCandidate(const Compilation& compilation, const std::vector<bool>& forward, int64_t o) {
  const LogicalGraph& graph = compilation.graph;
  const LogicalOp& op = graph.ops[o];
  const proto::OpDef& def = *op.def;
  if (!forward[o] || op.outputs.empty()) return false;
  bool forced = false;
  for (int64_t t : op.outputs) {
    if (t == graph.loss) return false;
    const proto::RecomputeMode hint = compilation.job.tensors(static_cast<int>(t)).recompute();
    if (hint == proto::RECOMPUTE_NONE) return false;
    forced |= hint == proto::RECOMPUTE_FULL;
    for (int64_t reader : graph.tensors[t].consumers) {
      if (forward[reader] && graph.ops[reader].def->block() != def.block()) return false;
    }
  }
  if (forced) return true;
  switch (ModeOf(compilation, def)) {
    case proto::RECOMPUTE_FULL:
      return true;
    case proto::RECOMPUTE_SELECTIVE:
      return def.attention_core();
    default:
      return false;
  }
}

// The SBPs sbp_choice gave every tensor and op, by name, to carry over the re-indexing.
struct ChosenSbps {
  absl::flat_hash_map<std::string, NdSbp> tensors;
  absl::flat_hash_map<std::string, std::pair<std::vector<NdSbp>, std::vector<NdSbp>>> ops;
};

std::string CopyName(const std::string& name) { return absl::StrCat(name, "/recompute"); }

}  // namespace

absl::StatusOr<bool> RecomputePass::Run(Compilation* compilation) {
  const LogicalGraph& graph = compilation->graph;
  const proto::Job& job = compilation->job;
  const int64_t num_ops = static_cast<int64_t>(graph.ops.size());
  const std::vector<bool> forward = ForwardOps(graph);
  std::vector<bool> candidate(num_ops, false);
  bool any_block = false;
  for (int64_t o = 0; o < num_ops; ++o) {
    candidate[o] = IsCandidate(*compilation, forward, o);
    any_block |= !graph.ops[o].def->block().empty();
  }
  // Copies: candidates a backward op reads, then the candidates their inputs come from.
  std::vector<bool> copied(num_ops, false);
  for (int64_t o = num_ops - 1; o >= 0; --o) {
    if (!candidate[o]) continue;
    for (int64_t t : graph.ops[o].outputs) {
      for (int64_t reader : graph.tensors[t].consumers) copied[o] = copied[o] || !forward[reader];
    }
  }
  for (int64_t o = num_ops - 1; o >= 0; --o) {
    if (!copied[o]) continue;
    for (int64_t t : graph.ops[o].inputs) {
      const LogicalTensor& input = graph.tensors[t];
      if (input.kind == LogicalTensor::Kind::kOpOutput && candidate[input.producer]) copied[input.producer] = true;
    }
  }
  // The per-block summary, also when nothing is re-run (mode none shows what is kept).
  std::map<std::string, proto::RecomputeBlockDef> blocks;
  auto copy_reads = [&](int64_t t) {
    for (int64_t reader : graph.tensors[t].consumers) {
      if (copied[reader]) return true;
    }
    return false;
  };
  for (int64_t o = 0; o < num_ops; ++o) {
    const LogicalOp& op = graph.ops[o];
    const std::string& block = op.def->block();
    if (!forward[o] || block.empty()) continue;
    proto::RecomputeBlockDef& summary = blocks[block];
    summary.set_block(block);
    summary.set_mode(ModeOf(*compilation, *op.def));
    for (int64_t t : op.outputs) {
      bool backward_reads = false;
      for (int64_t reader : graph.tensors[t].consumers) backward_reads |= !forward[reader];
      const int64_t bytes = TensorBytes(graph.tensors[t]);
      if (backward_reads) summary.set_activation_bytes_without(summary.activation_bytes_without() + bytes);
      // Kept: what backward or a copy reads of an op that is not re-run itself.
      if (!copied[o] && (backward_reads || copy_reads(t))) {
        summary.set_activation_bytes_kept(summary.activation_bytes_kept() + bytes);
      }
    }
    if (copied[o]) {
      summary.set_recomputed_ops(summary.recomputed_ops() + 1);
      summary.set_recompute_flops(summary.recompute_flops() + OpFlops(graph, op));
    }
  }
  if (std::find(copied.begin(), copied.end(), true) == copied.end()) {
    // Nothing is re-run: the summary is written into the job in place, so the graph's
    // OpDef pointers (LogicalOp::def) stay valid for the passes after this one.
    compilation->job.set_recompute(compilation->options.recompute);
    compilation->job.clear_recompute_blocks();
    for (const auto& [name, summary] : blocks) *compilation->job.add_recompute_blocks() = summary;
    return any_block;
  }
  proto::Job rewritten = job;
  rewritten.set_recompute(compilation->options.recompute);
  rewritten.clear_recompute_blocks();
  for (const auto& [name, summary] : blocks) *rewritten.add_recompute_blocks() = summary;

  // Where each copy runs: with the other copies of its block (or, outside blocks, on its
  // own), just before the first backward op reading any of them; never after a copy
  // that reads it.
  absl::flat_hash_map<std::string, int64_t> group_position;
  auto group_of = [&](int64_t o) {
    const std::string& block = graph.ops[o].def->block();
    return block.empty() ? absl::StrCat("op:", graph.ops[o].name) : absl::StrCat("block:", block);
  };
  for (int64_t o = 0; o < num_ops; ++o) {
    if (!copied[o]) continue;
    int64_t first = num_ops;
    for (int64_t t : graph.ops[o].outputs) {
      for (int64_t reader : graph.tensors[t].consumers) {
        if (!forward[reader]) first = std::min(first, reader);
      }
    }
    auto [it, inserted] = group_position.emplace(group_of(o), first);
    if (!inserted) it->second = std::min(it->second, first);
  }
  std::vector<int64_t> position(num_ops, -1);
  for (int64_t o = num_ops - 1; o >= 0; --o) {
    if (!copied[o]) continue;
    position[o] = group_position.at(group_of(o));
    for (int64_t t : graph.ops[o].outputs) {
      for (int64_t reader : graph.tensors[t].consumers) {
        if (copied[reader]) position[o] = std::min(position[o], position[reader]);
      }
    }
  }
  std::vector<std::vector<int64_t>> copies_before(num_ops + 1);
  for (int64_t o = 0; o < num_ops; ++o) {
    if (copied[o]) copies_before[position[o]].push_back(o);
  }

  // The copies' tensor names (the DSL's naming: "<op>" or "<op>/<output>").
  absl::flat_hash_map<std::string, std::string> copy_of_tensor;
  for (int64_t o = 0; o < num_ops; ++o) {
    if (!copied[o]) continue;
    const proto::OpDef& def = *graph.ops[o].def;
    for (const auto& [arg, tensor] : def.outputs()) {
      copy_of_tensor[tensor] = def.outputs_size() == 1 ? CopyName(def.name())
                                                       : absl::StrCat(CopyName(def.name()), "/", arg);
    }
  }
  auto renamed = [&](const std::string& tensor) {
    auto it = copy_of_tensor.find(tensor);
    return it == copy_of_tensor.end() ? tensor : it->second;
  };
  ChosenSbps chosen;
  for (const LogicalTensor& tensor : graph.tensors) {
    chosen.tensors[tensor.name] = tensor.sbp;
    auto it = copy_of_tensor.find(tensor.name);
    if (it != copy_of_tensor.end()) chosen.tensors[it->second] = tensor.sbp;
  }
  rewritten.clear_ops();
  for (int64_t o = 0; o <= num_ops; ++o) {
    for (int64_t c : copies_before[o]) {
      const LogicalOp& original = graph.ops[c];
      proto::OpDef* copy = rewritten.add_ops();
      *copy = *original.def;
      copy->set_name(CopyName(original.name));
      copy->set_recompute_of(original.name);
      for (auto& [arg, tensor] : *copy->mutable_inputs()) tensor = renamed(tensor);
      for (auto& [arg, tensor] : *copy->mutable_outputs()) tensor = copy_of_tensor.at(tensor);
      chosen.ops[copy->name()] = {original.input_sbps, original.output_sbps};
    }
    if (o == num_ops) break;
    const LogicalOp& op = graph.ops[o];
    proto::OpDef* def = rewritten.add_ops();
    *def = *op.def;
    chosen.ops[op.name] = {op.input_sbps, op.output_sbps};
    if (forward[o]) continue;
    for (auto& [arg, tensor] : *def->mutable_inputs()) tensor = renamed(tensor);
  }
  for (int t = 0; t < job.tensors_size(); ++t) {
    auto it = copy_of_tensor.find(job.tensors(t).name());
    if (it == copy_of_tensor.end()) continue;
    proto::TensorDef* copy = rewritten.add_tensors();
    *copy = job.tensors(t);
    copy->set_name(it->second);
    copy->clear_recompute();
  }

  const std::vector<Placement> placements = graph.placements;
  compilation->job = std::move(rewritten);
  OF_RETURN_IF_ERROR(IndexLogicalGraph(compilation));
  LogicalGraph& indexed = compilation->graph;
  // Copies carry their originals' hints and read what they read, so the placement table
  // (which sbp_choice's boxing cache refers to by index) is the one sbp_choice saw.
  if (indexed.placements != placements) {
    return absl::InternalError("recompute changed the job's placement table");
  }
  for (LogicalTensor& tensor : indexed.tensors) {
    auto found = chosen.tensors.find(tensor.name);
    if (found == chosen.tensors.end()) {
      return absl::InternalError(absl::StrCat("recompute: tensor '", tensor.name, "' has no SBP"));
    }
    tensor.sbp = found->second;
    tensor.sbp_chosen = true;
  }
  for (LogicalOp& op : indexed.ops) {
    auto found = chosen.ops.find(op.name);
    if (found == chosen.ops.end()) {
      return absl::InternalError(absl::StrCat("recompute: op '", op.name, "' has no SBP signature"));
    }
    op.input_sbps = found->second.first;
    op.output_sbps = found->second.second;
  }
  return true;
}

}  // namespace oneflow
