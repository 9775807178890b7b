// The layout flags every example shares: how many nodes and devices, and how they are
// split between pipeline stages (pp), data parallelism (dp), Megatron-style tensor
// parallelism (tp) and context parallelism (cp: the sequence split over devices,
// docs/context_parallelism.md), and how many micro-batches an iteration has.
//
// The devices, in cluster order, form pp stages of dp x tp x cp consecutive devices each;
// a stage's devices form the hierarchy [dp, tp, cp] (axes of size 1 are dropped, so pure
// data parallelism is the 1-D hierarchy [dp]). cp is innermost so that a tensor split by
// heads over tp and then over cp (Ulysses' attention core) keeps each tp device's heads. Models put consecutive blocks on consecutive
// stages (StagePlacement, StageOf). Models ask for SBP hints by role:
//   layout.Sbp(Sbp::Split(0), Sbp::Broadcast())   data: rows split over dp, whole over tp
//   layout.Sbp(Sbp::Broadcast(), Sbp::Split(1))   column-parallel weight
#ifndef EXAMPLES_COMMON_PARALLEL_LAYOUT_H_
#define EXAMPLES_COMMON_PARALLEL_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "proto/plan.pb.h"

namespace oneflow::examples {

struct ParallelFlags {
  int64_t nodes = 1;
  int64_t devices_per_node = 1;
  int64_t dp = 1;
  int64_t tp = 1;
  // Context-parallel degree: activations split by sequence position over cp devices
  // outside attention (with dp > 1: SequenceFirst, examples/common/context_parallel.h).
  int64_t cp = 1;
  // How attention runs under cp > 1: "ulysses", "ring" or "auto" (CpAttention).
  std::string cp_attention = "auto";
  // How ring attention splits the causal sequence over cp: "zigzag" (each device holds
  // chunk r and its mirror 2cp-1-r, equal causal work everywhere; Megatron's load
  // balancing) or "contiguous" (device r holds block r; the causal work grows with r).
  std::string cp_ring_split = "contiguous";
  // ZeRO stage 0..3 over the data-parallel axis (docs/zero.md); > 0 needs dp > 1.
  int64_t zero = 0;
  int64_t pp = 1;
  // Chunks of blocks per pipeline stage (interleaved 1F1B, --virtual_stages): the blocks
  // form pp x virtual_stages chunks, chunk c on stage c mod pp. 1: consecutive blocks.
  int64_t virtual_stages = 1;
  // Blocks per pipeline stage, first stage first (--stage_blocks=3,5): the pipeline's
  // cuts as the auto-parallel search chose them or the user gives them (Megatron's
  // first/last-stage layer counts, generalized). Empty: balanced (StageOf).
  std::vector<int64_t> stage_blocks;
  // Micro-batches per iteration (Job.micro_batches); the batch must divide by it.
  int64_t micro_batches = 1;
  // Link bandwidths of the cluster description, bytes per second.
  double intra_node_bandwidth = 100e9;
  double inter_node_bandwidth = 12.5e9;
};

// How an attention layer runs when the sequence is split over cp devices.
enum class CpAttention {
  // DeepSpeed Ulysses: an all-to-all turns the position split into a head split before
  // the attention core and back after it; needs the (kv) heads divisible by tp x cp.
  kUlysses,
  // Ring attention: K/V blocks travel around the cp ring (Megatron context parallelism).
  kRing,
  // The cost model's choice per model (ChooseCpAttention, examples/common/context_parallel.h).
  kAuto,
};
const char* CpAttentionName(CpAttention attention);

// --stage_blocks's text, "3,5" -> {3, 5}; "" and "auto" -> {} (balanced; for auto the
// examples' driver then chooses them, example_main.cc). Errors name the text and
// the form: "--stage_blocks=3,x: 'x' is not a block count; give comma-separated counts,
// one per --pp stage, e.g. --stage_blocks=3,5".
absl::StatusOr<std::vector<int64_t>> ParseStageBlocks(const std::string& text);

class ParallelLayout {
 public:
  // Errors name the flags: "--dp=2 x --tp=3 is 6 devices, but --nodes=1 x
  // --devices_per_node=4 is 4; they must match".
  static absl::StatusOr<ParallelLayout> Create(const ParallelFlags& flags);

  // Stage 0's placement: the whole model's without pipeline stages.
  const Placement& placement() const { return stages_[0]; }
  const Placement& StagePlacement(int64_t stage) const { return stages_[stage]; }
  int64_t pp() const { return static_cast<int64_t>(stages_.size()); }
  int64_t micro_batches() const { return micro_batches_; }
  // The stage of block `block` of `blocks`: with --stage_blocks, the stage whose count
  // reaches past it; else balanced: stage s holds blocks
  // [s * blocks / pp, (s + 1) * blocks / pp). With V virtual stages the blocks form
  // pp x V chunks the same way and chunk c goes to stage c mod pp (Megatron's interleaved
  // layout: stage 0 of 2 with V = 2 holds blocks 0 and 2 of 4).
  int64_t StageOf(int64_t block, int64_t blocks) const;
  int64_t virtual_stages() const { return virtual_stages_; }
  // --stage_blocks as given (empty: balanced).
  const std::vector<int64_t>& stage_blocks() const { return stage_blocks_; }
  // The rows of one micro-batch of a batch of `batch`. Errors name the flags: "--batch=8
  // is not divisible by --micro_batches=3".
  absl::StatusOr<int64_t> MicroBatchRows(int64_t batch) const;
  // Refuses a batch whose micro-batch rows do not split evenly over --dp, as Megatron and
  // PyTorch DDP do: the data-parallel devices would hold different row counts (8 over 3:
  // 3, 3, 2), and a model that reshapes its batch ([b, s, h] -> [b*s, h]) cannot keep such
  // a split through the reshape (an even split of b*s rows is not the reshaped uneven split
  // of b), so the compiler boxes activations S(0) -> P and back around every reshape: the
  // gpt at --batch=8 --dp=3 issued 89 collectives per step instead of 4. The error names
  // the batch, the dp degree (and micro-batches), the rows each device would get, and the
  // nearest valid batches; `escape_flag` is the flag that compiles the uneven split anyway.
  absl::Status CheckEvenDataParallelBatch(int64_t batch, const char* escape_flag) const;
  // Errors when the model has fewer blocks than stages, (with --virtual_stages > 1)
  // blocks not divisible by pp x virtual_stages, or --stage_blocks not summing to the
  // blocks, naming the flags.
  absl::Status CheckStages(int64_t blocks, const char* blocks_flag) const;
  const proto::Cluster& cluster() const { return cluster_; }
  int64_t dp() const { return dp_; }
  int64_t tp() const { return tp_; }
  int64_t cp() const { return cp_; }
  CpAttention cp_attention() const { return cp_attention_; }
  // --cp_ring_split=zigzag: ring attention's sequence in zig-zag blocks.
  bool cp_ring_zigzag() const { return cp_ring_zigzag_; }
  int64_t zero() const { return zero_; }
  // The hierarchy axis of dp (0: [dp] or [dp, tp]), for Optimizer::WithZero.
  int64_t dp_axis() const { return 0; }

  // One SBP per kept hierarchy axis: `data_axis` for dp, `model_axis` for tp.
  // With cp > 1 the cp axis is B (replicated over the context-parallel devices), as
  // weights and everything that is not split by position want.
  NdSbp Sbp(const oneflow::Sbp& data_axis, const oneflow::Sbp& model_axis) const;
  // One SBP per kept hierarchy axis, `context_axis` for cp: activations split by position
  // over cp give it S(position axis).
  NdSbp Sbp(const oneflow::Sbp& data_axis, const oneflow::Sbp& model_axis, const oneflow::Sbp& context_axis) const;

 private:
  std::vector<Placement> stages_;
  int64_t micro_batches_ = 1;
  int64_t virtual_stages_ = 1;
  std::vector<int64_t> stage_blocks_;
  proto::Cluster cluster_;
  int64_t dp_ = 1;
  int64_t tp_ = 1;
  int64_t cp_ = 1;
  CpAttention cp_attention_ = CpAttention::kAuto;
  bool cp_ring_zigzag_ = false;
  int64_t zero_ = 0;
};

}  // namespace oneflow::examples

#endif  // EXAMPLES_COMMON_PARALLEL_LAYOUT_H_
