// The tensor lines of the graph text: inputs, variables and ops (see parser.h).
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "oneflow_core/dsl/text/parser.h"
#include "oneflow_core/dsl/text/settings.h"
#include "oneflow_core/dsl/text/values.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace graph_text {
namespace {

absl::StatusOr<Hints> TakeHints(Fields& fields, absl::string_view tensor) {
  Hints hints;
  if (std::optional<absl::string_view> sbp = fields.Take("sbp")) {
    absl::StatusOr<NdSbp> parsed = NdSbp::Parse(*sbp);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sbp of %", tensor, ": ", parsed.status().message()));
    }
    hints.sbp = *parsed;
  }
  if (std::optional<absl::string_view> placement = fields.Take("placement")) {
    // Quoted because a placement holds spaces and braces: placement="cpu{0:0-3}".
    OF_ASSIGN_OR_RETURN(std::string text,
                        ParseQuoted(*placement, absl::StrCat("placement of %", tensor)));
    absl::StatusOr<Placement> parsed = Placement::Parse(text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("placement of %", tensor, ": ", parsed.status().message()));
    }
    hints.placement = *parsed;
  }
  if (std::optional<absl::string_view> compression = fields.Take("compression")) {
    absl::StatusOr<Compression> parsed = ParseCompression(*compression);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("compression of %", tensor, ": ", parsed.status().message()));
    }
    hints.compression = *parsed;
  }
  return hints;
}

// An op line's block=NAME, block_recompute=none|selective|full and attention_core=true.
absl::StatusOr<Graph::OpScope> TakeOpScope(Fields& fields, absl::string_view tensor) {
  Graph::OpScope scope;
  if (std::optional<absl::string_view> block = fields.Take("block")) scope.block = std::string(*block);
  if (std::optional<absl::string_view> mode = fields.Take("block_recompute")) {
    absl::StatusOr<proto::RecomputeMode> parsed = ParseRecomputeMode(*mode);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("block_recompute of %", tensor, ": ", parsed.status().message()));
    }
    scope.block_recompute = *parsed;
  }
  if (std::optional<absl::string_view> core = fields.Take("attention_core")) {
    if (*core != "true" && *core != "false") {
      return absl::InvalidArgumentError(
          absl::StrCat("attention_core of %", tensor, " is '", *core, "'; write true or false"));
    }
    scope.attention_core = *core == "true";
  }
  return scope;
}

void ApplyHints(const Hints& hints, Tensor tensor) {
  if (hints.sbp) tensor.WithSbp(*hints.sbp);
  if (hints.placement) tensor.WithPlacement(*hints.placement);
  if (hints.compression) tensor.WithCompression(*hints.compression);
}

bool SameLocation(const std::optional<SourceLocation>& a, const std::optional<SourceLocation>& b) {
  if (!a || !b) return a.has_value() == b.has_value();
  return absl::string_view(a->file) == b->file && a->line == b->line;
}

}  // namespace

absl::StatusOr<std::optional<SourceLocation>> Parser::TakeLocation(Fields& fields, absl::string_view tensor) {
  std::optional<absl::string_view> field = fields.Take("loc");
  if (!field) return std::nullopt;
  const std::string what = absl::StrCat("loc of %", tensor);
  OF_ASSIGN_OR_RETURN(const std::string text, ParseQuoted(*field, what));
  const size_t colon = text.rfind(':');
  int64_t line = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(colon + 1), &line) || line < 0 ||
      line > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", *field,
                                                   "; write loc=\"FILE:LINE\", e.g. loc=\"model.cc:42\""));
  }
  proto::SourceLocation location;
  location.set_file(text.substr(0, colon));
  location.set_line(line);
  return graph_->InternLocation(location);
}

absl::Status Parser::TensorLine(int line, LineScanner& scanner) {
  OF_ASSIGN_OR_RETURN(absl::string_view name_view, scanner.TensorRef("a tensor"));
  const std::string name(name_view);
  if (auto it = tensor_lines_.find(name); it != tensor_lines_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor %", name, " is already defined on line ", it->second));
  }
  tensor_lines_[name] = line;
  OF_RETURN_IF_ERROR(scanner.Expect('=', absl::StrCat("%", name)));
  OF_ASSIGN_OR_RETURN(absl::string_view kind,
                      scanner.Word("'input', 'variable' or an op type after '='"));
  // "input(" would be an op type named input; only the bare word declares an input.
  if (!scanner.NextIs('(')) {
    if (kind == "input") return InputLine(line, name, scanner);
    if (kind == "variable") return VariableLine(line, name, scanner);
  }
  return OpLine(line, name, kind, scanner);
}

absl::Status Parser::InputLine(int line, const std::string& name, LineScanner& scanner) {
  OF_ASSIGN_OR_RETURN(absl::string_view type_text,
                      scanner.Value(absl::StrCat("the type of %", name, " after 'input'")));
  OF_ASSIGN_OR_RETURN(TensorType type,
                      ParseTensorType(type_text, absl::StrCat("type of %", name)));
  OF_ASSIGN_OR_RETURN(Fields fields, Fields::ReadSpaced(scanner));
  const std::string owner = absl::StrCat("input %", name);
  OF_ASSIGN_OR_RETURN(absl::string_view source, fields.Require("source", owner));
  if (!IsName(source)) {
    return absl::InvalidArgumentError(absl::StrCat("source of %", name,
                                                   " must be a data source name (letters, "
                                                   "digits, _ . / - :), got '", source, "'"));
  }
  OF_ASSIGN_OR_RETURN(Hints hints, TakeHints(fields, name));
  OF_ASSIGN_OR_RETURN(const std::optional<SourceLocation> location, TakeLocation(fields, name));
  OF_RETURN_IF_ERROR(fields.CheckAllTaken(owner, "source, sbp, placement, compression, loc"));
  Tensor tensor = graph_->Input(name, type.shape, type.dtype, std::string(source),
                                location.value_or(LineLocation(line)));
  ApplyHints(hints, tensor);
  input_sources_.push_back(InputSource{name, std::string(source), line});
  return absl::OkStatus();
}

absl::Status Parser::VariableLine(int line, const std::string& name, LineScanner& scanner) {
  OF_ASSIGN_OR_RETURN(absl::string_view type_text,
                      scanner.Value(absl::StrCat("the type of %", name, " after 'variable'")));
  OF_ASSIGN_OR_RETURN(TensorType type,
                      ParseTensorType(type_text, absl::StrCat("type of %", name)));
  OF_ASSIGN_OR_RETURN(Fields fields, Fields::ReadSpaced(scanner));
  const std::string owner = absl::StrCat("variable %", name);
  std::string valid;
  OF_ASSIGN_OR_RETURN(Initializer initializer,
                      TakeInitializer(fields, owner, &valid));
  bool trainable = true;
  if (std::optional<absl::string_view> text = fields.Take("trainable")) {
    OF_ASSIGN_OR_RETURN(trainable, ParseBool(*text, "'trainable'"));
  }
  OF_ASSIGN_OR_RETURN(Hints hints, TakeHints(fields, name));
  // sparse_rows=%ids (Tensor::WithSparseRows): the ids may be defined on a later line.
  std::string sparse_rows;
  if (std::optional<absl::string_view> ids = fields.Take("sparse_rows")) {
    if (!absl::ConsumePrefix(&*ids, "%") || ids->empty()) {
      return absl::InvalidArgumentError(absl::StrCat("sparse_rows of %", name, " is '", *ids,
                                                     "'; write the ids tensor as %name"));
    }
    sparse_rows = std::string(*ids);
  }
  OF_ASSIGN_OR_RETURN(const std::optional<SourceLocation> location, TakeLocation(fields, name));
  OF_RETURN_IF_ERROR(fields.CheckAllTaken(
      owner, absl::StrCat(valid, ", trainable, sbp, placement, compression, sparse_rows, loc")));
  Tensor tensor = graph_->Variable(name, type.shape, initializer, type.dtype, trainable,
                                   location.value_or(LineLocation(line)));
  ApplyHints(hints, tensor);
  if (!sparse_rows.empty()) graph_->mutable_tensor(tensor.id()).sparse_rows = sparse_rows;
  return absl::OkStatus();
}

absl::StatusOr<Call> Parser::ReadCall(const std::string& name, const OpDefinition& op,
                                      LineScanner& scanner) {
  const std::string owner = absl::StrCat("%", name, " (", op.type, ")");
  OF_RETURN_IF_ERROR(scanner.Expect('(', absl::StrCat("op type '", op.type, "'")));
  OF_ASSIGN_OR_RETURN(Fields args, Fields::ReadCall(scanner));
  Call call;
  for (const std::string& arg : op.inputs) {
    std::optional<absl::string_view> value = args.TakeTensor(arg);
    if (!value) {
      if (std::optional<absl::string_view> other = args.Take(arg)) {
        return absl::InvalidArgumentError(absl::StrCat("input '", arg, "' of ", owner,
                                                       " must be a tensor like %x, got '",
                                                       *other, "'"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat(owner, " is missing input '", arg, "'; inputs: ",
                       absl::StrJoin(op.inputs, ", ")));
    }
    absl::string_view tensor_name = *value;
    absl::ConsumePrefix(&tensor_name, "%");
    if (!IsName(tensor_name)) {
      return absl::InvalidArgumentError(absl::StrCat("input '", arg, "' of ", owner,
                                                     " must be a tensor like %x, got '", *value,
                                                     "'"));
    }
    Tensor tensor = graph_->FindTensor(std::string(tensor_name));
    if (!tensor.valid()) {
      return absl::NotFoundError(absl::StrCat("input '", arg, "' of ", owner, " names ", *value,
                                              ", which is not defined above"));
    }
    call.inputs.push_back(tensor);
  }
  for (const Fields::Field& field : args.fields()) {
    if (field.taken) continue;
    const std::string key(field.key);
    if (absl::StartsWith(field.value, "%")) {
      if (absl::c_linear_search(op.inputs, key)) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", key, "' of ", owner, " is given twice"));
      }
      return absl::InvalidArgumentError(absl::StrCat("op type '", op.type, "' has no input '",
                                                     key, "'; inputs: ",
                                                     absl::StrJoin(op.inputs, ", ")));
    }
    if (call.attrs.count(key) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '", key, "' of ", owner, " is given twice"));
    }
    OF_ASSIGN_OR_RETURN(
        call.attrs[key],
        ParseAttrValue(field.value, absl::StrCat("attribute '", key, "' of ", owner)));
  }
  OF_ASSIGN_OR_RETURN(
      absl::string_view type_text,
      scanner.Value(absl::StrCat("the type of %", name, " after ')' (e.g. f32[8, 3])")));
  OF_ASSIGN_OR_RETURN(Fields fields, Fields::ReadSpaced(scanner));
  // An op without outputs (an in-place optimizer update) is written with the empty type
  // "()", so that every op line has the same shape.
  if (op.outputs.empty()) {
    if (type_text != "()") {
      return absl::InvalidArgumentError(absl::StrCat(
          owner, " has no outputs, so '()' must follow the call, got '", type_text, "'"));
    }
    OF_ASSIGN_OR_RETURN(call.location, TakeLocation(fields, name));
    OF_RETURN_IF_ERROR(fields.CheckAllTaken(absl::StrCat("%", name), "loc (the op has no outputs)"));
    return call;
  }
  if (type_text == "()") {
    return absl::InvalidArgumentError(
        absl::StrCat(owner, " has outputs (", absl::StrJoin(op.outputs, ", "),
                     "), so its type must follow the call, e.g. f32[8, 3], not '()'"));
  }
  OF_ASSIGN_OR_RETURN(call.type, ParseTensorType(type_text, absl::StrCat("type of %", name)));
  OF_ASSIGN_OR_RETURN(call.hints, TakeHints(fields, name));
  OF_ASSIGN_OR_RETURN(call.location, TakeLocation(fields, name));
  OF_ASSIGN_OR_RETURN(call.scope, TakeOpScope(fields, name));
  if (std::optional<absl::string_view> recompute = fields.Take("recompute")) {
    if (*recompute != "true" && *recompute != "false") {
      return absl::InvalidArgumentError(
          absl::StrCat("recompute of %", name, " is '", *recompute, "'; write true or false"));
    }
    call.recompute = *recompute == "true" ? proto::RECOMPUTE_FULL : proto::RECOMPUTE_NONE;
  }
  OF_RETURN_IF_ERROR(fields.CheckAllTaken(
      absl::StrCat("%", name),
      "sbp, placement, compression, recompute, block, block_recompute, attention_core, loc"));
  return call;
}

absl::Status Parser::CheckOutput(Tensor output, const Call& call, absl::string_view type) {
  if (!(output.type() == call.type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("%", output.name(), " (", type, ") is written as ", call.type.ToString(),
                     " but its inferred type is ", output.type().ToString()));
  }
  ApplyHints(call.hints, output);
  if (call.recompute != proto::RECOMPUTE_UNSET) output.WithRecompute(call.recompute == proto::RECOMPUTE_FULL);
  return absl::OkStatus();
}

absl::Status Parser::OpLine(int line, const std::string& name, absl::string_view type,
                            LineScanner& scanner) {
  OF_ASSIGN_OR_RETURN(const OpDefinition* op, OpRegistry::Get().Find(type));
  // The DSL names a multi-output op's tensors "<op>/<output>"; the first line names the
  // first output, and the op is the name without that suffix.
  std::string op_name = name;
  if (op->outputs.size() > 1) {
    const std::string suffix = absl::StrCat("/", op->outputs[0]);
    if (!absl::EndsWith(name, suffix) || name.size() == suffix.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op type '", type, "' has outputs ", absl::StrJoin(op->outputs, ", "),
                       ": its first line must define %OP", suffix, ", got %", name));
    }
    op_name = name.substr(0, name.size() - suffix.size());
  }
  OF_ASSIGN_OR_RETURN(Call call, ReadCall(name, *op, scanner));
  graph_->set_op_scope(call.scope);
  std::vector<Tensor> outputs =
      graph_->AddOp(op->type, call.inputs, call.attrs, op_name, call.location.value_or(LineLocation(line)));
  graph_->set_op_scope(Graph::OpScope{});
  OF_RETURN_IF_ERROR(graph_->status());
  if (outputs.empty()) return absl::OkStatus();
  OF_RETURN_IF_ERROR(CheckOutput(outputs[0], call, type));
  if (outputs.size() > 1) {
    pending_ = PendingOutputs{op_name, op, call.inputs, call.attrs, outputs, 1, line, call.location};
  }
  return absl::OkStatus();
}

absl::Status Parser::NextOutputLine(int line, absl::string_view body) {
  PendingOutputs& pending = *pending_;
  const std::string expected = pending.outputs[pending.next].name();
  LineScanner scanner(body);
  absl::StatusOr<absl::string_view> name = scanner.TensorRef("a tensor");
  if (!name.ok() || *name != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op ", pending.op, " (", pending.definition->type, ") of line ", pending.line,
        " has outputs ", absl::StrJoin(pending.definition->outputs, ", "),
        ", so the line of %", expected, " must come next, got '", body, "'"));
  }
  tensor_lines_[expected] = line;
  OF_RETURN_IF_ERROR(scanner.Expect('=', absl::StrCat("%", expected)));
  OF_ASSIGN_OR_RETURN(absl::string_view type, scanner.Word("an op type after '='"));
  if (type != pending.definition->type) {
    return absl::InvalidArgumentError(absl::StrCat("%", expected, " is an output of op ",
                                                   pending.op, " (", pending.definition->type,
                                                   ") of line ", pending.line, ", got type '",
                                                   type, "'"));
  }
  OF_ASSIGN_OR_RETURN(Call call, ReadCall(expected, *pending.definition, scanner));
  bool same_inputs = call.inputs.size() == pending.inputs.size();
  for (size_t i = 0; same_inputs && i < call.inputs.size(); ++i) {
    same_inputs = call.inputs[i].id() == pending.inputs[i].id();
  }
  if (!same_inputs || call.attrs != pending.attrs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the arguments of %", expected, " differ from those of op ", pending.op, " on line ",
        pending.line, "; each output line of an op repeats the same call"));
  }
  if (!SameLocation(call.location, pending.location)) {
    return absl::InvalidArgumentError(absl::StrCat("the loc of %", expected, " differs from that of op ", pending.op,
                                                   " on line ", pending.line,
                                                   "; each output line of an op repeats the op's loc"));
  }
  OF_RETURN_IF_ERROR(CheckOutput(pending.outputs[pending.next], call, type));
  if (++pending.next == pending.outputs.size()) pending_.reset();
  return absl::OkStatus();
}

}  // namespace graph_text
}  // namespace oneflow
