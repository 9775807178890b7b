// Context parallelism with Ulysses and ring attention on llama, one process (CPU devices
// as threads). Four kinds of JSON line:
// {"bench":"context_parallel","metric":"longest_seq","attention":"ulysses","cp":4,"device_memory_bytes":..,
//  "longest_seq":..,"peak_bytes":..,"workspace_bytes":..,"persistent_bytes":..,"arena_bytes":..,
//  "reference_cp":1,"reference_attention":"plain","reference_longest_seq":..,"reference_peak_bytes":..,
//  "reference_workspace_bytes":..,"reference_persistent_bytes":..,"reference_arena_bytes":..,"ratio":..}
//   the longest --seq (a multiple of 2 x cp) whose memory planning peak (the largest
//   DevicePlan.peak_bytes of the stage, the kernels' workspace block included) fits
//   --device_memory_mb (with memory planning's blocks of that device: persistent weights
//   and optimizer state, the activation arena, the workspace), cp=4 against cp=1: Ulysses and ring attention (zig-zag) each
//   against the plain attention core on one device and against one ring step on one
//   device (the same blockwise kernel: cp's own scaling);
// {"bench":"context_parallel","metric":"step_ms","cp":4,"seq":..,"median_step_ms":..,
//  "reference_median_step_ms":..,"ratio":..}
//   the step time of the same sequence on cp=4 and on one device, alternating rounds;
// {"bench":"context_parallel","metric":"bytes_per_layer","attention":"ulysses","cp":4,
//  "block":"layers0","collectives":4,"plan_bytes_per_device":..,"formula_bytes":..,"ratio":..}
//   what the plan's all-to-all steps move per device in one block's forward pass
//   (examples/common/cp_traffic.h) against 4 N h / cp-style formula of
//   EstimateCpAttention, for Ulysses and for ring (its send/recv steps against 2 N h_kv);
// {"bench":"context_parallel","metric":"attention_scheme","attention":"ring","cp":4,
//  "seq":..,"median_step_ms":..,"peak_bytes":..,"reference":"cp=1",
//  "reference_median_step_ms":..,"reference_peak_bytes":..,"step_ratio":..,"peak_ratio":..,
//  "ulysses_median_step_ms":..,"ulysses_peak_bytes":..,"step_ratio_vs_ulysses":..,"peak_ratio_vs_ulysses":..}
//   ring and Ulysses at --scheme_seq against one device, alternating rounds: the step
//   time and the planned per-device peak (DevicePlan.peak_bytes, the largest device's),
//   its workspace block, and what the engine allocated for that device against it;
// {"bench":"context_parallel","metric":"ring_split","cp":4,"seq":..,"zigzag_median_step_ms":..,
//  "contiguous_median_step_ms":..,"ulysses_median_step_ms":..,"ratio_zigzag_vs_contiguous":..,
//  "ratio_zigzag_vs_ulysses":..,"zigzag_tiles_per_rank":"9 9 9 9","contiguous_tiles_per_rank":"1 2 3 4"}
//   ring attention with the zig-zag split against the contiguous one and Ulysses at
//   --scheme_seq (the same rounds), with the tiles each rank computes (from the plan).
#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_join.h"
#include "actors/runtime.h"
#include "bench/lib/statistics.h"
#include "compiler/compiler.h"
#include "examples/common/context_parallel.h"
#include "examples/common/cp_traffic.h"
#include "examples/common/parallel_layout.h"
#include "examples/llama/llama_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, cp, 4, "Context-parallel degree to compare with cp=1.");
ABSL_FLAG(int64_t, device_memory_mb, 256, "Per-device memory the longest sequence must fit (planned peak).");
ABSL_FLAG(int64_t, layers, 2, "Decoder blocks.");
ABSL_FLAG(int64_t, hidden, 256, "Hidden width.");
ABSL_FLAG(int64_t, heads, 8, "Query heads.");
ABSL_FLAG(int64_t, kv_heads, 4, "Key/value heads (divisible by --cp for Ulysses).");
ABSL_FLAG(int64_t, step_seq, 256, "Sequence of the step-time comparison.");
ABSL_FLAG(int64_t, iterations, 8, "Iterations per round of the step-time comparison; the first 3 are warm-up.");
ABSL_FLAG(int64_t, rounds, 3, "Rounds of the step-time comparison.");
ABSL_FLAG(int64_t, scheme_seq, 512, "Sequence of the ring / Ulysses / one-device comparison.");

namespace oneflow {
namespace {

examples::LlamaConfig Config(int64_t seq) {
  examples::LlamaConfig config;
  config.batch = 1;
  config.seq = seq;
  config.layers = absl::GetFlag(FLAGS_layers);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.kv_heads = absl::GetFlag(FLAGS_kv_heads);
  config.vocab = 256;
  return config;
}

absl::StatusOr<examples::ParallelLayout> Layout(int64_t cp, const char* attention = "ulysses",
                                                const char* ring_split = "zigzag") {
  examples::ParallelFlags flags;
  flags.devices_per_node = cp;
  flags.cp = cp;
  flags.cp_attention = attention;
  flags.cp_ring_split = ring_split;
  return examples::ParallelLayout::Create(flags);
}

absl::StatusOr<proto::Plan> CompileAt(int64_t cp, int64_t seq, const char* attention = "ulysses",
                                      const char* ring_split = "zigzag") {
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, Layout(cp, attention, ring_split));
  OF_ASSIGN_OR_RETURN(const proto::Job job, examples::BuildLlama(Config(seq), layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  return Compile(job, options);
}

int64_t PeakBytes(const proto::Plan& plan) {
  int64_t peak = 0;
  for (const proto::DevicePlan& device : plan.devices()) peak = std::max(peak, device.peak_bytes());
  return peak;
}

// The largest kernel workspace block of the plan's devices (MemoryBlock.workspace; part
// of the peak): the ring kernels' scratch.
int64_t WorkspaceBytes(const proto::Plan& plan) {
  int64_t bytes = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::MemoryBlock& block : device.memory_blocks()) {
      if (block.workspace()) bytes = std::max(bytes, block.size_bytes());
    }
  }
  return bytes;
}

struct Longest {
  int64_t seq = 0;
  int64_t peak_bytes = 0;       // The plan's at `seq`.
  int64_t workspace_bytes = 0;  // Of that peak.
  // Memory planning's blocks of the device with the largest peak: the persistent block
  // (weights, optimizer state) and the activation arena (all its slots).
  int64_t persistent_bytes = 0;
  int64_t arena_bytes = 0;
};

// The persistent and arena bytes of the device with the largest peak.
std::pair<int64_t, int64_t> PersistentAndArenaBytes(const proto::Plan& plan) {
  const proto::DevicePlan* largest = nullptr;
  for (const proto::DevicePlan& device : plan.devices()) {
    if (largest == nullptr || device.peak_bytes() > largest->peak_bytes()) largest = &device;
  }
  int64_t persistent = 0, arena = 0;
  for (const proto::MemoryBlock& block : largest == nullptr ? proto::DevicePlan().memory_blocks()
                                                            : largest->memory_blocks()) {
    if (block.workspace()) continue;
    (block.persistent() ? persistent : arena) += block.size_bytes();
  }
  return {persistent, arena};
}

// The largest multiple of `step` whose plan peak fits `budget`: doubling, then bisection.
// At cp = 1, "ring" is one ring step over the whole sequence (the blockwise kernel) and
// "ulysses" the plain attention core.
absl::StatusOr<Longest> LongestSeq(int64_t cp, int64_t budget, const char* attention = "ulysses") {
  const int64_t step = 2 * cp;
  Longest longest;
  auto fits = [&](int64_t seq) -> absl::StatusOr<bool> {
    OF_ASSIGN_OR_RETURN(const proto::Plan plan, CompileAt(cp, seq, attention));
    if (PeakBytes(plan) > budget) return false;
    if (seq > longest.seq) {
      const auto [persistent, arena] = PersistentAndArenaBytes(plan);
      longest = {seq, PeakBytes(plan), WorkspaceBytes(plan), persistent, arena};
    }
    return true;
  };
  OF_ASSIGN_OR_RETURN(bool first, fits(step));
  if (!first) return longest;
  int64_t low = 1, high = 2;  // In units of `step`: low fits.
  while (true) {
    OF_ASSIGN_OR_RETURN(bool ok, fits(high * step));
    if (!ok) break;
    low = high;
    high *= 2;
  }
  while (high - low > 1) {
    const int64_t mid = (low + high) / 2;
    OF_ASSIGN_OR_RETURN(bool ok, fits(mid * step));
    (ok ? low : high) = mid;
  }
  return longest;
}

// The median step of a run, and the largest memory the engine allocated for one device
// (EngineResult.allocated_bytes: every block of the plan, each padded by up to 128 B).
struct StepRun {
  double median_ms = 0;
  int64_t allocated_bytes = 0;
};

absl::StatusOr<StepRun> RunSteps(const proto::Plan& plan) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = std::max<int64_t>(absl::GetFlag(FLAGS_iterations), 4);
  OF_ASSIGN_OR_RETURN(const actors::TrainResult result, actors::TrainPlan(plan, train));
  StepRun run;
  for (int64_t bytes : result.engine.allocated_bytes) run.allocated_bytes = std::max(run.allocated_bytes, bytes);
  std::vector<double> steps;
  for (size_t i = 3; i < result.iterations.size(); ++i) steps.push_back(result.iterations[i].step_ms);
  run.median_ms = Median(steps);
  return run;
}

absl::StatusOr<double> MedianStep(const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(const StepRun run, RunSteps(plan));
  return run.median_ms;
}

absl::Status Main() {
  const int64_t cp = absl::GetFlag(FLAGS_cp);
  const int64_t budget = absl::GetFlag(FLAGS_device_memory_mb) << 20;
  // The references on one device: the plain attention core (whole [s, s] scores kept for
  // the backward) and one ring step over the whole sequence (the blockwise kernel, its
  // scratch in the plan's workspace block).
  OF_ASSIGN_OR_RETURN(const Longest plain, LongestSeq(1, budget, "ulysses"));
  OF_ASSIGN_OR_RETURN(const Longest blockwise, LongestSeq(1, budget, "ring"));
  // Neither scheme keeps an [s, s] block between the passes: ring's steps and Ulysses'
  // local attention (one ring step over its heads' whole sequence) recompute the scores
  // from the saved log-sum-exp, and ring's backward passes K/V around the ring again
  // instead of keeping every step's block, so both hold O(N / cp) per device. Each is
  // compared with both references: with the plain one the ratio mixes the kernel's saving
  // with cp's, with the blockwise one (the same kernel on one device) it is cp's alone.
  OF_ASSIGN_OR_RETURN(const Longest ulysses, LongestSeq(cp, budget, "ulysses"));
  OF_ASSIGN_OR_RETURN(const Longest ring, LongestSeq(cp, budget, "ring"));
  using Comparison = std::tuple<const char*, const Longest*, const char*, const Longest*>;
  for (const auto& [attention, longest, reference_attention, reference] :
       {Comparison{"ulysses", &ulysses, "plain", &plain}, Comparison{"ulysses", &ulysses, "ring", &blockwise},
        Comparison{"ring", &ring, "plain", &plain}, Comparison{"ring", &ring, "ring", &blockwise}}) {
    std::printf(
        "{\"bench\":\"context_parallel\",\"metric\":\"longest_seq\",\"attention\":\"%s\",\"model\":\"llama\","
        "\"hidden\":%lld,\"layers\":%lld,\"cp\":%lld,\"device_memory_bytes\":%lld,\"longest_seq\":%lld,"
        "\"peak_bytes\":%lld,\"workspace_bytes\":%lld,\"persistent_bytes\":%lld,\"arena_bytes\":%lld,"
        "\"reference_cp\":1,\"reference_attention\":\"%s\","
        "\"reference_longest_seq\":%lld,\"reference_peak_bytes\":%lld,\"reference_workspace_bytes\":%lld,"
        "\"reference_persistent_bytes\":%lld,\"reference_arena_bytes\":%lld,\"ratio\":%.3f}\n",
        attention, static_cast<long long>(absl::GetFlag(FLAGS_hidden)),
        static_cast<long long>(absl::GetFlag(FLAGS_layers)), static_cast<long long>(cp),
        static_cast<long long>(budget), static_cast<long long>(longest->seq),
        static_cast<long long>(longest->peak_bytes), static_cast<long long>(longest->workspace_bytes),
        static_cast<long long>(longest->persistent_bytes), static_cast<long long>(longest->arena_bytes),
        reference_attention, static_cast<long long>(reference->seq), static_cast<long long>(reference->peak_bytes),
        static_cast<long long>(reference->workspace_bytes), static_cast<long long>(reference->persistent_bytes),
        static_cast<long long>(reference->arena_bytes),
        reference->seq > 0 ? static_cast<double>(longest->seq) / reference->seq : 0.0);
    std::fflush(stdout);
  }

  const int64_t seq = absl::GetFlag(FLAGS_step_seq);
  OF_ASSIGN_OR_RETURN(const proto::Plan one, CompileAt(1, seq));
  OF_ASSIGN_OR_RETURN(const proto::Plan split, CompileAt(cp, seq));
  std::vector<double> one_steps, split_steps;
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    OF_ASSIGN_OR_RETURN(double a, MedianStep(one));
    OF_ASSIGN_OR_RETURN(double b, MedianStep(split));
    one_steps.push_back(a);
    split_steps.push_back(b);
  }
  const double one_step = Median(one_steps), split_step = Median(split_steps);
  std::printf(
      "{\"bench\":\"context_parallel\",\"metric\":\"step_ms\",\"model\":\"llama\",\"cp\":%lld,\"seq\":%lld,"
      "\"median_step_ms\":%.3f,\"reference_median_step_ms\":%.3f,\"ratio\":%.3f}\n",
      static_cast<long long>(cp), static_cast<long long>(seq), split_step, one_step,
      one_step > 0 ? split_step / one_step : 0.0);

  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, Layout(cp));
  const examples::LlamaConfig config = Config(seq);
  const examples::CpAttentionCost formula = examples::EstimateCpAttention(
      {config.batch, seq, config.hidden, config.heads, config.kv_heads, "kv_heads"}, layout);
  OF_ASSIGN_OR_RETURN(const proto::Plan ring_split, CompileAt(cp, seq, "ring"));
  for (const proto::Plan* plan : {&split, &ring_split}) {
    for (const examples::CpLayerTraffic& layer : examples::CpAttentionTraffic(*plan)) {
      const double bytes = layer.attention == "ring" ? formula.ring_bytes : formula.ulysses_bytes;
      std::printf(
          "{\"bench\":\"context_parallel\",\"metric\":\"bytes_per_layer\",\"attention\":\"%s\",\"cp\":%lld,"
          "\"seq\":%lld,\"block\":\"%s\",\"collectives\":%lld,\"plan_bytes_per_device\":%lld,\"formula_bytes\":%.0f,"
          "\"ratio\":%.3f}\n",
          layer.attention.c_str(), static_cast<long long>(cp), static_cast<long long>(seq), layer.block.c_str(),
          static_cast<long long>(layer.collectives), static_cast<long long>(layer.bytes_per_device), bytes,
          layer.bytes_per_device / bytes);
    }
  }

  // Ring and Ulysses against one device at a longer sequence.
  const int64_t long_seq = absl::GetFlag(FLAGS_scheme_seq);
  OF_ASSIGN_OR_RETURN(const proto::Plan long_one, CompileAt(1, long_seq));
  OF_ASSIGN_OR_RETURN(const proto::Plan long_ulysses, CompileAt(cp, long_seq, "ulysses"));
  OF_ASSIGN_OR_RETURN(const proto::Plan long_ring, CompileAt(cp, long_seq, "ring"));
  OF_ASSIGN_OR_RETURN(const proto::Plan long_contiguous, CompileAt(cp, long_seq, "ring", "contiguous"));
  std::vector<double> one_times, ulysses_times, ring_times, contiguous_times;
  int64_t ulysses_allocated = 0, ring_allocated = 0;
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    OF_ASSIGN_OR_RETURN(double a, MedianStep(long_one));
    OF_ASSIGN_OR_RETURN(const StepRun b, RunSteps(long_ulysses));
    ulysses_allocated = b.allocated_bytes;
    OF_ASSIGN_OR_RETURN(const StepRun c, RunSteps(long_ring));
    ring_allocated = c.allocated_bytes;
    OF_ASSIGN_OR_RETURN(double d, MedianStep(long_contiguous));
    one_times.push_back(a);
    ulysses_times.push_back(b.median_ms);
    ring_times.push_back(c.median_ms);
    contiguous_times.push_back(d);
  }
  const double one_ms = Median(one_times), ulysses_ms = Median(ulysses_times);
  const double one_peak = static_cast<double>(PeakBytes(long_one));
  const double ulysses_peak = static_cast<double>(PeakBytes(long_ulysses));
  for (const auto& [name, plan, times, allocated] :
       {std::tuple<const char*, const proto::Plan*, const std::vector<double>*, int64_t>{
            "ulysses", &long_ulysses, &ulysses_times, ulysses_allocated},
        std::tuple<const char*, const proto::Plan*, const std::vector<double>*, int64_t>{"ring", &long_ring,
                                                                                         &ring_times, ring_allocated}}) {
    const double ms = Median(*times);
    const double peak = static_cast<double>(PeakBytes(*plan));
    // allocated_bytes: what the engine allocated for the largest device (the plan's
    // blocks, the workspace block included); the ring kernels allocate nothing else.
    std::printf(
        "{\"bench\":\"context_parallel\",\"metric\":\"attention_scheme\",\"model\":\"llama\",\"attention\":\"%s\","
        "\"cp\":%lld,\"seq\":%lld,\"median_step_ms\":%.3f,\"peak_bytes\":%.0f,\"workspace_bytes\":%lld,"
        "\"allocated_bytes\":%lld,\"allocated_to_peak\":%.4f,\"reference\":\"cp=1\","
        "\"reference_median_step_ms\":%.3f,\"reference_peak_bytes\":%.0f,\"step_ratio\":%.3f,\"peak_ratio\":%.3f,"
        "\"ulysses_median_step_ms\":%.3f,\"ulysses_peak_bytes\":%.0f,\"step_ratio_vs_ulysses\":%.3f,"
        "\"peak_ratio_vs_ulysses\":%.3f}\n",
        name, static_cast<long long>(cp), static_cast<long long>(long_seq), ms, peak,
        static_cast<long long>(WorkspaceBytes(*plan)), static_cast<long long>(allocated),
        peak > 0 ? allocated / peak : 0.0, one_ms, one_peak, one_ms > 0 ? ms / one_ms : 0.0,
        one_peak > 0 ? peak / one_peak : 0.0, ulysses_ms, ulysses_peak, ulysses_ms > 0 ? ms / ulysses_ms : 0.0,
        ulysses_peak > 0 ? peak / ulysses_peak : 0.0);
  }
  // The first block's tiles per rank (every block has the same).
  auto tiles = [](const proto::Plan& plan) {
    const std::vector<examples::CpLayerTraffic> layers = examples::CpAttentionTraffic(plan);
    return layers.empty() ? std::string() : absl::StrJoin(layers[0].ring_tiles_per_rank, " ");
  };
  const double zigzag_ms = Median(ring_times), contiguous_ms = Median(contiguous_times);
  std::printf(
      "{\"bench\":\"context_parallel\",\"metric\":\"ring_split\",\"model\":\"llama\",\"cp\":%lld,\"seq\":%lld,"
      "\"zigzag_median_step_ms\":%.3f,\"contiguous_median_step_ms\":%.3f,\"ulysses_median_step_ms\":%.3f,"
      "\"ratio_zigzag_vs_contiguous\":%.3f,\"ratio_zigzag_vs_ulysses\":%.3f,\"zigzag_tiles_per_rank\":\"%s\","
      "\"contiguous_tiles_per_rank\":\"%s\"}\n",
      static_cast<long long>(cp), static_cast<long long>(long_seq), zigzag_ms, contiguous_ms, ulysses_ms,
      contiguous_ms > 0 ? zigzag_ms / contiguous_ms : 0.0, ulysses_ms > 0 ? zigzag_ms / ulysses_ms : 0.0,
      tiles(long_ring).c_str(), tiles(long_contiguous).c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Main();
  if (!status.ok()) {
    std::fprintf(stderr, "context_parallel_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
