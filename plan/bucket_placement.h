// Gradients as bucket views (compiler/passes/memory_planning_pass.cc): memory planning
// may place a gradient bucket's input register inside the bucket register, so the op
// producing the gradient writes it where the bucket reduces it. Such an input holds no
// bytes of its own, and the bucket register's bytes are live from its producer on. The
// plan verifier checks where such inputs may lie (plan_verifier_memory.cc); the plan
// viewer counts memory as planning did (tools/cli/inspect_html.cc).
#ifndef PLAN_BUCKET_PLACEMENT_H_
#define PLAN_BUCKET_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow {

struct InputInBucket {
  const proto::ActorDef* actor = nullptr;  // the bucket actor
  std::string input;                       // the kernel input's name, "in_K"
  int64_t input_register = 0;              // index into DevicePlan.registers
  int64_t bucket_register = 0;             // the actor's "bucket" output
};

// Every bucket actor's input (in_K) that is no view and lies in the memory block of the
// actor's bucket register with bytes overlapping it, in actor order. Register indices out
// of range are skipped (the verifier reports them elsewhere).
std::vector<InputInBucket> InputsInBuckets(const proto::DevicePlan& device);

}  // namespace oneflow

#endif  // PLAN_BUCKET_PLACEMENT_H_
