// A plan made of all-reduces only, built from plan.proto directly: every device of every
// node runs `collectives` all-reduces of `elements` f32 over all devices per iteration, in
// the same order. It passes the full plan verifier and is sealed, so a daemon accepts it.
//
// Two users: the launcher's tests (testing/test_plans.h, whose fake worker reads its
// behaviour from the job's name) and `oneflow calibrate --nodes`, whose job carries the
// shape of the cluster to the daemons (nodes x devices) and whose workers, told
// RunOptions.measure_links, time all-reduces instead of running the plan's actors.
#ifndef TOOLS_LAUNCHER_ALL_REDUCE_PLAN_H_
#define TOOLS_LAUNCHER_ALL_REDUCE_PLAN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher {

struct AllReducePlanOptions {
  std::string job_name;
  int64_t nodes = 1;
  int64_t devices_per_node = 1;
  // Per all-reduce; also the job's batch size.
  int64_t elements = 64;
  int64_t collectives = 2;
};

// The plan; the verifier's or the sealing's error for options it cannot make valid
// (e.g. nodes < 1).
absl::StatusOr<proto::Plan> AllReducePlan(const AllReducePlanOptions& options);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_ALL_REDUCE_PLAN_H_
