// Training step time of the examples on this machine's CPU devices: mlp and a small gpt
// on 1 and 2 devices (data parallel), the plan's configuration printed beside the
// figures so they can be compared with another framework on the same model.
// One JSON line per run: {"bench":"train_step","model":"mlp","devices":2,"dp":2,"tp":1,
// "batch":..,"params":..,"config":"..","iterations":..,"median_step_ms":..,
// "samples_per_s":..,"single_device_step_ms":..,"speedup":..}.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "actors/runtime.h"
#include "bench/train/bench_models.h"
#include "kernels/cpu/blas_core.h"

ABSL_FLAG(int64_t, iterations, 30, "Iterations per run; the first 5 are warm-up.");

namespace oneflow {
namespace {

struct Run {
  std::string model;
  int64_t devices;
};

int64_t Parameters(const proto::Job& job) {
  int64_t total = 0;
  for (const proto::VariableDef& variable : job.variables()) {
    if (!variable.trainable()) continue;
    for (const proto::TensorDef& tensor : job.tensors()) {
      if (tensor.name() != variable.tensor()) continue;
      int64_t n = 1;
      for (int64_t d : tensor.shape()) n *= d;
      total += n;
    }
  }
  return total;
}

int Main() {
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  double single_ms[2] = {0, 0};
  for (const Run& run : {Run{"mlp", 1}, Run{"mlp", 2}, Run{"gpt", 1}, Run{"gpt", 2}}) {
    absl::StatusOr<bench::BenchModel> model = bench::CompileBenchModel(run.model, 1, run.devices);
    if (!model.ok()) {
      std::fprintf(stderr, "train_bench: %s\n", std::string(model.status().message()).c_str());
      return 1;
    }
    const proto::Job* job = &model->job;
    const std::string& config = model->config;
    actors::TrainOptions train;
    train.iterations = iterations;
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(model->plan, train);
    if (!result.ok()) {
      std::fprintf(stderr, "train_bench: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    std::vector<double> steps;
    for (const actors::IterationMetrics& m : result->iterations) steps.push_back(m.step_ms);
    const double median = bench::MedianStepMs(steps, 5);
    double& single = single_ms[run.model == "gpt"];
    if (run.devices == 1) single = median;
    std::printf(
        "{\"bench\":\"train_step\",\"model\":\"%s\",\"devices\":%lld,\"dp\":%lld,\"tp\":1,\"batch\":%lld,"
        "\"params\":%lld,\"config\":\"%s\",\"iterations\":%lld,\"median_step_ms\":%.3f,"
        "\"samples_per_s\":%.1f,\"single_device_step_ms\":%.3f,\"speedup\":%.3f}\n",
        run.model.c_str(), static_cast<long long>(run.devices), static_cast<long long>(run.devices),
        static_cast<long long>(job->batch_size()), static_cast<long long>(Parameters(*job)), config.c_str(),
        static_cast<long long>(iterations), median, job->batch_size() * 1000.0 / median, single, single / median);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  return oneflow::Main();
}
