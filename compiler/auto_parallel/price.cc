#include "compiler/auto_parallel/price.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/auto_parallel/act_count.h"
#include "compiler/auto_parallel/candidate.h"
#include "compiler/auto_parallel/edge_price_cache.h"
#include "compiler/auto_parallel/gathers_ahead.h"
#include "compiler/auto_parallel/gradient_buckets.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/layout_check.h"
#include "compiler/auto_parallel/peak_bytes.h"
#include "compiler/auto_parallel/unit_memory.h"
#include "compiler/auto_parallel/pipeline_period.h"
#include "compiler/auto_parallel/shared_core_pipeline.h"
#include "compiler/auto_parallel/stage_collectives.h"
#include "compiler/auto_parallel/stage_cuts.h"
#include "compiler/auto_parallel/unit_kernels.h"
#include "compiler/cluster_compute_rates.h"
#include "compiler/compiler.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "oneflow_core/status.h"
#include "sbp/collective_cost.h"
#include "sbp/compute_cost.h"

namespace oneflow::auto_parallel {
namespace {

// The variables' gradients of one collective kind that tp reduces once per iteration
// (tp_boxings.h, per_iteration): their price, their bytes (a bucket's register holds each
// whole) and how many.
struct TpGradientReduction {
  double seconds = 0;
  double bytes = 0;
  int64_t tensors = 0;
};

// What one unit costs one device of its stage per micro-batch.
struct UnitCost {
  double compute_seconds = 0;  // forward + backward (+ recomputation)
  double backward_seconds = 0;
  // Of backward_seconds, the weights' gradient GEMMs: ZB-H1's W acts.
  double weight_backward_seconds = 0;
  double tp_seconds = 0;
  double backward_tp_seconds = 0;  // of tp_seconds: the backward's all-reduces
  // Per iteration, not in tp_seconds: the variables' gradients tp reduces, by kind.
  std::map<proto::BoxingStepKind, TpGradientReduction> tp_gradients;
  // Per iteration, not in tp_seconds: the variables' values tp gathers (or otherwise
  // boxes) for their readers, and how many calls.
  double tp_weight_seconds = 0;
  int64_t tp_weight_calls = 0;
  double parameter_bytes = 0;  // on one device before ZeRO
  // Its gradients' bytes on one device, and the sharded weights tp gathers whole
  // (peak_bytes.h PeakTerms).
  double gradient_bytes = 0;
  double gathered_bytes = 0;
  int64_t parameter_tensors = 0;
  double kept_bytes = 0;       // activations kept for backward, one micro-batch
  // With full recomputation, what the unit's backward re-makes and holds while it runs
  // (its activations without recomputation, one micro-batch); 0 otherwise.
  double recomputed_bytes = 0;
  double iteration_act_seconds = 0;  // per-iteration acts (variables, optimizer updates)
  // The acts priced: one device's per micro-batch and per iteration.
  double micro_batch_acts = 0;
  double iteration_acts = 0;
};

class Pricer {
 public:
  // `profile`: the one of the layout's tp probe shape (ProfileOfLayout); `memory_profile`:
  // the one whose probe keeps what the layout's devices keep (unit_memory.h MemoryProfileOf),
  // with the same units.
  Pricer(const ModelProfile& profile, const ModelProfile& memory_profile, const PriceOptions& options,
         const proto::AutoParallelLayout& layout, EdgePriceCache* cache)
      : profile_(profile),
        memory_profile_(memory_profile.units.size() == profile.units.size() ? memory_profile : profile),
        options_(options),
        layout_(layout),
        collectives_(options, layout, cache) {
    rates_ = ClusterComputeRates(options.cluster, options.memory_cached_bytes_per_second, options.cache_bytes);
  }

  absl::StatusOr<proto::AutoParallelPrediction> Run() {
    OF_RETURN_IF_ERROR(CheckLayout(profile_, options_, layout_));
    OF_RETURN_IF_ERROR(collectives_.BuildStages());
    const int64_t pp = layout_.pp();
    const int64_t micro_batches = layout_.micro_batches();
    // Units to stages as the examples cut them (ParallelLayout::StageOf): the layout's
    // stage_blocks, or balanced (stageable unit k of K on stage ((k + 1) pp - 1) / K); the
    // prologue on the first stage, other units with the stageable unit before them.
    const std::vector<int64_t> segment_stage = SegmentStages();
    std::vector<UnitCost> stages(pp);
    std::vector<double> largest_parameters(pp, 0);
    std::vector<double> largest_recomputed(pp, 0);  // one unit's backward at a time re-makes its activations
    std::vector<double> cut_bytes(pp, 0);  // the activation entering each stage
    std::vector<std::vector<HeldUnit>> held(pp);  // each stage's units, for its backward peak
    std::vector<int64_t> unit_stage(profile_.units.size(), 0);
    // Per unit, the backward of the units before it on its stage: what the stage's backward
    // still runs after this unit's (backward goes in reverse).
    std::vector<double> backward_after(profile_.units.size(), 0);
    int64_t stageable = 0;
    int64_t stage = 0;
    absl::flat_hash_map<std::string, UnitCost> priced;
    for (size_t u = 0; u < profile_.units.size(); ++u) {
      const ProfileUnit& unit = profile_.units[u];
      const UnitActs acts = ActsOf(profile_, u, layout_);
      if (unit.stageable) {
        const int64_t next = segment_stage[stageable];
        if (next != stage) cut_bytes[next] = unit.input_bytes;
        stage = next;
        ++stageable;
      }
      unit_stage[u] = stage;
      OF_ASSIGN_OR_RETURN(const UnitCost* priced_unit, PricedUnit(unit, acts, stage, &priced));
      const UnitCost& cost = *priced_unit;
      UnitCost& total = stages[stage];
      backward_after[u] = total.backward_seconds;
      total.compute_seconds += cost.compute_seconds;
      total.backward_seconds += cost.backward_seconds;
      total.weight_backward_seconds += cost.weight_backward_seconds;
      total.tp_seconds += cost.tp_seconds;
      total.backward_tp_seconds += cost.backward_tp_seconds;
      total.tp_weight_seconds += cost.tp_weight_seconds;
      total.tp_weight_calls += cost.tp_weight_calls;
      for (const auto& [kind, reduction] : cost.tp_gradients) {
        TpGradientReduction& sum = total.tp_gradients[kind];
        sum.seconds += reduction.seconds;
        sum.bytes += reduction.bytes;
        sum.tensors += reduction.tensors;
      }
      total.parameter_bytes += cost.parameter_bytes;
      total.gradient_bytes += cost.gradient_bytes;
      total.gathered_bytes += cost.gathered_bytes;
      total.parameter_tensors += cost.parameter_tensors;
      total.kept_bytes += cost.kept_bytes;
      total.iteration_act_seconds += cost.iteration_act_seconds;
      total.micro_batch_acts += cost.micro_batch_acts;
      total.iteration_acts += cost.iteration_acts;
      largest_parameters[stage] = std::max(largest_parameters[stage], cost.parameter_bytes);
      largest_recomputed[stage] = std::max(largest_recomputed[stage], cost.recomputed_bytes);
      held[stage].push_back({cost.kept_bytes, cost.gradient_bytes});
    }
    proto::AutoParallelPrediction prediction;
    *prediction.mutable_layout() = layout_;
    double slowest_micro_batch = -1;
    double slowest_own_seconds = -1;
    int64_t peak = 0;
    double all_devices_compute = 0;  // every device's compute seconds of one iteration
    double all_devices_acts = 0;
    // Each stage's micro-batch split into forward and backward, and what follows the
    // pipeline's drain on it (the optimizer, the exposed sync): the play of the pipeline on
    // shared cores (shared_core_pipeline.h).
    std::vector<PipelineStageWork> stage_work(pp);
    double slowest_tail = 0;
    const PipelineTransfers transfers = TransfersOf(cut_bytes, unit_stage, backward_after);
    // Each transfer is a call on both ranks (pipeline_period.h).
    const std::vector<double> transfer_call_seconds = PipelineTransferCallSeconds(pp, options_.collective_call_seconds);
    std::vector<double> stage_seconds(pp);
    for (int64_t s = 0; s < pp; ++s) {
      stage_seconds[s] = stages[s].compute_seconds + stages[s].tp_seconds + transfer_call_seconds[s];
    }
    OF_ASSIGN_OR_RETURN(const std::vector<double> pipelined, PipelineStageSeconds(stage_seconds, transfers.cuts));
    double variables_exposed = 0;  // the borrowed variables' transfers the first forward waits on
    // The borrowed variables' accumulated gradients, sent once per iteration after the
    // readers' last backward: what the rest of that backward does not hide, once (each
    // reader stage sends on its own link, so the slowest reader's).
    const double gradients_exposed =
        *std::max_element(transfers.gradient_exposed_seconds.begin(), transfers.gradient_exposed_seconds.end());
    for (int64_t s = 0; s < pp; ++s) {
      const UnitCost& cost = stages[s];
      // The pipeline's transfers on this stage's path as the 1F1B schedule puts them
      // (pipeline_period.h): the stage's time per micro-batch beyond its own work.
      const double micro_batch_seconds = pipelined[s];
      const double pipeline_seconds = micro_batch_seconds - stage_seconds[s];
      // Borrowed variables sent to this stage once per iteration, while the stage before
      // computes its first forward.
      const double variable_wait =
          std::max(0.0, transfers.variable_seconds[s] -
                            (s > 0 ? stages[s - 1].compute_seconds - stages[s - 1].backward_seconds : 0.0));
      variables_exposed = std::max(variables_exposed, variable_wait);
      OF_ASSIGN_OR_RETURN(const double zero3_gathers, Zero3GatherSeconds(s, cost));
      OF_ASSIGN_OR_RETURN(const double dp_seconds, DataParallelSeconds(s, cost));
      const double shard_gathers = UpdatedShardGatherSeconds(s, cost);
      const double optimizer_seconds =
          MemoryBoundSeconds(rates_, ShardedStateBytes(cost.parameter_bytes) *
                                         (3 + 2 * profile_.optimizer_state_copies) / 4) +
          cost.iteration_act_seconds;
      all_devices_compute += static_cast<double>(layout_.dp() * layout_.tp()) *
                             (micro_batches * cost.compute_seconds + optimizer_seconds);
      all_devices_acts += static_cast<double>(layout_.dp() * layout_.tp()) *
                          (micro_batches * cost.micro_batch_acts + cost.iteration_acts);
      // The last micro-batch's backward hides the gradient sync but its last bucket.
      const double tail = LastBucketShare(cost.parameter_bytes, cost.parameter_tensors, options_.bucket_mb);
      // tp's reductions of the variables' gradients are bucketed too (gradient_bucketing
      // packs every group's reduce-scatters and all-reduces) and run on the same
      // communication thread as the data-parallel sync, so backward hides both but the
      // last bucket of each (2 x 1 at 1 Gbit/s, dp = 1 tp = 2, traced: the first bucket's
      // reduce-scatter, 1008 KiB, ran during backward; the last, 1776 KiB, and the layer
      // norms' all-reduce after it; docs/auto_parallel_measurements.md, "Tensor parallelism across
      // hosts, traced").
      double tp_gradient_seconds = 0;
      double tp_gradient_tail_seconds = 0;
      for (const auto& [kind, reduction] : cost.tp_gradients) {
        tp_gradient_seconds += reduction.seconds;
        tp_gradient_tail_seconds += reduction.seconds * LastBucketShare(reduction.bytes, reduction.tensors, options_.bucket_mb);
      }
      const double gradient_sync_seconds = dp_seconds + tp_gradient_seconds;
      // ZeRO-3 across processes (the dp group spans nodes): backward waits on its
      // re-gathers (below), and the device's one communication thread runs the gradient
      // buckets' reduce-scatters between them, so a bucket reduced during backward delays
      // the re-gathers after it by its own time: every bucket is on the path, not the last
      // one only (2 x 1 at 1 Gbit/s, traced: backward lasted its compute + the re-gathers
      // + the first bucket's reduce-scatter, 18.7 + 13.1 + 3.1 ms against 37.6 measured;
      // docs/auto_parallel_measurements.md, "ZeRO across hosts").
      // Keeping forward's gathered parameters (zero3_kept) leaves backward no re-gather to
      // wait on: the buckets' reduce-scatters hide behind it as ZeRO-2's do, and only the
      // forward gathers are waited on across processes (traced on 3 hosts x 2 at 1 Gbit/s:
      // the next forward starts 10-47 ms after backward, and forward is link-bound;
      // docs/zero.md, "Stage 3 keeping forward's copy").
      const bool gathers_waited = layout_.zero() >= 3 && collectives_.DpCrossesNodes(s);
      const bool regathers_waited = gathers_waited && !layout_.zero3_kept();
      // The compute that can hide communication, as long as the devices' turns on shared
      // cores make it (LockstepStretch: one stage; 1 otherwise).
      const double stretch = LockstepStretch(options_, layout_);
      const double hiding_backward = cost.backward_seconds * stretch;
      // The first micro-batch's forward, behind which the gathers that read variables
      // only hide (gathers_ahead.h) where their kind runs ahead of it.
      const double forward_compute = (cost.compute_seconds - cost.backward_seconds) * stretch;
      const bool gathers_run_ahead = !DevicesOutnumberCores(options_);
      // ZeRO-3's gathers, half for forward and half re-gathered for backward, run once per
      // iteration and serve every micro-batch, so only the first micro-batch's forward and
      // backward can hide them (each is prefetched one parameter-reading op ahead, on the
      // communication thread). On cores the devices share, nothing hides them: the
      // communication threads run on the cores the stage's compute threads fill, and a
      // gather's ranks meet, so the stage waits on each gather as on tp's all-reduces
      // (dp = 2 x pp = 4, one micro-batch, 8 devices on 2 cores: ZeRO-3 measured 10.1 ms
      // above zero = 0 where hiding them priced it 0.3 ms below; docs/auto_parallel_measurements.md,
      // run 35). Across processes each re-gather's ranks meet over the link and the compute
      // thread waits on every one (traced on 2 x 1 at 1 Gbit/s: backward 37.6 ms against
      // zero = 0's 21.1 with the same compute): all of the re-gathers exposed there, with
      // or without host_cores.
      const double forward_gathers = layout_.zero3_kept() ? zero3_gathers : zero3_gathers / 2;
      const double backward_gathers = zero3_gathers - forward_gathers;
      GathersAhead ahead;
      ahead.shard_seconds = shard_gathers;
      ahead.shard_calls = cost.parameter_tensors;
      ahead.shard_ahead = collectives_.DpCrossesNodes(s) && gathers_run_ahead;
      ahead.zero3_forward_seconds = forward_gathers;
      ahead.zero3_forward_ahead = gathers_run_ahead;
      ahead.tp_weight_seconds = cost.tp_weight_seconds;
      ahead.tp_weight_calls = cost.tp_weight_calls;
      ahead.tp_weight_ahead = collectives_.TpCrossesNodes(s) &&
                              (gathers_run_ahead || options_.compression.mode == CompressionMode::kOff);
      const ExposedGathers exposed_ahead = ExposeGathersAhead(ahead, forward_compute);
      const double exposed_forward_gathers = exposed_ahead.zero3_forward_seconds;
      const double exposed_tp_weights = exposed_ahead.tp_weight_seconds;
      const double exposed_dp =
          exposed_ahead.shard_seconds + (regathers_waited ? gradient_sync_seconds
                                                         : std::max(gradient_sync_seconds - hiding_backward,
                                                                    dp_seconds * tail + tp_gradient_tail_seconds));
      const double exposed_gathers =
          gathers_waited          ? exposed_forward_gathers + backward_gathers
          : options_.host_cores > 0 ? zero3_gathers
                                    : exposed_forward_gathers + std::max(0.0, backward_gathers - hiding_backward);
      // The play's tasks: compute on the shared cores, then the communication the stage
      // waits on, which holds no core (tp's all-reduces, the pipeline's receives).
      stage_work[s].backward_seconds = cost.backward_seconds + transfer_call_seconds[s] / 2;
      stage_work[s].forward_seconds = cost.compute_seconds - cost.backward_seconds + transfer_call_seconds[s] / 2;
      // ZB-H1's W acts: the weights' gradients, and on the first stage all of backward
      // (nothing before it waits on its input gradients: the pipeline_schedule pass marks
      // every backward op of it W).
      stage_work[s].weight_backward_seconds = s == 0 ? cost.backward_seconds : cost.weight_backward_seconds;
      // The receives the stage waits on, after the forward (the activation's) and after
      // the backward (the gradient's); the play overlaps them with the other stages' work
      // itself, but never beyond what they add to the stage's time per micro-batch in the
      // schedule without shared cores (pipeline_seconds: a stage whose neighbours are
      // faster waits on none of them), so that with a core each the play is that schedule.
      const double activation_receive = s > 0 ? transfers.cuts[s].forward_seconds : 0;
      const double gradient_receive = s + 1 < pp ? transfers.cuts[s + 1].backward_seconds : 0;
      const double receives = activation_receive + gradient_receive;
      const double waited = receives > pipeline_seconds ? pipeline_seconds / receives : 1.0;
      stage_work[s].forward_wait_seconds = cost.tp_seconds - cost.backward_tp_seconds + activation_receive * waited;
      stage_work[s].backward_wait_seconds = cost.backward_tp_seconds + gradient_receive * waited;
      stage_work[s].first_forward_wait_seconds =
          (gathers_waited ? exposed_forward_gathers : forward_gathers) + variable_wait + exposed_tp_weights;
      stage_work[s].first_backward_wait_seconds = backward_gathers;
      stage_work[s].devices = layout_.dp() * layout_.tp();
      const double every_device_at_once = std::max(
          1.0, static_cast<double>(layout_.dp() * layout_.tp() * pp) / std::max(1.0, SharedCores(options_)));
      // (The gathers are in the play's first tasks of every stage.)
      slowest_tail = std::max(slowest_tail, optimizer_seconds * every_device_at_once + exposed_dp + gradients_exposed);
      // (Stages a cut's bound holds to one period: the one with more work of its own shows
      // the split, the rest of the period being exposed communication.)
      if (micro_batch_seconds > slowest_micro_batch ||
          (micro_batch_seconds == slowest_micro_batch && stage_seconds[s] > slowest_own_seconds)) {
        slowest_micro_batch = micro_batch_seconds;
        slowest_own_seconds = stage_seconds[s];
        prediction.set_compute_seconds(micro_batches * cost.compute_seconds + optimizer_seconds);
        prediction.set_exposed_communication_seconds(micro_batches * (cost.tp_seconds + transfer_call_seconds[s] +
                                                                     pipeline_seconds) +
                                                     exposed_dp + exposed_gathers + exposed_tp_weights);
        prediction.set_bubble_seconds((pp - 1) * micro_batch_seconds);
      }
      // What the stage receives per micro-batch: the activation entering it and the
      // gradient of the one leaving it (a pipeline's boundaries carry whole rows over tp).
      const double received =
          ((s > 0 ? cut_bytes[s] : 0) + (s + 1 < pp ? cut_bytes[s + 1] : 0)) * RowFraction();
      PeakTerms terms = PeakTermsOf(cost, s);
      terms.backward_held_bytes = BackwardHeldBytes(held[s], GradientBucketBytes(layout_, options_.bucket_mb));
      terms.largest_gathered_bytes = largest_parameters[s];
      terms.largest_recomputed_bytes = largest_recomputed[s];
      terms.received_bytes = received;
      peak = std::max(peak, static_cast<int64_t>(DevicePeakBytes(layout_, terms)));
    }
    prediction.set_exposed_communication_seconds(prediction.exposed_communication_seconds() + variables_exposed +
                                                 gradients_exposed);
    if (layout_.schedule() == proto::PIPELINE_SCHEDULE_ZB_H1) {
      OF_ASSIGN_OR_RETURN(const double bubble_share, ZeroBubbleShare(stage_work, micro_batches));
      prediction.set_bubble_seconds(prediction.bubble_seconds() * bubble_share);
    }
    prediction.set_peak_bytes(peak);
    if (profile_.acts_counted) prediction.set_acts_per_iteration(static_cast<int64_t>(std::llround(all_devices_acts)));
    // The units' tp edges, then each stage's data-parallel collectives.
    for (proto::AutoParallelEdge& edge : collectives_.TakeEdges()) *prediction.add_edges() = std::move(edge);
    if (options_.host_cores > 0 && pp == 1) {
      // One stage: every device runs the same program, and the communication on its path
      // (tp's collectives, the sync backward does not hide, ZeRO's gathers) is collectives
      // every device waits on together, so no device computes while it runs: the step is
      // the compute as the shared cores stretch it, then that communication (priced above
      // against the stretched backward). Taking the larger of the two instead hid the
      // communication behind the other devices' compute: 3 emulated hosts on 2 cores, dp=3
      // without codecs predicted 42.1 ms (as with codecs, 41.8) where it measured 61.2
      // against 40.2: its last gradient bucket, 21 ms over the link after backward, added
      // to the 40 ms the three devices' compute took on the cores (docs/auto_parallel_measurements.md,
      // "Three hosts on two cores").
      prediction.set_compute_seconds(std::max(prediction.compute_seconds(), all_devices_compute / SharedCores(options_)));
    } else if (options_.host_cores > 0) {
      // A pipeline's devices take turns on the host's cores: no iteration is shorter than
      // all their compute spread over the cores, nor than the pipeline played out on them
      // (its stages do not keep every core busy while it fills and drains).
      OF_ASSIGN_OR_RETURN(const double pipeline, SharedCorePipelineSeconds(stage_work, micro_batches,
                                                                           SharedCores(options_), layout_.schedule()));
      const double shared = std::max(all_devices_compute / SharedCores(options_), pipeline + slowest_tail);
      const double step = StepSeconds(prediction);
      if (shared > step) prediction.set_compute_seconds(prediction.compute_seconds() + shared - step);
    }
    return prediction;
  }

  // Each stage's segments' costs for the cut search (stage_cuts.h): segment k is
  // stageable unit k with the units that go where it goes (the prologue with the first,
  // each other unit with the stageable unit before it), priced on every stage.
  absl::StatusOr<StageCutCosts> SegmentCosts(double memory_limit) {
    OF_RETURN_IF_ERROR(CheckLayout(profile_, options_, layout_));
    OF_RETURN_IF_ERROR(collectives_.BuildStages());
    const int64_t pp = layout_.pp();
    const int64_t segments = profile_.stageable_units;
    StageCutCosts costs;
    costs.seconds.assign(pp, std::vector<double>(segments, 0));
    costs.bytes.assign(pp, std::vector<double>(segments, 0));
    costs.memory_limit = memory_limit;
    absl::flat_hash_map<std::string, UnitCost> priced;
    for (int64_t s = 0; s < pp; ++s) {
      int64_t segment = 0;
      int64_t stageable = 0;
      for (size_t u = 0; u < profile_.units.size(); ++u) {
        const ProfileUnit& unit = profile_.units[u];
        if (unit.stageable) segment = stageable++;
        OF_ASSIGN_OR_RETURN(const UnitCost* cost, PricedUnit(unit, ActsOf(profile_, u, layout_), s, &priced));
        costs.seconds[s][segment] += cost->compute_seconds + cost->tp_seconds;
        costs.bytes[s][segment] += DevicePeakBytes(layout_, PeakTermsOf(*cost, s));
      }
    }
    return costs;
  }

 private:
  // Stage of each stageable unit: the layout's stage_blocks, or balanced as ParallelLayout::StageOf.
  std::vector<int64_t> SegmentStages() const {
    const std::vector<int64_t> counts =
        layout_.stage_blocks().empty()
            ? BalancedStageBlocks(std::max<int64_t>(1, profile_.stageable_units), layout_.pp())
            : std::vector<int64_t>(layout_.stage_blocks().begin(), layout_.stage_blocks().end());
    std::vector<int64_t> stages;
    for (int64_t s = 0; s < static_cast<int64_t>(counts.size()); ++s) stages.insert(stages.end(), counts[s], s);
    return stages;
  }

  // `unit` on `stage` as PriceUnit prices it, once per distinct (stage, acts, signature)
  // when share_repeated_units: identical units on one stage cost the same (the stage
  // fixes the placement; units of one signature may differ in their acts: the last block
  // hands its output to the epilogue). The pointer lives until the next call with `priced`.
  absl::StatusOr<const UnitCost*> PricedUnit(const ProfileUnit& unit, const UnitActs& acts, int64_t stage,
                                             absl::flat_hash_map<std::string, UnitCost>* priced) {
    const std::string key =
        options_.share_repeated_units
            ? absl::StrCat(stage, "|", acts.per_micro_batch, "|", acts.per_iteration, "|", unit.signature)
            : absl::StrCat(priced->size());
    auto [it, inserted] = priced->try_emplace(key);
    if (inserted) {
      OF_ASSIGN_OR_RETURN(it->second, PriceUnit(unit, acts, stage));
    }
    return &it->second;
  }

  // The peak terms of `cost` (one unit's, or a stage's sum) on a device of stage s
  // (peak_bytes.h); alone, what it adds to the peak (the cut search's bytes: the bound
  // of the backward's peak, activations and gradients summed).
  PeakTerms PeakTermsOf(const UnitCost& cost, int64_t stage) const {
    PeakTerms terms;
    terms.parameter_bytes = cost.parameter_bytes;
    terms.gradient_bytes = cost.gradient_bytes;
    terms.gathered_bytes = cost.gathered_bytes;
    terms.kept_bytes = cost.kept_bytes;
    terms.stage = stage;
    terms.register_count = options_.register_count;
    terms.optimizer_state_copies = profile_.optimizer_state_copies;
    return terms;
  }

  double RowFraction() const { return 1.0 / static_cast<double>(layout_.dp() * layout_.micro_batches()); }

  // The pipeline's transfers of one micro-batch across each cut e (1 .. pp - 1, index 0
  // unused), one call each: forward the activation entering stage e, backward its
  // gradient, one micro-batch's rows of each device. And once per iteration the variables a
  // unit borrows from a unit of another stage (a tied embedding): the variable goes to the
  // reader's stage (variable_seconds, by reader stage), and the reader's gradient of it,
  // accumulated over the micro-batches on the reader's stage (gradient_accumulation), comes
  // back to the owner's once, after the reader's last micro-batch's backward made it. It
  // leaves on the link that then carries that micro-batch's activation gradient, which waits
  // for what is left of it when the rest of the stage's backward is done, and the drain
  // with it (gradient_exposed_seconds, by reader stage: the borrowed gradients one after
  // another, less the backward after the last of them). The same holds when the owner's
  // stage is the later one: it waits for the gradient after its own drain. Before session
  // 45 the plan sent the gradient every micro-batch (24 x 192 KiB an iteration for the
  // hosts sweep's gpt at M = 24, traced; docs/auto_parallel_measurements.md, "Pipelines
  // across hosts, traced"), and this priced it so.
  struct PipelineTransfers {
    std::vector<PipelineCutTransfers> cuts;
    std::vector<double> variable_seconds;
    std::vector<double> gradient_exposed_seconds;
  };
  PipelineTransfers TransfersOf(const std::vector<double>& cut_bytes, const std::vector<int64_t>& unit_stage,
                                const std::vector<double>& backward_after) const {
    const int64_t pp = layout_.pp();
    PipelineTransfers transfers{std::vector<PipelineCutTransfers>(pp), std::vector<double>(pp, 0),
                                std::vector<double>(pp, 0)};
    for (int64_t e = 1; e < pp; ++e) {
      const double seconds =
          TransferSeconds(collectives_.links(), collectives_.CutCrossesNodes(e), cut_bytes[e] * RowFraction());
      PipelineCutTransfers& cut = transfers.cuts[e];
      cut.forward_seconds = cut.backward_seconds = cut.forward_link_seconds = cut.backward_link_seconds = seconds;
    }
    std::vector<double> gradient_seconds(pp, 0);  // by reader stage
    // By reader stage, the backward after its last borrowed gradient's: backward runs the
    // units in reverse, so the earliest borrowing unit's, the least.
    std::vector<double> last_backward_after(pp, std::numeric_limits<double>::infinity());
    for (size_t u = 0; u < profile_.units.size(); ++u) {
      for (const BorrowedVariable& variable : profile_.units[u].borrowed_variables) {
        const int64_t owner = unit_stage[variable.owner_unit];
        const int64_t reader = unit_stage[u];
        if (owner == reader) continue;
        // Each device of the reader's stage sends to its counterpart on the owner's.
        const double bytes = static_cast<double>(variable.bytes) / (variable.tp_sharded ? layout_.tp() : 1);
        const double seconds =
            TransferSeconds(collectives_.links(), collectives_.StagesCrossNodes(owner, reader), bytes);
        transfers.variable_seconds[reader] += seconds;
        gradient_seconds[reader] += seconds;
        last_backward_after[reader] = std::min(last_backward_after[reader], backward_after[u]);
      }
    }
    for (int64_t s = 0; s < pp; ++s) {
      if (gradient_seconds[s] > 0) {
        transfers.gradient_exposed_seconds[s] = std::max(0.0, gradient_seconds[s] - last_backward_after[s]);
      }
    }
    return transfers;
  }

  // The unit's tp boxings as the tp probe plan runs them (tp_boxings.h), on the tp axis of
  // the stage's placement, each with the codecs the policy gives its role (as the
  // compiler plans the edge on that placement; all-to-alls dense). An
  // activation's bytes are its rows' share, one call per micro-batch, into `forward_tp` or
  // `backward_tp`; a variable's value is boxed whole once per iteration (a boxing of a
  // per-iteration tensor runs once per iteration, compiler/passes/per_iteration.h), into
  // `cost->tp_weight_seconds`. The variables' gradients are reduced
  // once per iteration, packed into gradient buckets (compiler/passes/gradient_bucketing),
  // so a unit's are priced as one call per kind, into `gradients`: the iteration's sync
  // with the data-parallel one, which backward hides but the last bucket (Run). The
  // compiler's choice is the probe's (the whole batch on one tp group): a layout with
  // fewer rows per device is priced with the same boxings.
  absl::Status PlannedTpSeconds(const ProfileUnit& unit, int64_t stage, double* forward_tp, double* backward_tp,
                                UnitCost* cost) {
    std::map<proto::BoxingStepKind, TpGradientReduction>* gradients = &cost->tp_gradients;
    if (collectives_.TpAxis() < 0) return absl::OkStatus();
    for (const TpBoxing& boxing : unit.tp_boxings) {
      const double group_bytes =
          static_cast<double>(boxing.bytes) * (boxing.scales_with_rows ? RowFraction() : 1.0);
      if (boxing.per_iteration) {
        TpGradientReduction& reduction = (*gradients)[boxing.kind];
        reduction.bytes += group_bytes;
        ++reduction.tensors;
        continue;
      }
      // An activation's boxing, or a variable's value gathered for its readers.
      const TensorRole role = boxing.scales_with_rows ? TensorRole::kActivation : TensorRole::kWeight;
      OF_ASSIGN_OR_RETURN(const double seconds,
                          PlannedTpCallSeconds(unit, stage, boxing.kind, role, group_bytes, boxing.tensor));
      if (role == TensorRole::kWeight) {
        cost->tp_weight_seconds += seconds;
        ++cost->tp_weight_calls;
      } else {
        *(boxing.backward ? backward_tp : forward_tp) += seconds;
      }
    }
    for (auto& [kind, reduction] : *gradients) {
      OF_ASSIGN_OR_RETURN(reduction.seconds, PlannedTpCallSeconds(unit, stage, kind, TensorRole::kGradient,
                                                                  reduction.bytes, "the variables' gradients"));
    }
    return absl::OkStatus();
  }

  // One planned tp collective of `kind` moving `group_bytes` per member, with the
  // codecs the policy gives `role`.
  absl::StatusOr<double> PlannedTpCallSeconds(const ProfileUnit& unit, int64_t stage, proto::BoxingStepKind kind,
                                              TensorRole role, double group_bytes, const std::string& tensor) {
    const BoxingKind boxing_kind = kind == proto::STEP_ALL_REDUCE       ? BoxingKind::kAllReduce
                                   : kind == proto::STEP_ALL_GATHER     ? BoxingKind::kAllGather
                                   : kind == proto::STEP_REDUCE_SCATTER ? BoxingKind::kReduceScatter
                                                                        : BoxingKind::kAllToAll;
    return collectives_.TpCollectiveSeconds(stage, boxing_kind, role, group_bytes, unit.name,
                               absl::StrCat(tensor, " (planned ", BoxingKindName(boxing_kind), ")"));
  }

  absl::StatusOr<UnitCost> PriceUnit(const ProfileUnit& unit, const UnitActs& unit_acts, int64_t stage) {
    const double tp = static_cast<double>(layout_.tp());
    const double rows = RowFraction();
    auto seconds = [&](double flops, double tp_flops, double bytes, double tp_bytes) {
      return GemmSeconds(rates_, (flops - tp_flops + tp_flops / tp) * rows) +
             MemoryBoundSeconds(rates_, (bytes - tp_bytes + tp_bytes / tp) * rows);
    };
    double forward = seconds(unit.gemm_flops, unit.tp_gemm_flops, unit.memory_bytes, unit.tp_memory_bytes);
    double core = seconds(unit.attention_core_gemm_flops, unit.attention_core_gemm_flops,
                          unit.attention_core_memory_bytes, unit.attention_core_memory_bytes);
    // Backward at 2 x the forward written to bytes a step old: its kernels did not get
    // faster with recomputation, nor clearly the recomputed copies (traced, compute_cost.h).
    // With a GEMM shape model, each GEMM by its shape on this device instead: forward, and
    // backward its two input gradients' products (the memory-bound part still 2 x).
    double backward = 2 * forward;
    // The weights' gradients: as many FLOPs as the forward's GEMMs outside the attention
    // core (each weight's gradient is one product of its forward's shape).
    double weight_backward = seconds(unit.gemm_flops - unit.attention_core_gemm_flops,
                                     unit.tp_gemm_flops - unit.attention_core_gemm_flops, 0, 0);
    // Full recomputation's re-run GEMMs (a subset of the forward's) at the forward's
    // seconds per FLOP.
    double recompute_gemm_scale = 1;
    if (rates_.gemm_shape.measured()) {
      const ShapedGemms gemms = ShapedGemmSeconds(unit, rates_, tp, rows);
      const double flat_forward = seconds(unit.gemm_flops, unit.tp_gemm_flops, 0, 0);
      const double flat_core = seconds(unit.attention_core_gemm_flops, unit.attention_core_gemm_flops, 0, 0);
      if (flat_forward > 0) recompute_gemm_scale = gemms.forward / flat_forward;
      forward += gemms.forward - flat_forward;
      core += gemms.core_forward - flat_core;
      backward = 2 * (forward - gemms.forward) + gemms.backward;
      weight_backward = gemms.weight_backward;
    }
    UnitCost cost;
    double forward_tp = 0;
    double backward_tp = 0;
    if (profile_.tp_boxings_counted) {
      OF_RETURN_IF_ERROR(PlannedTpSeconds(unit, stage, &forward_tp, &backward_tp, &cost));
    }
    for (size_t i = 0; !profile_.tp_boxings_counted && i < unit.tp_forward_all_reduce_bytes.size(); ++i) {
      const std::string tensor = i < unit.tp_forward_all_reduce_tensors.size()
                                     ? absl::StrCat(unit.tp_forward_all_reduce_tensors[i], " (forward all-reduce)")
                                     : std::string("(forward all-reduce)");
      OF_ASSIGN_OR_RETURN(const double seconds,
                          collectives_.TpAllReduceSeconds(stage, unit.tp_forward_all_reduce_bytes[i] * rows,
                                                          unit.name, tensor));
      forward_tp += seconds;
    }
    for (size_t i = 0; !profile_.tp_boxings_counted && i < unit.tp_backward_all_reduce_bytes.size(); ++i) {
      const std::string tensor =
          i < unit.tp_backward_all_reduce_tensors.size()
              ? absl::StrCat(unit.tp_backward_all_reduce_tensors[i], " (backward all-reduce of its gradient)")
              : std::string("(backward all-reduce)");
      OF_ASSIGN_OR_RETURN(const double seconds,
                          collectives_.TpAllReduceSeconds(stage, unit.tp_backward_all_reduce_bytes[i] * rows,
                                                          unit.name, tensor));
      backward_tp += seconds;
    }
    double recomputed = 0;
    const bool in_block = unit.stageable && profile_.has_blocks;
    const UnitMemory memory =
        UnitMemoryOf(unit, memory_profile_.units[static_cast<size_t>(&unit - profile_.units.data())], memory_profile_,
                     layout_, in_block);
    cost.parameter_bytes = memory.parameter_bytes;
    cost.gradient_bytes = memory.gradient_bytes;
    cost.gathered_bytes = memory.gathered_bytes;
    cost.kept_bytes = memory.kept_bytes;
    cost.recomputed_bytes = memory.recomputed_bytes;
    const double forward_run = forward - CachedWriteGain(unit, rates_, layout_.recompute(), in_block, tp, rows);
    if (in_block && layout_.recompute() == proto::RECOMPUTE_SELECTIVE) {
      recomputed = core;
    } else if (in_block && layout_.recompute() == proto::RECOMPUTE_FULL) {
      // The ops the recompute pass re-runs when counted (act_count.h
      // CountFullRecomputation; the copies the plan runs as views are acts without work),
      // else the whole forward. (The whole forward priced the bench's gpt's full
      // recomputation 9-11% above its measured CPU time; on 2 emulated hosts, traced, its
      // copies ran 5.8 ms where the whole forward priced 9.4.)
      recomputed = profile_.full_recompute_counted
                       ? seconds(unit.full_recompute.gemm_flops, unit.full_recompute.tp_gemm_flops, 0, 0) *
                                 recompute_gemm_scale +
                             seconds(0, 0, unit.full_recompute.memory_bytes, unit.full_recompute.tp_memory_bytes)
                       : forward;
      backward_tp += forward_tp;  // the re-run forward all-reduces again
    }
    // The runtime's fixed cost per act (counted in the plan of the layout's family,
    // act_count.h, which recomputes nothing: full recomputation runs the unit's forward
    // acts again).
    double acts = static_cast<double>(unit_acts.per_micro_batch);
    if (recomputed > 0 && layout_.recompute() == proto::RECOMPUTE_FULL) {
      acts += static_cast<double>(profile_.full_recompute_counted ? unit.full_recompute_ops
                                                                   : static_cast<int64_t>(unit.op_names.size()));
    }
    const double act_seconds = profile_.acts_counted ? options_.act_seconds : 0;
    const double boxing_act_seconds =
        profile_.acts_counted ? options_.boxing_act_seconds.value_or(options_.act_seconds) : 0;
    // Priced per kind: the boxing acts (recomputation's re-run forward adds compute acts
    // only, its all-reduces' price is in backward_tp) and the rest.
    const double boxing_micro_batch = static_cast<double>(unit_acts.boxing_per_micro_batch);
    const double boxing_iteration = static_cast<double>(unit_acts.boxing_per_iteration);
    cost.iteration_act_seconds = act_seconds * (static_cast<double>(unit_acts.per_iteration) - boxing_iteration) +
                                 boxing_act_seconds * boxing_iteration;
    cost.micro_batch_acts = acts;
    cost.iteration_acts = static_cast<double>(unit_acts.per_iteration);
    cost.backward_seconds = backward + recomputed;
    cost.weight_backward_seconds = std::min(weight_backward, backward);
    const double overhead = act_seconds * (acts - boxing_micro_batch) + boxing_act_seconds * boxing_micro_batch;
    cost.compute_seconds = forward_run + cost.backward_seconds + overhead;
    cost.tp_seconds = forward_tp + backward_tp;
    cost.backward_tp_seconds = backward_tp;
    cost.parameter_tensors = unit.parameter_tensors;
    return cost;
  }

  // Optimizer state bytes per parameter copy on one device: ZeRO >= 1 shards it.
  double ShardedStateBytes(double parameter_bytes) const {
    return layout_.zero() >= 1 ? parameter_bytes / layout_.dp() : parameter_bytes;
  }

  // The gradient reduction of one iteration (proto OptimizerDef.zero_stage): an all-reduce
  // of the gradients (ZeRO 0 and 1) or their reduce-scatter (2, 3), in buckets of
  // bucket_mb. With --compression each reduction is priced as the boxing planner plans it
  // for the stage's variables (DataParallelCollective): compressed where the planner says
  // the codec pays. ZeRO 1 and 2's gathers of the updated shards follow the optimizer:
  // UpdatedShardGatherSeconds.
  absl::StatusOr<double> DataParallelSeconds(int64_t stage, const UnitCost& cost) {
    if (layout_.dp() == 1) return 0.0;
    const int64_t buckets = PricedGradientBucketsOf(cost.parameter_bytes, cost.parameter_tensors, options_.bucket_mb).count;
    const int64_t tensors = cost.parameter_tensors;
    const double bytes = cost.parameter_bytes;
    // ZeRO 0 and 1 all-reduce the gradients, 2 and 3 reduce-scatter them.
    const BoxingKind reduction = layout_.zero() <= 1 ? BoxingKind::kAllReduce : BoxingKind::kReduceScatter;
    const double dense = reduction == BoxingKind::kAllReduce
                             ? collectives_.AllReduceSeconds(stage, collectives_.DpAxis(), layout_.dp(), bytes, buckets)
                             : collectives_.HalfSeconds(stage, reduction, bytes, buckets);
    OF_ASSIGN_OR_RETURN(const double reduce,
                        collectives_.DataParallelCollective(stage, reduction, bytes, tensors, buckets, 1, dense));
    return reduce;
  }

  // ZeRO 1 and 2: the all-gathers of the updated parameter shards, one call per variable
  // (the compiler does not bucket them: docs/zero.md, "What is not done"), dense whatever
  // --compression says: the compiler never compresses them. Priced with the weight codec,
  // they came out 4 x too cheap over a slow link (traced on 2 x 1 with
  // --compression=auto: 64 dense gathers, 1.37 MiB a device, where int8 was priced).
  double UpdatedShardGatherSeconds(int64_t stage, const UnitCost& cost) const {
    if (layout_.dp() == 1 || layout_.zero() == 0 || layout_.zero() >= 3) return 0.0;
    return collectives_.HalfSeconds(stage, BoxingKind::kAllGather, cost.parameter_bytes, cost.parameter_tensors);
  }

  // ZeRO-3 gathers every parameter for forward and again for backward
  // (CompileOptions::zero3_regather, the default), or for forward only when the layout
  // keeps the gathered copies (zero3_kept), once per iteration: the gathered copies are
  // computed from variables only, so the runtime runs them per iteration and every
  // micro-batch reads them (docs/zero.md, "With micro-batches").
  absl::StatusOr<double> Zero3GatherSeconds(int64_t stage, const UnitCost& cost) {
    if (layout_.zero() < 3) return 0.0;
    const int64_t repeats = layout_.zero3_kept() ? 1 : 2;
    const int64_t calls = repeats * cost.parameter_tensors;
    const double dense = collectives_.HalfSeconds(stage, BoxingKind::kAllGather,
                                                  static_cast<double>(repeats) * cost.parameter_bytes, calls);
    return collectives_.DataParallelCollective(stage, BoxingKind::kAllGather, cost.parameter_bytes,
                                               cost.parameter_tensors, cost.parameter_tensors, repeats, dense);
  }

  const ModelProfile& profile_;
  const ModelProfile& memory_profile_;
  const PriceOptions& options_;
  const proto::AutoParallelLayout& layout_;
  ComputeRates rates_;
  StageCollectives collectives_;  // prices each collective; records the edges
};

// The profile whose tp probe has the layout's shape (its tp degree, its micro-batch).
const ModelProfile& ProfileOfLayout(const ModelProfile& profile, const proto::AutoParallelLayout& layout) {
  return ProfileForTp(profile, layout.tp(), std::max<int64_t>(1, layout.micro_batches()));
}

}  // namespace

absl::StatusOr<proto::AutoParallelPrediction> PriceLayout(const ModelProfile& profile, const PriceOptions& options,
                                                          const proto::AutoParallelLayout& layout) {
  return Pricer(ProfileOfLayout(profile, layout), MemoryProfileOf(profile, layout), options, layout, nullptr).Run();
}

absl::StatusOr<proto::AutoParallelPrediction> PriceLayout(const ModelProfile& profile, const PriceOptions& options,
                                                          const proto::AutoParallelLayout& layout,
                                                          EdgePriceCache* cache) {
  if (cache != nullptr && cache->options() != &options) {
    return absl::InternalError("PriceLayout: an EdgePriceCache made for other PriceOptions");
  }
  return Pricer(ProfileOfLayout(profile, layout), MemoryProfileOf(profile, layout), options, layout, cache).Run();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> ChooseStageBlocks(const ModelProfile& profile,
                                                                       const PriceOptions& options,
                                                                       const proto::AutoParallelLayout& layout,
                                                                       int64_t device_memory, EdgePriceCache* cache) {
  if (cache != nullptr && cache->options() != &options) {
    return absl::InternalError("ChooseStageBlocks: an EdgePriceCache made for other PriceOptions");
  }
  std::optional<std::vector<int64_t>> none;
  if (layout.pp() <= 1) return none;
  proto::AutoParallelLayout balanced = layout;
  balanced.clear_stage_blocks();
  OF_ASSIGN_OR_RETURN(const StageCutCosts costs,
                      Pricer(ProfileOfLayout(profile, layout), MemoryProfileOf(profile, layout), options, balanced, cache)
                          .SegmentCosts(static_cast<double>(device_memory)));
  std::optional<std::vector<int64_t>> counts = MinimizeSlowestStage(costs);
  if (counts.has_value() && *counts == BalancedStageBlocks(profile.stageable_units, layout.pp())) return none;
  return counts;
}

double StepSeconds(const proto::AutoParallelPrediction& prediction) {
  return prediction.compute_seconds() + prediction.exposed_communication_seconds() + prediction.bubble_seconds();
}

}  // namespace oneflow::auto_parallel
