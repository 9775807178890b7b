#include "plan/plan_index.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

// The entry for `key`, or nullptr.
template <typename Map, typename Key>
auto FindOrNull(const Map& map, const Key& key) -> typename Map::mapped_type {
  auto it = map.find(key);
  return it == map.end() ? nullptr : it->second;
}

// The entry for `name`, or FAILED_PRECONDITION "the plan has no <what> '<name>'".
template <typename Map>
auto FindOrError(const Map& map, absl::string_view name, absl::string_view what)
    -> absl::StatusOr<typename Map::mapped_type> {
  auto it = map.find(name);
  if (it == map.end()) {
    return absl::FailedPreconditionError(absl::StrCat("the plan has no ", what, " '", name, "'"));
  }
  return it->second;
}

absl::StatusOr<AttrMap> ConvertAttributes(const proto::OpDef& op) {
  AttrMap attrs;
  for (const auto& [key, value] : op.attrs()) {
    OF_ASSIGN_OR_RETURN(attrs[key], AttrFromProto(value));
  }
  return attrs;
}

}  // namespace

PlanIndex::PlanIndex(const proto::Plan& plan) : plan_(&plan) {
  for (const proto::OpDef& op : plan.job().ops()) {
    if (!ops_.emplace(op.name(), &op).second) continue;
    absl::StatusOr<AttrMap> attrs = ConvertAttributes(op);
    if (!attrs.ok() && first_attribute_error_.ok()) first_attribute_error_ = attrs.status();
    attrs_.emplace(op.name(), std::move(attrs));
  }
  for (const proto::TensorDef& tensor : plan.job().tensors()) {
    tensors_.emplace(tensor.name(), &tensor);
  }
  for (const proto::VariableDef& variable : plan.job().variables()) {
    variables_.insert(variable.tensor());
  }
  for (const proto::DataSourceDef& source : plan.job().data_sources()) {
    data_source_outputs_.insert(source.outputs().begin(), source.outputs().end());
  }
  for (const proto::LogicalOpSbp& entry : plan.op_sbps()) op_sbps_.emplace(entry.op_name(), &entry);
  for (const proto::TensorLayout& layout : plan.tensor_layouts()) {
    leaf_layouts_.emplace(layout.tensor(), &layout);
  }
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    collectives_.emplace(collective.id(), &collective);
  }
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      actors_.emplace(actor.id(), ActorEntry{d, &actor});
    }
    for (const proto::RegisterDef& reg : plan.devices(d).registers()) {
      registers_.emplace(std::make_pair(d, reg.id()), &reg);
    }
  }
}

absl::StatusOr<PlanIndex> PlanIndex::Create(const proto::Plan& plan) {
  PlanIndex index(plan);
  OF_RETURN_IF_ERROR(index.first_attribute_error_);
  return index;
}

const proto::OpDef* PlanIndex::FindOp(absl::string_view name) const { return FindOrNull(ops_, name); }

const proto::TensorDef* PlanIndex::FindTensor(absl::string_view name) const {
  return FindOrNull(tensors_, name);
}

const proto::LogicalOpSbp* PlanIndex::FindOpSbp(absl::string_view op) const {
  return FindOrNull(op_sbps_, op);
}

const proto::CollectiveDef* PlanIndex::FindCollective(int64_t id) const {
  return FindOrNull(collectives_, id);
}

const PlanIndex::ActorEntry* PlanIndex::FindActor(int64_t id) const {
  auto it = actors_.find(id);
  return it == actors_.end() ? nullptr : &it->second;
}

const proto::RegisterDef* PlanIndex::FindRegister(int device_index, int64_t id) const {
  return FindOrNull(registers_, std::make_pair(device_index, id));
}

bool PlanIndex::IsVariable(absl::string_view tensor) const { return variables_.contains(tensor); }

bool PlanIndex::IsDataSourceOutput(absl::string_view tensor) const {
  return data_source_outputs_.contains(tensor);
}

absl::StatusOr<const proto::TensorDef*> PlanIndex::Tensor(absl::string_view name) const {
  return FindOrError(tensors_, name, "tensor");
}

absl::StatusOr<const proto::OpDef*> PlanIndex::Op(absl::string_view name) const {
  return FindOrError(ops_, name, "op");
}

absl::StatusOr<const AttrMap*> PlanIndex::Attrs(absl::string_view op) const {
  auto it = attrs_.find(op);
  if (it == attrs_.end()) return absl::FailedPreconditionError(absl::StrCat("the plan has no op '", op, "'"));
  if (!it->second.ok()) return it->second.status();
  return &*it->second;
}

absl::StatusOr<Shape> PlanIndex::LogicalShape(absl::string_view tensor) const {
  OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, Tensor(tensor));
  return Shape(std::vector<int64_t>(def->shape().begin(), def->shape().end()));
}

absl::StatusOr<TensorLayout> PlanIndex::Layout(const Shape& logical, const NdSbp& sbp,
                                               const Placement& placement, int device_index) const {
  const proto::DeviceId& id = plan_->devices(device_index).device();
  const int64_t rank = placement.RankOf(DeviceId{id.node(), id.device()});
  if (rank < 0) {
    return absl::FailedPreconditionError(absl::StrCat("device ", id.node(), ":", id.device(),
                                                      " is not in placement ", placement.ToString()));
  }
  OF_ASSIGN_OR_RETURN(TensorSlice slice, DeviceSlice(logical, sbp, placement, rank));
  return TensorLayout{logical, std::move(slice)};
}

absl::StatusOr<TensorLayout> PlanIndex::LeafLayout(absl::string_view tensor, int device_index) const {
  OF_ASSIGN_OR_RETURN(const proto::TensorLayout* layout,
                      FindOrError(leaf_layouts_, tensor, "tensor layout for"));
  OF_ASSIGN_OR_RETURN(Shape logical, LogicalShape(tensor));
  OF_ASSIGN_OR_RETURN(NdSbp sbp, NdSbp::FromProto(layout->sbp()));
  OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(layout->placement()));
  return Layout(logical, sbp, placement, device_index);
}

absl::StatusOr<TensorLayout> PlanIndex::OpArgumentLayout(absl::string_view op, absl::string_view argument,
                                                         bool input, int device_index) const {
  OF_ASSIGN_OR_RETURN(const proto::LogicalOpSbp* entry, FindOrError(op_sbps_, op, "SBP signature of op"));
  OF_ASSIGN_OR_RETURN(const proto::OpDef* def, Op(op));
  const auto& sbps = input ? entry->signature().inputs() : entry->signature().outputs();
  const auto& names = input ? def->inputs() : def->outputs();
  const std::string key(argument);
  auto sbp_it = sbps.find(key);
  auto name_it = names.find(key);
  if (sbp_it == sbps.end() || name_it == names.end()) {
    return absl::FailedPreconditionError(absl::StrCat("op '", op, "' has no argument '", argument, "'"));
  }
  OF_ASSIGN_OR_RETURN(Shape logical, LogicalShape(name_it->second));
  OF_ASSIGN_OR_RETURN(NdSbp sbp, NdSbp::FromProto(sbp_it->second));
  OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(entry->placement()));
  return Layout(logical, sbp, placement, device_index);
}

}  // namespace oneflow
