// Chrome / Perfetto trace of a run (chrome://tracing, ui.perfetto.dev): one track per
// device thread, one slice per act (actor name, kind, iteration), and flow arrows
// joining the acts of one collective on every device of its group.
#ifndef ACTORS_TRACE_H_
#define ACTORS_TRACE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "actors/engine.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// The trace as JSON (the Trace Event Format's object form).
std::string ChromeTraceJson(const proto::Plan& plan, const std::vector<ActRecord>& acts);

// Writes it atomically (temporary file + rename); errors name the file.
absl::Status WriteChromeTrace(const std::string& path, const proto::Plan& plan,
                              const std::vector<ActRecord>& acts);

}  // namespace oneflow::actors

#endif  // ACTORS_TRACE_H_
