// The C++ DSL's graph builder: a model is written once, as a logical graph.
//
//   Graph graph("mlp");
//   Tensor x = graph.Input("x", Shape{64, 32}, DType::kF32, Synthetic(/*seed=*/1));
//   Tensor w = graph.Variable("w", Shape{32, 10}, Initializer::Xavier(/*seed=*/7));
//   Tensor logits = MatMul(x, w);
//   ...
//   absl::StatusOr<proto::Job> job = graph.Build();
//
// Building records the first error (as XLA's XlaBuilder does) instead of making every
// call return StatusOr: after an error, further calls return an invalid Tensor and do
// nothing, and Build() returns the error. Each error names the op, its type, the user's
// source line (captured by a defaulted SourceLocation argument), the input types, and
// what would be valid:
//   op 'matmul_0' (matmul) at mlp.cc:42: inner dimensions differ: a [64, 32] ... 
#ifndef ONEFLOW_CORE_DSL_GRAPH_H_
#define ONEFLOW_CORE_DSL_GRAPH_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/dsl/source_location.h"
#include "oneflow_core/ops/op_definition.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "proto/job.pb.h"

namespace oneflow {

class Graph;

// A per-tensor override of how the tensor's boxings travel (Tensor::WithCompression):
// it wins over the compiler's --compression=auto choice and over a forced codec, on
// every boxing of that tensor, whether or not the cost model says it pays; only
// --compression=off turns it off. Only f32 tensors compress: a hint on any other dtype
// is a compile error naming the tensor. docs/dsl.md, "Compression hints".
enum class Compression {
  kNone,  // always dense, even where auto would compress
  kFp8,   // FP8 E4M3, one f32 scale per group of 128 values
  kInt8,  // symmetric int8, groups of 128
  kInt4,  // symmetric int4 (+-7), groups of 128
};

// "none", "fp8", "int8", "int4".
absl::string_view CompressionName(Compression compression);
// Inverse of CompressionName; INVALID_ARGUMENT naming the text and the valid names.
absl::StatusOr<Compression> ParseCompression(absl::string_view text);

// Activation recomputation modes (proto::RecomputeMode; docs/memory_and_precision.md):
// "none", "selective", "full" (and "unset" for RECOMPUTE_UNSET).
absl::string_view RecomputeModeName(proto::RecomputeMode mode);
// Inverse of RecomputeModeName for none, selective and full; INVALID_ARGUMENT naming the
// text and the valid names otherwise.
absl::StatusOr<proto::RecomputeMode> ParseRecomputeMode(absl::string_view text);

// A handle to a tensor of a Graph. Cheap to copy; valid while its Graph lives.
class Tensor {
 public:
  Tensor() = default;

  bool valid() const { return graph_ != nullptr && id_ >= 0; }
  Graph* graph() const { return graph_; }
  int64_t id() const { return id_; }

  // Only meaningful when valid(); an invalid tensor reports f32[] and name "<invalid>".
  const std::string& name() const;
  const TensorType& type() const;
  const Shape& shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }

  // Hints the compiler must honor. Parse errors are recorded in the graph.
  Tensor& WithSbp(const NdSbp& sbp);
  Tensor& WithSbp(absl::string_view sbp, SourceLocation location = SourceLocation::Current());
  Tensor& WithPlacement(const Placement& placement);
  // See Compression above; the dtype is checked by the compiler, which knows the op.
  Tensor& WithCompression(Compression compression);
  // For a variable whose rows (dim-0 slices: embedding rows, the experts of an
  // [experts, ...] weight) each device reads only in part: `ids` (an i32/i64 tensor; each
  // device's slice of it) lists every row that device reads, negative ids none. Its
  // gradient is then nonzero only in those rows, and the compiler makes the variable's
  // gather (S(0) -> B) and its gradient's reduction (P -> S(0) or B) row-sparse: only
  // the rows in use travel (docs/sparse_boxing.md). A wrong list gives wrong results,
  // as a wrong SBP hint would; the compiler checks the dtype and placement.
  Tensor& WithSparseRows(const Tensor& ids);
  // Per-tensor override of activation recomputation, for an op output: false keeps it
  // from forward to backward whatever --recompute says; true re-runs its producer in
  // backward instead (the compiler does so where the producer's inputs are kept or are
  // re-run themselves). docs/memory_and_precision.md.
  Tensor& WithRecompute(bool recompute);

 private:
  friend class Graph;
  Tensor(Graph* graph, int64_t id) : graph_(graph), id_(id) {}

  Graph* graph_ = nullptr;
  int64_t id_ = -1;
};

// How a variable gets its initial values: a function of (seed, logical index).
struct Initializer {
  proto::Initializer::Kind kind = proto::Initializer::ZEROS;
  double mean = 0, stddev = 0;  // NORMAL
  double low = 0, high = 0;     // UNIFORM
  uint64_t seed = 0;

  static Initializer Zeros() { return Of(proto::Initializer::ZEROS, 0); }
  static Initializer Ones() { return Of(proto::Initializer::ONES, 0); }
  static Initializer Normal(double mean, double stddev, uint64_t seed) {
    Initializer initializer = Of(proto::Initializer::NORMAL, seed);
    initializer.mean = mean;
    initializer.stddev = stddev;
    return initializer;
  }
  static Initializer Uniform(double low, double high, uint64_t seed) {
    Initializer initializer = Of(proto::Initializer::UNIFORM, seed);
    initializer.low = low;
    initializer.high = high;
    return initializer;
  }
  static Initializer Xavier(uint64_t seed) { return Of(proto::Initializer::XAVIER_UNIFORM, seed); }
  static Initializer Of(proto::Initializer::Kind kind, uint64_t seed) {
    Initializer initializer;
    initializer.kind = kind;
    initializer.seed = seed;
    return initializer;
  }
};

// Where the tensors of Graph::Input come from each iteration. Synthetic data is a
// function of (seed, iteration, logical index), never of the device layout.
struct DataSource {
  proto::DataSourceDef def;  // Its name and outputs are filled in by the graph.

  // Features ~ N(0, 1); labels from a fixed random linear teacher.
  static DataSource SyntheticClassification(uint64_t seed, int64_t num_classes);
  // Windows of token ids (a uniform first id, then +1 each, mod vocab); targets are
  // the next token.
  static DataSource SyntheticTokens(uint64_t seed, int64_t vocab);
  // Little-endian int32 token ids, read as windows of seq + 1 tokens.
  static DataSource TokenFile(const std::string& path);
  // Any file's bytes as token ids in [0, 256) (vocabulary 256), windows of seq + 1 bytes.
  static DataSource TextFile(const std::string& path);
  // Fixed-size little-endian f32 records.
  static DataSource RecordFile(const std::string& path);
};

// What minimizes the loss. The compiler's optimizer pass turns it into update ops and
// optimizer-state variables.
struct Optimizer {
  proto::OptimizerDef def;

  static Optimizer Sgd(double learning_rate, double momentum = 0);
  static Optimizer AdamW(double learning_rate, double beta1 = 0.9, double beta2 = 0.999,
                         double epsilon = 1e-8, double weight_decay = 0.01);
  // Linear warmup over `warmup_steps`, then cosine decay to `min_lr` at `total_steps`.
  Optimizer& WithWarmupCosine(int64_t warmup_steps, int64_t total_steps, double min_lr);
  // ZeRO stage 0..3 over hierarchy axis `data_parallel_axis` of each variable's placement
  // (OptimizerDef.zero_stage, docs/zero.md): 1 shards the optimizer state over that axis,
  // 2 also reduce-scatters the gradients, 3 also shards the parameters. 0 leaves the job
  // as without the call. The compiler checks the values.
  Optimizer& WithZero(int64_t stage, int64_t data_parallel_axis);
  // AdamW only: the second moment frozen from step `from_step` on (1-bit Adam's
  // freeze_step; AdamWOptimizer.variance_frozen_from), which error feedback on compressed
  // gradients needs (docs/sbp_and_boxing.md, "Error feedback under a frozen variance").
  // 0: never frozen. The compiler refuses a negative step, and an Sgd optimizer records
  // nothing (it has no variance).
  Optimizer& WithFrozenVariance(int64_t from_step);
};

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Rebuilds the graph of a Job (as Build() made it), re-running every op's inference, so
  // compiler passes can extend a job with the DSL itself (autograd, optimizer).
  static absl::StatusOr<std::unique_ptr<Graph>> FromJob(const proto::Job& job);

  // Declares a data source that Input tensors name.
  void AddDataSource(const std::string& name, const DataSource& source,
                     SourceLocation location = SourceLocation::Current());
  void SetOptimizer(const Optimizer& optimizer);
  // Samples per iteration (the logical batch), for throughput figures.
  void SetBatchSize(int64_t batch_size) { batch_size_ = batch_size; }
  // Micro-batches per iteration (Job.micro_batches): the Input shapes are then those of
  // one micro-batch, batch_size / micro_batches rows.
  void SetMicroBatches(int64_t micro_batches) { micro_batches_ = micro_batches; }
  // Placement of tensors without a placement hint.
  void SetDefaultPlacement(const Placement& placement) { default_placement_ = placement; }
  const std::optional<Placement>& default_placement() const { return default_placement_; }

  // A tensor fed each iteration by data source `source` (see AddDataSource).
  Tensor Input(const std::string& name, const Shape& shape, DType dtype,
               const std::string& source, SourceLocation location = SourceLocation::Current());

  Tensor Variable(const std::string& name, const Shape& shape, const Initializer& initializer,
                  DType dtype = DType::kF32, bool trainable = true,
                  SourceLocation location = SourceLocation::Current());

  // Adds an op of a registered type; returns its outputs in declaration order.
  // `name` empty means "<type>_<n>". Single-output ops may use AddSingleOutputOp.
  std::vector<Tensor> AddOp(const std::string& type, const std::vector<Tensor>& inputs,
                            AttrMap attrs, const std::string& name,
                            SourceLocation location);
  Tensor AddSingleOutputOp(const std::string& type, const std::vector<Tensor>& inputs, AttrMap attrs,
                SourceLocation location, const std::string& name = "");

  // The scalar the optimizer minimizes.
  void SetLoss(Tensor loss, SourceLocation location = SourceLocation::Current());

  // Ops added while a NameScope lives get default names "<prefix>/<type>_<n>", so the
  // ops of one gradient read as a group ("matmul_0_grad/matmul_12").
  class NameScope {
   public:
    NameScope(Graph& graph, const std::string& prefix);
    ~NameScope();
    NameScope(const NameScope&) = delete;
    NameScope& operator=(const NameScope&) = delete;

   private:
    Graph& graph_;
    std::string saved_;
  };

  // What the compiler's recompute pass needs to know about the ops added while a scope
  // lives (OpDef.block, block_recompute, attention_core).
  struct OpScope {
    std::string block;
    proto::RecomputeMode block_recompute = proto::RECOMPUTE_UNSET;
    bool attention_core = false;
  };
  // Ops added while a BlockScope lives belong to block `block` (a transformer layer):
  // --recompute=full re-runs them in the block's backward from the block's input. `mode`
  // other than UNSET overrides --recompute for this block. Blocks do not nest.
  class BlockScope {
   public:
    BlockScope(Graph& graph, const std::string& block,
               proto::RecomputeMode mode = proto::RECOMPUTE_UNSET);
    ~BlockScope();
    BlockScope(const BlockScope&) = delete;
    BlockScope& operator=(const BlockScope&) = delete;

   private:
    Graph& graph_;
    OpScope saved_;
  };
  // Ops added while an AttentionCoreScope lives form their block's attention core
  // (scores, mask, softmax, dropout): what --recompute=selective re-runs.
  class AttentionCoreScope {
   public:
    explicit AttentionCoreScope(Graph& graph);
    ~AttentionCoreScope();
    AttentionCoreScope(const AttentionCoreScope&) = delete;
    AttentionCoreScope& operator=(const AttentionCoreScope&) = delete;

   private:
    Graph& graph_;
    bool saved_;
  };
  // The scope the next AddOp records; readers of jobs and text set it per op.
  const OpScope& op_scope() const { return op_scope_; }
  void set_op_scope(OpScope scope) { op_scope_ = std::move(scope); }

  // The first error recorded, or OK.
  const absl::Status& status() const { return status_; }
  // Records `error` if no earlier error was recorded.
  void RecordError(absl::Status error);

  // The logical graph as a Job proto, or the first recorded error.
  absl::StatusOr<proto::Job> Build() const;

  // The whole graph as text, one line per construct, which ParseGraphText
  // (oneflow_core/dsl/text/graph_text.h) reads back into an equal graph; the grammar is
  // in docs/graph_text.md. Tensors print in creation order, floats exactly:
  //   graph mlp
  //   source data synthetic_classification seed=1 num_classes=10
  //   %x = input f32[64, 32] source=data sbp=S(0)
  //   %w = variable f32[32, 10] init=xavier_uniform seed=7
  //   %matmul_0 = matmul(a=%x, b=%w) f32[64, 10]
  //   ...
  //   optimizer sgd lr=0.1 momentum=0.0
  //   loss %reduce_mean_3
  // With Locations::kPrint every tensor and op line ends with loc="FILE:LINE", the source
  // location Build() records, which ParseGraphText keeps: the parsed graph then builds
  // the same Job, locations included (`--print_graph`, docs/graph_text.md).
  enum class Locations { kOmit, kPrint };
  std::string ToText(Locations locations = Locations::kOmit) const;

  // A SourceLocation whose file name the graph keeps alive (SourceLocation holds a
  // const char*), for locations read back from a Job or a graph text.
  SourceLocation InternLocation(const proto::SourceLocation& location);

  // Tensor data, for Tensor's accessors.
  struct TensorRecord {
    std::string name;
    TensorType type;
    std::optional<NdSbp> sbp_hint;
    std::optional<Placement> placement;
    std::optional<Compression> compression;
    std::string sparse_rows;  // WithSparseRows: the ids tensor's name; empty: dense.
    SourceLocation location;
    // WithRecompute: RECOMPUTE_NONE (keep), RECOMPUTE_FULL (re-run), or UNSET.
    proto::RecomputeMode recompute = proto::RECOMPUTE_UNSET;
  };
  const TensorRecord& tensor(int64_t id) const { return tensors_[id]; }
  int64_t num_tensors() const { return static_cast<int64_t>(tensors_.size()); }
  TensorRecord& mutable_tensor(int64_t id) { return tensors_[id]; }

  // Read access for compiler passes that extend a graph.
  struct OpRecord {
    std::string name;
    std::string type;
    std::vector<std::pair<std::string, int64_t>> inputs;   // Argument -> tensor id.
    std::vector<std::pair<std::string, int64_t>> outputs;
    AttrMap attrs;
    SourceLocation location;
    OpScope scope;
  };
  struct VariableRecord {
    int64_t tensor;
    Initializer initializer;
    bool trainable;
  };
  struct InputRecord {
    int64_t tensor;
    std::string source;
  };
  const std::vector<OpRecord>& ops() const { return ops_; }
  const std::vector<VariableRecord>& variables() const { return variables_; }
  // The tensor named `name`, or an invalid Tensor.
  Tensor FindTensor(const std::string& name);
  Tensor TensorById(int64_t id) { return Tensor(this, id); }
  // The loss tensor, or an invalid Tensor before SetLoss.
  Tensor loss() { return loss_ >= 0 ? Tensor(this, loss_) : Tensor(); }
  const std::string& name() const { return name_; }

 private:

  Tensor NewTensor(const std::string& name, TensorType type, SourceLocation location);
  bool NameTaken(const std::string& name) const;

  std::string name_;
  std::vector<TensorRecord> tensors_;
  absl::flat_hash_map<std::string, int64_t> tensor_ids_;
  std::vector<std::pair<std::string, DataSource>> data_sources_;
  std::optional<Optimizer> optimizer_;
  std::optional<Placement> default_placement_;
  int64_t batch_size_ = 0;
  int64_t micro_batches_ = 0;
  std::string name_scope_;
  OpScope op_scope_;
  std::deque<std::string> location_files_;
  std::vector<OpRecord> ops_;
  std::vector<VariableRecord> variables_;
  std::vector<InputRecord> inputs_;
  int64_t loss_ = -1;
  absl::Status status_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_GRAPH_H_
