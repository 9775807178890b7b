// Lookups into a plan that the actor behaviors need: tensors and ops by name, each
// tensor's N-D SBP and placement, and so the slice a device holds.
#ifndef ACTORS_BEHAVIORS_PLAN_INDEX_H_
#define ACTORS_BEHAVIORS_PLAN_INDEX_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/tensor_slice.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

class PlanIndex {
 public:
  static absl::StatusOr<PlanIndex> Create(const proto::Plan& plan);

  const proto::Plan& plan() const { return *plan_; }
  absl::StatusOr<const proto::TensorDef*> Tensor(const std::string& name) const;
  absl::StatusOr<const proto::OpDef*> Op(const std::string& name) const;
  absl::StatusOr<const AttrMap*> Attrs(const std::string& op) const;
  absl::StatusOr<Shape> LogicalShape(const std::string& tensor) const;

  // Where device `device_index` (into plan.devices()) holds `sbp` of a tensor of
  // `logical` shape on `placement`.
  absl::StatusOr<TensorLayout> Layout(const Shape& logical, const NdSbp& sbp,
                                      const Placement& placement, int device_index) const;
  // Of a data-source output or variable (Plan.tensor_layouts).
  absl::StatusOr<TensorLayout> LeafLayout(const std::string& tensor, int device_index) const;
  // Of argument `argument` of op `op` (Plan.op_sbps), `input` choosing inputs or outputs.
  absl::StatusOr<TensorLayout> OpArgumentLayout(const std::string& op, const std::string& argument,
                                                bool input, int device_index) const;

 private:
  const proto::Plan* plan_ = nullptr;
  absl::flat_hash_map<std::string, const proto::TensorDef*> tensors_;
  absl::flat_hash_map<std::string, const proto::OpDef*> ops_;
  absl::flat_hash_map<std::string, AttrMap> attrs_;
  absl::flat_hash_map<std::string, const proto::LogicalOpSbp*> op_sbps_;
  absl::flat_hash_map<std::string, const proto::TensorLayout*> leaf_layouts_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_PLAN_INDEX_H_
