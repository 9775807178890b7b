// What the graph compiler is asked to do besides the job: the cluster, register slots,
// compression, buckets, sparse boxing, dumps and verification (compiler.h compiles with
// them; every pass reads them from Compilation::options).
#ifndef COMPILER_COMPILE_OPTIONS_H_
#define COMPILER_COMPILE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/precision.h"
#include "proto/plan.pb.h"
#include "sbp/compression_policy.h"

namespace oneflow {

struct CompileOptions {
  proto::Cluster cluster;
  // Slots of every activation register: 2 lets consecutive iterations overlap, 1 is
  // lock-step. Variables and optimizer state always have one persistent slot.
  int64_t register_count = 2;
  // How boxings of floating tensors may compress (dense by default): off, auto (each
  // tensor's role picks its codecs, the cost model decides per step) or one forced
  // codec; per-tensor hints (TensorDef.compression) override all but off.
  CompressionPolicy compression;
  // Error feedback on every compressed reduction of a variable's gradient, and on the
  // all-gather that ends its chain (Compression.error_feedback; docs/sbp_and_boxing.md, "Error feedback"). Off by
  // default: measured on this repository's gpt (AdamW) it trains further from dense than
  // plain int4, and on the mlp (SGD momentum) it tracks dense closer early but not at the
  // end of 200 iterations (tests:error_feedback_test has the figures).
  bool error_feedback = false;
  // How the int4 and int8 encoders of compressed steps round (Compression.rounding;
  // docs/sbp_and_boxing.md, "Stochastic rounding"): to nearest even (the default), or
  // stochastically, on every compressed step whose codecs are all int4 / int8 (fp8 steps,
  // rotated or not, keep nearest). Each such step's random stream is keyed by
  // codec_rounding_seed, its logical tensor's name and its place in the boxing
  // (Compression.rounding_seed), then per act, encoding rank and element at run time.
  proto::Compression::Rounding codec_rounding = proto::Compression::NEAREST;
  uint64_t codec_rounding_seed = 0;
  // The int4 encoders of a variable's gradient's compressed steps (rounded to nearest)
  // choose each group's scale by the error it makes instead of max|x| / 7
  // (Compression.fitted_int4_scale; kernels/compression/int_quant.h, ChooseInt4Scale).
  // Off by default, because it is not better everywhere: on the gpt example's defaults
  // (AdamW lr 3e-4, 2 nodes x 2 devices, int4 on the cross-node gradient reductions, 200
  // iterations, seeds 1-8) the final-loss gap to dense falls from +0.80% to +0.47% at the
  // same wire bytes, but on the tiny gpt of error_feedback_bench (lr 1e-2, learnt to a loss
  // near 0.001) auto's int4 gradients after 50 dense iterations end +0.83% instead of
  // +0.01%, and forced int4 +2.9% instead of +2.2% (docs/sbp_and_boxing.md, "The int4 scale
  // chosen by error"). Activations keep max|x| / 7 either way (clipping their outliers made
  // forced int4 +9.2% instead of +5.5%).
  bool fit_int4_gradient_scale = false;
  // Iterations every compressed step runs dense before its codecs take over
  // (Compression.dense_warmup_iterations; docs/sbp_and_boxing.md, "int4 that trains like
  // dense"): under AdamW, int4 from the first iteration ends 1-2% above dense's final
  // loss on the gpt of bench/compression:error_feedback_bench, and a dense warm-up of
  // 50 of its 200 iterations brings it within 0.5% (sbp/codec_accuracy.cc has the rows).
  // The cost model prices the compressed steps as they run after the warm-up.
  int64_t compression_warmup_iterations = 0;
  // Gradient buckets (compiler/passes/gradient_bucketing_pass.h): the P -> B all-reduces
  // of gradients of one communicator group are packed into buckets of at most this many
  // MiB, in the order backward produces them, each reduced by one collective that runs
  // while backward computes the next (PyTorch DDP's bucket_cap_mb, same default). 0 turns
  // buckets off (one collective per gradient); negative is INVALID_ARGUMENT. The plan
  // records the limit in bytes (Plan.bucket_bytes_limit).
  double bucket_mb = 25;
  // Whether the user gave bucket_mb (--bucket_mb on the command line). false: a group
  // whose collective crosses nodes is capped further to what its link moves in about
  // kNodeCrossingBucketSeconds (compiler/passes/bucket_cap.h), so that its buckets start
  // early in backward on slow links; true: every group uses bucket_mb as given.
  bool bucket_mb_given = false;
  // Activation recomputation (compiler/passes/recompute_pass.h): none keeps every
  // activation from forward to backward; selective re-runs each block's attention core
  // in its backward, full every op of each block from its input. A block's own mode
  // (Graph::BlockScope) and per-tensor overrides (Tensor::WithRecompute) win.
  proto::RecomputeMode recompute = proto::RECOMPUTE_NONE;
  // Pipeline schedule (compiler/passes/pipeline_schedule_pass.h), used with pipeline
  // stages and micro-batches: 1F1B, interleaved 1F1B over `virtual_stages` chunks per
  // stage (the job's layout must put them there), zero-bubble ZB-H1, or AUTO (the
  // smallest modelled bubble whose estimated memory fits `device_memory` bytes per
  // device; 0: no limit).
  proto::PipelineSchedule pp_schedule = proto::PIPELINE_SCHEDULE_1F1B;
  int64_t virtual_stages = 1;
  int64_t device_memory = 0;
  // Compute precision (compiler/precision.h): with bf16 the precision pass marks every
  // matrix product to run on bf16 operands with fp32 accumulation; weights, optimizer
  // state and every other kernel stay fp32. The caller checks the CPU
  // (CheckPrecisionSupported); Compile does not probe it.
  Precision precision = Precision::kFp32;
  // Sparse boxing (compiler/sparse_boxing.h): where a boxing's tensor says which rows
  // each device uses (Tensor::WithSparseRows, or an op output such as embedding_grad's),
  // its gather or reduction moves only those rows, the runtime falling back to the dense
  // collective per call when that is cheaper. false: every boxing dense.
  bool sparse_boxing = true;
  // Epilogue fusion (compiler/passes/epilogue_fusion_pass.h): a matmul whose output only a
  // bias_add reads, and that bias_add's output only a relu, become one fused_matmul_bias
  // op where their SBPs already agree, so the GEMM adds the bias and applies the
  // activation on its output while it is in cache. false: every op runs as written.
  bool fuse_epilogues = true;
  // Communication streams (compiler/passes/collective_ordering_pass.h): false gives each
  // class of communicator groups (a hierarchy axis of a placement) its own stream, so a
  // device issues the collectives of different classes from different threads; true
  // puts every collective on stream 0, one thread per device in one total order (the
  // runtime before streams; for comparisons).
  bool one_communication_stream = false;
  // The node-crossing gradient reductions still queued when backward ends run in the
  // order the next forward reads their parameters (compiler/passes/
  // reduction_tail_order.h), so the next forward overlaps the link. false: every
  // reduction in the order backward produces it (the plans before; for comparisons).
  bool reorder_reduction_tail = true;
  // Every node of the cluster runs on one machine, whose cores give the devices this many
  // cores' worth of CPU time (the calibration's "machine" line, `oneflow calibrate
  // --nodes` on emulated hosts: its measured core_share, else its cores): the compiler's
  // timelines then stretch each device's acts by its share. 0: each device has a core of
  // its own (real hosts).
  double shared_machine_cores = 0;
  // ZeRO stage 3 (docs/zero.md): true gathers each sharded parameter twice, once for
  // forward and again for backward, one variable-reading backward op ahead of its first
  // backward reader, so the forward copies die with forward; false keeps the one copy
  // from the first forward reader to the last backward one (the plans before; for
  // comparisons).
  bool zero3_regather = true;
  // Searches each op's SBP signature beyond the greedy choice (compiler/passes/
  // sbp_search_pass.h): moves an op and its readers together where the modelled boxing
  // plus kernel seconds of the graph drop. False: the greedy choice as it is.
  bool search_sbp = false;
  // With search_sbp: the blocks that are copies of one another (identical_blocks.h) are
  // searched once, through one block of each class, and every move it takes is applied
  // to each copy. False: every op is searched on its own (for comparisons: the
  // objective it reaches and its time).
  bool search_identical_blocks_once = true;
  // With search_sbp: what one collective call costs on the host beyond its link model
  // (the calibration's host terms, compiler/auto_parallel/host_terms.h: devices taking
  // turns on fewer cores wait for descheduled peers), charged by the search per
  // collective of each boxing it prices, as many times as the boxing runs. 0: calls cost
  // their links' latency only. Without it the search took moves that save a fraction of
  // a millisecond of modelled bytes and kernels and add collectives per micro-batch: the
  // bench's gpt (4 blocks, hidden 256) at dp = 2 x pp = 4 with 8 micro-batches, 8 devices
  // in one process on 2 cores, had its embedding split by columns (an all-gather and two
  // all-to-alls per micro-batch) and the tied embedding's gradient moved out of its
  // bucket: 270.1 -> 269.9 ms modelled, 168 -> 200-215 ms measured (session 63).
  double collective_call_seconds = 0;
  // Pass names ("sbp_choice", ...) after which the compilation state is printed to
  // `dump` as text; "all" dumps after every pass.
  std::vector<std::string> dump_after;
  std::string* dump = nullptr;
  // Runs the verifier after every pass, not only after the last one.
  bool verify_each_pass = true;
  // Fingerprints, before and after each pass, the parts it declares only as read
  // (state_parts.h), and fails on a change. A compiler-bug detector that costs a few
  // percent of compile time on the largest plans: on in builds with assertions (every
  // test build), off in optimized ones.
#ifdef NDEBUG
  bool check_read_parts = false;
#else
  bool check_read_parts = true;
#endif
  // When set, receives (pass name, seconds) for every pass, verification included.
  std::vector<std::pair<std::string, double>>* pass_seconds = nullptr;
  // What compiling the plan again needs (Plan.recipe, examples/common/compile_recipe.h),
  // recorded in the plan before it is sealed; a caller that attaches it after the compile
  // instead must seal the plan again (one more walk over the whole plan).
  std::optional<proto::CompileRecipe> recipe;
  // When set, receives the sealed plan's bytes, exactly what WritePlanFile writes for the
  // returned plan: plan emission seals by serializing the plan once (SealAndSerializePlan
  // in plan/plan_checksum.h), so a caller that writes the plan does not serialize it again.
  std::string* sealed_plan = nullptr;
};

// The training `job` runs under `options`, which selects the measured rows `auto`'s accuracy
// bound reads (sbp/codec_accuracy.h): the optimizer's kind, error feedback, the dense
// warm-up. The compiler's boxings and the auto-parallel search's are decided with it.
inline TrainingSetup TrainingSetupOf(const proto::Job& job, const CompileOptions& options) {
  TrainingSetup setup;
  setup.optimizer = job.optimizer().has_sgd() ? OptimizerKind::kLinear : OptimizerKind::kAdaptive;
  setup.error_feedback = options.error_feedback;
  setup.dense_warmup_iterations = options.compression_warmup_iterations;
  return setup;
}

// What `options` make of compressed steps beyond their codecs (sbp/boxing_options.h): error
// feedback, stochastic rounding, the fitted int4 scale. The compiler's boxings and the
// auto-parallel search's are priced with it.
inline EncoderSettings EncoderSettingsOf(const CompileOptions& options) {
  EncoderSettings settings;
  settings.error_feedback = options.error_feedback;
  settings.stochastic_rounding = options.codec_rounding == proto::Compression::STOCHASTIC;
  settings.fit_int4_gradient_scale = options.fit_int4_gradient_scale;
  return settings;
}

}  // namespace oneflow

#endif  // COMPILER_COMPILE_OPTIONS_H_
