// One compiler pass: a named transformation of the Compilation state. Passes are listed
// in order in standard_pipeline.cc; nothing registers itself. Each declares the parts of
// the state it reads and writes (state_parts.h); the pipeline holds it to them.
#ifndef COMPILER_PASS_H_
#define COMPILER_PASS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/compilation.h"
#include "compiler/state_parts.h"
#include "compiler/verifier.h"

namespace oneflow {

class CompilerPass {
 public:
  virtual ~CompilerPass() = default;
  // Short snake_case name, used by --dump_after and in error messages.
  virtual absl::string_view name() const = 0;
  // Returns whether the pass changed anything. Errors name what the user wrote.
  virtual absl::StatusOr<bool> Run(Compilation* compilation) = 0;
  // The parts of the state Run reads (its inputs) and writes (its outputs; a part
  // written but not read is built from nothing). While Run runs, the other parts are
  // moved out of the Compilation (state_parts.h).
  virtual StateParts Reads() const = 0;
  virtual StateParts Writes() const = 0;
  // The invariants the state satisfies after this pass because of it (verifier.h); the
  // pipeline verifies them after the pass and, accumulated, after the last one.
  virtual VerifierChecks Checks() const { return {}; }
};

}  // namespace oneflow

#endif  // COMPILER_PASS_H_
