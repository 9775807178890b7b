#include "compiler/tensor_parallel_hints.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/op_definition.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// One op of the job with what its signatures need, inputs and outputs in the order of its
// definition ("" for an optional input it does not name).
struct OpInfo {
  const OpDefinition* definition = nullptr;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<TensorType> input_types;
  AttrMap attrs;
};

// How deep a chain of single-input ops an activation is traced back to its matmul
// (reshape, transpose and a few element-wise ops between attention's projections and
// their meeting point).
constexpr int kMaxChainDepth = 8;

// A group under construction (the top of tensor_parallel_hints.h): the tp SBP of each
// tensor it decided, the signature each op it resolved runs, the activations it read
// replicated, and the tensors whose readers are still to be resolved.
struct Group {
  std::map<std::string, Sbp> sbp;
  std::map<int, SbpSignature> resolved;
  std::set<std::string> replicated;
  std::vector<std::string> pending;
};

class Inference {
 public:
  static absl::StatusOr<Inference> Create(const proto::Job& job, int64_t tp_devices) {
    Inference inference(tp_devices);
    for (const proto::TensorDef& tensor : job.tensors()) {
      OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(tensor.dtype()));
      inference.types_[tensor.name()] =
          TensorType{Shape(std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())), dtype};
    }
    for (const proto::VariableDef& variable : job.variables()) {
      const auto type = inference.types_.find(variable.tensor());
      if (type != inference.types_.end() && IsFloating(type->second.dtype)) {
        inference.variables_.insert(variable.tensor());
      }
    }
    for (const proto::OpDef& op : job.ops()) {
      OpInfo info;
      OF_ASSIGN_OR_RETURN(info.definition, OpRegistry::Get().Find(op.type()));
      for (const std::string& argument : info.definition->inputs) {
        const auto named = op.inputs().find(argument);
        info.inputs.push_back(named == op.inputs().end() ? "" : named->second);
        if (info.inputs.back().empty()) continue;
        const auto type = inference.types_.find(info.inputs.back());
        if (type == inference.types_.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("op '", op.name(), "' reads tensor '", info.inputs.back(), "', which the job does not define"));
        }
        info.input_types.push_back(type->second);
      }
      for (const std::string& argument : info.definition->outputs) {
        const auto named = op.outputs().find(argument);
        info.outputs.push_back(named == op.outputs().end() ? "" : named->second);
      }
      for (const auto& [name, value] : op.attrs()) {
        OF_ASSIGN_OR_RETURN(info.attrs[name], AttrFromProto(value));
      }
      const int index = static_cast<int>(inference.ops_.size());
      for (const std::string& output : info.outputs) {
        if (!output.empty()) inference.producer_[output] = index;
      }
      for (const std::string& input : info.inputs) {
        if (!input.empty()) inference.readers_[input].push_back(index);
      }
      inference.ops_.push_back(std::move(info));
    }
    inference.loss_ = job.loss();
    inference.FindLossTail();
    return inference;
  }

  std::map<std::string, Sbp> Run() {
    for (size_t op = 0; op < ops_.size(); ++op) {
      const OpInfo& info = ops_[op];
      const std::string& type = info.definition->type;
      if (type != "matmul" && type != "embedding") continue;
      for (size_t i = 0; i < info.inputs.size(); ++i) {
        const std::string& weight = info.inputs[i];
        if (type == "embedding" && info.definition->inputs[i] != "table") continue;
        if (!IsSeed(weight)) continue;
        const int64_t rank = types_.at(weight).shape.rank();
        bool kept = false;
        for (int64_t axis = 0; axis < rank && !kept; ++axis) kept = TryGroup(weight, Sbp::Split(axis));
        if (!kept) decided_.insert_or_assign(weight, Sbp::Broadcast());
      }
    }
    std::map<std::string, Sbp> splits;
    for (const auto& [tensor, sbp] : decided_) {
      if (sbp.is_split()) splits.emplace(tensor, sbp);
    }
    return splits;
  }

 private:
  explicit Inference(int64_t tp_devices) : tp_devices_(tp_devices) {}

  bool IsSeed(const std::string& tensor) const {
    return variables_.count(tensor) > 0 && decided_.count(tensor) == 0 && types_.at(tensor).shape.rank() >= 2;
  }

  // The ops of the loss's tail: those after the last op that reads a variable (ops are in
  // topological order) whose every output is the loss or is read only by ops of the tail
  // (the gpt's cross entropy and mean). A group may close by gathering a split tensor into
  // such an op: the logits of a vocabulary-split output layer, gathered for the loss, as
  // Megatron's output layer without a parallel loss.
  void FindLossTail() {
    int last_variable_reader = -1;
    for (int op = 0; op < static_cast<int>(ops_.size()); ++op) {
      for (const std::string& input : ops_[op].inputs) {
        if (variables_.count(input) > 0) last_variable_reader = op;
      }
    }
    for (int op = static_cast<int>(ops_.size()) - 1; op > last_variable_reader; --op) {
      bool tail = true, any = false;
      for (const std::string& output : ops_[op].outputs) {
        if (output.empty()) continue;
        any = true;
        if (output == loss_) continue;
        const auto readers = readers_.find(output);
        if (readers == readers_.end()) {
          tail = false;
          continue;
        }
        for (int reader : readers->second) tail &= loss_tail_.count(reader) > 0;
      }
      if (tail && any) loss_tail_.insert(op);
    }
  }

  // Grows a group from `seed` split as `split`; keeps its decisions when it closes.
  bool TryGroup(const std::string& seed, const Sbp& split) {
    Group group;
    group.sbp.insert_or_assign(seed, split);
    group.pending.push_back(seed);
    if (!Grow(&group)) return false;
    for (const auto& [tensor, sbp] : group.sbp) {
      if (variables_.count(tensor) > 0) decided_.insert_or_assign(tensor, sbp);
    }
    // Variables it read replicated stay so: a later group splitting one would change what
    // this group's ops read.
    for (const std::string& tensor : group.replicated) {
      if (variables_.count(tensor) > 0 && decided_.count(tensor) == 0) decided_.insert_or_assign(tensor, Sbp::Broadcast());
    }
    return true;
  }

  bool Grow(Group* group) {
    while (!group->pending.empty()) {
      const std::string tensor = group->pending.back();
      group->pending.pop_back();
      const auto readers = readers_.find(tensor);
      if (readers == readers_.end()) continue;
      for (int reader : readers->second) {
        if (!Resolve(reader, group)) return false;
      }
    }
    return true;
  }

  // The tp SBP a tensor already has: the group's, or an earlier group's for a variable.
  std::optional<Sbp> Fixed(const std::string& tensor, const Group& group) const {
    if (const auto in_group = group.sbp.find(tensor); in_group != group.sbp.end()) return in_group->second;
    if (const auto decided = decided_.find(tensor); decided != decided_.end()) return decided->second;
    if (group.replicated.count(tensor) > 0) return Sbp::Broadcast();
    return std::nullopt;
  }

  // The op's signatures valid on the tp devices (Resolve orders them).
  std::vector<SbpSignature> Signatures(int op) const {
    const OpInfo& info = ops_[op];
    std::vector<SbpSignature> valid;
    for (SbpSignature& signature : info.definition->signatures(info.input_types, info.attrs)) {
      if (signature.ValidFor(tp_devices_)) valid.push_back(std::move(signature));
    }
    return valid;
  }

  // The indices into info.inputs of the inputs the op names: input_types and a
  // signature's inputs list only those, in this order.
  static std::vector<int> NamedSlots(const OpInfo& info) {
    std::vector<int> slots;
    for (size_t i = 0; i < info.inputs.size(); ++i) {
      if (!info.inputs[i].empty()) slots.push_back(static_cast<int>(i));
    }
    return slots;
  }

  // Makes op `op` run a signature consistent with the group, with `wanted` on its output
  // `output` when given (back-solving an activation). Each unfixed input that the
  // signature splits is made so (a variable joins; an activation is traced back to its
  // matmul); unfixed replicated inputs are recorded as read replicated.
  bool Resolve(int op, Group* group, const std::string& output = "", const std::optional<Sbp>& wanted = std::nullopt,
               int depth = 0) {
    const OpInfo& info = ops_[op];
    const std::vector<int> slots = NamedSlots(info);
    if (const auto done = group->resolved.find(op); done != group->resolved.end()) {
      // A loss op reading the group's tensors gathered (no signature): it puts out nothing split.
      if (done->second.inputs.empty()) return !wanted.has_value();
      for (size_t k = 0; k < slots.size(); ++k) {
        const std::optional<Sbp> fixed = Fixed(info.inputs[slots[k]], *group);
        if (fixed.has_value() && *fixed != done->second.inputs[k]) return false;
      }
      if (wanted.has_value()) {
        for (size_t o = 0; o < info.outputs.size(); ++o) {
          if (info.outputs[o] == output) return done->second.outputs[o] == *wanted;
        }
      }
      return true;
    }
    std::vector<SbpSignature> signatures = Signatures(op);
    // Fewest inputs to make split first: a signature that needs nothing new wins.
    std::vector<std::pair<int, size_t>> order;
    for (size_t s = 0; s < signatures.size(); ++s) {
      const SbpSignature& signature = signatures[s];
      bool matches = signature.inputs.size() == slots.size();
      int unfixed_split = 0;
      for (size_t k = 0; matches && k < slots.size(); ++k) {
        const std::optional<Sbp> fixed = Fixed(info.inputs[slots[k]], *group);
        if (fixed.has_value()) {
          matches = *fixed == signature.inputs[k];
        } else if (!signature.inputs[k].is_broadcast()) {
          ++unfixed_split;
        }
      }
      for (size_t o = 0; matches && wanted.has_value() && o < info.outputs.size(); ++o) {
        if (info.outputs[o] == output) matches = signature.outputs[o] == *wanted;
      }
      if (matches) order.emplace_back(unfixed_split, s);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [unused, s] : order) {
      const SbpSignature& signature = signatures[s];
      Group attempt = *group;
      attempt.resolved.insert_or_assign(op, signature);
      bool ok = true;
      for (size_t o = 0; o < info.outputs.size(); ++o) {
        if (info.outputs[o].empty()) continue;
        attempt.sbp.insert_or_assign(info.outputs[o], signature.outputs[o]);
        if (signature.outputs[o].is_split()) attempt.pending.push_back(info.outputs[o]);
      }
      for (size_t k = 0; ok && k < slots.size(); ++k) {
        const std::string& input = info.inputs[slots[k]];
        if (Fixed(input, attempt).has_value()) continue;
        if (signature.inputs[k].is_broadcast()) {
          attempt.replicated.insert(input);
        } else {
          ok = MakeSplit(input, signature.inputs[k], &attempt, depth);
        }
      }
      if (ok) {
        *group = std::move(attempt);
        return true;
      }
    }
    // No split signature: the loss's own ops may read the group's tensors gathered.
    if (!wanted.has_value() && loss_tail_.count(op) > 0) {
      group->resolved.insert_or_assign(op, SbpSignature{});
      return true;
    }
    return false;
  }

  // Makes `tensor`, not yet fixed, split as `sbp`: an undecided variable joins the group;
  // an activation made by an op of one or more inputs is back-solved through its producer
  // (which must put it out so), at most kMaxChainDepth ops deep.
  bool MakeSplit(const std::string& tensor, const Sbp& sbp, Group* group, int depth) {
    if (variables_.count(tensor) > 0) {
      if (decided_.count(tensor) > 0) return false;
      group->sbp.insert_or_assign(tensor, sbp);
      group->pending.push_back(tensor);  // its other readers must agree
      return true;
    }
    const auto producer = producer_.find(tensor);
    if (producer == producer_.end() || depth >= kMaxChainDepth) return false;
    if (!Resolve(producer->second, group, tensor, sbp, depth + 1)) return false;
    group->pending.push_back(tensor);  // its other readers
    return true;
  }

  int64_t tp_devices_;
  std::map<std::string, TensorType> types_;
  std::set<std::string> variables_;  // floating-point variables
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> readers_;
  std::vector<OpInfo> ops_;
  std::string loss_;
  std::set<int> loss_tail_;
  std::map<std::string, Sbp> decided_;  // variables, kept groups' and replicated seeds'
};

}  // namespace

absl::StatusOr<std::map<std::string, Sbp>> InferTensorParallelSplits(const proto::Job& job, int64_t tp_devices) {
  if (tp_devices < 2) {
    return absl::InvalidArgumentError(absl::StrCat("tensor-parallel devices ", tp_devices, " < 2: nothing to split"));
  }
  OF_ASSIGN_OR_RETURN(Inference inference, Inference::Create(job, tp_devices));
  return inference.Run();
}

}  // namespace oneflow
