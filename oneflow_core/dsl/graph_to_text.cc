// Graph::ToText: the whole graph as the text docs/graph_text.md describes.
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
    absl::StrAppend(&text, " mean=", FormatDouble(init.mean), " stddev=", FormatDouble(init.stddev));
  } else if (init.kind == proto::Initializer::UNIFORM) {
    absl::StrAppend(&text, " low=", FormatDouble(init.low), " high=", FormatDouble(init.high));
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
        def.file().format() == proto::FileSource::TOKENS_I32   ? "token_file"
        : def.file().format() == proto::FileSource::TEXT_BYTES ? "text_file"
                                                               : "record_file",
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
    // Only when on, so the text (and the recipe in every plan) of an AdamW without it
    // stays as it was.
    if (adamw.variance_frozen_from() != 0) {
      absl::StrAppend(&text, " variance_frozen_from=", adamw.variance_frozen_from());
    }
  } else {
    // No kind set: printed so that the text shows it and parsing it fails loudly.
    text = absl::StrCat("optimizer <unset> lr=", FormatDouble(schedule.base_lr()));
  }
  if (schedule.kind() == proto::LearningRateSchedule::WARMUP_COSINE) {
    absl::StrAppend(&text, " schedule=warmup_cosine warmup=", schedule.warmup_steps(),
                    " total=", schedule.total_steps(), " min_lr=", FormatDouble(schedule.min_lr()));
  }
  if (def.zero_stage() != 0) {
    absl::StrAppend(&text, " zero=", def.zero_stage(), " zero_axis=", def.zero_axis());
  }
  return text;
}

}  // namespace

std::string Graph::ToText(Locations locations) const {
  // loc="mlp_model.cc:30": the file as Build() records it (SourceLocation::ToString's
  // base name), so that a parsed text builds the same Job.
  auto location_text = [locations](const SourceLocation& location) -> std::string {
    if (locations == Locations::kOmit) return "";
    return absl::StrCat(" loc=", Quote(location.ToString()));
  };
  auto hints = [](const TensorRecord& record) {
    std::string out;
    if (record.placement) absl::StrAppend(&out, " placement=", Quote(record.placement->ToString()));
    if (record.sbp_hint) absl::StrAppend(&out, " sbp=", record.sbp_hint->ToString());
    if (record.compression) absl::StrAppend(&out, " compression=", CompressionName(*record.compression));
    if (!record.sparse_rows.empty()) absl::StrAppend(&out, " sparse_rows=%", record.sparse_rows);
    return out;
  };
  // Op output lines only: recompute= of the tensor, then the op's scope.
  auto scope_text = [](const TensorRecord& record, const OpScope& scope) {
    std::string out;
    if (record.recompute != proto::RECOMPUTE_UNSET) {
      absl::StrAppend(&out, " recompute=", record.recompute == proto::RECOMPUTE_FULL ? "true" : "false");
    }
    if (!scope.block.empty()) absl::StrAppend(&out, " block=", scope.block);
    if (scope.block_recompute != proto::RECOMPUTE_UNSET) {
      absl::StrAppend(&out, " block_recompute=", RecomputeModeName(scope.block_recompute));
    }
    if (scope.attention_core) absl::StrAppend(&out, " attention_core=true");
    return out;
  };
  // The line defining each tensor, by id: printing in creation order keeps the order of
  // Build()'s tensors, so parsing the text gives back the same Job.
  std::vector<std::string> lines(tensors_.size());
  for (const InputRecord& input : inputs_) {
    const TensorRecord& record = tensors_[input.tensor];
    lines[input.tensor] = absl::StrCat("%", record.name, " = input ", record.type.ToString(),
                                       " source=", input.source, hints(record),
                                       location_text(record.location));
  }
  for (const VariableRecord& variable : variables_) {
    const TensorRecord& record = tensors_[variable.tensor];
    lines[variable.tensor] =
        absl::StrCat("%", record.name, " = variable ", record.type.ToString(), " ",
                     InitializerText(variable.initializer),
                     variable.trainable ? "" : " trainable=false", hints(record),
                     location_text(record.location));
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
          absl::StrCat("%", op.name, " = ", call, " ()", location_text(op.location)));
    }
    // A multi-output op repeats its call on the line of each output.
    for (const auto& [arg, id] : op.outputs) {
      lines[id] = absl::StrCat("%", tensors_[id].name, " = ", call, " ",
                               tensors_[id].type.ToString(), hints(tensors_[id]),
                               scope_text(tensors_[id], op.scope), location_text(op.location));
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
