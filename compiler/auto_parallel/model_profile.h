// What the auto-parallel search knows about a model: its logical job reduced to a list of
// units (a transformer block, a layer, the prologue before the first and the epilogue after
// the last), each with the forward work, parameters and activations the cost model prices,
// and the tensor-parallel all-reduces the model's own SBP hints imply (replaced by the
// boxings and the split work of the compiled tp probe plan when CountTpBoxings read it).
//
// The job is built by the model for a probe layout (one device, or tp devices of one
// node with dp = pp = 1, so its hints show which variables tensor parallelism shards).
// Shapes are logical, so every figure is for the whole batch; the search divides by the
// data-parallel degree and the micro-batches. Identical units (same ops, shapes and hints)
// share a signature: the search prices one and multiplies (a 48-block gpt has 3 distinct
// units).
#ifndef COMPILER_AUTO_PARALLEL_MODEL_PROFILE_H_
#define COMPILER_AUTO_PARALLEL_MODEL_PROFILE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"
#include "sbp/gemm_shape_model.h"

namespace oneflow::auto_parallel {

// One forward op's work for the whole batch, split as a unit's (ProfileUnit below).
struct OpWork {
  double gemm_flops = 0;
  double tp_gemm_flops = 0;
  double memory_bytes = 0;
  double tp_memory_bytes = 0;
  // Of a memory-bound op's bytes, its outputs' (what it writes; 0 for a GEMM and for a
  // view, whose output is its input's bytes: compiler/passes/view_kernel.h), and the part
  // tensor parallelism divides.
  double written_bytes = 0;
  double tp_written_bytes = 0;
  // In the attention core (OpDef.attention_core: selective recomputation re-makes its
  // outputs), and whether an op of a later unit reads one of its outputs (the unit's
  // output, which full recomputation keeps as the next unit's input).
  bool attention_core = false;
  bool output_leaves_unit = false;
  // A GEMM's logical shape (the whole batch: gemm_flops = gemm_shape.Flops()) and the
  // dimensions a layout divides on one device (GemmDim): the data's rows (data
  // parallelism and micro-batches) and tensor parallelism (kNone when it divides nothing).
  // The cost model prices it by its shape when the calibration has a GEMM shape model
  // (sbp/gemm_shape_model.h).
  enum class GemmDim { kNone, kBatch, kM, kN, kK };
  GemmShape gemm_shape;
  GemmDim gemm_rows_dim = GemmDim::kNone;
  GemmDim gemm_tp_dim = GemmDim::kNone;
};

// One tensor-parallel boxing of a unit as the compiler planned it in the tp probe plan
// (tp_boxings.h CountTpBoxings): the compiler's per-op SBP choice may gather weights and
// reduce-scatter activations instead of Megatron's all-reduces.
struct TpBoxing {
  std::string tensor;
  // The collective the plan runs (all-reduce, reduce-scatter, all-gather, all-to-all).
  proto::BoxingStepKind kind = proto::STEP_INVALID;
  // The tensor's logical bytes in the probe plan (the whole batch for an activation).
  int64_t bytes = 0;
  // An activation or its gradient: its bytes scale with the rows a device computes;
  // otherwise a variable (read per micro-batch) or a variable's gradient.
  bool scales_with_rows = false;
  // Run by backward (a "_grad/" op produced it).
  bool backward = false;
  // A variable's gradient to its update: once per iteration whatever the micro-batches.
  bool per_iteration = false;
};

// A trainable variable a unit reads that an earlier unit read first (and so owns: the
// variable lives with it). A tied embedding: the gpt's output projection in the epilogue
// multiplies by the prologue's token embedding. When a pipeline puts the two units on
// different stages, the plan sends the variable to the reader's stage once per iteration
// and the reader's gradient of it, accumulated over the micro-batches on the reader's
// stage, back once per iteration (compiler/passes/gradient_accumulation_pass.h; until
// session 45 every micro-batch, traced on 2 emulated hosts in
// docs/auto_parallel_measurements.md, "Pipelines across hosts, traced").
struct BorrowedVariable {
  std::string tensor;
  int64_t owner_unit = 0;  // index into ModelProfile::units
  int64_t bytes = 0;       // logical bytes
  bool tp_sharded = false;  // hinted S(k) over tp: a tp device holds bytes / tp of it
};

// A forward output a unit counts in its activations: the logical tensor, its bytes for the
// whole batch, whether tensor parallelism divides it and whether the attention core
// (selective recomputation) makes it.
struct UnitActivation {
  std::string tensor;
  int64_t bytes = 0;
  bool tp_split = false;
  bool attention_core = false;
};

struct ProfileUnit {
  // The block's name (OpDef.block), a layer's first op, "prologue" or "epilogue".
  std::string name;
  // True for units the pipeline may cut between (blocks, or layers of a model without
  // blocks); the prologue goes to the first stage and the epilogue to the last.
  bool stageable = false;
  // Forward work for the whole batch: GEMM FLOPs (2 m n k) and memory-bound bytes (every
  // other op's inputs and outputs), and the parts tensor parallelism divides (GEMMs with a
  // tp-sharded weight, the attention core).
  double gemm_flops = 0;
  double tp_gemm_flops = 0;
  double memory_bytes = 0;
  double tp_memory_bytes = 0;
  // The attention core's share (OpDef.attention_core): what selective recomputation re-runs.
  double attention_core_gemm_flops = 0;
  double attention_core_memory_bytes = 0;
  // Trainable parameter bytes, and those tp shards (a variable hinted S(k) over tp).
  int64_t parameter_bytes = 0;
  int64_t tp_parameter_bytes = 0;
  // Trainable variables: ZeRO's gathers and scatters run one collective per variable.
  int64_t parameter_tensors = 0;
  // Trainable variables of earlier units this unit reads too, in the order it reads them.
  std::vector<BorrowedVariable> borrowed_variables;
  // Forward outputs kept for backward without recomputation, the part tp divides, and the
  // attention core's outputs (selective recomputation drops them). A view's output (a
  // reshape, an identity) is its input's bytes and is not counted again (until session
  // 53 it was: the gpt's peak was predicted 1.3-1.8 x memory planning's).
  int64_t activation_bytes = 0;
  int64_t tp_activation_bytes = 0;
  int64_t attention_core_activation_bytes = 0;
  // Each tensor those three count: what CountKeptActivations (kept_activations.h) looks up
  // in a compiled plan.
  std::vector<UnitActivation> activations;
  // Of the activations, those a backward op reads, which memory planning keeps from the
  // forward to the backward (CountKeptActivations; until counted, every activation: the
  // bytes above): the peak's activations. The others die at their last forward reader
  // (a GEMM's output before its bias, a residual sum the next norm has read: on the
  // gpt about a third of the bytes).
  int64_t kept_activation_bytes = 0;
  int64_t kept_tp_activation_bytes = 0;
  int64_t kept_attention_core_activation_bytes = 0;
  // The bytes one device of the probe plan CountKeptActivations read keeps for them (one
  // micro-batch, 1 / ModelProfile::planned_kept_row_parts of the batch, on a device of
  // planned_kept_tp):
  // the tensor layout the compiler chose (a tp group that gathers its weights splits the
  // activations otherwise than the hints say).
  int64_t planned_kept_bytes = 0;
  int64_t planned_kept_attention_core_bytes = 0;
  // The unit's input: what full recomputation keeps and what a pipeline cut before this
  // unit sends between stages (the first input produced by an earlier unit).
  int64_t input_bytes = 0;
  // Megatron's f and g: tensor-parallel all-reduces of the whole batch, bytes each. A
  // GEMM with a row-parallel weight (S over the contracted dimension) all-reduces its
  // output in forward; one with a column-parallel weight all-reduces its input's gradient
  // in backward; another op reading a tp-sharded variable (a vocabulary-parallel
  // embedding) all-reduces its output in forward.
  std::vector<int64_t> tp_forward_all_reduce_bytes;
  std::vector<int64_t> tp_backward_all_reduce_bytes;
  // The tensors of those all-reduces, in the same order (for a backward one, the GEMM
  // input whose gradient is reduced): how the decision record names each priced edge.
  std::vector<std::string> tp_forward_all_reduce_tensors;
  std::vector<std::string> tp_backward_all_reduce_tensors;
  // The tp boxings the compiled probe plan runs for this unit (CountTpBoxings); when
  // ModelProfile::tp_boxings_counted, the cost model prices these instead of the
  // Megatron all-reduces above.
  std::vector<TpBoxing> tp_boxings;
  // Equal for units the search may price once.
  std::string signature;
  // The unit's forward ops, by name (CountActs maps a compiled plan's actors to units
  // through them).
  std::vector<std::string> op_names;
  // Each of those ops' work, in the same order.
  std::vector<OpWork> op_work;
  // What full recomputation re-runs in backward: the forward ops the recompute pass copies
  // (those whose outputs backward reads, and the producers of their inputs inside the
  // block), as CountFullRecomputation counted them in a plan compiled with
  // --recompute=full, and their summed work. Not the whole forward: an op whose output
  // only the next op's forward reads (a residual add, a bias) is not re-run, and a copy
  // the plan runs as a view (a reshape) is an act without work.
  OpWork full_recompute;
  int64_t full_recompute_ops = 0;
  // Acts one device of the unit's stage runs per micro-batch for it (forward, backward
  // and boxing actors of its ops), and per iteration (variables, optimizer updates), as
  // CountActs counted them in the probe plan; 0 until counted.
  int64_t acts_per_micro_batch = 0;
  int64_t acts_per_iteration = 0;
  // Of them, the boxing actors' (a collective or a transfer: tp's all-reduces, the
  // gradient sync, ZeRO's gathers, a pipeline's sends), priced apart
  // (PriceOptions::boxing_act_seconds).
  int64_t boxing_acts_per_micro_batch = 0;
  int64_t boxing_acts_per_iteration = 0;
};

// The acts one device runs for one unit in a plan (act_count.h); boxing_* of them the
// boxing actors'.
struct UnitActs {
  int64_t per_micro_batch = 0;
  int64_t per_iteration = 0;
  int64_t boxing_per_micro_batch = 0;
  int64_t boxing_per_iteration = 0;
};

// Every unit's acts in the plan of one family of layouts (act_count.h ActFamilyProbe):
// layouts whose plans differ from each other's in the actors each unit has. Tensor
// parallelism adds Megatron's boxings, data parallelism the gradient sync, each ZeRO stage
// its own collectives and copies, micro-batches the gradient accumulators.
struct LayoutActs {
  proto::AutoParallelLayout probe;  // the family's probe layout (ActFamilyProbe)
  std::vector<UnitActs> units;      // indexed like ModelProfile::units
};

struct ModelProfile {
  std::string job_name;
  std::vector<ProfileUnit> units;
  // Job.batch_size: the rows data parallelism and micro-batches divide.
  int64_t batch_rows = 0;
  // Units a pipeline may cut between (the examples' --layers of an mlp, blocks of a gpt).
  int64_t stageable_units = 0;
  // Whether the job has BlockScope blocks (recomputation works per block) and attention
  // cores (selective recomputation has something to re-run).
  bool has_blocks = false;
  bool has_attention_cores = false;
  // Whether the probe job carried tensor-parallel hints: without them tp stays 1.
  bool tp_hinted = false;
  // Optimizer state per parameter, in parameter copies (SGD momentum 1, AdamW 2).
  int64_t optimizer_state_copies = 0;
  // Distinct unit signatures (what the search prices).
  int64_t distinct_units = 0;
  // Whether CountActs filled the units' acts (the cost model prices acts only then).
  bool acts_counted = false;
  // Whether CountFullRecomputation filled the units' full_recompute (the cost model prices
  // full recomputation as the whole forward again otherwise).
  bool full_recompute_counted = false;
  // Whether CountKeptActivations filled the units' kept_* bytes from a compiled plan.
  bool kept_activations_counted = false;
  // The probe plan the units' planned_kept_bytes come from: its tp degree and the parts
  // of the batch a device computes per micro-batch (its micro-batches: no dp); 0: none.
  int64_t planned_kept_tp = 0;
  int64_t planned_kept_row_parts = 0;
  // Whether CountTpBoxings filled the units' tp_boxings from the tp probe plan.
  bool tp_boxings_counted = false;
  // This profile with the units' tp boxings and tp work counted from a probe plan of
  // another shape (CountTpBoxings), by (tp degree, micro-batches): the compiler's per-op
  // SBP choice depends on both, deciding on the logical micro-batch whatever dp splits it
  // into (the llama's hint-free text gathers its attention weights at tp = 2 and keeps them
  // split at tp = 4; the hint-free gpt at tp = 4 and 8 micro-batches gathers two weights for
  // backward over nodes of 1 Gbit/s, none within a node), so PriceLayout prices a layout
  // with the profile of its shape, or of the nearest probed one below it (ProfileForTp),
  // else with this one (tp = 2 on one node, the whole batch).
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const ModelProfile>> tp_probe_profiles;
  // The acts of the families CountLayoutActs counted; a layout of another family is
  // priced with the units' acts_per_micro_batch and acts_per_iteration.
  std::vector<LayoutActs> layout_acts;
};

// The profile of `job`, built for a probe layout of `probe_tp` tensor-parallel devices
// (1: no tp hints expected). INVALID_ARGUMENT naming the tensor when an op refers to a
// tensor the job does not define or the job has no batch size.
absl::StatusOr<ModelProfile> ProfileJob(const proto::Job& job, int64_t probe_tp);

// The profile to price a layout of `tp` tensor-parallel devices and `micro_batches` with:
// of profile.tp_probe_profiles, the one of the largest degree up to `tp` and, of that
// degree, the most micro-batches up to `micro_batches`; else `profile`.
const ModelProfile& ProfileForTp(const ModelProfile& profile, int64_t tp, int64_t micro_batches);

}  // namespace oneflow::auto_parallel

#endif  // COMPILER_AUTO_PARALLEL_MODEL_PROFILE_H_
