#include "tools/launcher/testing/test_plans.h"

#include "absl/strings/str_cat.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
#include "glog/logging.h"

namespace oneflow::launcher::testing {

proto::Plan FakeJobPlan(const std::string& behavior, int64_t nodes, int64_t devices_per_node) {
  proto::Plan plan;
  plan.set_format_version(kPlanFormatVersion);
  plan.set_register_count(2);
  plan.mutable_cluster()->set_num_nodes(nodes);
  plan.mutable_cluster()->set_devices_per_node(devices_per_node);
  plan.mutable_job()->set_name(behavior);
  plan.mutable_job()->set_batch_size(kTestBatchSize);
  proto::NdSbp partial, broadcast;
  partial.add_sbp()->mutable_partial();
  broadcast.add_sbp()->mutable_broadcast();
  for (int64_t c = 0; c < kCollectivesPerIteration; ++c) {
    // The gradient each all-reduce carries, and the boxing step it runs.
    proto::TensorDef* tensor = plan.mutable_job()->add_tensors();
    tensor->set_name(absl::StrCat("grad", c));
    tensor->add_shape(kTestBatchSize);
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
    for (int64_t n = 0; n < nodes; ++n) {
      for (int64_t d = 0; d < devices_per_node; ++d) {
        proto::DeviceId* member = collective->add_group();
        member->set_node(n);
        member->set_device(d);
      }
    }
  }
  int64_t actor_id = 0;
  for (int64_t n = 0; n < nodes; ++n) {
    for (int64_t d = 0; d < devices_per_node; ++d) {
      proto::DevicePlan* device = plan.add_devices();
      device->mutable_device()->set_node(n);
      device->mutable_device()->set_device(d);
      for (int64_t c = 0; c < kCollectivesPerIteration; ++c) {
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
  // Sealed like a compiled plan, so daemons accept it (tests that damage it reseal).
  const absl::Status sealed = SealPlan(&plan);
  if (!sealed.ok()) LOG(FATAL) << sealed;
  return plan;
}

}  // namespace oneflow::launcher::testing
