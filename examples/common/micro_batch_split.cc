#include "examples/common/micro_batch_split.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {
namespace {

// What a tensor holds of the batch: its rows on axis 0 (split by S(0) into micro-batches),
// or a mean over them (micro-batches' means averaged by Job.micro_batches). Tensors absent
// from the map hold nothing of it (variables, constants of the graph).
enum class BatchPart { kRows, kMean };

// Ops that keep a mean of means the mean of the whole: linear in a mean input.
const std::set<std::string>& MeanKeepingOps() {
  static const auto* ops = new std::set<std::string>{"add", "sub", "scalar_mul", "scalar_add", "identity", "reshape"};
  return *ops;
}

std::string OpText(const proto::OpDef& op) {
  std::string text = absl::StrCat("op '", op.name(), "' (", op.type());
  if (!op.location().file().empty()) absl::StrAppend(&text, ", ", op.location().file(), ":", op.location().line());
  return text + ")";
}

absl::StatusOr<TensorType> TypeOf(const proto::TensorDef& tensor) {
  OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(tensor.dtype()));
  return TensorType{Shape(std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())), dtype};
}

// An op with its definition, present inputs (in definition order), outputs and attributes.
struct OpView {
  const OpDefinition* definition = nullptr;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  AttrMap attrs;
};

absl::StatusOr<OpView> ViewOf(const proto::OpDef& op) {
  OpView view;
  OF_ASSIGN_OR_RETURN(view.definition, OpRegistry::Get().Find(op.type()));
  for (const std::string& argument : view.definition->inputs) {
    const auto named = op.inputs().find(argument);
    if (named != op.inputs().end() && !named->second.empty()) view.inputs.push_back(named->second);
  }
  for (const std::string& argument : view.definition->outputs) {
    const auto named = op.outputs().find(argument);
    view.outputs.push_back(named == op.outputs().end() ? "" : named->second);
  }
  for (const auto& [name, value] : op.attrs()) {
    OF_ASSIGN_OR_RETURN(view.attrs[name], AttrFromProto(value));
  }
  return view;
}

// Whether a reduction with these attributes averages over axis 0 of a tensor of `rank`.
bool ReducesAxisZero(const AttrMap& attrs, int64_t rank) {
  const std::vector<int64_t> axes = GetIntsAttr(attrs, "axes");
  if (axes.empty()) return true;  // every axis
  return std::any_of(axes.begin(), axes.end(), [rank](int64_t axis) { return axis == 0 || axis == -rank; });
}

}  // namespace

int64_t BatchRows(const proto::Job& job) {
  if (job.batch_size() > 0) return job.batch_size();
  std::set<std::string> data;
  for (const proto::DataSourceDef& source : job.data_sources()) data.insert(source.outputs().begin(), source.outputs().end());
  for (const proto::TensorDef& tensor : job.tensors()) {
    if (data.count(tensor.name()) > 0 && tensor.shape_size() > 0) return tensor.shape(0);
  }
  return 0;
}

bool HoldsWholeBatch(const proto::Job& job) {
  if (job.batch_size() <= 0) return false;
  std::set<std::string> data;
  for (const proto::DataSourceDef& source : job.data_sources()) data.insert(source.outputs().begin(), source.outputs().end());
  bool any = false;
  for (const proto::TensorDef& tensor : job.tensors()) {
    if (data.count(tensor.name()) == 0) continue;
    if (tensor.shape_size() == 0 || tensor.shape(0) != job.batch_size()) return false;
    any = true;
  }
  return any;
}

int64_t MicroBatchesOfInputs(const proto::Job& job) {
  if (job.batch_size() <= 0) return 0;
  std::set<std::string> data;
  for (const proto::DataSourceDef& source : job.data_sources()) data.insert(source.outputs().begin(), source.outputs().end());
  int64_t rows = 0;
  for (const proto::TensorDef& tensor : job.tensors()) {
    if (data.count(tensor.name()) == 0) continue;
    if (tensor.shape_size() == 0 || tensor.shape(0) <= 0 || (rows > 0 && tensor.shape(0) != rows)) return 0;
    rows = tensor.shape(0);
  }
  if (rows == 0 || job.batch_size() % rows != 0) return 0;
  return job.batch_size() / rows;
}

namespace {

// `job` (data-source tensors of `rows_from` rows) with every tensor that carries the rows
// scaled to `rows_to` per `rows_from` on axis 0, each op's shape attributes and inference
// following; the ops that read rows must keep them split over `parts` (S(0) signatures
// valid on that many devices). Job.micro_batches is the caller's.
absl::StatusOr<proto::Job> RescaleRows(const proto::Job& whole, int64_t rows_from, int64_t rows_to, int64_t parts) {
  std::set<std::string> data;
  for (const proto::DataSourceDef& source : whole.data_sources()) data.insert(source.outputs().begin(), source.outputs().end());
  std::map<std::string, const proto::TensorDef*> tensors;
  for (const proto::TensorDef& tensor : whole.tensors()) tensors[tensor.name()] = &tensor;
  std::map<std::string, BatchPart> part;
  for (const std::string& name : data) {
    const auto tensor = tensors.find(name);
    if (tensor == tensors.end()) continue;
    if (tensor->second->shape_size() == 0 || tensor->second->shape(0) != rows_from) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data-source tensor '", name, "' has ", tensor->second->shape_size() == 0 ? 0 : tensor->second->shape(0),
          " rows where the batch has ", rows_from, "; every data-source tensor holds the batch's rows on axis 0"));
    }
    part[name] = BatchPart::kRows;
  }

  // Which tensors hold rows or a mean of them, op by op (ops are in topological order).
  std::vector<OpView> views;
  for (const proto::OpDef& op : whole.ops()) {
    OF_ASSIGN_OR_RETURN(OpView view, ViewOf(op));
    bool reads_rows = false, reads_mean = false;
    std::vector<TensorType> types;
    for (const std::string& input : view.inputs) {
      const auto tensor = tensors.find(input);
      if (tensor == tensors.end()) {
        return absl::InvalidArgumentError(absl::StrCat(OpText(op), " reads tensor '", input, "', which the job does not define"));
      }
      OF_ASSIGN_OR_RETURN(TensorType type, TypeOf(*tensor->second));
      types.push_back(std::move(type));
      const auto held = part.find(input);
      if (held == part.end()) continue;
      (held->second == BatchPart::kRows ? reads_rows : reads_mean) = true;
    }
    auto mark = [&](BatchPart what) {
      for (const std::string& output : view.outputs) {
        if (!output.empty()) part[output] = what;
      }
    };
    if (reads_mean) {
      if (reads_rows || MeanKeepingOps().count(op.type()) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            OpText(op), " reads a mean over the batch",
            reads_rows ? " beside the batch's rows" : "", ", and the mean of its results over micro-batches is not its result "
            "over the batch; a graph split into micro-batches may take a mean over the rows only into the loss, through ",
            absl::StrJoin(MeanKeepingOps(), ", ")));
      }
      mark(BatchPart::kMean);
    } else if (reads_rows) {
      std::vector<Sbp> wanted;
      for (const std::string& input : view.inputs) {
        const auto held = part.find(input);
        wanted.push_back(held != part.end() ? Sbp::Split(0) : Sbp::Broadcast());
      }
      bool keeps_rows = false;
      for (const SbpSignature& signature : view.definition->signatures(types, view.attrs)) {
        if (signature.inputs != wanted || !signature.ValidFor(parts)) continue;
        keeps_rows = std::all_of(signature.outputs.begin(), signature.outputs.end(),
                                 [](const Sbp& sbp) { return sbp == Sbp::Split(0); });
        if (keeps_rows) break;
      }
      if (keeps_rows) {
        mark(BatchPart::kRows);
      } else if (op.type() == "reduce_mean" && ReducesAxisZero(view.attrs, types[0].shape.rank())) {
        mark(BatchPart::kMean);
      } else {
        std::vector<std::string> rows_inputs;
        for (const std::string& input : view.inputs) {
          if (part.count(input) > 0) rows_inputs.push_back(absl::StrCat("'", input, "'"));
        }
        return absl::InvalidArgumentError(absl::StrCat(
            OpText(op), " reads the batch's rows in ", absl::StrJoin(rows_inputs, ", "),
            ", and none of its signatures keeps them split on axis 0 over ", parts,
            " parts (S(0) in, S(0) out): its results over micro-batches do not make its result over the batch; "
            "valid: ops that treat rows independently, up to a mean over the rows for the loss"));
      }
    }
    views.push_back(std::move(view));
  }
  const auto loss = part.find(whole.loss());
  if (!whole.loss().empty() && (loss == part.end() || loss->second != BatchPart::kMean)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the loss '", whole.loss(), "' ",
        loss == part.end() ? "does not depend on the batch" : "holds the batch's rows rather than a mean over them",
        "; micro-batches average their losses and gradients, which gives the batch's only for a mean over its rows"));
  }

  // The rescaled graph: the rows' tensors cut (or grown), the attributes that fix output
  // shapes given for the new ones, and every op's inference checked against the result.
  proto::Job split = whole;
  std::map<std::string, TensorType> types;
  for (proto::TensorDef& tensor : *split.mutable_tensors()) {
    const auto held = part.find(tensor.name());
    if (held != part.end() && held->second == BatchPart::kRows) {
      if (tensor.shape(0) % rows_from != 0) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "' carries the batch's rows in ",
                                                       tensor.shape(0), " on axis 0, not a multiple of the ",
                                                       rows_from, " rows"));
      }
      tensor.set_shape(0, tensor.shape(0) / rows_from * rows_to);
    }
    OF_ASSIGN_OR_RETURN(types[tensor.name()], TypeOf(tensor));
  }
  for (int index = 0; index < split.ops_size(); ++index) {
    proto::OpDef& op = *split.mutable_ops(index);
    OpView& view = views[index];
    std::vector<TensorType> inputs, outputs;
    for (const std::string& input : view.inputs) inputs.push_back(types.at(input));
    bool cuts_rows = false;
    for (const std::string& output : view.outputs) {
      if (output.empty()) continue;
      outputs.push_back(types.at(output));
      const auto held = part.find(output);
      cuts_rows = cuts_rows || (held != part.end() && held->second == BatchPart::kRows);
    }
    if (cuts_rows && view.definition->attrs_for_local_shapes) {
      view.attrs = view.definition->attrs_for_local_shapes(view.attrs, outputs);
      op.mutable_attrs()->clear();
      for (const auto& [name, value] : view.attrs) (*op.mutable_attrs())[name] = AttrToProto(value);
    }
    absl::StatusOr<std::vector<TensorType>> inferred = view.definition->infer(inputs, view.attrs);
    std::vector<std::string> printed;
    for (const TensorType& type : outputs) printed.push_back(type.ToString());
    if (!inferred.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(OpText(op), " does not take the shapes of ", rows_to, " rows (outputs ",
                                                     absl::StrJoin(printed, ", "), "): ", inferred.status().message()));
    }
    std::vector<std::string> got;
    for (const TensorType& type : *inferred) got.push_back(type.ToString());
    if (got != printed) {
      return absl::InvalidArgumentError(absl::StrCat(OpText(op), " gives ", absl::StrJoin(got, ", "),
                                                     " on ", rows_to, " rows where its outputs would be ",
                                                     absl::StrJoin(printed, ", "),
                                                     "; an attribute of it fixes the batch's rows"));
    }
  }
  return split;
}

}  // namespace

absl::StatusOr<proto::Job> SplitIntoMicroBatches(const proto::Job& whole, int64_t micro_batches) {
  if (micro_batches < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--micro_batches=", micro_batches, " is not a count; valid: 1 or more"));
  }
  if (whole.micro_batches() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("the graph is already one of ", whole.micro_batches(),
                                                   " micro-batches; split a graph of the whole batch"));
  }
  if (micro_batches == 1) return whole;
  const int64_t rows = BatchRows(whole);
  if (rows <= 0 || whole.data_sources_size() == 0) {
    return absl::InvalidArgumentError(
        "the graph has no data-source tensor (an `input ... source=` line) whose rows could be split into micro-batches");
  }
  if (rows % micro_batches != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the batch of ", rows, " rows does not split into --micro_batches=",
                                                   micro_batches, "; valid: a count that divides ", rows));
  }
  OF_ASSIGN_OR_RETURN(proto::Job split, RescaleRows(whole, rows, rows / micro_batches, micro_batches));
  split.set_micro_batches(micro_batches);
  return split;
}

absl::StatusOr<proto::Job> ResizeMicroBatches(const proto::Job& job, int64_t micro_batches) {
  const int64_t before = std::max<int64_t>(1, job.micro_batches());
  if (job.batch_size() <= 0 || job.batch_size() % before != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the graph's batch of ", job.batch_size(), " rows is not ", before,
                                                   " micro-batches of equal rows; give it a `batch N` line"));
  }
  if (micro_batches == before) return job;
  if (job.batch_size() / before == 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph is one of ", before, " micro-batches of 1 row, whose ops cannot show which tensors carry the "
        "batch (an axis of 1 also broadcasts); valid: micro-batches of 2 rows or more"));
  }
  // Grown back to the whole batch (the rows of every micro-batch side by side: nothing to
  // split, so any S(0) signature holds), then cut into the new micro-batches.
  OF_ASSIGN_OR_RETURN(proto::Job whole, RescaleRows(job, job.batch_size() / before, job.batch_size(), 1));
  whole.clear_micro_batches();
  return SplitIntoMicroBatches(whole, micro_batches);
}

}  // namespace oneflow::examples
