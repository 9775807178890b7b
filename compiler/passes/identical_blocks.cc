#include "compiler/passes/identical_blocks.h"

#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace oneflow {
namespace {

constexpr char kGradScope[] = "_grad/";

// The op a name autograd gave (see OpBlocks) differentiates, by the longest prefix before
// a "_grad/" that names an op or a tensor with a producer; -1 when none does.
int64_t DifferentiatedOp(const LogicalGraph& graph, const absl::flat_hash_map<std::string, int64_t>& op_index,
                         const std::string& name) {
  for (size_t end = name.rfind(kGradScope); end != std::string::npos && end > 0;
       end = name.rfind(kGradScope, end - 1)) {
    const std::string prefix = name.substr(0, end);
    if (auto op = op_index.find(prefix); op != op_index.end()) return op->second;
    if (auto tensor = graph.tensor_index.find(prefix); tensor != graph.tensor_index.end()) {
      const LogicalTensor& t = graph.tensors[tensor->second];
      if (t.kind == LogicalTensor::Kind::kOpOutput) return t.producer;
    }
  }
  return -1;
}

// What an input of op `o` reads, as the block's signature spells it: the position (and
// output) of its producer in the block, or what it is outside the block.
void AppendInput(const LogicalGraph& graph, const std::vector<std::string>& blocks,
                 const absl::flat_hash_map<int64_t, int64_t>& position, int64_t o, int64_t t, std::string* out) {
  const LogicalTensor& tensor = graph.tensors[t];
  if (tensor.kind == LogicalTensor::Kind::kOpOutput && blocks[tensor.producer] == blocks[o]) {
    absl::StrAppend(out, " in", position.at(tensor.producer), ".", tensor.producer_output);
    return;
  }
  absl::StrAppend(out, " out", static_cast<int>(tensor.kind), ":", tensor.type.ToString(), "@", tensor.placement);
  if (tensor.kind != LogicalTensor::Kind::kOpOutput) absl::StrAppend(out, ":", tensor.sbp.ToString());
}

}  // namespace

std::vector<std::string> OpBlocks(const LogicalGraph& graph) {
  const std::vector<bool> forward = ForwardOps(graph);
  absl::flat_hash_map<std::string, int64_t> op_index;
  for (size_t o = 0; o < graph.ops.size(); ++o) op_index[graph.ops[o].name] = static_cast<int64_t>(o);
  std::vector<std::string> blocks(graph.ops.size());
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    const LogicalOp& op = graph.ops[o];
    if (forward[o]) {
      if (op.def != nullptr) blocks[o] = op.def->block();
      continue;
    }
    // Ops are in topological order: what an op differentiates or reads came before it.
    if (const int64_t differentiated = DifferentiatedOp(graph, op_index, op.name);
        differentiated >= 0 && differentiated < static_cast<int64_t>(o)) {
      blocks[o] = blocks[differentiated];
      continue;
    }
    std::string agreed;
    bool disagree = false;
    for (int64_t t : op.inputs) {
      const LogicalTensor& tensor = graph.tensors[t];
      if (tensor.kind != LogicalTensor::Kind::kOpOutput || forward[tensor.producer]) continue;
      const std::string& block = blocks[tensor.producer];
      if (block.empty()) continue;
      if (!agreed.empty() && agreed != block) disagree = true;
      agreed = block;
    }
    if (!disagree) blocks[o] = agreed;
  }
  return blocks;
}

IdenticalBlockClasses FindIdenticalBlocks(const LogicalGraph& graph) {
  const std::vector<std::string> blocks = OpBlocks(graph);
  // Each block's ops in op order, blocks in the order of their first op.
  std::vector<std::string> block_order;
  absl::flat_hash_map<std::string, std::vector<int64_t>> block_ops;
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    if (blocks[o].empty()) continue;
    std::vector<int64_t>& ops = block_ops[blocks[o]];
    if (ops.empty()) block_order.push_back(blocks[o]);
    ops.push_back(static_cast<int64_t>(o));
  }
  IdenticalBlockClasses result;
  std::map<std::string, int64_t> class_of_signature;
  std::vector<std::vector<std::vector<int64_t>>> all_classes;
  for (const std::string& block : block_order) {
    const std::vector<int64_t>& ops = block_ops.at(block);
    absl::flat_hash_map<int64_t, int64_t> position;
    for (size_t i = 0; i < ops.size(); ++i) position[ops[i]] = static_cast<int64_t>(i);
    std::string signature;
    for (int64_t o : ops) {
      const LogicalOp& op = graph.ops[o];
      absl::StrAppend(&signature, op.type, "@", op.placement, "(");
      for (int64_t t : op.inputs) AppendInput(graph, blocks, position, o, t, &signature);
      absl::StrAppend(&signature, ") ->");
      for (int64_t t : op.outputs) {
        const LogicalTensor& tensor = graph.tensors[t];
        absl::StrAppend(&signature, " ", tensor.type.ToString(), "@", tensor.placement,
                        tensor.hint.has_value() ? tensor.hint->ToString() : "");
      }
      absl::StrAppend(&signature, "\n");
    }
    auto [it, inserted] = class_of_signature.emplace(signature, static_cast<int64_t>(all_classes.size()));
    if (inserted) all_classes.emplace_back();
    all_classes[it->second].push_back(ops);
  }
  for (std::vector<std::vector<int64_t>>& blocks_of_class : all_classes) {
    if (blocks_of_class.size() >= 2) result.classes.push_back(std::move(blocks_of_class));
  }
  return result;
}

}  // namespace oneflow
