// The verifier the pass pipeline runs between passes: it checks the invariants the pass
// that just ran promises, so a compiler bug is caught at the pass that caused it rather
// than as a hang in the runtime.
#ifndef COMPILER_VERIFIER_H_
#define COMPILER_VERIFIER_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "compiler/compilation.h"

namespace oneflow {

// The invariants a pass establishes (CompilerPass::Checks), which the verifier checks
// after it. Always, after any pass: ops are topologically ordered and reference defined
// tensors. Beyond that:
//   sbps              every op has one N-D SBP per argument, of its placement's rank,
//                     fitting the tensor's shape; every tensor has an SBP (sbp_choice);
//   boxings           every op input either already has the layout the op needs or reads
//                     through a boxing producing exactly that layout (boxing_insertion);
//   plan_structure    plan structure, plan_verifier.h (actor_graph);
//   collective_order  the static collective order (collective_ordering, memory_planning);
//   memory            the memory layout (memory_planning: the last pass to change
//                     devices, so plan_emission trusts it and the order).
// The pipeline accumulates them: after the last pass it checks every logical invariant
// an earlier pass established again, so no pass (renamed, reordered) loses its check;
// the plan-level ones are re-checked by plan_emission's VerifyPlanContents.
struct VerifierChecks {
  bool sbps = false;
  bool boxings = false;
  bool plan_structure = false;
  bool collective_order = false;
  bool memory = false;

  VerifierChecks& operator|=(const VerifierChecks& other);
};

absl::Status VerifyCompilation(const Compilation& compilation, const VerifierChecks& checks);

// The plan checks among `checks` (what plan_emission may skip on unchanged devices).
PlanChecks PlanChecksOf(const VerifierChecks& checks);

}  // namespace oneflow

#endif  // COMPILER_VERIFIER_H_
