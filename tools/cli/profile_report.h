// `oneflow profile PLAN TRACE.json`: where a traced step went, as text or JSON
// (docs/profile.md). The figures come from actors/step_profile.h and
// actors/critical_path.h; this file reads the trace and lays them out.
//
//   OF_ASSIGN_OR_RETURN(ProfileReport report, ProfileTrace(plan, "t.json"));
//   std::string text = RenderProfile(plan, report, {ProfileFormat::kText, 10});
#ifndef TOOLS_CLI_PROFILE_REPORT_H_
#define TOOLS_CLI_PROFILE_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "actors/critical_path.h"
#include "actors/reduction_overlap.h"
#include "actors/step_profile.h"
#include "proto/plan.pb.h"

namespace oneflow::cli {

enum class ProfileFormat { kText, kJson };

// "text" or "json"; otherwise INVALID_ARGUMENT naming --format and the valid values.
absl::StatusOr<ProfileFormat> ParseProfileFormat(const std::string& text);

struct ProfileReport {
  std::string trace_path;
  actors::StepProfile profile;
  // Of the measured iteration with the median wall time (the earlier of two).
  actors::CriticalPath critical_path;
  // Gradient reduction time hidden behind compute over the measured iterations.
  actors::ReductionOverlap reductions;
};

// Reads a trace written by `oneflow run PLAN --trace=FILE` and profiles it. Errors name
// the file: ReadChromeTrace's (missing, not a trace, a trace of another plan) and a trace
// of the warm-up iteration only (FAILED_PRECONDITION).
absl::StatusOr<ProfileReport> ProfileTrace(const proto::Plan& plan, const std::string& trace_path);

struct ProfileOptions {
  ProfileFormat format = ProfileFormat::kText;
  // Rows of the op type and actor tables and of the critical path's contributors; 0: all.
  int top = 10;
};

// The text format's content before its layout: heading lines, then titled tables (header
// row first, cells as the text shows them). RenderProfile pads them into columns;
// `oneflow report` (run_report.h) lays them out as HTML tables.
struct ProfileSection {
  std::string title;
  // Lines between the title and the table (the critical path's totals); may be empty.
  std::vector<std::string> notes;
  std::vector<std::vector<std::string>> rows;
};
struct ProfileTables {
  std::vector<std::string> heading;
  std::vector<ProfileSection> sections;
};
// `top` as ProfileOptions.top.
ProfileTables TabulateProfile(const proto::Plan& plan, const ProfileReport& report, int top);

std::string RenderProfile(const proto::Plan& plan, const ProfileReport& report, const ProfileOptions& options);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_PROFILE_REPORT_H_
