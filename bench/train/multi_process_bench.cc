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

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "oneflow_core/status.h"
#include "tests/cluster/process.h"
#include "tools/cli/plan_io.h"

ABSL_FLAG(int64_t, iterations, 40, "Iterations per run; the first 5 are warm-up.");

namespace oneflow {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int FreePort() {
  // Below Linux's ephemeral range (32768+), so no socket another process opens meanwhile
  // (Gloo's and gRPC's listeners take ephemeral ports) can take it before rank 0 binds it.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = 20000 + (getpid() * 7919 + attempt * 104729) % 12000;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    close(fd);
    if (free) return port;
  }
  return 29500;
}

absl::StatusOr<proto::Plan> CompileModel(const std::string& model, int64_t nodes, int64_t devices_per_node,
                                         std::string* config) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = devices_per_node;
  flags.dp = nodes * devices_per_node;
  OF_ASSIGN_OR_RETURN(examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  absl::StatusOr<proto::Job> job;
  if (model == "mlp") {
    examples::MlpConfig mlp;
    mlp.batch = 256;
    mlp.in_features = 256;
    mlp.hidden = 1024;
    *config = "mlp 256-1024-1024-1024-10, batch 256, sgd, dp=2";
    job = examples::BuildMlp(mlp, layout);
  } else {
    examples::GptConfig gpt;
    gpt.batch = 8;
    gpt.seq = 64;
    gpt.layers = 2;
    gpt.hidden = 128;
    gpt.heads = 4;
    gpt.vocab = 512;
    *config = "gpt 2 layers, hidden 128, 4 heads, seq 64, vocab 512, batch 8, adamw, dp=2";
    job = examples::BuildGpt(gpt, layout);
  }
  OF_RETURN_IF_ERROR(job.status());
  CompileOptions options;
  options.cluster = layout.cluster();
  return Compile(*job, options);
}

int Main(const std::string& worker) {
  const int64_t iterations = absl::GetFlag(FLAGS_iterations);
  for (const std::string model : {"mlp", "gpt"}) {
    std::string config;
    absl::StatusOr<proto::Plan> one = CompileModel(model, 1, 2, &config);
    absl::StatusOr<proto::Plan> two = CompileModel(model, 2, 1, &config);
    if (!one.ok() || !two.ok()) {
      std::fprintf(stderr, "multi_process_bench: %s\n", std::string((one.ok() ? two : one).status().message()).c_str());
      return 1;
    }
    actors::TrainOptions train;
    train.iterations = iterations;
    absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*one, train);
    if (!result.ok()) {
      std::fprintf(stderr, "multi_process_bench: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    std::vector<double> one_steps;
    for (size_t i = 5; i < result->iterations.size(); ++i) one_steps.push_back(result->iterations[i].step_ms);

    const std::string plan_path = absl::StrCat("/tmp/multi_process_bench_", getpid(), "_", model, ".plan");
    if (absl::Status written = cli::WritePlanFile(plan_path, *two); !written.ok()) {
      std::fprintf(stderr, "multi_process_bench: %s\n", std::string(written.message()).c_str());
      return 1;
    }
    const std::string port = std::to_string(FreePort());
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
      if (std::stoi(line.substr(iter + 8)) >= 5) two_steps.push_back(std::stod(line.substr(step + 11)));
    }
    const double one_ms = Median(one_steps), two_ms = Median(two_steps);
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
  absl::ParseCommandLine(argc, argv);
  char cwd[4096];
  // bazel run starts the binary in its runfiles tree, where the worker is a data file.
  const std::string worker = std::string(getcwd(cwd, sizeof(cwd))) + "/tools/worker/oneflow_worker";
  return oneflow::Main(worker);
}
