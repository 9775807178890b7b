#include "tools/launcher/all_reduce_plan.h"

#include "absl/strings/str_cat.h"
#include "oneflow_core/status.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"

namespace oneflow::launcher {

absl::StatusOr<proto::Plan> AllReducePlan(const AllReducePlanOptions& options) {
  if (options.nodes < 1 || options.devices_per_node < 1 || options.elements < 1 || options.collectives < 1) {
    return absl::InvalidArgumentError(absl::StrCat("an all-reduce plan needs nodes, devices_per_node, elements and "
                                                   "collectives >= 1; got ",
                                                   options.nodes, ", ", options.devices_per_node, ", ",
                                                   options.elements, ", ", options.collectives));
  }
  proto::Plan plan;
  plan.set_format_version(kPlanFormatVersion);
  plan.set_register_count(2);
  plan.mutable_cluster()->set_num_nodes(options.nodes);
  plan.mutable_cluster()->set_devices_per_node(options.devices_per_node);
  plan.mutable_job()->set_name(options.job_name);
  plan.mutable_job()->set_batch_size(options.elements);
  proto::NdSbp partial, broadcast;
  partial.add_sbp()->mutable_partial();
  broadcast.add_sbp()->mutable_broadcast();
  for (int64_t c = 0; c < options.collectives; ++c) {
    // The gradient each all-reduce carries, and the boxing step it runs.
    proto::TensorDef* tensor = plan.mutable_job()->add_tensors();
    tensor->set_name(absl::StrCat("grad", c));
    tensor->add_shape(options.elements);
    tensor->set_dtype(proto::DTYPE_F32);
    proto::BoxingDef* boxing = plan.add_boxings();
    boxing->set_id(c);
    boxing->set_tensor(tensor->name());
    proto::BoxingStepDef* step = boxing->add_steps();
    step->set_kind(proto::STEP_ALL_REDUCE);
    *step->mutable_src_sbp() = partial;
    *step->mutable_dst_sbp() = broadcast;
    step->set_collective_id(c);
    proto::CollectiveDef* collective = plan.add_collectives();
    *collective->mutable_src_sbp() = partial;
    *collective->mutable_dst_sbp() = broadcast;
    collective->set_id(c);
    collective->set_kind(proto::ALL_REDUCE);
    collective->set_order(c);
    collective->set_tensor(absl::StrCat("grad", c));
    for (int64_t n = 0; n < options.nodes; ++n) {
      for (int64_t d = 0; d < options.devices_per_node; ++d) {
        proto::DeviceId* member = collective->add_group();
        member->set_node(n);
        member->set_device(d);
      }
    }
  }
  int64_t actor_id = 0;
  for (int64_t n = 0; n < options.nodes; ++n) {
    for (int64_t d = 0; d < options.devices_per_node; ++d) {
      proto::DevicePlan* device = plan.add_devices();
      device->mutable_device()->set_node(n);
      device->mutable_device()->set_device(d);
      for (int64_t c = 0; c < options.collectives; ++c) {
        proto::ActorDef* actor = device->add_actors();
        actor->set_id(actor_id++);
        actor->set_name(absl::StrCat("grad", c, " all_reduce"));
        actor->set_kind(proto::ACTOR_BOXING);
        actor->set_thread(proto::THREAD_COMMUNICATION);
        actor->set_collective_id(c);
        actor->set_boxing_id(c);
        device->add_collective_order(c);
      }
    }
  }
  // Sealed like a compiled plan, so daemons accept it.
  OF_RETURN_IF_ERROR(SealPlan(&plan));
  return plan;
}

}  // namespace oneflow::launcher
