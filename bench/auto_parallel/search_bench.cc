// Search time of --auto_parallel's layout search (compiler/auto_parallel/search.h) on a
// 48-block gpt: the model built for the tp=2 probe and profiled once, then every layout of
// the cluster priced, identical blocks priced once per stage (the search as shipped)
// against every block priced (the reference, same run). One JSON line per cluster:
//   {"bench":"auto_parallel_search","devices":64,...,"search_s":0.8,"reference_s":9.1,
//    "speedup":11.4,"chosen":"dp=8 tp=8 ..."}
// The goal (issue 26): <= 10 s on one core for 8 x 8 devices. Single-threaded.
// With --compression=auto every tensor-parallel edge is priced by the boxing planner
// (PriceOptions::compression); the line then also times the search without the edge cache
// (edge_price_cache.h: every layout plans its own edges), "uncached_s", and "cache_speedup":
//   bazel-bin/bench/auto_parallel/search_bench --layers=4 --hidden=256 --seq=64 --batch=64 \
//     --clusters=8x8 --inter_node_bandwidth=1.25e8 --compression=auto
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/search.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, layers, 48, "Blocks of the gpt.");
ABSL_FLAG(int64_t, hidden, 2048, "Hidden width.");
ABSL_FLAG(int64_t, heads, 16, "Attention heads.");
ABSL_FLAG(int64_t, seq, 1024, "Sequence length.");
ABSL_FLAG(int64_t, batch, 512, "Global batch (sequences).");
ABSL_FLAG(std::string, clusters, "8x8,64x8", "Comma-separated NODESxDEVICES_PER_NODE clusters.");
ABSL_FLAG(double, inter_node_bandwidth, 12.5e9, "Bytes per second between nodes.");
ABSL_FLAG(std::string, compression, "off",
          "off: tp edges priced dense by formula; auto: by the boxing planner with the default codecs "
          "(the examples' --compression=auto), and the search also timed without the edge cache.");

namespace oneflow {
namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

absl::Status Run() {
  examples::GptConfig config;
  config.layers = absl::GetFlag(FLAGS_layers);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.seq = absl::GetFlag(FLAGS_seq);
  config.batch = absl::GetFlag(FLAGS_batch);
  config.vocab = 32000;
  const auto profile_start = std::chrono::steady_clock::now();
  examples::ParallelFlags probe;
  probe.devices_per_node = 2;
  probe.tp = 2;
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(probe));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildGpt(config, layout));
  OF_ASSIGN_OR_RETURN(const auto_parallel::ModelProfile profile, auto_parallel::ProfileJob(job, 2));
  const double profile_seconds = Seconds(profile_start);
  const std::string compression = absl::GetFlag(FLAGS_compression);
  if (compression != "off" && compression != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("--compression='", compression, "': give off or auto"));
  }
  for (absl::string_view cluster : absl::StrSplit(absl::GetFlag(FLAGS_clusters), ',', absl::SkipEmpty())) {
    long long nodes = 0, per_node = 0;
    if (std::sscanf(std::string(cluster).c_str(), "%lldx%lld", &nodes, &per_node) != 2 || nodes < 1 || per_node < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--clusters: '", cluster, "' is not NODESxDEVICES_PER_NODE"));
    }
    auto_parallel::SearchOptions options;
    options.price.cluster.set_num_nodes(nodes);
    options.price.cluster.set_devices_per_node(per_node);
    options.price.cluster.set_intra_node_bandwidth(100e9);
    options.price.cluster.set_inter_node_bandwidth(absl::GetFlag(FLAGS_inter_node_bandwidth));
    if (compression == "auto") options.price.compression.mode = CompressionMode::kAuto;
    options.price.cluster.set_intra_node_latency(1e-5);
    options.price.cluster.set_inter_node_latency(5e-4);
    auto start = std::chrono::steady_clock::now();
    OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult shared, auto_parallel::Search(profile, options));
    const double search_seconds = Seconds(start);
    // Every layout planning its own tp edges (the search before the edge cache); the
    // ranking must be the same, prediction for prediction.
    std::string uncached_json;
    if (compression == "auto") {
      auto_parallel::SearchOptions uncached_options = options;
      uncached_options.cache_edge_prices = false;
      start = std::chrono::steady_clock::now();
      OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult uncached,
                          auto_parallel::Search(profile, uncached_options));
      const double uncached_seconds = Seconds(start);
      bool identical = uncached.fitting.size() == shared.fitting.size();
      for (size_t i = 0; identical && i < shared.fitting.size(); ++i) {
        identical = uncached.fitting[i].SerializeAsString() == shared.fitting[i].SerializeAsString();
      }
      uncached_json = absl::StrFormat(
          ",\"compression\":\"auto\",\"edges_planned\":%d,\"edges_reused\":%d,\"uncached_s\":%.4f,"
          "\"cache_speedup\":%.2f,\"uncached_identical\":%s",
          shared.edges_planned, shared.edges_reused, uncached_seconds,
          search_seconds > 0 ? uncached_seconds / search_seconds : 0, identical ? "true" : "false");
    }
    // The same search with balanced pipeline cuts only: what the DP over the cuts costs.
    auto_parallel::SearchOptions balanced_options = options;
    balanced_options.search_stage_cuts = false;
    start = std::chrono::steady_clock::now();
    OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult balanced, auto_parallel::Search(profile, balanced_options));
    const double balanced_seconds = Seconds(start);
    options.price.share_repeated_units = false;
    start = std::chrono::steady_clock::now();
    OF_ASSIGN_OR_RETURN(const auto_parallel::SearchResult every, auto_parallel::Search(profile, options));
    const double reference_seconds = Seconds(start);
    const bool same = auto_parallel::LayoutName(shared.fitting.front().layout()) ==
                      auto_parallel::LayoutName(every.fitting.front().layout());
    std::printf(
        "{\"bench\":\"auto_parallel_search\",\"model\":\"gpt\",\"layers\":%lld,\"hidden\":%lld,\"seq\":%lld,"
        "\"batch\":%lld,\"nodes\":%lld,\"devices_per_node\":%lld,\"devices\":%lld,\"units\":%zu,"
        "\"distinct_units\":%lld,\"layouts\":%lld,\"profile_s\":%.4f,\"search_s\":%.4f,"
        "\"reference\":\"every block priced\",\"reference_s\":%.4f,\"speedup\":%.2f,\"same_choice\":%s,"
        "\"chosen\":\"%s\",\"predicted_step_s\":%.6g,\"cut_layouts\":%lld,\"balanced_cuts_only_s\":%.4f,"
        "\"balanced_cuts_only_chosen\":\"%s\",\"balanced_cuts_only_step_s\":%.6g%s}\n",
        static_cast<long long>(config.layers), static_cast<long long>(config.hidden),
        static_cast<long long>(config.seq), static_cast<long long>(config.batch), nodes, per_node,
        nodes * per_node, profile.units.size(), static_cast<long long>(profile.distinct_units),
        static_cast<long long>(shared.candidates), profile_seconds, search_seconds, reference_seconds,
        search_seconds > 0 ? reference_seconds / search_seconds : 0, same ? "true" : "false",
        auto_parallel::LayoutName(shared.fitting.front().layout()).c_str(),
        auto_parallel::StepSeconds(shared.fitting.front()), static_cast<long long>(shared.cut_layouts),
        balanced_seconds, auto_parallel::LayoutName(balanced.fitting.front().layout()).c_str(),
        auto_parallel::StepSeconds(balanced.fitting.front()), uncached_json.c_str());
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "search_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
