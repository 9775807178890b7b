// What every example binary does after building its job: compile it for the layout the
// shared flags describe, print a summary a person can read, and write the plan.
//
// Shared flags (example_main.cc): --nodes --devices_per_node --dp --tp --zero=0..3
// --intra_node_bandwidth --inter_node_bandwidth --compression=off|auto|fp8|int8|int4
// --codec_bytes_per_second=B --codec_calibration=FILE --codec_rounding=nearest|stochastic
// --gradient_wire=fp32|bf16|auto (compression_flags.h)
// --threads_per_device=N (kernel threads per CPU device, kept in the plan's cluster)
// --bucket_mb=MiB (gradient buckets, compiler/passes/gradient_bucketing_pass.h; 0: off)
// --communication_streams=auto|one (compiler/passes/collective_ordering_pass.h)
// --plan_out=FILE --dump_after=PASS[,PASS] --print_graph (the graph text instead of a plan)
// --run --iters=N (train the compiled plan here, one JSON line of metrics per iteration)
// --auto_parallel --device_memory=BYTES (the compiler chooses the layout; docs/auto_parallel.md)
#ifndef EXAMPLES_COMMON_EXAMPLE_MAIN_H_
#define EXAMPLES_COMMON_EXAMPLE_MAIN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

// Call first in main(). Settles the OpenBLAS core before anything else happens
// (UseBestBlasCore, kernels/cpu/blas_core.h: may restart the program), then parses the
// command line as every example does: `usage` heads --help, and --help lists the shared
// layout and compile flags (examples/common) with the binary's own, not only the flags of
// the file holding main(); --version prints the project's version.
void ParseExampleFlags(int argc, char** argv, const char* usage);

// The layout from the shared flags.
absl::StatusOr<ParallelLayout> LayoutFromFlags();

// Compiles `job`, prints the summary (and any --dump_after dumps) to stdout, writes the
// plan to --plan_out when given. Data files are made absolute and checked first
// (ResolveDataFiles). With --print_graph, prints the job's graph text (docs/graph_text.md,
// what `oneflow compile` reads) instead of compiling. Errors name the flag or the op at fault.
// Meant as the end of a program: the plan is not freed but left to the process's exit
// (a large plan takes longer to free than to write).
absl::Status CompileAndReport(const proto::Job& job, const ParallelLayout& layout);

// As above, for a program that can build its model for any layout: with --predict_step
// the given layout is also priced by --auto_parallel's cost model (PriceGivenLayout,
// `build` making the model for the probe layout) and the prediction recorded in the plan
// (Plan.auto_parallel, one layout priced) and printed after the compile summary.
// (The overload without `build` refuses --predict_step.)
absl::Status CompileAndReport(const proto::Job& job, const ParallelLayout& layout, const JobBuilder& build);

// --auto_parallel was given.
bool AutoParallelRequested();

// --auto_parallel: `build` makes the model for any layout; the search picks the layout
// from --nodes --devices_per_node, the links and --device_memory (auto_parallel_driver.h),
// prints its decision and the compile summary, and writes / runs the plan as
// CompileAndReport does. Giving --dp --tp --pp --zero --micro_batches or --recompute
// with it is INVALID_ARGUMENT naming the flag.
absl::Status CompileAndReportAuto(const JobBuilder& build);

// Runs `body` and turns an error into "NAME: error: ..." on stderr and exit code 1
// (2 for a bad flag value: INVALID_ARGUMENT).
int RunExample(const char* name, absl::Status (*body)());

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_EXAMPLE_MAIN_H_
