#include "compiler/pass_pipeline.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/verifier.h"

namespace oneflow {

std::vector<std::string> PassPipeline::PassNames() const {
  std::vector<std::string> names;
  for (const auto& pass : passes_) names.emplace_back(pass->name());
  return names;
}

absl::Status PassPipeline::Run(Compilation* compilation) const {
  const CompileOptions& options = compilation->options;
  const std::vector<std::string> names = PassNames();
  for (const std::string& wanted : options.dump_after) {
    if (wanted == "all") continue;
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat("dump_after names unknown pass '", wanted,
                                                     "'; passes: ", absl::StrJoin(names, ", "),
                                                     " (or all)"));
    }
  }
  if (options.pass_seconds != nullptr) options.pass_seconds->clear();
  VerifierChecks established;  // by the passes run so far
  for (size_t i = 0; i < passes_.size(); ++i) {
    CompilerPass& pass = *passes_[i];
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = pass.Run(compilation);
    if (!changed.ok()) return changed.status();
    const bool last = i + 1 == passes_.size();
    compilation->verified_plan_checks = PlanChecks{};
    const VerifierChecks checks = pass.Checks();
    established |= checks;
    if (options.verify_each_pass || last) {
      // After the last pass, every logical invariant established on the way as well.
      VerifierChecks now = checks;
      if (last) {
        now.sbps = established.sbps;
        now.boxings = established.boxings;
      }
      absl::Status verified = VerifyCompilation(*compilation, now);
      if (!verified.ok()) {
        return absl::InternalError(absl::StrCat("compiler bug: the state after pass '",
                                                pass.name(), "' fails verification: ",
                                                verified.message()));
      }
      compilation->verified_plan_checks = PlanChecksOf(checks);
    }
    if (options.pass_seconds != nullptr) {
      options.pass_seconds->push_back(
          {std::string(pass.name()),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
    }
    const bool dump = std::find_if(options.dump_after.begin(), options.dump_after.end(),
                                   [&](const std::string& name) {
                                     return name == "all" || name == pass.name();
                                   }) != options.dump_after.end();
    if (dump && options.dump != nullptr) {
      absl::StrAppend(options.dump, "=== after ", pass.name(), " (",
                      *changed ? "changed" : "unchanged", ")\n", CompilationToText(*compilation));
    }
  }
  return absl::OkStatus();
}

}  // namespace oneflow
