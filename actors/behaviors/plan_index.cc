#include "actors/behaviors/plan_index.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow::actors {
namespace {

template <typename Map>
auto Lookup(const Map& map, const std::string& name, absl::string_view what)
    -> absl::StatusOr<typename Map::mapped_type> {
  auto it = map.find(name);
  if (it == map.end()) {
    return absl::FailedPreconditionError(absl::StrCat("the plan has no ", what, " '", name, "'"));
  }
  return it->second;
}

}  // namespace

absl::StatusOr<PlanIndex> PlanIndex::Create(const proto::Plan& plan) {
  PlanIndex index;
  index.plan_ = &plan;
  for (const proto::TensorDef& tensor : plan.job().tensors()) index.tensors_[tensor.name()] = &tensor;
  for (const proto::OpDef& op : plan.job().ops()) {
    index.ops_[op.name()] = &op;
    AttrMap& attrs = index.attrs_[op.name()];
    for (const auto& [key, value] : op.attrs()) {
      OF_ASSIGN_OR_RETURN(attrs[key], AttrFromProto(value));
    }
  }
  for (const proto::LogicalOpSbp& entry : plan.op_sbps()) index.op_sbps_[entry.op_name()] = &entry;
  for (const proto::TensorLayout& layout : plan.tensor_layouts()) index.leaf_layouts_[layout.tensor()] = &layout;
  return index;
}

absl::StatusOr<const proto::TensorDef*> PlanIndex::Tensor(const std::string& name) const {
  return Lookup(tensors_, name, "tensor");
}

absl::StatusOr<const proto::OpDef*> PlanIndex::Op(const std::string& name) const {
  return Lookup(ops_, name, "op");
}

absl::StatusOr<const AttrMap*> PlanIndex::Attrs(const std::string& op) const {
  auto it = attrs_.find(op);
  if (it == attrs_.end()) return absl::FailedPreconditionError(absl::StrCat("the plan has no op '", op, "'"));
  return &it->second;
}

absl::StatusOr<Shape> PlanIndex::LogicalShape(const std::string& tensor) const {
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

absl::StatusOr<TensorLayout> PlanIndex::LeafLayout(const std::string& tensor, int device_index) const {
  OF_ASSIGN_OR_RETURN(const proto::TensorLayout* layout, Lookup(leaf_layouts_, tensor, "tensor layout for"));
  OF_ASSIGN_OR_RETURN(Shape logical, LogicalShape(tensor));
  OF_ASSIGN_OR_RETURN(NdSbp sbp, NdSbp::FromProto(layout->sbp()));
  OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(layout->placement()));
  return Layout(logical, sbp, placement, device_index);
}

absl::StatusOr<TensorLayout> PlanIndex::OpArgumentLayout(const std::string& op, const std::string& argument,
                                                         bool input, int device_index) const {
  OF_ASSIGN_OR_RETURN(const proto::LogicalOpSbp* entry, Lookup(op_sbps_, op, "SBP signature of op"));
  OF_ASSIGN_OR_RETURN(const proto::OpDef* def, Op(op));
  const auto& sbps = input ? entry->signature().inputs() : entry->signature().outputs();
  const auto& names = input ? def->inputs() : def->outputs();
  auto sbp_it = sbps.find(argument);
  auto name_it = names.find(argument);
  if (sbp_it == sbps.end() || name_it == names.end()) {
    return absl::FailedPreconditionError(absl::StrCat("op '", op, "' has no argument '", argument, "'"));
  }
  OF_ASSIGN_OR_RETURN(Shape logical, LogicalShape(name_it->second));
  OF_ASSIGN_OR_RETURN(NdSbp sbp, NdSbp::FromProto(sbp_it->second));
  OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(entry->placement()));
  return Layout(logical, sbp, placement, device_index);
}

}  // namespace oneflow::actors
