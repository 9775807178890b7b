// What the plan verifier's tests share: an inference plan compiled from a DSL graph, and
// an edited plan resealed before it is verified.
#ifndef COMPILER_PLAN_VERIFIER_TEST_UTIL_H_
#define COMPILER_PLAN_VERIFIER_TEST_UTIL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "oneflow_core/dsl/graph.h"
#include "proto/plan.pb.h"

namespace oneflow {

// `graph` through the passes from shape inference to plan emission (no autograd: an
// inference plan) on `nodes` x `devices_per_node` devices; a failing pass fails the test.
proto::Plan Compiled(Graph& graph, int64_t nodes, int64_t devices_per_node);

// What a hostile or buggy tool writes: an edited plan, resealed so that the checksum
// matches; the verifier's verdict on it. The semantic checks must still refuse damage.
absl::Status Resealed(proto::Plan plan);

}  // namespace oneflow

#endif  // COMPILER_PLAN_VERIFIER_TEST_UTIL_H_
