// The cost model's prediction of a dense collective (sbp/collective_cost.h) against its
// measured time, both in one run, as JSON lines:
//   {"bench":"cost_model","plan":"all_reduce cpu{0:0-3}","route":"in-node","bytes":65536,
//    "predicted_seconds":...,"measured_seconds":...,"measured_to_predicted":...,
//    "fit_point":false}
//   ... and a last line {"bench":"cost_model_summary","plans":N,"min_ratio":...,
//    "max_ratio":...,"geomean_ratio":...,"out_of_fit_min_ratio":...,"out_of_fit_max_ratio":...}
// How: the links are calibrated first, as `oneflow calibrate` does it (tools/cli/
// link_calibration.h: the in-process backend, and 2 processes over the default transport
// restricted to TCP on 127.0.0.1); each plan is then priced with PriceDenseCollective at
// those links and timed (the median of its calls as rank 0 sees them):
//   in-node:  an in-process group of 2 or 4 ranks (threads), all_reduce, reduce_scatter,
//             all_gather;
//   flat:     2 processes (this one and a fork), all_reduce across "nodes" cpu{0:0, 1:0}.
// `bytes` is T, the group tensor per member (collective_cost.h). The calibration fits
// alpha and beta so that the model reproduces the 2-rank all-reduce at 64 B and 16 MiB
// exactly: those plans are marked fit_point; the others test the model.
//   bazel run -c opt //bench/collectives:cost_model_bench
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/comm/gloo/file_key_value_store.h"
#include "oneflow_core/comm/in_process/communicator.h"
#include "oneflow_core/comm/transport.h"
#include "oneflow_core/placement.h"
#include "sbp/collective_cost.h"
#include "tools/cli/link_calibration.h"

extern char** environ;

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "cost_model_bench: %s\n", message.c_str());
  std::exit(1);
}

constexpr int64_t kCalibrationRepetitions = 21;

struct Plan {
  BoxingKind kind;
  std::string placement;
  int64_t bytes;  // T per member
};

const char* KindName(BoxingKind kind) {
  switch (kind) {
    case BoxingKind::kAllReduce:
      return "all_reduce";
    case BoxingKind::kReduceScatter:
      return "reduce_scatter";
    case BoxingKind::kAllGather:
      return "all_gather";
    default:
      return "other";
  }
}

int64_t Repetitions(int64_t bytes) { return std::clamp<int64_t>((int64_t{64} << 20) / bytes, 7, 301); }

// What boxing counts the busiest device receives (BoxingStep::dense_bytes_per_device):
// chunks of ceil(T / n).
int64_t WireBytes(BoxingKind kind, int64_t bytes, int64_t ranks) {
  const int64_t floats = bytes / 4;
  const int64_t chunk = (floats + ranks - 1) / ranks * 4;
  return (kind == BoxingKind::kAllReduce ? 2 : 1) * (ranks - 1) * chunk;
}

// One call of `kind` on `communicator` with T = `bytes`.
absl::Status Call(Communicator& communicator, BoxingKind kind, int64_t bytes, std::vector<float>& in,
                  std::vector<float>& out) {
  CollectiveOptions options;
  options.description = "cost_model_bench";
  const int64_t n = communicator.size();
  const int64_t floats = bytes / 4;
  switch (kind) {
    case BoxingKind::kAllReduce:
      return communicator.AllReduce(in.data(), out.data(), floats, options);
    case BoxingKind::kReduceScatter: {
      const std::vector<int64_t> counts(n, floats / n);
      return communicator.ReduceScatter(in.data(), out.data(), counts, options);
    }
    case BoxingKind::kAllGather: {
      const std::vector<int64_t> byte_counts(n, bytes / n);
      return communicator.AllGather(in.data(), out.data(), byte_counts, options);
    }
    default:
      return absl::InvalidArgumentError("unsupported kind");
  }
}

// The median seconds of `repetitions` calls after one warm-up, as this rank times them.
double TimeCalls(Communicator& communicator, BoxingKind kind, int64_t bytes, int64_t repetitions) {
  std::vector<float> in(bytes / 4, 1.0f), out(bytes / 4, 0.0f);
  std::vector<double> seconds;
  for (int64_t r = 0; r <= repetitions; ++r) {
    const Clock::time_point start = Clock::now();
    const absl::Status status = Call(communicator, kind, bytes, in, out);
    if (!status.ok()) Die(std::string(status.message()));
    if (r > 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

std::vector<Plan> FlatPlans() {
  std::vector<Plan> flat;
  for (int64_t bytes : {cli::kCalibrationSmallBytes, int64_t{4} << 10, int64_t{16} << 10, int64_t{64} << 10,
                        int64_t{256} << 10, int64_t{1} << 20, int64_t{4} << 20, int64_t{16} << 20}) {
    flat.push_back({BoxingKind::kAllReduce, "cpu{0:0, 1:0}", bytes});
  }
  return flat;
}

// Rank `rank` of the 2 processes of the flat plans: the median of each.
std::vector<double> RunFlat(int64_t rank, const std::string& directory, const std::vector<Plan>& plans) {
  FileKeyValueStore store(directory);
  CrossProcessGroupOptions options;
  options.group_name = "cost_model_bench";
  options.rank = rank;
  options.size = 2;
  options.store = &store;
  absl::StatusOr<std::unique_ptr<Communicator>> communicator =
      NewCrossProcessCommunicator(kDefaultTransport, options);
  if (!communicator.ok()) Die(std::string(communicator.status().message()));
  std::vector<double> medians;
  for (const Plan& plan : plans) {
    medians.push_back(TimeCalls(**communicator, plan.kind, plan.bytes, Repetitions(plan.bytes)));
  }
  return medians;
}

// Medians of the flat plans, from 2 processes over the default transport (UCX_TLS was set
// to TCP by the calibration, unless the user set it).
std::vector<double> MeasureFlat(const std::vector<Plan>& plans) {
  char directory_template[] = "/tmp/cost_model_bench.XXXXXX";
  if (mkdtemp(directory_template) == nullptr) Die("cannot make a temporary directory");
  const std::string directory = directory_template;
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) Die("cannot read /proc/self/exe");
  self[length] = 0;
  // A fresh process, not a fork: this one's UCX is initialized already (the calibration).
  std::string flag = absl::StrCat("--flat_peer=", directory);
  char* argv[] = {self, flag.data(), nullptr};
  pid_t child = 0;
  if (posix_spawn(&child, self, nullptr, nullptr, argv, environ) != 0) Die("cannot start the peer");
  const std::vector<double> medians = RunFlat(0, directory, plans);
  int status = 0;
  waitpid(child, &status, 0);
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("the second process failed");
  return medians;
}

double MeasureInNode(const Plan& plan, int64_t ranks) {
  absl::StatusOr<std::unique_ptr<InProcessGroup>> group = InProcessGroup::Create(ranks, "cost_model_bench");
  if (!group.ok()) Die(std::string(group.status().message()));
  double median = 0;
  std::vector<std::thread> peers;
  for (int64_t rank = 1; rank < ranks; ++rank) {
    peers.emplace_back([&, rank] {
      TimeCalls((*group)->communicator(rank), plan.kind, plan.bytes, Repetitions(plan.bytes));
    });
  }
  median = TimeCalls((*group)->communicator(0), plan.kind, plan.bytes, Repetitions(plan.bytes));
  for (std::thread& peer : peers) peer.join();
  return median;
}

int Run() {
  // Forks first, before any thread.
  absl::StatusOr<cli::MeasuredLink> inter = cli::MeasureCrossProcessLink(kCalibrationRepetitions);
  if (!inter.ok()) Die(std::string(inter.status().message()));
  const std::vector<Plan> flat = FlatPlans();
  const std::vector<double> flat_measured = MeasureFlat(flat);
  absl::StatusOr<cli::MeasuredLink> intra = cli::MeasureInProcessLink(kCalibrationRepetitions);
  if (!intra.ok()) Die(std::string(intra.status().message()));
  LinkModel links;
  links.intra_node_bandwidth = intra->fit.bytes_per_second;
  links.intra_node_latency = intra->fit.latency_seconds;
  links.inter_node_bandwidth = inter->fit.bytes_per_second;
  links.inter_node_latency = inter->fit.latency_seconds;
  std::printf(
      "{\"bench\":\"cost_model_links\",\"intra_node_latency_seconds\":%g,\"intra_node_bytes_per_second\":%g,"
      "\"inter_node_latency_seconds\":%g,\"inter_node_bytes_per_second\":%g,\"inter_node_method\":\"%s\"}\n",
      links.intra_node_latency, links.intra_node_bandwidth, links.inter_node_latency,
      links.inter_node_bandwidth, inter->fit.method.c_str());

  std::vector<Plan> plans = flat;
  std::vector<double> measured = flat_measured;
  for (const char* placement : {"cpu{0:0-1}", "cpu{0:0-3}"}) {
    for (BoxingKind kind : {BoxingKind::kAllReduce, BoxingKind::kReduceScatter, BoxingKind::kAllGather}) {
      for (int64_t bytes : {cli::kCalibrationSmallBytes, int64_t{4} << 10, int64_t{64} << 10, int64_t{1} << 20,
                            int64_t{16} << 20}) {
        const Plan plan{kind, placement, bytes};
        const int64_t ranks = Placement::Parse(placement)->num_devices();
        plans.push_back(plan);
        measured.push_back(MeasureInNode(plan, ranks));
      }
    }
  }
  std::vector<double> ratios, out_of_fit;
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    const Placement placement = *Placement::Parse(plan.placement);
    const int64_t ranks = placement.num_devices();
    const CollectiveCost cost = PriceDenseCollective(links, placement, 0, plan.kind, plan.bytes,
                                                     WireBytes(plan.kind, plan.bytes, ranks));
    const double ratio = measured[i] / cost.seconds();
    const bool fit_point = ranks == 2 && plan.kind == BoxingKind::kAllReduce &&
                           (plan.bytes == cli::kCalibrationSmallBytes || plan.bytes == cli::kCalibrationLargeBytes);
    ratios.push_back(ratio);
    if (!fit_point) out_of_fit.push_back(ratio);
    std::printf(
        "{\"bench\":\"cost_model\",\"plan\":\"%s %s\",\"route\":\"%s\",\"bytes\":%lld,"
        "\"predicted_seconds\":%g,\"measured_seconds\":%g,\"measured_to_predicted\":%g,\"fit_point\":%s}\n",
        KindName(plan.kind), plan.placement.c_str(), std::string(CollectiveRouteName(cost.route)).c_str(),
        static_cast<long long>(plan.bytes), cost.seconds(), measured[i], ratio, fit_point ? "true" : "false");
    std::fflush(stdout);
  }
  double log_sum = 0;
  for (double ratio : ratios) log_sum += std::log(ratio);
  std::printf(
      "{\"bench\":\"cost_model_summary\",\"plans\":%zu,\"min_ratio\":%g,\"max_ratio\":%g,\"geomean_ratio\":%g,"
      "\"out_of_fit_min_ratio\":%g,\"out_of_fit_max_ratio\":%g}\n",
      ratios.size(), *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()), std::exp(log_sum / ratios.size()),
      *std::min_element(out_of_fit.begin(), out_of_fit.end()),
      *std::max_element(out_of_fit.begin(), out_of_fit.end()));
  return 0;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  if (argc == 2 && std::string(argv[1]).rfind("--flat_peer=", 0) == 0) {
    oneflow::RunFlat(1, std::string(argv[1]).substr(12), oneflow::FlatPlans());
    return 0;
  }
  return oneflow::Run();
}
