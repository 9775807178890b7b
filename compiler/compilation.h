// The state the compiler's passes read and extend, from the user's Job to the Plan.
//
// Passes run in the order standard_pipeline.cc lists them (the one place that does);
// each declares the parts of this state it reads and writes (Reads()/Writes(),
// state_parts.h), and the pipeline runner (pass_pipeline.h) checks that dataflow.
#ifndef COMPILER_COMPILATION_H_
#define COMPILER_COMPILATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <memory>

#include "absl/container/flat_hash_map.h"
#include "compiler/boxing_cache.h"
#include "compiler/compile_options.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/ops/op_definition.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"
#include "sbp/boxing_plan.h"
#include "sbp/compression_policy.h"
#include "sbp/link_model.h"

namespace oneflow {

// One tensor of the logical graph.
struct LogicalTensor {
  enum class Kind { kInput, kVariable, kOpOutput };

  std::string name;
  Kind kind = Kind::kOpOutput;
  TensorType type;
  int64_t placement = 0;  // Index into LogicalGraph::placements.
  std::optional<NdSbp> hint;
  // The user's Tensor::WithCompression (TensorDef.compression), if any; kNone: dense.
  std::optional<CompressionKind> compression_hint;
  // True for a variable's gradient (a second name of Compilation::gradients).
  bool is_gradient = false;
  // For a gradient: the tensor index of its variable; -1 otherwise.
  int64_t gradient_of = -1;
  // A variable's Tensor::WithSparseRows (TensorDef.sparse_rows): the tensor index of the
  // ids listing the rows each device reads; -1 when dense.
  int64_t sparse_rows = -1;
  // Chosen by sbp_choice (variables and inputs: their hint, or B / S(0) defaults).
  NdSbp sbp;
  bool sbp_chosen = false;
  // Index of the producing op (kOpOutput), data source (kInput) or variable (kVariable).
  int64_t producer = -1;
  // The output argument of the producing op it is.
  int64_t producer_output = 0;
  // Ops reading it, in op order (an op reading it twice appears twice).
  std::vector<int64_t> consumers;
};

// One op of the logical graph.
struct LogicalOp {
  std::string name;
  std::string type;
  const OpDefinition* definition = nullptr;
  const proto::OpDef* def = nullptr;  // In Compilation::job.
  std::vector<int64_t> inputs;        // Tensor indices, in OpDefinition::inputs order.
  std::vector<int64_t> outputs;
  int64_t placement = 0;  // Index into LogicalGraph::placements.
  // Chosen by sbp_choice: one NdSbp per input and output.
  std::vector<NdSbp> input_sbps;
  std::vector<NdSbp> output_sbps;
  // Filled by boxing_insertion: the boxing each input reads through, or -1 when the
  // producer's layout already is what the op needs.
  std::vector<int64_t> input_boxings;
};

// The logical graph of Compilation::job, indexed for the passes.
struct LogicalGraph {
  // The distinct placements of the job, the default one first; tensors and ops refer
  // to them by index (a placement of 64 devices is too big to copy per tensor).
  std::vector<Placement> placements;
  std::vector<LogicalTensor> tensors;
  std::vector<LogicalOp> ops;  // Topologically ordered (the job's order).
  absl::flat_hash_map<std::string, int64_t> tensor_index;
  int64_t loss = -1;  // Tensor index of the loss, or -1.
  // What the SBP search did (compiler/passes/sbp_search_pass.h): the objective, the sum
  // of the ops' modelled boxing and kernel seconds, of the greedy choice and of the
  // searched one, and the ops whose signature changed. ran = false without
  // CompileOptions::search_sbp.
  struct SbpSearchRecord {
    bool ran = false;
    double greedy_seconds = 0;
    double searched_seconds = 0;
    int64_t moved_ops = 0;
    int64_t rounds = 0;
    // Blocks searched through another of their class (identical_blocks.h), and classes.
    int64_t composed_blocks = 0;
    int64_t block_classes = 0;
  } sbp_search;
};

// A row-sparse boxing (compiler/sparse_boxing.h): its one step (an all_gather S(0) -> B,
// reduce_scatter P -> S(0) or all_reduce P -> B) moves only the rows (dim-0 slices) that
// the ids of `rows_tensor` list on each device.
struct SparseBoxing {
  proto::Sparsity::Kind kind = proto::Sparsity::ROWS;
  int64_t rows_tensor = -1;
  // >= 0: each device reads the ids as op `rows_reader_op` read its input
  // `rows_reader_input` there (through that input's boxing, if any): the ids the op
  // that produced the sparse gradient used. -1: the ids tensor's own register.
  int64_t rows_reader_op = -1;
  int64_t rows_reader_input = -1;
  // Rows of the step's group slice, bytes per row, the most ids a device holds, and the
  // cost model's expectation under uniform ids (proto::Sparsity).
  int64_t rows = 0;
  int64_t row_bytes = 0;
  int64_t max_rows = 0;
  int64_t expected_rows = 0;
  int64_t expected_bytes_per_device = 0;
};

// A conversion on one edge, shared by every consumer needing the same layout.
struct Boxing {
  int64_t id = 0;
  int64_t tensor = 0;
  NdSbp dst_sbp;
  int64_t dst_placement = 0;
  BoxingPlan plan;
  // The first consumer that needs it: an op index, or -1 for the loss sink.
  int64_t first_consumer = -1;
  // What the tensor is for compression (the codecs its plan could use follow from it).
  TensorRole role = TensorRole::kNever;
  std::string reason;
  // Set when the boxing is row-sparse (compiler/sparse_boxing.h): its one step moves only
  // the rows in use.
  std::optional<SparseBoxing> sparse;
};

// Gradient reductions packed together (gradient_bucketing_pass.h): P -> B all_reduce
// steps of one communicator group, reduced by one collective per group out of one
// register that holds every member's bytes.
struct GradientBucket {
  int64_t id = 0;
  // (boxing id, step), in the order backward produces their inputs: the packing order.
  std::vector<std::pair<int64_t, int64_t>> members;
  int64_t placement = 0;  // Where the steps run (index into LogicalGraph::placements).
  int64_t hierarchy_axis = 0;
  // Lowering emits the bucket right after this op, the producer of its last member's
  // input (-1: before every op).
  int64_t after_op = -1;
  // The step of its members' boxings it runs (0: their first; 1: the step after a first
  // that ran in a bucket of level 0 or on its own, as on a 2-D group).
  int64_t level = 0;
  // Bytes of the bucket register on the device where it is largest (64-byte aligned
  // members, as actor_graph packs them), and of each member's largest slice.
  int64_t size_bytes = 0;
  std::vector<int64_t> member_bytes;
  // The collective of its members' steps: kAllReduce (the register reduced in place) or
  // kReduceScatter (ZeRO-2's P -> S: the register is one chunk per rank of the group,
  // rank-major, each chunk holding that rank's part of every member).
  BoxingKind kind = BoxingKind::kAllReduce;
  // kReduceScatter only: the bytes of one rank's chunk, and where member k's part lies in
  // every chunk (64-byte aligned, member_bytes[k] reserved: the largest part on any rank,
  // so that all ranks of all groups share one layout). size_bytes = group size * chunk.
  int64_t chunk_bytes = 0;
  std::vector<int64_t> part_offsets;
  // The limit its group was packed to (bucket_cap.h: --bucket_mb, or the link-rate cap
  // of a node-crossing group) and why.
  int64_t limit_bytes = 0;
  std::string limit_reason;
};

// A node of one device's program, in execution order.
struct PhysicalNode {
  enum class Kind { kDataSource, kVariable, kCompute, kBoxingStep, kSink, kBucket };
  Kind kind = Kind::kCompute;
  // kDataSource: data source index in the job; kVariable: tensor index; kCompute: op
  // index; kBoxingStep: boxing id; kSink: the loss tensor; kBucket: bucket id
  // (output_shapes: its members' slices, in member order).
  int64_t index = 0;
  int64_t step = 0;  // kBoxingStep: which step of the boxing.
  // Physical shapes of what it produces, in output order.
  std::vector<Shape> output_shapes;
};

// What the pipeline_schedule pass decided. Empty vectors without pipeline stages.
struct PipelineSchedulePlan {
  proto::PipelineSchedule schedule = proto::PIPELINE_SCHEDULE_1F1B;
  int64_t virtual_stages = 1;
  // Per device (Compilation::devices order): its pipeline stage, -1 for a device with no
  // forward op. Empty without stages.
  std::vector<int64_t> device_stage;
  // Per logical op: its act kind (forward, backward-input, backward-weight), or UNSET
  // for per-iteration ops. Empty unless the schedule splits backward (ZB-H1).
  std::vector<proto::PipelineAct> op_act;
};

struct DeviceProgram {
  DeviceId device;
  std::vector<PhysicalNode> nodes;
};

struct Compilation {
  proto::Job job;
  CompileOptions options;
  LinkModel links;
  // Every device of the cluster as one placement, and the job's default placement.
  Placement cluster_placement;
  Placement default_placement;

  LogicalGraph graph;
  // (variable tensor name, gradient tensor name) from autograd, in variable order.
  std::vector<std::pair<std::string, std::string>> gradients;
  // Created by sbp_choice once the placement table is final; reused by boxing_insertion.
  std::unique_ptr<BoxingCache> boxing_cache;
  std::vector<Boxing> boxings;
  // Filled by gradient_bucketing: the buckets, and for boxing b and step s the bucket
  // that runs it, or -1, or kAloneEarly (-2, a reduction alone in its bucket: it runs on
  // its own right after its input exists; gradient_bucketing_pass.h). Empty when buckets
  // are off: every step runs on its own.
  std::vector<GradientBucket> buckets;
  std::vector<std::vector<int64_t>> boxing_step_bucket;
  std::vector<DeviceProgram> devices;
  // Filled by actor_graph: for boxing b and step s, the (device index, actor index in
  // plan.devices(device).actors) of every actor running it.
  std::vector<std::vector<std::vector<std::pair<int32_t, int32_t>>>> boxing_step_actors;
  // Filled by pipeline_schedule: slots of each device's activation registers (in
  // `devices` order): CompileOptions::register_count, or with pipeline stages and
  // micro-batches the schedule's bound (S - s on stage s of S for 1F1B and ZB-H1).
  std::vector<int64_t> device_register_count;
  // Filled by pipeline_schedule (compiler/passes/pipeline_schedule_pass.h).
  PipelineSchedulePlan pipeline_schedule;
  // Filled by collective_ordering: for boxing b and step s, the id of its first
  // collective (one per communicator group, consecutive ids), or -1 for a local step.
  std::vector<std::vector<int64_t>> boxing_step_collective;
  // Filled by collective_ordering: the first collective of each bucket (one per group).
  std::vector<int64_t> bucket_collective;

  proto::Plan plan;
  // The plan checks (plan_verifier.h) that passed on `plan` as the running pass received
  // it: set by the pipeline's verification after the previous pass, none when that pass
  // was not verified. plan_emission re-runs only the others on the devices it leaves
  // unchanged.
  PlanChecks verified_plan_checks;
};

// The bucket running step `step` of boxing `boxing`, or a negative value when the step runs
// on its own (-1, or kAloneEarly: right after its input exists, gradient_bucketing_pass.h).
int64_t BucketOf(const Compilation& compilation, int64_t boxing, int64_t step);

// The op before which lowering emits each boxing (boxings are numbered in the order of
// their first consumers; a boxing is emitted just before the first op that needs it or a
// later one), ops.size() for those emitted after every op. Lowering and
// collective_ordering place buckets among boxings by it.
std::vector<int64_t> BoxingEmissionOps(const Compilation& compilation);

// True for the boxing kinds that move data between devices (a collective), false for
// local steps (slices, zero-filling, relabeling).
bool IsCollective(BoxingKind kind);

// For each op: whether the loss depends on it (forward). Every other op (gradients,
// accumulation, optimizer updates, and what passes add for backward: recompute copies,
// widened activations) is backward. All false when the graph has no loss.
std::vector<bool> ForwardOps(const LogicalGraph& graph);

// True when a tensor laid out as `a` and as `b` on a placement of `hierarchy` holds the
// same bytes on every device: the SBPs agree on every hierarchy axis of more than one
// device (on an axis of size 1, S, B and P all mean "the whole value").
bool SameLayout(const NdSbp& a, const NdSbp& b, const Shape& hierarchy);

// Re-indexes `compilation->graph` from `compilation->job` (after a pass changed the job):
// tensors with their types, kinds, producers, consumers, placements, compression hints
// and whether they are gradients (compilation->gradients). Placements: a tensor's hint,
// else (op outputs) the placement of the op's first input, else the default placement;
// an op runs on the placement of its outputs' hints if any, else of its first input.
// A compression hint on a tensor that is not f32 is INVALID_ARGUMENT naming the tensor,
// its dtype and what produces it:
//   compression hint int8 on tensor 'targets' (i32, produced by data source 'data'): only
//   floating tensors compress, and compressed boxing runs on f32; remove the hint
absl::Status IndexLogicalGraph(Compilation* compilation);

// What tensor `t` is for compression (sbp/compression_policy.h) on a boxing into an op,
// or into the loss sink when `into_loss_sink`: kNever for a non-f32 tensor, the loss,
// anything boxed into the loss sink and data-source inputs; kWeight for a variable;
// kGradient for a variable's gradient; kActivation otherwise.
TensorRole CompressionRole(const Compilation& compilation, int64_t t, bool into_loss_sink);

// The options a boxing of tensor `t` is planned with: BoxingOptionsFor of the compile
// options' policy, the tensor's role and its hint, and EncoderSettingsOf the compile options.
BoxingOptions BoxingOptionsOf(const Compilation& compilation, int64_t t, bool into_loss_sink);

// The state as text, for dumps after a pass and golden tests: the logical graph with
// SBPs, the boxings, and (once built) one summary line per device.
std::string CompilationToText(const Compilation& compilation);

}  // namespace oneflow

#endif  // COMPILER_COMPILATION_H_
