#include "compiler/pass_pipeline.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/verifier.h"
#include "oneflow_core/status.h"

namespace oneflow {

std::vector<std::string> PassPipeline::PassNames() const {
  std::vector<std::string> names;
  for (const auto& pass : passes_) names.emplace_back(pass->name());
  return names;
}

absl::Status PassPipeline::StopAfter(absl::string_view last_pass) {
  for (size_t i = 0; i < passes_.size(); ++i) {
    if (passes_[i]->name() != last_pass) continue;
    passes_.resize(i + 1);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("no pass named '", last_pass,
                                                 "'; the passes are: ", absl::StrJoin(PassNames(), ", ")));
}

absl::Status PassPipeline::CheckDataflow() const {
  StateParts available = provided_;
  for (size_t i = 0; i < passes_.size(); ++i) {
    const CompilerPass& pass = *passes_[i];
    for (int p = 0; p < kStatePartCount; ++p) {
      const StatePart part = static_cast<StatePart>(p);
      if (!pass.Reads().Contains(part) || available.Contains(part)) continue;
      std::vector<std::string> writers;
      for (const auto& other : passes_) {
        if (other->Writes().Contains(part)) writers.emplace_back(other->name());
      }
      return absl::InternalError(absl::StrCat(
          "compiler bug: pass '", pass.name(), "' reads ", StatePartName(part),
          ", which no earlier pass writes (written by: ",
          writers.empty() ? "no pass of this pipeline" : absl::StrJoin(writers, ", "), ")"));
    }
    available |= pass.Writes();
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> PassPipeline::RunPass(CompilerPass& pass, Compilation* compilation) const {
  const bool check_read_parts = compilation->options.check_read_parts;
  const StateParts read_only = pass.Reads() - pass.Writes();
  std::vector<std::pair<StatePart, uint64_t>> fingerprints;
  if (check_read_parts) {
    for (int p = 0; p < kStatePartCount; ++p) {
      const StatePart part = static_cast<StatePart>(p);
      if (read_only.Contains(part)) fingerprints.emplace_back(part, PartFingerprint(*compilation, part));
    }
  }
  StashedParts hidden;
  hidden.Take(compilation, StateParts::All() - (pass.Reads() | pass.Writes()));
  absl::StatusOr<bool> changed = pass.Run(compilation);
  StatePart written;
  const bool wrote_hidden = hidden.WrittenWhileStashed(*compilation, &written);
  hidden.Restore(compilation);
  if (!changed.ok()) return changed;
  if (wrote_hidden) {
    return absl::InternalError(absl::StrCat("compiler bug: pass '", pass.name(), "' wrote ",
                                            StatePartName(written), ", which it does not declare (writes: ",
                                            pass.Writes().ToString(), ")"));
  }
  for (const auto& [part, before] : fingerprints) {
    if (PartFingerprint(*compilation, part) != before) {
      return absl::InternalError(absl::StrCat("compiler bug: pass '", pass.name(), "' changed ",
                                              StatePartName(part), ", which it declares only as read (writes: ",
                                              pass.Writes().ToString(), ")"));
    }
  }
  return changed;
}

absl::Status PassPipeline::Run(Compilation* compilation) const {
  OF_RETURN_IF_ERROR(CheckDataflow());
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
    absl::StatusOr<bool> changed = RunPass(pass, compilation);
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
