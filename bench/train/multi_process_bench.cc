// Training step time across processes: mlp and a small gpt as 2 nodes x 1 device (two
// oneflow_worker processes meeting over Gloo on 127.0.0.1, started from environment
// variables as a scheduler would) next to 1 node x 2 devices (one process, in-process
// collectives), data parallel, same model, same global batch.
//
//   bazel run -c opt //bench/train:multi_process_bench
//
// One JSON line per model: {"bench":"train_step_processes","model":..,"config":..,
// "one_process_step_ms":..,"two_processes_step_ms":..,"ratio":..} where ratio is
// one-process time / two-process time (1.0: crossing processes costs nothing).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "bench/train/bench_models.h"
#include "kernels/cpu/blas_core.h"
#include "tests/cluster/process.h"
#include "plan/plan_io.h"

ABSL_FLAG(int64_t, iterations, 40, "Iterations per run; the first 5 are warm-up.");

namespace oneflow {
namespace {

int Main(const std::string& worker) {
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  for (const std::string model : {"mlp", "gpt"}) {
    absl::StatusOr<bench::BenchModel> one = bench::CompileBenchModel(model, 1, 2);
    absl::StatusOr<bench::BenchModel> two = bench::CompileBenchModel(model, 2, 1);
    if (!one.ok() || !two.ok()) {
      std::fprintf(stderr, "multi_process_bench: %s\n", std::string((one.ok() ? two : one).status().message()).c_str());
      return 1;
    }
    const std::string config = absl::StrCat(one->config, ", dp=2");
    actors::TrainOptions train;
    train.iterations = iterations;
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(one->plan, train);
    if (!result.ok()) {
      std::fprintf(stderr, "multi_process_bench: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    std::vector<double> one_steps;
    for (const actors::IterationMetrics& m : result->iterations) one_steps.push_back(m.step_ms);

    const std::string plan_path = absl::StrCat("/tmp/multi_process_bench_", getpid(), "_", model, ".plan");
    if (absl::Status written = WritePlanFile(plan_path, two->plan); !written.ok()) {
      std::fprintf(stderr, "multi_process_bench: %s\n", std::string(written.message()).c_str());
      return 1;
    }
    const std::string port = std::to_string(testing::UnusedLocalPort());
    std::vector<std::unique_ptr<testing::Process>> workers;
    for (int rank = 0; rank < 2; ++rank) {
      workers.push_back(std::make_unique<testing::Process>(
          std::vector<std::string>{worker, "--plan=" + plan_path, absl::StrCat("--iters=", iterations)},
          std::map<std::string, std::string>{{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"},
                                             {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port},
                                             {"ONEFLOW_JOB_ID", "bench-" + model}}));
    }
    for (auto& process : workers) process->Wait(std::chrono::milliseconds(600000));
    std::remove(plan_path.c_str());
    if (workers[0]->exit_code() != 0 || workers[1]->exit_code() != 0) {
      std::fprintf(stderr, "multi_process_bench: workers failed: %s %s\n", workers[0]->Stderr().c_str(),
                   workers[1]->Stderr().c_str());
      return 1;
    }
    std::vector<double> two_steps;
    for (const std::string& line : workers[0]->StdoutLines()) {
      const size_t iter = line.find("\"iter\": "), step = line.find("\"step_ms\": ");
      if (iter == std::string::npos || step == std::string::npos) continue;
      two_steps.push_back(std::stod(line.substr(step + 11)));
    }
    const double one_ms = bench::MedianStepMs(one_steps, 5), two_ms = bench::MedianStepMs(two_steps, 5);
    std::printf(
        "{\"bench\":\"train_step_processes\",\"model\":\"%s\",\"config\":\"%s\",\"iterations\":%lld,"
        "\"one_process_step_ms\":%.3f,\"two_processes_step_ms\":%.3f,\"ratio\":%.3f}\n",
        model.c_str(), config.c_str(), static_cast<long long>(iterations), one_ms, two_ms,
        two_ms > 0 ? one_ms / two_ms : 0);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  char cwd[4096];
  // bazel run starts the binary in its runfiles tree, where the worker is a data file.
  const std::string worker = std::string(getcwd(cwd, sizeof(cwd))) + "/tools/worker/oneflow_worker";
  return oneflow::Main(worker);
}
