// Graph::FromJob: a graph rebuilt from the Job that Build() made, re-running inference.
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
    if (!def.sparse_rows().empty()) graph->mutable_tensor(tensor.id()).sparse_rows = def.sparse_rows();
    graph->mutable_tensor(tensor.id()).recompute = def.recompute();
    switch (def.compression()) {
      case proto::TensorDef::COMPRESSION_UNSET:
        break;
      case proto::TensorDef::COMPRESSION_NONE:
        tensor.WithCompression(Compression::kNone);
        break;
      case proto::TensorDef::COMPRESSION_FP8:
        tensor.WithCompression(Compression::kFp8);
        break;
      case proto::TensorDef::COMPRESSION_INT8:
        tensor.WithCompression(Compression::kInt8);
        break;
      case proto::TensorDef::COMPRESSION_INT4:
        tensor.WithCompression(Compression::kInt4);
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat("tensor '", def.name(), "' has compression hint ",
                                                       static_cast<int>(def.compression()),
                                                       ", which this build does not know; valid: none, fp8, int8, int4"));
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
    Initializer initializer = Initializer::Of(init.kind(), init.seed());
    if (init.kind() == proto::Initializer::NORMAL) {
      initializer.mean = init.mean();
      initializer.stddev = init.stddev();
    } else if (init.kind() == proto::Initializer::UNIFORM) {
      initializer.low = init.low();
      initializer.high = init.high();
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
    graph->set_op_scope(Graph::OpScope{op.block(), op.block_recompute(), op.attention_core()});
    std::vector<Tensor> outputs = graph->AddOp(op.type(), inputs, std::move(attrs), op.name(),
                                               graph->InternLocation(op.location()));
    graph->set_op_scope(Graph::OpScope{});
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
  graph->SetMicroBatches(job.micro_batches());
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

}  // namespace oneflow
