// Time and result of --sbp_search (compiler/passes/sbp_search_pass.h) with identical
// blocks searched once (CompileOptions::search_identical_blocks_once, as shipped) against
// every op searched on its own (the reference, same run), on the gpt example's model with
// 12, 24 and 48 blocks at dp=2 x tp=4 on 2 nodes x 4 devices (the examples' link
// defaults). One JSON line per size:
//   {"bench":"sbp_search_blocks","layers":48,"logical_ops":3863,
//    "every_op":{"search_s":..,"objective_ms":..,"moved_ops":..,"collectives":..},
//    "blocks_once":{...,"block_classes":1,"composed_blocks":46},
//    "greedy":{"objective_ms":..,"collectives":..},
//    "search_speedup":..,"objective_ratio":..}
// search_s is the sbp_search pass's wall seconds (the best of --repeats compilations);
// objective_ms the modelled boxing + kernel seconds summed over the ops after the search
// (greedy: before it); collectives those device 0 issues per step. objective_ratio is
// blocks_once's objective over every_op's (1.0: the same quality). One thread.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "oneflow_core/status.h"

ABSL_FLAG(std::string, layers, "12,24,48", "Comma-separated block counts.");
ABSL_FLAG(int64_t, hidden, 256, "Hidden width.");
ABSL_FLAG(int64_t, heads, 8, "Attention heads.");
ABSL_FLAG(int64_t, seq, 64, "Sequence length.");
ABSL_FLAG(int64_t, batch, 64, "Global batch (sequences).");
ABSL_FLAG(int64_t, nodes, 2, "Nodes.");
ABSL_FLAG(int64_t, devices_per_node, 4, "Devices per node.");
ABSL_FLAG(int64_t, dp, 2, "Data-parallel degree.");
ABSL_FLAG(int64_t, tp, 4, "Tensor-parallel degree.");
ABSL_FLAG(int, repeats, 3, "Compilations per setting; the fastest search is reported.");

namespace oneflow {
namespace {

struct Outcome {
  double search_seconds = 1e30;
  proto::SbpSearchRecord record;
  int64_t collectives = 0;
  int64_t logical_ops = 0;
};

absl::StatusOr<Outcome> CompileWith(const proto::Job& job, CompileOptions options, int repeats) {
  Outcome outcome;
  for (int r = 0; r < repeats; ++r) {
    std::vector<std::pair<std::string, double>> pass_seconds;
    options.pass_seconds = &pass_seconds;
    OF_ASSIGN_OR_RETURN(const proto::Plan plan, Compile(job, options));
    for (const auto& [pass, seconds] : pass_seconds) {
      if (pass == "sbp_search") outcome.search_seconds = std::min(outcome.search_seconds, seconds);
    }
    outcome.record = plan.sbp_search();
    outcome.collectives = plan.devices(0).collective_order_size();
    outcome.logical_ops = plan.job().ops_size();
  }
  return outcome;
}

std::string Json(const Outcome& outcome, bool searched) {
  std::string json = absl::StrFormat("{\"objective_ms\":%.6g,\"collectives\":%d",
                                     1e3 * (searched ? outcome.record.searched_seconds()
                                                     : outcome.record.greedy_seconds()),
                                     outcome.collectives);
  if (searched) {
    absl::StrAppendFormat(&json, ",\"search_s\":%.4f,\"moved_ops\":%d,\"rounds\":%d,\"block_classes\":%d,"
                          "\"composed_blocks\":%d",
                          outcome.search_seconds, outcome.record.moved_ops(), outcome.record.rounds(),
                          outcome.record.block_classes(), outcome.record.composed_blocks());
  }
  return json + "}";
}

absl::Status Run() {
  examples::ParallelFlags flags;
  flags.nodes = absl::GetFlag(FLAGS_nodes);
  flags.devices_per_node = absl::GetFlag(FLAGS_devices_per_node);
  flags.dp = absl::GetFlag(FLAGS_dp);
  flags.tp = absl::GetFlag(FLAGS_tp);
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, examples::ParallelLayout::Create(flags));
  examples::CompileSettings settings;
  settings.sbp_search = true;
  std::string dump;
  OF_ASSIGN_OR_RETURN(const CompileOptions searched, examples::CompileOptionsFor(layout, settings, &dump));
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_layers), ',', absl::SkipEmpty())) {
    examples::GptConfig config;
    if (!absl::SimpleAtoi(text, &config.layers) || config.layers < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--layers: '", text, "' is not a positive count"));
    }
    config.hidden = absl::GetFlag(FLAGS_hidden);
    config.heads = absl::GetFlag(FLAGS_heads);
    config.seq = absl::GetFlag(FLAGS_seq);
    config.batch = absl::GetFlag(FLAGS_batch);
    OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildGpt(config, layout));
    CompileOptions every_op = searched;
    every_op.search_identical_blocks_once = false;
    OF_ASSIGN_OR_RETURN(const Outcome reference, CompileWith(job, every_op, repeats));
    OF_ASSIGN_OR_RETURN(const Outcome once, CompileWith(job, searched, repeats));
    CompileOptions greedy_options = searched;
    greedy_options.search_sbp = false;
    OF_ASSIGN_OR_RETURN(Outcome greedy, CompileWith(job, greedy_options, 1));
    greedy.record = once.record;  // The greedy objective is the search's starting point.
    std::printf(
        "{\"bench\":\"sbp_search_blocks\",\"layers\":%lld,\"devices\":%lld,\"dp\":%lld,\"tp\":%lld,"
        "\"logical_ops\":%lld,\"every_op\":%s,\"blocks_once\":%s,\"greedy\":%s,\"search_speedup\":%.3f,"
        "\"objective_ratio\":%.4f}\n",
        static_cast<long long>(config.layers), static_cast<long long>(layout.cluster().num_nodes() *
                                                                      layout.cluster().devices_per_node()),
        static_cast<long long>(flags.dp), static_cast<long long>(flags.tp),
        static_cast<long long>(once.logical_ops), Json(reference, true).c_str(), Json(once, true).c_str(),
        Json(greedy, false).c_str(), reference.search_seconds / once.search_seconds,
        once.record.searched_seconds() / reference.record.searched_seconds());
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
    std::fprintf(stderr, "sbp_search_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
