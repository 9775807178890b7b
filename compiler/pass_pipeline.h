// The compiler's pass pipeline: an explicit, ordered list of passes (as XLA's
// HloPassPipeline) with the verifier between passes and dumps after any pass by name.
// Passes hand state to each other only through the parts they declare (state_parts.h).
#ifndef COMPILER_PASS_PIPELINE_H_
#define COMPILER_PASS_PIPELINE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "compiler/pass.h"

namespace oneflow {

class PassPipeline {
 public:
  template <typename T, typename... Args>
  T& AddPass(Args&&... args) {
    passes_.push_back(std::make_unique<T>(std::forward<Args>(args)...));
    return static_cast<T&>(*passes_.back());
  }

  // Parts of the state that whoever runs the pipeline provides besides the job (a test
  // running a partial pipeline says so for the parts it leaves empty on purpose, e.g.
  // no gradients without autograd).
  void Provide(StateParts parts) { provided_ |= parts; }

  // OK when every part a pass reads is provided or written by an earlier pass; else
  // INTERNAL naming the pass, the part and the passes that write it.
  absl::Status CheckDataflow() const;

  // Runs every pass in order (after CheckDataflow), each seeing only the parts it
  // declares; a pass writing a part it does not declare, or (with
  // options.check_read_parts) changing a part it declares only as read, is INTERNAL.
  // After a pass, the verifier checks the state that pass promises (when
  // options.verify_each_pass, and always after the last one) and the state is dumped
  // if options.dump_after names the pass (or "all"). An error says which pass failed.
  // An unknown name in dump_after is an error listing the passes.
  absl::Status Run(Compilation* compilation) const;

  std::vector<std::string> PassNames() const;

  // Drops the passes after the one named `last_pass`, so that Run stops there (per-pass
  // tests run the standard pipeline's prefix up to the pass under test). An unknown name
  // is INVALID_ARGUMENT listing the passes.
  absl::Status StopAfter(absl::string_view last_pass);

 private:
  // Runs one pass with the parts it does not declare moved out, and checks it kept to
  // its declaration.
  absl::StatusOr<bool> RunPass(CompilerPass& pass, Compilation* compilation) const;

  std::vector<std::unique_ptr<CompilerPass>> passes_;
  StateParts provided_ = {StatePart::kJob};
};

}  // namespace oneflow

#endif  // COMPILER_PASS_PIPELINE_H_
