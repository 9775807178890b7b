// One index into a plan, shared by every reader of plans: `oneflow inspect` walks a plan by
// id and name, the runtime binds each actor's behavior to the tensors, ops and layouts it
// names. Before this index existed each side built its own maps over the same plan.
//
// Two families of lookups, for two kinds of reader:
//  - Find*: nullptr when the plan has no such entry, for readers that print a missing
//    name as is (CheckPlanForInspection has already refused missing ids);
//  - Tensor, Op, Attrs, LogicalShape and the layouts: FAILED_PRECONDITION naming what is
//    missing, for the runtime, which must not run a plan that refers to nothing.
// The plan must outlive the index (it holds pointers into it). Where a plan repeats a name
// or id (the checks refuse repeated ids), the first wins.
#ifndef PLAN_PLAN_INDEX_H_
#define PLAN_PLAN_INDEX_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "oneflow_core/tensor_slice.h"
#include "proto/plan.pb.h"

namespace oneflow {

class PlanIndex {
 public:
  // Indexes `plan`; never fails, so it serves plans that are not yet checked. An op whose
  // attributes do not convert is indexed, and Attrs() of it returns the conversion error.
  explicit PlanIndex(const proto::Plan& plan);
  // As the constructor, but refuses a plan with an op whose attributes do not convert
  // (the first such op, in plan.job order): the runtime reads every op's attributes.
  static absl::StatusOr<PlanIndex> Create(const proto::Plan& plan);

  const proto::Plan& plan() const { return *plan_; }

  // An actor and the index in plan.devices of the device that runs it.
  struct ActorEntry {
    int device_index = 0;
    const proto::ActorDef* actor = nullptr;
  };

  // Each returns nullptr when the plan has no such entry.
  const proto::OpDef* FindOp(absl::string_view name) const;
  const proto::TensorDef* FindTensor(absl::string_view name) const;
  const proto::LogicalOpSbp* FindOpSbp(absl::string_view op) const;
  const proto::CollectiveDef* FindCollective(int64_t id) const;
  const ActorEntry* FindActor(int64_t id) const;
  const proto::RegisterDef* FindRegister(int device_index, int64_t id) const;

  // True when `tensor` is a variable of plan.job, or an output of one of its data sources.
  bool IsVariable(absl::string_view tensor) const;
  bool IsDataSourceOutput(absl::string_view tensor) const;

  // Each returns FAILED_PRECONDITION naming the missing entry.
  absl::StatusOr<const proto::TensorDef*> Tensor(absl::string_view name) const;
  absl::StatusOr<const proto::OpDef*> Op(absl::string_view name) const;
  absl::StatusOr<const AttrMap*> Attrs(absl::string_view op) const;
  absl::StatusOr<Shape> LogicalShape(absl::string_view tensor) const;

  // Where device `device_index` (into plan.devices()) holds `sbp` of a tensor of
  // `logical` shape on `placement`.
  absl::StatusOr<TensorLayout> Layout(const Shape& logical, const NdSbp& sbp,
                                      const Placement& placement, int device_index) const;
  // Of a data-source output or variable (Plan.tensor_layouts).
  absl::StatusOr<TensorLayout> LeafLayout(absl::string_view tensor, int device_index) const;
  // Of argument `argument` of op `op` (Plan.op_sbps), `input` choosing inputs or outputs.
  absl::StatusOr<TensorLayout> OpArgumentLayout(absl::string_view op, absl::string_view argument,
                                                bool input, int device_index) const;

 private:
  const proto::Plan* plan_ = nullptr;
  absl::flat_hash_map<std::string, const proto::OpDef*> ops_;
  absl::flat_hash_map<std::string, const proto::TensorDef*> tensors_;
  absl::flat_hash_map<std::string, const proto::LogicalOpSbp*> op_sbps_;
  absl::flat_hash_map<std::string, const proto::TensorLayout*> leaf_layouts_;
  // Each op's attributes, or why they do not convert.
  absl::flat_hash_map<std::string, absl::StatusOr<AttrMap>> attrs_;
  absl::Status first_attribute_error_;
  absl::flat_hash_set<std::string> variables_;
  absl::flat_hash_set<std::string> data_source_outputs_;
  absl::flat_hash_map<int64_t, const proto::CollectiveDef*> collectives_;
  absl::flat_hash_map<int64_t, ActorEntry> actors_;
  // Keyed by (device index, register id): register ids need only be unique per device.
  absl::flat_hash_map<std::pair<int, int64_t>, const proto::RegisterDef*> registers_;
};

}  // namespace oneflow

#endif  // PLAN_PLAN_INDEX_H_
