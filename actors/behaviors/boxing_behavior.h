// Behavior of a boxing actor: one step of a compiler boxing (plan.boxings) on this
// device, through the communicator of the step's group for collectives.
#ifndef ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_
#define ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/behaviors/plan_index.h"
#include "actors/engine.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/in_process/communicator.h"

namespace oneflow::actors {

// One in-process group per distinct device list among the plan's collectives, created
// on first use: every collective of the same group of devices shares a communicator,
// and the static collective order keeps their calls in step.
class CommunicatorPool {
 public:
  explicit CommunicatorPool(const proto::Plan& plan) : plan_(plan) {}

  // The communicator of `device` in the group of collective `collective_id`.
  absl::StatusOr<Communicator*> ForCollective(int64_t collective_id, const proto::DeviceId& device);

  // Fails every group: used when the run stops so no peer waits out its timeout.
  void AbortAll(const absl::Status& cause);

 private:
  const proto::Plan& plan_;
  std::mutex mutex_;
  std::map<std::vector<std::pair<int64_t, int64_t>>, std::unique_ptr<InProcessGroup>> groups_;
};

absl::StatusOr<ActFunction> BindBoxing(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators);

}  // namespace oneflow::actors

#endif  // ACTORS_BEHAVIORS_BOXING_BEHAVIOR_H_
