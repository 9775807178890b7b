#include "oneflow_core/dsl/graph.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/status.h"
#include "oneflow_core/ops/registry.h"

namespace oneflow {
namespace {

const std::string& InvalidName() {
  static const std::string* name = new std::string("<invalid>");
  return *name;
}

const TensorType& InvalidType() {
  static const TensorType* type = new TensorType();
  return *type;
}

proto::SourceLocation LocationProto(const SourceLocation& location) {
  proto::SourceLocation proto;
  proto.set_file(location.ToString().substr(0, location.ToString().rfind(':')));
  proto.set_line(location.line);
  return proto;
}

proto::TensorDef::Compression CompressionToProto(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return proto::TensorDef::COMPRESSION_NONE;
    case Compression::kFp8:
      return proto::TensorDef::COMPRESSION_FP8;
    case Compression::kInt8:
      return proto::TensorDef::COMPRESSION_INT8;
    case Compression::kInt4:
      return proto::TensorDef::COMPRESSION_INT4;
  }
  return proto::TensorDef::COMPRESSION_UNSET;
}

}  // namespace

absl::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kFp8:
      return "fp8";
    case Compression::kInt8:
      return "int8";
    case Compression::kInt4:
      return "int4";
  }
  return "?";
}

absl::StatusOr<Compression> ParseCompression(absl::string_view text) {
  for (Compression compression : {Compression::kNone, Compression::kFp8, Compression::kInt8, Compression::kInt4}) {
    if (CompressionName(compression) == text) return compression;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("compression '", text, "' is not one of: none, fp8, int8, int4"));
}

const std::string& Tensor::name() const {
  return valid() ? graph_->tensor(id_).name : InvalidName();
}

const TensorType& Tensor::type() const {
  return valid() ? graph_->tensor(id_).type : InvalidType();
}

Tensor& Tensor::WithSbp(const NdSbp& sbp) {
  if (valid()) graph_->mutable_tensor(id_).sbp_hint = sbp;
  return *this;
}

Tensor& Tensor::WithSbp(absl::string_view sbp, SourceLocation location) {
  if (!valid()) return *this;
  absl::StatusOr<NdSbp> parsed = NdSbp::Parse(sbp);
  if (!parsed.ok()) {
    graph_->RecordError(absl::Status(
        parsed.status().code(), absl::StrCat("sbp hint on tensor '", name(), "' at ",
                                             location.ToString(), ": ", parsed.status().message())));
    return *this;
  }
  return WithSbp(*parsed);
}

absl::string_view RecomputeModeName(proto::RecomputeMode mode) {
  switch (mode) {
    case proto::RECOMPUTE_NONE:
      return "none";
    case proto::RECOMPUTE_SELECTIVE:
      return "selective";
    case proto::RECOMPUTE_FULL:
      return "full";
    default:
      return "unset";
  }
}

absl::StatusOr<proto::RecomputeMode> ParseRecomputeMode(absl::string_view text) {
  for (proto::RecomputeMode mode : {proto::RECOMPUTE_NONE, proto::RECOMPUTE_SELECTIVE, proto::RECOMPUTE_FULL}) {
    if (RecomputeModeName(mode) == text) return mode;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("recompute mode '", text, "' is not one of: none, selective, full"));
}

Tensor& Tensor::WithRecompute(bool recompute) {
  if (valid()) {
    graph_->mutable_tensor(id_).recompute = recompute ? proto::RECOMPUTE_FULL : proto::RECOMPUTE_NONE;
  }
  return *this;
}

Tensor& Tensor::WithCompression(Compression compression) {
  if (valid()) graph_->mutable_tensor(id_).compression = compression;
  return *this;
}

Tensor& Tensor::WithSparseRows(const Tensor& ids) {
  if (valid() && ids.valid()) graph_->mutable_tensor(id_).sparse_rows = ids.name();
  return *this;
}

Tensor& Tensor::WithPlacement(const Placement& placement) {
  if (valid()) graph_->mutable_tensor(id_).placement = placement;
  return *this;
}

void Graph::RecordError(absl::Status error) {
  if (status_.ok()) status_ = std::move(error);
}

bool Graph::NameTaken(const std::string& name) const { return tensor_ids_.contains(name); }

Tensor Graph::FindTensor(const std::string& name) {
  auto it = tensor_ids_.find(name);
  return it == tensor_ids_.end() ? Tensor() : Tensor(this, it->second);
}

Graph::NameScope::NameScope(Graph& graph, const std::string& prefix)
    : graph_(graph), saved_(graph.name_scope_) {
  graph_.name_scope_ = saved_.empty() ? prefix : absl::StrCat(saved_, "/", prefix);
}

Graph::NameScope::~NameScope() { graph_.name_scope_ = saved_; }

Graph::BlockScope::BlockScope(Graph& graph, const std::string& block, proto::RecomputeMode mode)
    : graph_(graph), saved_(graph.op_scope_) {
  graph_.op_scope_ = OpScope{block, mode, false};
}

Graph::BlockScope::~BlockScope() { graph_.op_scope_ = saved_; }

Graph::AttentionCoreScope::AttentionCoreScope(Graph& graph)
    : graph_(graph), saved_(graph.op_scope_.attention_core) {
  graph_.op_scope_.attention_core = true;
}

Graph::AttentionCoreScope::~AttentionCoreScope() { graph_.op_scope_.attention_core = saved_; }

DataSource DataSource::SyntheticClassification(uint64_t seed, int64_t num_classes) {
  DataSource source;
  source.def.mutable_synthetic()->set_kind(proto::SyntheticSource::CLASSIFICATION);
  source.def.mutable_synthetic()->set_seed(seed);
  source.def.mutable_synthetic()->set_num_classes(num_classes);
  return source;
}

DataSource DataSource::SyntheticTokens(uint64_t seed, int64_t vocab) {
  DataSource source;
  source.def.mutable_synthetic()->set_kind(proto::SyntheticSource::TOKENS);
  source.def.mutable_synthetic()->set_seed(seed);
  source.def.mutable_synthetic()->set_vocab(vocab);
  return source;
}

DataSource DataSource::TokenFile(const std::string& path) {
  DataSource source;
  source.def.mutable_file()->set_path(path);
  source.def.mutable_file()->set_format(proto::FileSource::TOKENS_I32);
  return source;
}

DataSource DataSource::TextFile(const std::string& path) {
  DataSource source;
  source.def.mutable_file()->set_path(path);
  source.def.mutable_file()->set_format(proto::FileSource::TEXT_BYTES);
  return source;
}

DataSource DataSource::RecordFile(const std::string& path) {
  DataSource source;
  source.def.mutable_file()->set_path(path);
  source.def.mutable_file()->set_format(proto::FileSource::RECORDS_F32);
  return source;
}

Optimizer Optimizer::Sgd(double learning_rate, double momentum) {
  Optimizer optimizer;
  optimizer.def.mutable_sgd()->set_momentum(momentum);
  optimizer.def.mutable_schedule()->set_kind(proto::LearningRateSchedule::CONSTANT);
  optimizer.def.mutable_schedule()->set_base_lr(learning_rate);
  return optimizer;
}

Optimizer Optimizer::AdamW(double learning_rate, double beta1, double beta2, double epsilon,
                           double weight_decay) {
  Optimizer optimizer;
  proto::AdamWOptimizer* adamw = optimizer.def.mutable_adamw();
  adamw->set_beta1(beta1);
  adamw->set_beta2(beta2);
  adamw->set_epsilon(epsilon);
  adamw->set_weight_decay(weight_decay);
  optimizer.def.mutable_schedule()->set_kind(proto::LearningRateSchedule::CONSTANT);
  optimizer.def.mutable_schedule()->set_base_lr(learning_rate);
  return optimizer;
}

Optimizer& Optimizer::WithWarmupCosine(int64_t warmup_steps, int64_t total_steps,
                                       double min_lr) {
  proto::LearningRateSchedule* schedule = def.mutable_schedule();
  schedule->set_kind(proto::LearningRateSchedule::WARMUP_COSINE);
  schedule->set_warmup_steps(warmup_steps);
  schedule->set_total_steps(total_steps);
  schedule->set_min_lr(min_lr);
  return *this;
}

Optimizer& Optimizer::WithZero(int64_t stage, int64_t data_parallel_axis) {
  def.set_zero_stage(static_cast<int32_t>(stage));
  def.set_zero_axis(stage == 0 ? 0 : static_cast<int32_t>(data_parallel_axis));
  return *this;
}

Optimizer& Optimizer::WithFrozenVariance(int64_t from_step) {
  if (def.has_adamw()) def.mutable_adamw()->set_variance_frozen_from(from_step);
  return *this;
}

void Graph::AddDataSource(const std::string& name, const DataSource& source,
                          SourceLocation location) {
  if (!status_.ok()) return;
  for (const auto& [existing, unused] : data_sources_) {
    if (existing == name) {
      RecordError(absl::InvalidArgumentError(absl::StrCat(
          "data source '", name, "' at ", location.ToString(), " is already declared")));
      return;
    }
  }
  if (source.def.source_case() == proto::DataSourceDef::SOURCE_NOT_SET) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        "data source '", name, "' at ", location.ToString(),
        " is empty; use DataSource::SyntheticClassification, SyntheticTokens, TokenFile or "
        "RecordFile")));
    return;
  }
  data_sources_.push_back({name, source});
}

void Graph::SetOptimizer(const Optimizer& optimizer) { optimizer_ = optimizer; }

SourceLocation Graph::InternLocation(const proto::SourceLocation& location) {
  location_files_.push_back(location.file());
  return SourceLocation{location_files_.back().c_str(), static_cast<int>(location.line())};
}

Tensor Graph::NewTensor(const std::string& name, TensorType type, SourceLocation location) {
  if (NameTaken(name)) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        "tensor name '", name, "' at ", location.ToString(), " is already used in graph '",
        name_, "'; names must be unique")));
    return Tensor();
  }
  tensors_.push_back(TensorRecord{name, std::move(type), std::nullopt, std::nullopt, std::nullopt, "", location});
  tensor_ids_[name] = static_cast<int64_t>(tensors_.size()) - 1;
  return Tensor(this, static_cast<int64_t>(tensors_.size()) - 1);
}

Tensor Graph::Input(const std::string& name, const Shape& shape, DType dtype,
                    const std::string& source, SourceLocation location) {
  if (!status_.ok()) return Tensor();
  Tensor tensor = NewTensor(name, TensorType{shape, dtype}, location);
  if (tensor.valid()) inputs_.push_back(InputRecord{tensor.id(), source});
  return tensor;
}

Tensor Graph::Variable(const std::string& name, const Shape& shape, const Initializer& initializer,
                       DType dtype, bool trainable, SourceLocation location) {
  if (!status_.ok()) return Tensor();
  if (!IsFloating(dtype)) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' at ", location.ToString(), " has dtype ",
                     DTypeName(dtype), "; variables must be floating (f32, f16, bf16)")));
    return Tensor();
  }
  Tensor tensor = NewTensor(name, TensorType{shape, dtype}, location);
  if (tensor.valid()) variables_.push_back(VariableRecord{tensor.id(), initializer, trainable});
  return tensor;
}

std::vector<Tensor> Graph::AddOp(const std::string& type, const std::vector<Tensor>& inputs,
                                 AttrMap attrs, const std::string& name,
                                 SourceLocation location) {
  if (!status_.ok()) return {};
  std::string op_name = name;
  if (op_name.empty()) {
    op_name = name_scope_.empty() ? absl::StrCat(type, "_", ops_.size())
                                  : absl::StrCat(name_scope_, "/", type, "_", ops_.size());
  }
  const std::string where = absl::StrCat("op '", op_name, "' (", type, ") at ", location.ToString());
  absl::StatusOr<const OpDefinition*> definition = OpRegistry::Get().Find(type);
  if (!definition.ok()) {
    RecordError(absl::Status(definition.status().code(),
                             absl::StrCat(where, ": ", definition.status().message())));
    return {};
  }
  const OpDefinition& op = **definition;
  if (inputs.size() != op.inputs.size()) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        where, ": takes ", op.inputs.size(), " inputs (", absl::StrJoin(op.inputs, ", "),
        "), got ", inputs.size())));
    return {};
  }
  std::vector<TensorType> input_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid() || inputs[i].graph() != this) {
      RecordError(absl::InvalidArgumentError(absl::StrCat(
          where, ": input '", op.inputs[i], "' is not a tensor of graph '", name_, "'")));
      return {};
    }
    input_types.push_back(inputs[i].type());
  }
  absl::StatusOr<std::vector<TensorType>> output_types = op.infer(input_types, attrs);
  if (!output_types.ok()) {
    std::string inputs_text = absl::StrJoin(inputs, ", ", [&](std::string* out, const Tensor& t) {
      absl::StrAppend(out, t.name(), ": ", t.type().ToString());
    });
    RecordError(absl::Status(output_types.status().code(),
                             absl::StrCat(where, ": ", output_types.status().message(),
                                          " (inputs: ", inputs_text, ")")));
    return {};
  }
  OpRecord record{op_name, type, {}, {}, std::move(attrs), location, op_scope_};
  for (size_t i = 0; i < inputs.size(); ++i) record.inputs.push_back({op.inputs[i], inputs[i].id()});
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const std::string tensor_name =
        op.outputs.size() == 1 ? op_name : absl::StrCat(op_name, "/", op.outputs[i]);
    Tensor output = NewTensor(tensor_name, (*output_types)[i], location);
    if (!output.valid()) return {};
    record.outputs.push_back({op.outputs[i], output.id()});
    outputs.push_back(output);
  }
  ops_.push_back(std::move(record));
  return outputs;
}

Tensor Graph::AddSingleOutputOp(const std::string& type, const std::vector<Tensor>& inputs, AttrMap attrs,
                     SourceLocation location, const std::string& name) {
  std::vector<Tensor> outputs = AddOp(type, inputs, std::move(attrs), name, location);
  return outputs.empty() ? Tensor() : outputs[0];
}

void Graph::SetLoss(Tensor loss, SourceLocation location) {
  if (!status_.ok() || !loss.valid()) return;
  if (loss.shape().NumElements() != 1) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        "loss '", loss.name(), "' at ", location.ToString(), " has type ",
        loss.type().ToString(), "; the loss must be a scalar (reduce it, e.g. reduce_mean)")));
    return;
  }
  loss_ = loss.id();
}

absl::StatusOr<proto::Job> Graph::Build() const {
  if (!status_.ok()) return status_;
  proto::Job job;
  job.set_name(name_);
  for (const TensorRecord& record : tensors_) {
    proto::TensorDef* tensor = job.add_tensors();
    tensor->set_name(record.name);
    for (int64_t dim : record.type.shape.dims()) tensor->add_shape(dim);
    tensor->set_dtype(ToProto(record.type.dtype));
    if (record.placement) *tensor->mutable_placement() = record.placement->ToProto();
    if (record.sbp_hint) *tensor->mutable_sbp_hint() = record.sbp_hint->ToProto();
    if (record.compression) tensor->set_compression(CompressionToProto(*record.compression));
    if (!record.sparse_rows.empty()) tensor->set_sparse_rows(record.sparse_rows);
    if (record.recompute != proto::RECOMPUTE_UNSET) tensor->set_recompute(record.recompute);
    *tensor->mutable_location() = LocationProto(record.location);
  }
  for (const OpRecord& record : ops_) {
    proto::OpDef* op = job.add_ops();
    op->set_name(record.name);
    op->set_type(record.type);
    for (const auto& [arg, id] : record.inputs) (*op->mutable_inputs())[arg] = tensors_[id].name;
    for (const auto& [arg, id] : record.outputs) (*op->mutable_outputs())[arg] = tensors_[id].name;
    for (const auto& [key, value] : record.attrs) (*op->mutable_attrs())[key] = AttrToProto(value);
    *op->mutable_location() = LocationProto(record.location);
    if (!record.scope.block.empty()) op->set_block(record.scope.block);
    if (record.scope.block_recompute != proto::RECOMPUTE_UNSET) {
      op->set_block_recompute(record.scope.block_recompute);
    }
    if (record.scope.attention_core) op->set_attention_core(true);
  }
  for (const VariableRecord& record : variables_) {
    proto::VariableDef* variable = job.add_variables();
    variable->set_tensor(tensors_[record.tensor].name);
    variable->set_trainable(record.trainable);
    proto::Initializer* init = variable->mutable_initializer();
    init->set_kind(record.initializer.kind);
    init->set_seed(record.initializer.seed);
    if (record.initializer.kind == proto::Initializer::NORMAL) {
      init->set_mean(record.initializer.mean);
      init->set_stddev(record.initializer.stddev);
    } else if (record.initializer.kind == proto::Initializer::UNIFORM) {
      init->set_low(record.initializer.low);
      init->set_high(record.initializer.high);
    }
  }
  for (const auto& [name, source] : data_sources_) {
    proto::DataSourceDef* def = job.add_data_sources();
    *def = source.def;
    def->set_name(name);
    for (const InputRecord& input : inputs_) {
      if (input.source == name) def->add_outputs(tensors_[input.tensor].name);
    }
  }
  for (const InputRecord& input : inputs_) {
    bool declared = false;
    for (const auto& [name, unused] : data_sources_) declared |= name == input.source;
    if (!declared && !data_sources_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", tensors_[input.tensor].name, "' at ", tensors_[input.tensor].location.ToString(),
          " reads data source '", input.source, "', which is not declared; declared: ",
          absl::StrJoin(data_sources_, ", ",
                        [](std::string* out, const auto& entry) { out->append(entry.first); })));
    }
  }
  if (loss_ >= 0) job.set_loss(tensors_[loss_].name);
  if (optimizer_) *job.mutable_optimizer() = optimizer_->def;
  if (default_placement_) *job.mutable_default_placement() = default_placement_->ToProto();
  job.set_batch_size(batch_size_);
  if (micro_batches_ > 1) job.set_micro_batches(micro_batches_);
  return job;
}

}  // namespace oneflow
