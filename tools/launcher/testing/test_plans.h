// Plans for the launcher's tests: valid (the verifier accepts them) and small, shaped like
// a data-parallel step: every device of every node runs two all-reduces over all devices
// per iteration. The job's name tells the fake worker (fake_worker.cc) how to behave.
#ifndef TOOLS_LAUNCHER_TESTING_TEST_PLANS_H_
#define TOOLS_LAUNCHER_TESTING_TEST_PLANS_H_

#include <cstdint>
#include <string>

#include "proto/plan.pb.h"

namespace oneflow::launcher::testing {

inline constexpr int64_t kTestBatchSize = 64;
inline constexpr int64_t kCollectivesPerIteration = 2;

// `behavior` becomes the job's name, e.g. "fake:finish" or "fake:hang;node1=crash_after=3".
proto::Plan FakeJobPlan(const std::string& behavior, int64_t nodes, int64_t devices_per_node = 1);

}  // namespace oneflow::launcher::testing

#endif  // TOOLS_LAUNCHER_TESTING_TEST_PLANS_H_
