// The cores this process may run on: the CPUs of its scheduler affinity mask
// (sched_getaffinity), which taskset, cgroups' cpusets and container limits narrow, unlike
// std::thread::hardware_concurrency (every online CPU of the machine). For decisions that
// weigh busy threads against cores: whether a communication wait may spin
// (comm/ucx/spin_policy.h), how many cores a host calibration measured (tools/cli).
#ifndef ONEFLOW_CORE_ALLOWED_CORES_H_
#define ONEFLOW_CORE_ALLOWED_CORES_H_

#include <cstdint>

namespace oneflow {

// At least 1 (also when the mask cannot be read).
int64_t AllowedCores();

}  // namespace oneflow

#endif  // ONEFLOW_CORE_ALLOWED_CORES_H_
