// Compiling a Job for a ParallelLayout and summarising the plan, without flags: the
// examples' driver (example_main.cc, which reads the shared flags) and `oneflow compile`
// (tools/cli/compile_command.cc, which reads its own) both go through here, so a model
// compiled from C++ and the same model compiled from its graph text get the same options
// and the same summary.
#ifndef EXAMPLES_COMMON_COMPILE_DRIVER_H_
#define EXAMPLES_COMMON_COMPILE_DRIVER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/compile_options.h"
#include "compiler/precision.h"
#include "examples/common/compression_flags.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::examples {

// The compile choices beyond the layout, with the examples' defaults. Each error names
// the flag of the same name (--threads_per_device, --bucket_mb, --sparse_boxing, ...).
struct CompileSettings {
  int64_t threads_per_device = 1;
  double bucket_mb = 25;
  // --bucket_mb was on the command line (CompileOptions::bucket_mb_given).
  bool bucket_mb_given = false;
  std::string sparse_boxing = "auto";
  bool fuse_epilogues = true;
  // --sbp_search: search each op's SBP beyond the greedy choice (CompileOptions::search_sbp).
  bool sbp_search = false;
  // With sbp_search: what one collective call costs on the host beyond its links
  // (CompileOptions::collective_call_seconds). Not given: the host terms of
  // --codec_calibration's file for the layout's cluster (compiler/auto_parallel/host_terms.h
  // HostTermsFor), 0 without a file or without a host or machine line that measured one.
  std::optional<double> collective_call_seconds;
  // --zero3_regather: with --zero=3, backward gathers each parameter again (prefetched one
  // reading op ahead) instead of keeping forward's gathered copy (CompileOptions::zero3_regather).
  bool zero3_regather = true;
  // auto: a communication stream per group class; one: every collective on one thread.
  std::string communication_streams = "auto";
  // next_forward: the node-crossing gradient reductions queued when backward ends run in
  // the order the next forward needs them; backward: in the order backward produces them
  // (CompileOptions::reorder_reduction_tail).
  std::string reduction_tail = "next_forward";
  // Activation recomputation (CompileOptions::recompute): none, selective or full.
  std::string recompute = "none";
  // Pipeline schedule (CompileOptions::pp_schedule): 1f1b, interleaved, zb or auto; the
  // chunks per stage come from the layout (--virtual_stages). Device memory in bytes for
  // auto (0: no limit).
  std::string pp_schedule = "1f1b";
  int64_t device_memory = 0;
  // Compute precision (CompileOptions::precision): fp32 or bf16. bf16 is refused on a CPU
  // without AVX-512 BF16 and AMX-BF16 (compiler/precision.h).
  std::string precision = "fp32";
  // The CPU that check is made for; unset: this machine's (ProbeCpuBf16Support). Tests
  // set it to simulate other CPUs.
  std::optional<CpuBf16Support> cpu;
  CompressionFlags compression;
  // Link bandwidths and latencies of the cost model (a --codec_calibration file's measured
  // levels replace those not given on the command line).
  LinkFlags links;
  // Compiler pass names (or "all") after which the state is printed into *dump.
  std::vector<std::string> dump_after;
};

// The compiler options for `layout` and `settings`. `dump` receives the --dump_after
// dumps; it must outlive the compilation.
absl::StatusOr<CompileOptions> CompileOptionsFor(const ParallelLayout& layout, const CompileSettings& settings,
                                                 std::string* dump);

// Makes every file a data source of `job` reads absolute (against the working directory)
// and checks that it is a regular file this process can read, so that a plan runs from any
// directory and on every node of `oneflow launch`, and a wrong path fails here, naming the
// source's kind as the flags and the graph text spell it (text_file, token_file,
// record_file):
//   text_file '/tmp' of data source 'data' is a directory; give a regular file
//   record_file 'r.bin' of data source 'data' (/home/me/r.bin) does not exist
absl::Status ResolveDataFiles(proto::Job* job);

// Layouts that compile but waste devices, one line each naming the flags: a micro-batch of
// fewer rows than --dp leaves data-parallel devices without a row (they only wait):
//   --batch=2, fewer rows than --dp=4: 2 of the 4 data-parallel devices get no rows ...
std::vector<std::string> LayoutWarnings(const proto::Job& job, const ParallelLayout& layout);

// Compile settings that cost a layout more than another setting would, one line each
// naming the flags: the job's ZeRO-3 re-gathering for backward over data-parallel groups
// that cross nodes (1.5x --zero=0's bytes on the links; docs/zero.md).
std::vector<std::string> SettingsWarnings(const proto::Job& job, const ParallelLayout& layout,
                                          const CompileSettings& settings);

// What a person reads after compiling: the cluster, every pipeline stage's placement,
// the plan's size, and per stage its first device's actors, memory and traffic, e.g.
//   compiled 'mlp' for cpu{0:0-3}[2, 2] in 0.012 s: 24 logical ops, 9 boxings, ...
//   device 0:0: 120 actors, 88 registers, 6 collectives, peak 65536 B (lower bound ...) ...
// With --pp > 1 the first line names each stage and there is one device line per stage.
std::string CompileSummary(const proto::Job& job, const ParallelLayout& layout, const proto::Plan& plan,
                           double seconds);

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_COMPILE_DRIVER_H_
