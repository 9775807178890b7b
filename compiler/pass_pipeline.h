// The compiler's pass pipeline: an explicit, ordered list of passes (as XLA's
// HloPassPipeline) with the verifier between passes and dumps after any pass by name.
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

  // Runs every pass in order. After a pass, the verifier checks the state that pass
  // promises (when options.verify_each_pass, and always after the last one) and the
  // state is dumped if options.dump_after names the pass (or "all"). An error says
  // which pass failed. An unknown name in dump_after is an error listing the passes.
  absl::Status Run(Compilation* compilation) const;

  std::vector<std::string> PassNames() const;

 private:
  std::vector<std::unique_ptr<CompilerPass>> passes_;
};

}  // namespace oneflow

#endif  // COMPILER_PASS_PIPELINE_H_
