// The cost model of one layout: a training iteration of a ModelProfile on a cluster, for
// dp x tp x pp devices, micro-batches, a ZeRO stage and a recomputation mode. Nothing is
// compiled: each unit's forward work is priced from the profile with sbp/compute_cost.h
// and each collective with sbp/collective_cost.h, as the runtime runs it on the
// placements ParallelLayout builds (pp stages of dp x tp consecutive devices, tp
// innermost). Identical units are priced once per layout.
//
//   per micro-batch, per device of stage s (rows = batch / (dp x micro_batches)):
//     forward   GEMM FLOPs / gemm rate + memory-bound bytes / memory rate, the parts the
//               hints shard divided by tp; with recomputation, a memory-bound op's output
//               the layout does not keep for backward (selective: the attention core's;
//               full: every block op's but the block's output) and that fits in the cache
//               (memory_cached below) is written at the cached rate
//     backward  2 x forward, plus for full recomputation the copies the recompute pass
//               makes (act_count.h CountFullRecomputation: views free; the whole forward
//               again when not counted), the attention core for selective
//     tp        the tp probe plan's boxings on the tp axis (tp_boxings.h; without a
//               probe plan, Megatron's all-reduces), on the critical path; with
//               --compression, each as the boxing planner plans it (dense or a codec);
//               the variables' gradients' reductions once per iteration, with the
//               data-parallel sync below
//     pp        the cut activation sent forward and its gradient back, and the gradient
//               of a variable a later stage borrows (a tied embedding) back every
//               micro-batch (the variable itself forward once per iteration), each
//               transfer a collective call on both ranks (collective_call_seconds on the
//               stage's own work, twice per micro-batch and neighbouring stage); a stage's
//               time per micro-batch is the largest of its own work and, for each cut
//               next to it, the 1F1B loop (both stages' work + both transfers) / 2 and
//               what the cut's link carries one way (pipeline_period.h)
//     acts      the unit's acts per micro-batch x act_seconds, on the critical path: the
//               acts of the unit in the plan of the layout's family (act_count.h ActsOf:
//               dp's gradient sync, ZeRO's collectives and copies, the accumulators)
//   iteration = micro_batches x slowest stage + (pp - 1) x slowest stage (the bubble)
//               + the stage's optimizer (memory-bound over its parameter state)
//               + exposed gradient sync: tp's reductions of the variables' gradients
//               (bucketed per kind) and the data-parallel gradient all-reduce (ZeRO 1: + the
//               all-gather of the updated shards; 2: reduce-scatter + all-gather; 3:
//               reduce-scatter), the reductions one call per gradient bucket as
//               gradient_bucketing packs them (the first bucket at most 1 MiB), the
//               gathers one per variable (dense: the compiler never compresses them); the
//               last micro-batch's backward hides all but the last bucket (ZeRO-3 with
//               the dp group across nodes: none, the reduce-scatters share the one
//               communication thread with the re-gathers backward waits on)
//               + ZeRO-3's gathers (each parameter for forward and again for backward,
//               once per iteration), less what the first micro-batch's forward and
//               backward hide of them; on shared cores (host_cores) none: each stage waits
//               on its gathers; with the dp group across nodes the forward hides its
//               gathers but backward waits on every re-gather (a call between processes,
//               prefetched one op ahead), and where the devices outnumber the cores they
//               share the forward waits on its gathers too
//   and with host_cores (every device simulated in one process on that many cores, or
//   the cluster's nodes processes of one machine: a calibration's machine line) and one
//   stage: the devices' compute (kernels and acts) over the cores, or over the share of
//   them the process obtains (host_core_share), at least one device's, then the
//   communication on the path (every device of the stage waits on its collectives
//   together, so none computes meanwhile), the sync priced against the backward as long
//   as the cores make it; with pp > 1 at least the devices' compute over the cores and the 1F1B
//   pipeline played out on that share (shared_core_pipeline.h: a task's kernels and acts
//   on the cores, its tp all-reduces and pipeline receives (at most what they add to the
//   stage's time per micro-batch above) as waiting on none, and the
//   first micro-batch's forward and backward each waiting on ZeRO-3's gathers) plus the
//   slowest stage's optimizer (every device at once) and exposed sync; the difference
//   counts as compute.
//   peak  = the largest over the stages of one device's bytes, as peak_bytes.h adds
//           them up: parameters, gradients, optimizer state (what ZeRO shards), the kept
//           activations of the micro-batches in flight (pp - s on stage s, at most
//           micro_batches) x the register slots, and with micro-batches the
//           per-iteration values (accumulated gradients, ZeRO's updates and gathers).
#ifndef COMPILER_AUTO_PARALLEL_PRICE_H_
#define COMPILER_AUTO_PARALLEL_PRICE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/edge_price_cache.h"
#include "compiler/auto_parallel/model_profile.h"
#include "proto/plan.pb.h"
#include "sbp/codec_accuracy.h"
#include "sbp/compression_policy.h"

namespace oneflow::auto_parallel {

struct PriceOptions {
  // Nodes, devices per node, link bandwidths and latencies, compute rates (0: the
  // defaults of sbp/compute_cost.h) and the GEMM shape model (Cluster.gemm_shape_*, the
  // calibration's "gemm_shape" line: each GEMM of the model, forward and backward, priced
  // by its shape on one device of the layout; not measured: every GEMM at the GEMM rate,
  // the arithmetic of the search before it).
  proto::Cluster cluster;
  // The calibration's "memory_cached" line (sbp/calibration.h): bytes/s of a copy that
  // stays in one core's cache, and that cache's bytes (ComputeRates'
  // memory_cached_bytes_per_second and cache_bytes). 0: not measured; every byte at the
  // cluster's memory rate.
  double memory_cached_bytes_per_second = 0;
  double cache_bytes = 0;
  // CompileOptions::bucket_mb: the last bucket of gradients cannot overlap backward.
  double bucket_mb = 25;
  // CompileOptions::register_count: slots of every activation register.
  int64_t register_count = 2;
  // Seconds the runtime spends on one act besides its kernel (the actor's messages, its
  // thread's wake-up), measured on this host (bench/auto_parallel/host_calibration.h); 0:
  // acts are free. Priced only for a profile whose acts CountActs counted.
  double act_seconds = 0;
  // Seconds a boxing act (a collective's or a transfer's actor: tp's all-reduces, the
  // gradient sync, ZeRO's gathers, a pipeline's sends) costs instead: its ranks meet, so
  // on shared cores a rank spins and sleeps until its peers come, and one cost for every
  // act priced tp's and ZeRO's layouts 15-25% under their measured CPU time
  // (docs/auto_parallel_measurements.md, runs 24-27). Fitted with act_seconds from runs of layouts whose
  // boxing acts grow at other rates (host_terms.h FitSharedHostTerms). nullopt: act_seconds.
  std::optional<double> boxing_act_seconds;
  // Seconds one collective call costs beyond the link model when its ranks share the
  // host's cores (a rank waits for descheduled peers), added per call; 0: none.
  double collective_call_seconds = 0;
  // Cores of the host when every device of the cluster runs in one process on it (`oneflow
  // run`, the examples' --run) or the cluster's nodes are processes of one machine
  // (emulated hosts): the devices' compute then shares them, and the iteration takes at
  // least every device's compute over the cores. 0: each device has its own.
  int64_t host_cores = 0;
  // With host_cores: the CPU seconds the devices obtain per second of wall time when all
  // of them are busy, measured as a run's process CPU time over its wall time (other
  // programs on the host, and the devices' own wake-ups, leave less than host_cores); the
  // iteration then takes at least every device's compute over this share. 0: host_cores.
  double host_core_share = 0;
  // --compression as the compiler will apply it (CompileOptions::compression): with a
  // mode other than off, each tensor-parallel all-reduce is priced by the compiler's own
  // boxing planner (sbp/boxing.h PlanBoxing, the options BoxingOptionsFor gives an
  // activation), which compresses an edge where the calibrated codec throughput and the
  // link model say it pays: the search's prices and the compiled plan's boxings agree.
  // Off (the default): dense all-reduces.
  CompressionPolicy compression;
  // What the compiler will make of the compressed steps beyond their codecs (error
  // feedback, stochastic rounding, the fitted int4 scale: compiler/compilation.h
  // EncoderSettingsOf), which changes the passes they make: the search prices them as
  // the compiled plan's boxings are priced.
  EncoderSettings encoders;
  // The training the job runs (compile_options.h TrainingSetupOf: optimizer, error
  // feedback, dense warm-up), which selects the measured rows `auto`'s accuracy bound
  // reads: the search's codecs are the compiler's.
  TrainingSetup training;
  // Record each distinct unit's priced tp edges in AutoParallelPrediction.edges (dense and
  // compressed, which was taken); off for the search itself (the decision record re-prices
  // the chosen layout with it).
  bool record_edges = false;
  // Price each distinct unit once per layout (identical blocks share the price); false
  // prices every unit, the reference of bench/auto_parallel's search time.
  bool share_repeated_units = true;
};

// The prediction for `layout` (lost_because empty). INVALID_ARGUMENT naming the layout
// when it does not fit the cluster or the model: dp x tp x pp other than the cluster's
// devices, pp above the profile's stageable units, a batch that does not divide into
// dp x micro_batches, ZeRO without dp, tp without the model's hints.
absl::StatusOr<proto::AutoParallelPrediction> PriceLayout(const ModelProfile& profile, const PriceOptions& options,
                                                          const proto::AutoParallelLayout& layout);

// The same, the tensor-parallel edges the boxing planner prices (--compression other than
// off) looked up in and added to `cache` (edge_price_cache.h), which must have been made
// for `options` (this object: INTERNAL otherwise). Gives the same prediction as without.
absl::StatusOr<proto::AutoParallelPrediction> PriceLayout(const ModelProfile& profile, const PriceOptions& options,
                                                          const proto::AutoParallelLayout& layout,
                                                          EdgePriceCache* cache);

// The pipeline cuts for `layout` (pp > 1) that minimize its slowest stage per
// micro-batch within `device_memory` (0: no limit), from each unit's price on each
// stage (stage_cuts.h MinimizeSlowestStage): blocks per stage for
// AutoParallelLayout.stage_blocks. nullopt when the balanced cuts are as good, when no cut
// fits the memory, or with one stage. `cache` as for PriceLayout (may be null).
absl::StatusOr<std::optional<std::vector<int64_t>>> ChooseStageBlocks(const ModelProfile& profile,
                                                                       const PriceOptions& options,
                                                                       const proto::AutoParallelLayout& layout,
                                                                       int64_t device_memory, EdgePriceCache* cache);

// compute + exposed communication + bubble.
double StepSeconds(const proto::AutoParallelPrediction& prediction);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_PRICE_H_
