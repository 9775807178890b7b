// The decision record of --auto_parallel (Plan.auto_parallel, compiler/auto_parallel/) in
// `oneflow inspect`: the chosen layout, its predicted step split into compute, exposed
// communication and bubble, predicted and planned peak, and the alternatives with why
// each lost. Plans compiled with a hand-given layout have no such section.
#ifndef TOOLS_CLI_INSPECT_AUTO_PARALLEL_H_
#define TOOLS_CLI_INSPECT_AUTO_PARALLEL_H_

#include <string>

#include "proto/plan.pb.h"
#include "tools/cli/json_writer.h"

namespace oneflow::cli {

// Appends the text section (starting with a blank line) when the plan has a decision:
//   auto-parallel decision (48 layouts priced, 3 over --device_memory=64.00 KiB (65536 B))
//     chosen: dp=2 tp=2 pp=1 micro_batches=1 zero=0 recompute=none
//       predicted step 1.2 ms = compute 1.0 ms + exposed communication 0.2 ms + bubble 0 ms
//       peak: predicted 40.00 KiB (40960 B), planned 38.00 KiB (38912 B)
//       host terms: act 2.5 us, collective call 12.5 us, 2 host cores (measured for 4 devices, c.jsonl)
//     alternatives:
//       dp=4 tp=1: +12% step: exposed communication +0.15 ms
void AppendAutoParallelText(const proto::Plan& plan, std::string* out);

// Writes the key "auto_parallel" with the decision as an object when the plan has one
// (docs/auto_parallel.md); nothing otherwise.
void WriteAutoParallelJson(const proto::Plan& plan, JsonWriter& json);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_INSPECT_AUTO_PARALLEL_H_
