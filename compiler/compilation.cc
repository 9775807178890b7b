#include "compiler/compilation.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "compiler/ring_shift.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

int64_t PlacementIndex(LogicalGraph* graph, const Placement& placement) {
  for (size_t i = 0; i < graph->placements.size(); ++i) {
    if (graph->placements[i] == placement) return static_cast<int64_t>(i);
  }
  graph->placements.push_back(placement);
  return static_cast<int64_t>(graph->placements.size()) - 1;
}

absl::StatusOr<int64_t> HintedPlacement(LogicalGraph* graph, const proto::TensorDef& def) {
  if (!def.has_placement()) return -1;
  absl::StatusOr<Placement> placement = Placement::FromProto(def.placement());
  if (!placement.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("placement hint of tensor '", def.name(),
                                                   "': ", placement.status().message()));
  }
  return PlacementIndex(graph, *placement);
}

absl::StatusOr<std::optional<CompressionKind>> CompressionHint(const proto::TensorDef& def) {
  switch (def.compression()) {
    case proto::TensorDef::COMPRESSION_UNSET:
      return std::optional<CompressionKind>();
    case proto::TensorDef::COMPRESSION_NONE:
      return CompressionKind::kNone;
    case proto::TensorDef::COMPRESSION_FP8:
      return CompressionKind::kFp8E4M3;
    case proto::TensorDef::COMPRESSION_INT8:
      return CompressionKind::kInt8;
    case proto::TensorDef::COMPRESSION_INT4:
      return CompressionKind::kInt4;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", def.name(), "' has compression hint ", static_cast<int>(def.compression()),
          ", which this build does not know; valid: none, fp8, int8, int4"));
  }
}

// "op 'argmax_0' (argmax)", "data source 'data'", "variable 'w'": what produces a tensor.
std::string ProducerText(const proto::Job& job, const LogicalGraph& graph, const LogicalTensor& tensor) {
  switch (tensor.kind) {
    case LogicalTensor::Kind::kInput:
      return absl::StrCat("data source '", job.data_sources(tensor.producer).name(), "'");
    case LogicalTensor::Kind::kVariable:
      return absl::StrCat("variable '", tensor.name, "'");
    case LogicalTensor::Kind::kOpOutput:
      return absl::StrCat("op '", graph.ops[tensor.producer].name, "' (", graph.ops[tensor.producer].type, ")");
  }
  return "";
}

// The DSL's spelling of a hint (Compression::kFp8 is FP8 E4M3).
absl::string_view HintName(CompressionKind kind) {
  switch (kind) {
    case CompressionKind::kNone:
      return "none";
    case CompressionKind::kFp8E4M3:
      return "fp8";
    default:
      return CompressionKindName(kind);
  }
}

// Compressed collectives quantize floats and decode into f32: an integer would not come
// back the same integer, and bf16/f16 have no compressed collective yet.
absl::Status CheckCompressionHints(const proto::Job& job, const LogicalGraph& graph) {
  for (const LogicalTensor& tensor : graph.tensors) {
    if (!tensor.compression_hint.has_value() || tensor.type.dtype == DType::kF32) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "compression hint ", HintName(*tensor.compression_hint), " on tensor '", tensor.name, "' (",
        DTypeName(tensor.type.dtype), ", produced by ", ProducerText(job, graph, tensor),
        "): only floating tensors compress, and compressed boxing runs on f32; remove the hint"));
  }
  return absl::OkStatus();
}

// Tensor::WithSparseRows: the ids tensor exists, is an integer tensor, and the hint is on
// a variable (whose gradient autograd makes) living on the same placement as the ids.
absl::Status IndexSparseRows(const proto::Job& job, LogicalGraph* graph) {
  for (int i = 0; i < job.tensors_size(); ++i) {
    const proto::TensorDef& def = job.tensors(i);
    if (def.sparse_rows().empty()) continue;
    LogicalTensor& tensor = graph->tensors[i];
    const std::string what = absl::StrCat("sparse rows hint on tensor '", def.name(), "' (", tensor.type.ToString(), ")");
    auto it = graph->tensor_index.find(def.sparse_rows());
    if (it == graph->tensor_index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names ids tensor '", def.sparse_rows(), "', which the job does not define"));
    }
    const LogicalTensor& ids = graph->tensors[it->second];
    if (tensor.kind != LogicalTensor::Kind::kVariable) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": only a variable takes the hint (its gather and its gradient's reduction become sparse)"));
    }
    if (ids.type.dtype != DType::kI32 && ids.type.dtype != DType::kI64) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ids tensor '", ids.name, "' is ", ids.type.ToString(),
                                                     "; the row ids must be i32 or i64"));
    }
    if (tensor.type.shape.rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": a scalar has no rows"));
    }
    tensor.sparse_rows = it->second;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<bool> ForwardOps(const LogicalGraph& graph) {
  std::vector<bool> forward(graph.ops.size(), false);
  std::vector<int64_t> stack;
  if (graph.loss >= 0 && graph.tensors[graph.loss].kind == LogicalTensor::Kind::kOpOutput) {
    stack.push_back(graph.tensors[graph.loss].producer);
  }
  while (!stack.empty()) {
    const int64_t op = stack.back();
    stack.pop_back();
    if (forward[op]) continue;
    forward[op] = true;
    for (int64_t t : graph.ops[op].inputs) {
      const LogicalTensor& tensor = graph.tensors[t];
      if (tensor.kind == LogicalTensor::Kind::kOpOutput && !forward[tensor.producer]) {
        stack.push_back(tensor.producer);
      }
    }
  }
  return forward;
}

bool SameLayout(const NdSbp& a, const NdSbp& b, const Shape& hierarchy) {
  if (a.size() != b.size() || a.size() != hierarchy.rank()) return false;
  for (int64_t axis = 0; axis < a.size(); ++axis) {
    if (hierarchy.dim(axis) > 1 && a.at(axis) != b.at(axis)) return false;
  }
  return true;
}

int64_t BucketOf(const Compilation& compilation, int64_t boxing, int64_t step) {
  if (boxing < 0 || boxing >= static_cast<int64_t>(compilation.boxing_step_bucket.size())) return -1;
  const std::vector<int64_t>& steps = compilation.boxing_step_bucket[boxing];
  return step >= 0 && step < static_cast<int64_t>(steps.size()) ? steps[step] : -1;
}

std::vector<int64_t> BoxingEmissionOps(const Compilation& compilation) {
  const LogicalGraph& graph = compilation.graph;
  std::vector<int64_t> emitted_before(compilation.boxings.size(), static_cast<int64_t>(graph.ops.size()));
  size_t next = 0;
  for (size_t o = 0; o < graph.ops.size(); ++o) {
    for (int64_t b : graph.ops[o].input_boxings) {
      while (b >= 0 && static_cast<int64_t>(next) <= b && next < emitted_before.size()) {
        emitted_before[next++] = static_cast<int64_t>(o);
      }
    }
  }
  return emitted_before;
}

bool IsCollective(BoxingKind kind) {
  switch (kind) {
    case BoxingKind::kAllReduce:
    case BoxingKind::kReduceScatter:
    case BoxingKind::kAllGather:
    case BoxingKind::kAllToAll:
    case BoxingKind::kSendRecv:
      return true;
    case BoxingKind::kIdentity:
    case BoxingKind::kLocalSlice:
    case BoxingKind::kLocalPartial:
    case BoxingKind::kSplitToPartial:
      return false;
  }
  return false;
}

absl::Status IndexLogicalGraph(Compilation* compilation) {
  const proto::Job& job = compilation->job;
  LogicalGraph graph;
  graph.placements.push_back(compilation->default_placement);
  std::vector<int64_t> hinted(job.tensors_size(), -1);
  for (int i = 0; i < job.tensors_size(); ++i) {
    const proto::TensorDef& def = job.tensors(i);
    LogicalTensor tensor;
    tensor.name = def.name();
    OF_ASSIGN_OR_RETURN(tensor.type.shape,
                        Shape::FromDims({def.shape().begin(), def.shape().end()}));
    OF_ASSIGN_OR_RETURN(tensor.type.dtype, FromProto(def.dtype()));
    if (def.has_sbp_hint()) {
      OF_ASSIGN_OR_RETURN(NdSbp hint, NdSbp::FromProto(def.sbp_hint()));
      tensor.hint = hint;
    }
    OF_ASSIGN_OR_RETURN(tensor.compression_hint, CompressionHint(def));
    OF_ASSIGN_OR_RETURN(hinted[i], HintedPlacement(&graph, def));
    if (!graph.tensor_index.emplace(def.name(), i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", job.name(), "' defines tensor '", def.name(), "' twice"));
    }
    graph.tensors.push_back(std::move(tensor));
  }
  auto find = [&](const std::string& name, absl::string_view what) -> absl::StatusOr<int64_t> {
    auto it = graph.tensor_index.find(name);
    if (it == graph.tensor_index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names tensor '", name, "', which the job does not define"));
    }
    return it->second;
  };
  // Inputs and variables live where their hint says, else on the default placement.
  auto place_leaf = [&](int64_t t) {
    graph.tensors[t].placement = hinted[t] >= 0 ? hinted[t] : 0;
  };
  for (int s = 0; s < job.data_sources_size(); ++s) {
    for (const std::string& output : job.data_sources(s).outputs()) {
      OF_ASSIGN_OR_RETURN(int64_t t, find(output, "data source '" + job.data_sources(s).name() + "'"));
      graph.tensors[t].kind = LogicalTensor::Kind::kInput;
      graph.tensors[t].producer = s;
      place_leaf(t);
    }
  }
  for (int v = 0; v < job.variables_size(); ++v) {
    OF_ASSIGN_OR_RETURN(int64_t t, find(job.variables(v).tensor(), "a variable"));
    graph.tensors[t].kind = LogicalTensor::Kind::kVariable;
    graph.tensors[t].producer = v;
    place_leaf(t);
  }
  for (int o = 0; o < job.ops_size(); ++o) {
    const proto::OpDef& def = job.ops(o);
    LogicalOp op;
    op.name = def.name();
    op.type = def.type();
    op.def = &def;
    OF_ASSIGN_OR_RETURN(op.definition, OpRegistry::Get().Find(def.type()));
    const std::string what = absl::StrCat("op '", def.name(), "' (", def.type(), ")");
    for (const std::string& arg : op.definition->inputs) {
      auto it = def.inputs().find(arg);
      if (it == def.inputs().end()) {
        return absl::InvalidArgumentError(absl::StrCat(what, " has no input '", arg, "'"));
      }
      OF_ASSIGN_OR_RETURN(int64_t t, find(it->second, what));
      op.inputs.push_back(t);
      graph.tensors[t].consumers.push_back(o);
    }
    // An op runs where its outputs are hinted to live, else where its first input is.
    int64_t placement = -1;
    for (size_t k = 0; k < op.definition->outputs.size(); ++k) {
      auto it = def.outputs().find(op.definition->outputs[k]);
      if (it == def.outputs().end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " has no output '", op.definition->outputs[k], "'"));
      }
      OF_ASSIGN_OR_RETURN(int64_t t, find(it->second, what));
      op.outputs.push_back(t);
      if (placement < 0) placement = hinted[t];
    }
    if (placement < 0) placement = op.inputs.empty() ? 0 : graph.tensors[op.inputs[0]].placement;
    op.placement = placement;
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      LogicalTensor& out = graph.tensors[op.outputs[k]];
      out.kind = LogicalTensor::Kind::kOpOutput;
      out.producer = o;
      out.producer_output = static_cast<int64_t>(k);
      out.placement = placement;
    }
    graph.ops.push_back(std::move(op));
  }
  if (!job.loss().empty()) {
    OF_ASSIGN_OR_RETURN(graph.loss, find(job.loss(), "the loss"));
  }
  for (const auto& [variable, gradient] : compilation->gradients) {
    auto it = graph.tensor_index.find(gradient);
    if (it == graph.tensor_index.end()) continue;
    graph.tensors[it->second].is_gradient = true;
    auto var = graph.tensor_index.find(variable);
    if (var != graph.tensor_index.end()) graph.tensors[it->second].gradient_of = var->second;
  }
  OF_RETURN_IF_ERROR(IndexSparseRows(job, &graph));
  OF_RETURN_IF_ERROR(CheckCompressionHints(job, graph));
  OF_RETURN_IF_ERROR(AddRingShiftPlacements(job, &graph));
  // A re-index after the SBP search (epilogue fusion, recomputation) keeps its record.
  graph.sbp_search = compilation->graph.sbp_search;
  compilation->graph = std::move(graph);
  return absl::OkStatus();
}

TensorRole CompressionRole(const Compilation& compilation, int64_t t, bool into_loss_sink) {
  const LogicalTensor& tensor = compilation.graph.tensors[t];
  if (tensor.type.dtype != DType::kF32 || into_loss_sink || t == compilation.graph.loss ||
      tensor.kind == LogicalTensor::Kind::kInput) {
    return TensorRole::kNever;
  }
  if (tensor.kind == LogicalTensor::Kind::kVariable) return TensorRole::kWeight;
  return tensor.is_gradient ? TensorRole::kGradient : TensorRole::kActivation;
}

BoxingOptions BoxingOptionsOf(const Compilation& compilation, int64_t t, bool into_loss_sink) {
  const TensorRole role = CompressionRole(compilation, t, into_loss_sink);
  // The measured rows auto's accuracy bound reads depend on the optimizer and on error
  // feedback (sbp/codec_accuracy.h).
  BoxingOptions options =
      BoxingOptionsFor(compilation.options.compression, role, compilation.graph.tensors[t].compression_hint,
                       TrainingSetupOf(compilation.job, compilation.options));
  // Dense, a gradient's all-reduce would ride in a bucket (gradient_bucketing_pass.h).
  options.dense_in_bucket = role == TensorRole::kGradient && compilation.options.bucket_mb > 0;
  options.bucket_bytes_limit = options.dense_in_bucket ? BucketBytesLimit(compilation.options.bucket_mb) : 0;
  // Plan emission marks the compressed reductions and all-gathers of a gradient with error
  // feedback (plan_emission_pass.cc EmitCompression), which makes the runtime decode what
  // it sends (a reduction) or encode plainly and read its own shard's decode (a gather).
  // Its encoders likewise (stochastic rounding, the fitted int4 scale: the extra work they do).
  ApplyEncoderSettings(EncoderSettingsOf(compilation.options), compilation.graph.tensors[t].is_gradient, &options);
  return options;
}

}  // namespace oneflow
