// The DOT (Graphviz) format of `oneflow inspect`: `dot -Tsvg` turns it into a picture.
//
// Node ids carry a kind prefix ("op:mm", "tensor:x", "boxing:0", "actor:5") so that an
// op and a tensor of the same name stay distinct nodes. Boxings are filled boxes in both
// graphs, so the places where bytes cross devices stand out.
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/cli/inspect_compression.h"
#include "tools/cli/inspect_render.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

constexpr absl::string_view kBoxingStyle =
    "shape=box, style=\"filled,bold\", fillcolor=\"#ffe08a\"";

// A DOT double-quoted string: quotes and backslashes escaped, line breaks as \n.
std::string DotQuote(absl::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (c == '\n') {
      quoted += "\\n";
    } else {
      quoted += c;
    }
  }
  quoted += '"';
  return quoted;
}

std::string OpNode(absl::string_view op) { return DotQuote(absl::StrCat("op:", op)); }
std::string TensorNode(absl::string_view tensor) {
  return DotQuote(absl::StrCat("tensor:", tensor));
}
std::string ActorNode(int64_t id) { return DotQuote(absl::StrCat("actor:", id)); }

void AppendNode(const std::string& id, absl::string_view attributes, absl::string_view label,
                std::string* out) {
  absl::StrAppend(out, "  ", id, " [", attributes, attributes.empty() ? "" : ", ",
                  "label=", DotQuote(label), "];\n");
}

void AppendEdge(const std::string& from, const std::string& to, absl::string_view label,
                std::string* out) {
  absl::StrAppend(out, "  ", from, " -> ", to, " [label=", DotQuote(label), "];\n");
}

std::string BoxingLabel(const proto::BoxingDef& boxing, int b, const CompressionFigures& figures) {
  std::vector<std::string> kinds;
  for (const proto::BoxingStepDef& step : boxing.steps()) kinds.push_back(StepKindText(step.kind()));
  std::string label = absl::StrCat("boxing ", boxing.id(), "\n",
                                   kinds.empty() ? "no steps" : absl::StrJoin(kinds, " + "), "\n",
                                   SbpText(boxing.src_sbp()), " -> ", SbpText(boxing.dst_sbp()));
  if (boxing.compression().kind() != proto::Compression::NONE) {
    absl::StrAppend(&label, "\n", CompressionKindText(boxing.compression().kind()));
  }
  // Each compressed step: its codec(s), dense vs wire bytes per device, the modelled saving.
  for (int s = 0; s < boxing.steps_size(); ++s) {
    const proto::BoxingStepDef& step = boxing.steps(s);
    if (!IsCompressed(step)) continue;
    const std::optional<int64_t> dense = figures.DenseStepBytes(b, s);
    const std::optional<double> saved = SecondsSaved(step);
    absl::StrAppend(&label, "\nstep ", s, ": ", StepCodecText(step), "\n",
                    dense.has_value() ? FormatBytesShort(*dense) : std::string("?"), " -> ",
                    FormatBytesShort(step.bytes_per_device()), "/device",
                    saved.has_value() ? absl::StrFormat(", saves %.3g ms", *saved * 1e3) : std::string());
  }
  if (boxing.sparsity().kind() != proto::Sparsity::DENSE) {
    absl::StrAppend(&label, "\nsparse ", SparsityKindText(boxing.sparsity().kind()));
  }
  absl::StrAppend(&label, "\n", FormatBytesShort(boxing.bytes_per_iter()), "/iter");
  return label;
}

// The logical graph has three kinds of nodes: ops, tensors that no op produces
// (variables, data-source outputs), and boxings.
class LogicalGraph {
 public:
  LogicalGraph(const proto::Plan& plan, const PlanIndex& index)
      : plan_(plan), index_(index), compression_(plan, index) {
    for (const proto::LogicalOpSbp& op : plan.op_sbps()) op_sbps_.emplace(op.op_name(), &op);
    for (const proto::OpDef& op : plan.job().ops()) {
      for (const auto& [argument, tensor] : op.outputs()) producers_.emplace(tensor, op.name());
    }
    for (const proto::BoxingDef& boxing : plan.boxings()) {
      boxed_edges_.insert(std::make_pair(boxing.tensor(), boxing.consumer_op()));
    }
  }

  std::string Render() {
    std::string nodes;
    std::string edges;
    absl::flat_hash_set<std::string> drawn_ops;
    for (const proto::OpDef& op : plan_.job().ops()) {
      AppendOp(op.name(), op.type(), &nodes);
      drawn_ops.insert(op.name());
    }
    for (const proto::LogicalOpSbp& op : plan_.op_sbps()) {
      if (drawn_ops.insert(op.op_name()).second) AppendOp(op.op_name(), "?", &nodes);
    }
    for (const proto::OpDef& op : plan_.job().ops()) {
      for (const auto& [argument, tensor] : SortedStrings(op.inputs())) {
        if (boxed_edges_.contains(std::make_pair(tensor, op.name()))) continue;
        std::string sbp = ConsumerSbp(op.name(), argument);
        if (sbp.empty()) sbp = ProducerSbp(tensor);
        AppendEdge(SourceOf(tensor, &nodes), OpNode(op.name()),
                   sbp.empty() ? tensor : absl::StrCat(tensor, "\n", sbp), &edges);
      }
    }
    for (int b = 0; b < plan_.boxings_size(); ++b) {
      const proto::BoxingDef& boxing = plan_.boxings(b);
      const std::string node = DotQuote(absl::StrCat("boxing:", boxing.id()));
      AppendNode(node, kBoxingStyle, BoxingLabel(boxing, b, compression_), &nodes);
      const std::string from = drawn_ops.contains(boxing.producer_op())
                                   ? OpNode(boxing.producer_op())
                                   : SourceOf(boxing.tensor(), &nodes);
      AppendEdge(from, node, absl::StrCat(boxing.tensor(), "\n", SbpText(boxing.src_sbp())),
                 &edges);
      AppendEdge(node, OpNode(boxing.consumer_op()),
                 absl::StrCat(boxing.tensor(), "\n", SbpText(boxing.dst_sbp())), &edges);
    }
    const std::string name = plan_.job().name().empty() ? "plan" : plan_.job().name();
    return absl::StrCat("digraph ", DotQuote(name), " {\n  node [fontname=\"Helvetica\"];\n",
                        "  edge [fontname=\"Helvetica\", fontsize=10];\n", nodes, edges, "}\n");
  }

 private:
  void AppendOp(const std::string& name, const std::string& type, std::string* out) {
    std::string label = absl::StrCat(name, "\n", type);
    auto it = op_sbps_.find(name);
    if (it != op_sbps_.end()) {
      absl::StrAppend(&label, "\n", PlacementText(it->second->placement()));
    }
    AppendNode(OpNode(name), "shape=ellipse", label, out);
  }

  // The node a tensor flows from: its producing op, or a source node drawn on first use.
  std::string SourceOf(const std::string& tensor, std::string* nodes) {
    auto producer = producers_.find(tensor);
    if (producer != producers_.end()) return OpNode(producer->second);
    if (sources_.insert(tensor).second) {
      const proto::TensorDef* def = index_.FindTensor(tensor);
      std::string label = tensor;
      if (def != nullptr)
        absl::StrAppend(&label, "\n", ShapeAndTypeText(def->shape(), def->dtype()));
      std::string shape = "shape=plaintext";
      if (index_.IsVariable(tensor)) {
        absl::StrAppend(&label, "\nvariable");
        shape = "shape=cylinder";
      } else if (index_.IsDataSourceOutput(tensor)) {
        absl::StrAppend(&label, "\ndata source");
        shape = "shape=invhouse";
      }
      AppendNode(TensorNode(tensor), shape, label, nodes);
    }
    return TensorNode(tensor);
  }

  // The SBP the op's signature gives an argument, or "" when the plan does not say.
  std::string ConsumerSbp(const std::string& op, const std::string& argument) const {
    auto it = op_sbps_.find(op);
    if (it == op_sbps_.end()) return "";
    auto sbp = it->second->signature().inputs().find(argument);
    return sbp == it->second->signature().inputs().end() ? "" : SbpText(sbp->second);
  }

  std::string ProducerSbp(const std::string& tensor) const {
    auto producer = producers_.find(tensor);
    if (producer == producers_.end()) return "";
    auto it = op_sbps_.find(producer->second);
    const proto::OpDef* op = index_.FindOp(producer->second);
    if (it == op_sbps_.end() || op == nullptr) return "";
    for (const auto& [argument, name] : op->outputs()) {
      if (name != tensor) continue;
      auto sbp = it->second->signature().outputs().find(argument);
      if (sbp != it->second->signature().outputs().end()) return SbpText(sbp->second);
    }
    return "";
  }

  const proto::Plan& plan_;
  const PlanIndex& index_;
  const CompressionFigures compression_;
  absl::flat_hash_map<std::string, const proto::LogicalOpSbp*> op_sbps_;
  absl::flat_hash_map<std::string, std::string> producers_;               // tensor -> op
  absl::flat_hash_set<std::pair<std::string, std::string>> boxed_edges_;  // (tensor, consumer)
  absl::flat_hash_set<std::string> sources_;
};

std::string ActorShape(proto::ActorKind kind) {
  switch (kind) {
    case proto::ACTOR_DATA_SOURCE:
      return "shape=invhouse";
    case proto::ACTOR_VARIABLE:
      return "shape=cylinder";
    case proto::ACTOR_COMPUTE:
      return "shape=box, style=rounded";
    case proto::ACTOR_BOXING:
      return std::string(kBoxingStyle);
    case proto::ACTOR_SINK:
      return "shape=house";
    case proto::ACTOR_CONTROL:
      return "shape=diamond";
    default:
      return "shape=ellipse";
  }
}

std::string ActorLabel(const proto::ActorDef& actor, const PlanIndex& index) {
  std::string label =
      absl::StrCat(actor.id(), " ", ActorKindText(actor.kind()), "\n", actor.name());
  if (actor.kind() == proto::ACTOR_BOXING && actor.collective_id() >= 0) {
    const proto::CollectiveDef* collective = index.FindCollective(actor.collective_id());
    absl::StrAppend(&label, "\ncollective ", collective->id(), " ",
                    CollectiveKindText(collective->kind()));
  }
  if (actor.thread() == proto::THREAD_COMMUNICATION)
    absl::StrAppend(&label, "\n(communication thread)");
  return label;
}

}  // namespace

std::string RenderLogicalDot(const proto::Plan& plan, const PlanIndex& index) {
  return LogicalGraph(plan, index).Render();
}

std::string RenderDeviceDot(const proto::Plan& plan, const PlanIndex& index, int device) {
  const proto::DevicePlan& device_plan = plan.devices(device);
  std::string nodes;
  std::string edges;
  for (const proto::ActorDef& actor : device_plan.actors()) {
    AppendNode(ActorNode(actor.id()), ActorShape(actor.kind()), ActorLabel(actor, index), &nodes);
  }
  // Actors of other devices that share a register with this one, drawn dashed once.
  absl::flat_hash_set<int64_t> external;
  auto node_of = [&](int64_t id) {
    const PlanIndex::ActorEntry* entry = index.FindActor(id);
    if (entry->device_index != device && external.insert(id).second) {
      AppendNode(ActorNode(id), "shape=box, style=dashed",
                 absl::StrCat(ActorLabel(*entry->actor, index), "\non ",
                              DeviceTitle(plan, entry->device_index)),
                 &nodes);
    }
    return ActorNode(id);
  };
  for (const proto::RegisterDef& reg : device_plan.registers()) {
    const std::string label = absl::StrCat("r", reg.id(), " ", reg.tensor(), "\n",
                                           ShapeAndTypeText(reg.shape(), reg.dtype()), "\n",
                                           FormatBytesShort(reg.size_bytes()), " x ", reg.count());
    const std::string producer = node_of(reg.producer_actor());
    if (reg.consumer_actors().empty()) {
      // Still show what the register holds: an edge into a dot.
      const std::string sink = DotQuote(absl::StrCat("register:", reg.id()));
      absl::StrAppend(&nodes, "  ", sink, " [shape=point];\n");
      AppendEdge(producer, sink, label, &edges);
    }
    for (int64_t consumer : reg.consumer_actors()) {
      AppendEdge(producer, node_of(consumer), label, &edges);
    }
  }
  return absl::StrCat("digraph ", DotQuote(DeviceTitle(plan, device)),
                      " {\n  node [fontname=\"Helvetica\"];\n",
                      "  edge [fontname=\"Helvetica\", fontsize=10];\n", nodes, edges, "}\n");
}

}  // namespace oneflow::cli
