#include "oneflow_core/dsl/graph.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

bool Graph::NameTaken(const std::string& name) const {
  for (const TensorRecord& record : tensors_) {
    if (record.name == name) return true;
  }
  return false;
}

Tensor Graph::NewTensor(const std::string& name, TensorType type, SourceLocation location) {
  if (NameTaken(name)) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        "tensor name '", name, "' at ", location.ToString(), " is already used in graph '",
        name_, "'; names must be unique")));
    return Tensor();
  }
  tensors_.push_back(TensorRecord{name, std::move(type), std::nullopt, std::nullopt, location});
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
  const std::string op_name =
      name.empty() ? absl::StrCat(type, "_", ops_.size()) : name;
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
  if (loss_ >= 0) job.set_loss(tensors_[loss_].name);
  return job;
}

std::string Graph::ToText() const {
  std::string text;
  auto hints = [](const TensorRecord& record) {
    std::string out;
    if (record.placement) absl::StrAppend(&out, " placement=", record.placement->ToString());
    if (record.sbp_hint) absl::StrAppend(&out, " sbp=", record.sbp_hint->ToString());
    return out;
  };
  for (const InputRecord& input : inputs_) {
    const TensorRecord& record = tensors_[input.tensor];
    absl::StrAppend(&text, "%", record.name, " = input ", record.type.ToString(),
                    " source=", input.source, hints(record), "\n");
  }
  for (const VariableRecord& variable : variables_) {
    const TensorRecord& record = tensors_[variable.tensor];
    absl::StrAppend(&text, "%", record.name, " = variable ", record.type.ToString(), " init=",
                    proto::Initializer::Kind_Name(variable.initializer.kind),
                    " seed=", variable.initializer.seed, hints(record), "\n");
  }
  for (const OpRecord& op : ops_) {
    std::vector<std::string> args;
    for (const auto& [arg, id] : op.inputs) args.push_back(absl::StrCat(arg, "=%", tensors_[id].name));
    for (const auto& [key, value] : op.attrs) args.push_back(absl::StrCat(key, "=", AttrToString(value)));
    for (const auto& [arg, id] : op.outputs) {
      absl::StrAppend(&text, "%", tensors_[id].name, " = ", op.type, "(",
                      absl::StrJoin(args, ", "), ") ", tensors_[id].type.ToString(),
                      hints(tensors_[id]), "\n");
    }
  }
  if (loss_ >= 0) absl::StrAppend(&text, "loss %", tensors_[loss_].name, "\n");
  return text;
}

}  // namespace oneflow
