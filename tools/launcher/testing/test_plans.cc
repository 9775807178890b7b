#include "tools/launcher/testing/test_plans.h"

#include <utility>

#include "glog/logging.h"
#include "tools/launcher/all_reduce_plan.h"

namespace oneflow::launcher::testing {

proto::Plan FakeJobPlan(const std::string& behavior, int64_t nodes, int64_t devices_per_node) {
  AllReducePlanOptions options;
  options.job_name = behavior;
  options.nodes = nodes;
  options.devices_per_node = devices_per_node;
  options.elements = kTestBatchSize;
  options.collectives = kCollectivesPerIteration;
  // Sealed like a compiled plan, so daemons accept it (tests that damage it reseal).
  absl::StatusOr<proto::Plan> plan = AllReducePlan(options);
  if (!plan.ok()) LOG(FATAL) << plan.status();
  return *std::move(plan);
}

}  // namespace oneflow::launcher::testing
