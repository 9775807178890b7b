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

}  // namespace

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

absl::StatusOr<std::unique_ptr<Graph>> Graph::FromJob(const proto::Job& job) {
  auto graph = std::make_unique<Graph>(job.name());
  absl::flat_hash_map<std::string, const proto::TensorDef*> defs;
  for (const proto::TensorDef& tensor : job.tensors()) defs[tensor.name()] = &tensor;
  auto def_of = [&](const std::string& name) -> absl::StatusOr<const proto::TensorDef*> {
    auto it = defs.find(name);
    if (it == defs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", job.name(), "' uses tensor '", name, "' that it does not define"));
    }
    return it->second;
  };
  // Hints and placements come back on every tensor the rebuilt graph creates.
  auto restore_hints = [&](Tensor tensor, const proto::TensorDef& def) -> absl::Status {
    if (!tensor.valid()) return graph->status();
    if (def.has_sbp_hint()) {
      OF_ASSIGN_OR_RETURN(NdSbp sbp, NdSbp::FromProto(def.sbp_hint()));
      tensor.WithSbp(sbp);
    }
    if (def.has_placement()) {
      OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(def.placement()));
      tensor.WithPlacement(placement);
    }
    return absl::OkStatus();
  };
  for (const proto::DataSourceDef& source : job.data_sources()) {
    DataSource data_source;
    data_source.def = source;
    data_source.def.clear_name();
    data_source.def.clear_outputs();
    graph->AddDataSource(source.name(), data_source);
    for (const std::string& output : source.outputs()) {
      OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, def_of(output));
      OF_ASSIGN_OR_RETURN(Shape shape, Shape::FromDims({def->shape().begin(), def->shape().end()}));
      OF_ASSIGN_OR_RETURN(DType dtype, FromProto(def->dtype()));
      Tensor input = graph->Input(output, shape, dtype, source.name(),
                                  graph->InternLocation(def->location()));
      OF_RETURN_IF_ERROR(restore_hints(input, *def));
    }
  }
  for (const proto::VariableDef& variable : job.variables()) {
    OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, def_of(variable.tensor()));
    OF_ASSIGN_OR_RETURN(Shape shape, Shape::FromDims({def->shape().begin(), def->shape().end()}));
    OF_ASSIGN_OR_RETURN(DType dtype, FromProto(def->dtype()));
    const proto::Initializer& init = variable.initializer();
    Initializer initializer{init.kind(), 0, 0, init.seed()};
    if (init.kind() == proto::Initializer::NORMAL) {
      initializer.a = init.mean();
      initializer.b = init.stddev();
    } else if (init.kind() == proto::Initializer::UNIFORM) {
      initializer.a = init.low();
      initializer.b = init.high();
    }
    Tensor tensor = graph->Variable(variable.tensor(), shape, initializer, dtype,
                                    variable.trainable(), graph->InternLocation(def->location()));
    OF_RETURN_IF_ERROR(restore_hints(tensor, *def));
  }
  for (const proto::OpDef& op : job.ops()) {
    OF_ASSIGN_OR_RETURN(const OpDefinition* definition, OpRegistry::Get().Find(op.type()));
    std::vector<Tensor> inputs;
    for (const std::string& arg : definition->inputs) {
      auto it = op.inputs().find(arg);
      if (it == op.inputs().end()) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "' (", op.type(),
                                                       ") has no input '", arg, "'"));
      }
      Tensor input = graph->FindTensor(it->second);
      if (!input.valid()) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "' reads tensor '",
                                                       it->second, "' before it is produced"));
      }
      inputs.push_back(input);
    }
    AttrMap attrs;
    for (const auto& [key, value] : op.attrs()) {
      OF_ASSIGN_OR_RETURN(attrs[key], AttrFromProto(value));
    }
    std::vector<Tensor> outputs = graph->AddOp(op.type(), inputs, std::move(attrs), op.name(),
                                               graph->InternLocation(op.location()));
    OF_RETURN_IF_ERROR(graph->status());
    for (size_t i = 0; i < outputs.size(); ++i) {
      auto it = op.outputs().find(definition->outputs[i]);
      if (it == op.outputs().end() || it->second != outputs[i].name()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", op.name(), "' output '", definition->outputs[i], "' must be tensor '",
            outputs[i].name(), "' (the DSL's naming)"));
      }
      OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, def_of(outputs[i].name()));
      OF_RETURN_IF_ERROR(restore_hints(outputs[i], *def));
    }
  }
  if (job.has_optimizer()) graph->SetOptimizer(Optimizer{job.optimizer()});
  if (job.has_default_placement()) {
    OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(job.default_placement()));
    graph->SetDefaultPlacement(placement);
  }
  graph->SetBatchSize(job.batch_size());
  if (!job.loss().empty()) {
    Tensor loss = graph->FindTensor(job.loss());
    if (!loss.valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", job.name(), "' names loss '", job.loss(), "' that it does not define"));
    }
    graph->SetLoss(loss);
  }
  OF_RETURN_IF_ERROR(graph->status());
  return graph;
}

Tensor Graph::NewTensor(const std::string& name, TensorType type, SourceLocation location) {
  if (NameTaken(name)) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        "tensor name '", name, "' at ", location.ToString(), " is already used in graph '",
        name_, "'; names must be unique")));
    return Tensor();
  }
  tensors_.push_back(TensorRecord{name, std::move(type), std::nullopt, std::nullopt, location});
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
  OpRecord record{op_name, type, {}, {}, std::move(attrs), location};
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

Tensor Graph::AddOp1(const std::string& type, const std::vector<Tensor>& inputs, AttrMap attrs,
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
  }
  for (const VariableRecord& record : variables_) {
    proto::VariableDef* variable = job.add_variables();
    variable->set_tensor(tensors_[record.tensor].name);
    variable->set_trainable(record.trainable);
    proto::Initializer* init = variable->mutable_initializer();
    init->set_kind(record.initializer.kind);
    init->set_seed(record.initializer.seed);
    if (record.initializer.kind == proto::Initializer::NORMAL) {
      init->set_mean(record.initializer.a);
      init->set_stddev(record.initializer.b);
    } else if (record.initializer.kind == proto::Initializer::UNIFORM) {
      init->set_low(record.initializer.a);
      init->set_high(record.initializer.b);
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
  return job;
}

namespace {

// The shortest decimal that reads back as exactly `value` (std::to_chars), with ".0"
// added when it would otherwise read as an integer: the text form tells an attribute's
// type by its spelling (2 is an int, 2.0 a float), and golden tests need exact values.
std::string FormatDouble(double value) {
  char buffer[64];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  // "inf" and "nan" contain an 'n'; exponent forms an 'e'.
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

std::string Quote(absl::string_view text) { return absl::StrCat("\"", absl::CEscape(text), "\""); }

std::string AttrText(const AttrValue& value) {
  if (const auto* f = std::get_if<double>(&value)) return FormatDouble(*f);
  if (const auto* s = std::get_if<std::string>(&value)) return Quote(*s);
  return AttrToString(value);
}

std::string InitializerText(const Initializer& init) {
  std::string text = absl::StrCat(
      "init=", absl::AsciiStrToLower(proto::Initializer::Kind_Name(init.kind)));
  if (init.kind == proto::Initializer::NORMAL) {
    absl::StrAppend(&text, " mean=", FormatDouble(init.a), " stddev=", FormatDouble(init.b));
  } else if (init.kind == proto::Initializer::UNIFORM) {
    absl::StrAppend(&text, " low=", FormatDouble(init.a), " high=", FormatDouble(init.b));
  }
  // Constant initializers ignore the seed; print it only if someone set one anyway.
  const bool constant =
      init.kind == proto::Initializer::ZEROS || init.kind == proto::Initializer::ONES;
  if (!constant || init.seed != 0) absl::StrAppend(&text, " seed=", init.seed);
  return text;
}

std::string DataSourceText(const proto::DataSourceDef& def) {
  if (def.has_synthetic()) {
    const proto::SyntheticSource& synthetic = def.synthetic();
    if (synthetic.kind() == proto::SyntheticSource::CLASSIFICATION) {
      return absl::StrCat("synthetic_classification seed=", synthetic.seed(),
                          " num_classes=", synthetic.num_classes());
    }
    return absl::StrCat("synthetic_tokens seed=", synthetic.seed(), " vocab=", synthetic.vocab());
  }
  if (def.has_file()) {
    return absl::StrCat(
        def.file().format() == proto::FileSource::TOKENS_I32 ? "token_file" : "record_file",
        " path=", Quote(def.file().path()));
  }
  // AddDataSource rejects empty sources, so this is unreachable through the DSL.
  return "<unset>";
}

std::string OptimizerText(const proto::OptimizerDef& def) {
  const proto::LearningRateSchedule& schedule = def.schedule();
  std::string text;
  if (def.has_sgd()) {
    text = absl::StrCat("optimizer sgd lr=", FormatDouble(schedule.base_lr()),
                        " momentum=", FormatDouble(def.sgd().momentum()));
  } else if (def.has_adamw()) {
    const proto::AdamWOptimizer& adamw = def.adamw();
    text = absl::StrCat("optimizer adamw lr=", FormatDouble(schedule.base_lr()),
                        " beta1=", FormatDouble(adamw.beta1()), " beta2=",
                        FormatDouble(adamw.beta2()), " epsilon=", FormatDouble(adamw.epsilon()),
                        " weight_decay=", FormatDouble(adamw.weight_decay()));
  } else {
    // No kind set: printed so that the text shows it and parsing it fails loudly.
    text = absl::StrCat("optimizer <unset> lr=", FormatDouble(schedule.base_lr()));
  }
  if (schedule.kind() == proto::LearningRateSchedule::WARMUP_COSINE) {
    absl::StrAppend(&text, " schedule=warmup_cosine warmup=", schedule.warmup_steps(),
                    " total=", schedule.total_steps(), " min_lr=", FormatDouble(schedule.min_lr()));
  }
  return text;
}

}  // namespace

std::string Graph::ToText() const {
  auto hints = [](const TensorRecord& record) {
    std::string out;
    if (record.placement) absl::StrAppend(&out, " placement=", Quote(record.placement->ToString()));
    if (record.sbp_hint) absl::StrAppend(&out, " sbp=", record.sbp_hint->ToString());
    return out;
  };
  // The line defining each tensor, by id: printing in creation order keeps the order of
  // Build()'s tensors, so parsing the text gives back the same Job.
  std::vector<std::string> lines(tensors_.size());
  for (const InputRecord& input : inputs_) {
    const TensorRecord& record = tensors_[input.tensor];
    lines[input.tensor] = absl::StrCat("%", record.name, " = input ", record.type.ToString(),
                                       " source=", input.source, hints(record));
  }
  for (const VariableRecord& variable : variables_) {
    const TensorRecord& record = tensors_[variable.tensor];
    lines[variable.tensor] =
        absl::StrCat("%", record.name, " = variable ", record.type.ToString(), " ",
                     InitializerText(variable.initializer),
                     variable.trainable ? "" : " trainable=false", hints(record));
  }
  // Ops without outputs (in-place optimizer updates) have no tensor to hang on: each
  // prints after the last tensor it could have seen (its inputs, earlier ops' outputs),
  // which keeps both the order of ops and that of tensors. lines_before[id] print just
  // before tensor id's line; lines_before[tensors_.size()] at the end.
  std::vector<std::vector<std::string>> lines_before(tensors_.size() + 1);
  int64_t last_output = -1;
  for (const OpRecord& op : ops_) {
    std::vector<std::string> args;
    int64_t last_input = -1;
    for (const auto& [arg, id] : op.inputs) {
      args.push_back(absl::StrCat(arg, "=%", tensors_[id].name));
      last_input = std::max(last_input, id);
    }
    for (const auto& [key, value] : op.attrs) {
      args.push_back(absl::StrCat(key, "=", AttrText(value)));
    }
    const std::string call = absl::StrCat(op.type, "(", absl::StrJoin(args, ", "), ")");
    if (op.outputs.empty()) {
      // "()" is the type of nothing, as XLA writes an empty tuple.
      lines_before[std::max(last_input, last_output) + 1].push_back(
          absl::StrCat("%", op.name, " = ", call, " ()"));
    }
    // A multi-output op repeats its call on the line of each output.
    for (const auto& [arg, id] : op.outputs) {
      lines[id] = absl::StrCat("%", tensors_[id].name, " = ", call, " ",
                               tensors_[id].type.ToString(), hints(tensors_[id]));
      last_output = std::max(last_output, id);
    }
  }

  std::string text = absl::StrCat("graph ", name_, "\n");
  if (batch_size_ != 0) absl::StrAppend(&text, "batch ", batch_size_, "\n");
  if (default_placement_) {
    absl::StrAppend(&text, "placement ", default_placement_->ToString(), "\n");
  }
  for (const auto& [name, source] : data_sources_) {
    absl::StrAppend(&text, "source ", name, " ", DataSourceText(source.def), "\n");
  }
  for (size_t id = 0; id <= tensors_.size(); ++id) {
    for (const std::string& line : lines_before[id]) absl::StrAppend(&text, line, "\n");
    // Empty: a tensor an op failed to finish after an error; there is nothing to print.
    if (id < tensors_.size() && !lines[id].empty()) absl::StrAppend(&text, lines[id], "\n");
  }
  if (optimizer_) absl::StrAppend(&text, OptimizerText(optimizer_->def), "\n");
  if (loss_ >= 0) absl::StrAppend(&text, "loss %", tensors_[loss_].name, "\n");
  return text;
}

}  // namespace oneflow
