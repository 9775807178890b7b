// The verifier the pass pipeline runs between passes: it checks the invariants the pass
// that just ran promises, so a compiler bug is caught at the pass that caused it rather
// than as a hang in the runtime.
#ifndef COMPILER_VERIFIER_H_
#define COMPILER_VERIFIER_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "compiler/compilation.h"

namespace oneflow {

// After `pass`:
//   any logical pass   ops are topologically ordered and reference defined tensors;
//   sbp_choice and on  every op has one N-D SBP per argument, of its placement's rank,
//                      fitting the tensor's shape; every tensor has an SBP;
//   boxing_insertion   every op input either already has the layout the op needs or
//                      reads through a boxing producing exactly that layout;
//   actor_graph        plan structure (plan_verifier.h);
//   collective_ordering  the static collective order;
//   memory_planning    the memory layout, and again the collective order (the last
//                      pass to change devices: plan_emission trusts both checks).
absl::Status VerifyCompilation(const Compilation& compilation, absl::string_view pass);

// The plan checks VerifyCompilation runs after `pass`.
PlanChecks PlanChecksAfter(absl::string_view pass);

}  // namespace oneflow

#endif  // COMPILER_VERIFIER_H_
