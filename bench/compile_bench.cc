// Compile-time benchmark: gpt with 12, 24 and 48 layers on 64 CPU devices (8 nodes x 8,
// dp=8, tp=8), one core. Prints one JSON line per size:
//   {"bench":"compile_gpt","layers":48,"devices":64,"logical_ops":..,"actors":..,
//    "compile_seconds":..,"compile_cpu_seconds":..,"goal_seconds":2.0,"ratio_to_goal":..,
//    "serialize_seconds":..,"ratio_to_serialize":..,"plan_bytes":..,
//    "peak_over_lower_bound_max":..,"arena_peak_over_lower_bound_max":..,
//    "pass_seconds":{..}[,"check_seconds":{..}]}
// compile_seconds is the best of --repeats runs of Compile (the pass pipeline, with the
// verifier between passes, and freeing the compiler's intermediate state; freeing the
// previous plan is not timed); compile_cpu_seconds the best of their CPU times, the
// figure to compare when other programs share the core. The reference beside it is the
// time protobuf takes to serialize the resulting plan: the floor for producing that many
// bytes of plan. With --time_checks, check_seconds times each plan check on its own.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "plan/plan_checksum.h"
#include "plan/plan_io.h"
#include "plan/plan_verifier.h"

ABSL_FLAG(std::string, layers, "12,24,48", "Comma-separated layer counts.");
ABSL_FLAG(int, repeats, 3, "Compilations per size; the best is reported.");
ABSL_FLAG(int64_t, nodes, 8, "Nodes.");
ABSL_FLAG(int64_t, devices_per_node, 8, "Devices per node.");
ABSL_FLAG(int64_t, dp, 8, "Data-parallel degree.");
ABSL_FLAG(int64_t, tp, 8, "Tensor-parallel degree.");
ABSL_FLAG(bool, verify_each_pass, true, "Run the verifier after every pass.");
ABSL_FLAG(bool, time_checks, false,
          "Also time each plan check (verifier parts and checksum) on the compiled plan, CPU "
          "seconds, best of --repeats, as \"check_seconds\".");
ABSL_FLAG(std::string, write_plan, "",
          "If set, write each size's plan to this path with the layer count appended "
          "(PATH.48), e.g. to compare plans byte for byte across compiler changes.");

namespace oneflow {
namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Seconds of CPU this process has used (user and system): unlike the wall clock, not
// inflated by other programs sharing the core.
double CpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// The CPU seconds of each check of the plan verifier and of the checksum on `plan`, best
// of `repeats`: where the verification between passes, and the verification and the
// seal in plan_emission, spend their time.
std::vector<std::pair<std::string, double>> TimeChecks(const proto::Plan& plan, int repeats) {
  const std::vector<std::pair<std::string, absl::Status (*)(const proto::Plan&)>> checks = {
      {"structure", VerifyPlanStructure},
      {"collective_order", VerifyCollectiveOrder},
      {"wait_cycle", VerifyNoWaitCycle},
      {"memory", VerifyMemory},
      {"buckets", VerifyBuckets},
      {"runtime_support", VerifyRuntimeSupport},
      {"checksum", VerifyPlanChecksum},
  };
  std::vector<std::pair<std::string, double>> seconds;
  for (const auto& [name, check] : checks) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      const double start = CpuSeconds();
      const absl::Status status = check(plan);
      best = std::min(best, CpuSeconds() - start);
      if (!status.ok()) {
        std::fprintf(stderr, "compile_bench: check %s: %s\n", name.c_str(), std::string(status.message()).c_str());
      }
    }
    seconds.push_back({name, best});
  }
  return seconds;
}

std::string JsonSeconds(const std::vector<std::pair<std::string, double>>& seconds) {
  return absl::StrJoin(seconds, ",", [](std::string* out, const auto& entry) {
    absl::StrAppend(out, "\"", entry.first, "\":", absl::SixDigits(entry.second));
  });
}

int Run() {
  examples::ParallelFlags flags;
  flags.nodes = absl::GetFlag(FLAGS_nodes);
  flags.devices_per_node = absl::GetFlag(FLAGS_devices_per_node);
  flags.dp = absl::GetFlag(FLAGS_dp);
  flags.tp = absl::GetFlag(FLAGS_tp);
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  if (!layout.ok()) {
    std::fprintf(stderr, "compile_bench: %s\n", std::string(layout.status().message()).c_str());
    return 2;
  }
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_layers), ',')) {
    examples::GptConfig config;
    config.layers = std::stoll(std::string(text));
    config.batch = 64;
    config.seq = 1024;
    config.hidden = 1024;
    config.heads = 16;
    config.vocab = 50304;
    absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *layout);
    if (!job.ok()) {
      std::fprintf(stderr, "compile_bench: %s\n", std::string(job.status().message()).c_str());
      return 1;
    }
    CompileOptions options;
    options.cluster = layout->cluster();
    options.verify_each_pass = absl::GetFlag(FLAGS_verify_each_pass);
    std::vector<std::pair<std::string, double>> pass_seconds;
    options.pass_seconds = &pass_seconds;
    double best = 1e30, best_cpu = 1e30;
    absl::StatusOr<proto::Plan> plan;
    for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
      plan = absl::UnknownError("not compiled");  // Free the last plan outside the timing.
      const auto start = std::chrono::steady_clock::now();
      const double start_cpu = CpuSeconds();
      plan = Compile(*job, options);
      best = std::min(best, Seconds(start));
      best_cpu = std::min(best_cpu, CpuSeconds() - start_cpu);
      if (!plan.ok()) {
        std::fprintf(stderr, "compile_bench: %s\n", std::string(plan.status().message()).c_str());
        return 1;
      }
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> bytes = SerializePlan(*plan);
    const double serialize = Seconds(start);
    if (!absl::GetFlag(FLAGS_write_plan).empty()) {
      const absl::Status written = WritePlanFile(
          absl::StrCat(absl::GetFlag(FLAGS_write_plan), ".", config.layers), *plan);
      if (!written.ok()) {
        std::fprintf(stderr, "compile_bench: %s\n", std::string(written.message()).c_str());
        return 1;
      }
    }
    int64_t actors = 0;
    double ratio = 0, arena_ratio = 0;
    for (const proto::DevicePlan& device : plan->devices()) {
      actors += device.actors_size();
      ratio = std::max(ratio, static_cast<double>(device.peak_bytes()) / device.lower_bound_bytes());
      const int64_t persistent = device.memory_blocks(0).size_bytes();
      arena_ratio = std::max(arena_ratio, static_cast<double>(device.peak_bytes() - persistent) /
                                              (device.lower_bound_bytes() - persistent));
    }
    std::string checks;
    if (absl::GetFlag(FLAGS_time_checks)) {
      checks = absl::StrCat(",\"check_seconds\":{",
                            JsonSeconds(TimeChecks(*plan, absl::GetFlag(FLAGS_repeats))), "}");
    }
    std::printf(
        "{\"bench\":\"compile_gpt\",\"layers\":%lld,\"devices\":%d,\"logical_ops\":%d,"
        "\"actors\":%lld,\"collectives\":%d,\"compile_seconds\":%.4f,\"compile_cpu_seconds\":%.4f,"
        "\"goal_seconds\":2.0,"
        "\"ratio_to_goal\":%.3f,\"serialize_seconds\":%.4f,\"ratio_to_serialize\":%.2f,"
        "\"plan_bytes\":%zu,\"peak_over_lower_bound_max\":%.4f,"
        "\"arena_peak_over_lower_bound_max\":%.4f,\"pass_seconds\":{%s}%s}\n",
        static_cast<long long>(config.layers), plan->devices_size(), plan->job().ops_size(),
        static_cast<long long>(actors), plan->collectives_size(), best, best_cpu, best / 2.0, serialize,
        best / serialize, bytes.ok() ? bytes->size() : size_t{0}, ratio, arena_ratio,
        JsonSeconds(pass_seconds).c_str(), checks.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return oneflow::Run();
}
