#include "oneflow_core/dsl/text/settings.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "oneflow_core/dsl/text/values.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace graph_text {
namespace {

struct InitializerKind {
  absl::string_view name;
  proto::Initializer::Kind kind;
  // The keys of its two parameters (mean and stddev, low and high), empty when none.
  absl::string_view first;
  absl::string_view second;
};

// Spelled as Graph::ToText prints them: the proto enum names in lower case.
constexpr InitializerKind kInitializerKinds[] = {
    {"zeros", proto::Initializer::ZEROS, "", ""},
    {"ones", proto::Initializer::ONES, "", ""},
    {"normal", proto::Initializer::NORMAL, "mean", "stddev"},
    {"uniform", proto::Initializer::UNIFORM, "low", "high"},
    {"xavier_uniform", proto::Initializer::XAVIER_UNIFORM, "", ""},
};

// The value of `key` read as a double, or `fallback` when the key is absent.
absl::StatusOr<double> TakeDouble(Fields& fields, absl::string_view key, double fallback) {
  std::optional<absl::string_view> text = fields.Take(key);
  if (!text) return fallback;
  return ParseDouble(*text, absl::StrCat("'", key, "'"));
}

absl::StatusOr<double> RequireDouble(Fields& fields, absl::string_view key,
                                     absl::string_view owner) {
  OF_ASSIGN_OR_RETURN(absl::string_view text, fields.Require(key, owner));
  return ParseDouble(text, absl::StrCat("'", key, "'"));
}

absl::StatusOr<int64_t> RequireInt(Fields& fields, absl::string_view key,
                                   absl::string_view owner) {
  OF_ASSIGN_OR_RETURN(absl::string_view text, fields.Require(key, owner));
  return ParseInt(text, absl::StrCat("'", key, "'"));
}

// The value of `key` read as an integer, or `fallback` when the key is absent.
absl::StatusOr<int64_t> TakeInt(Fields& fields, absl::string_view key, int64_t fallback) {
  std::optional<absl::string_view> text = fields.Take(key);
  if (!text) return fallback;
  return ParseInt(*text, absl::StrCat("'", key, "'"));
}

absl::StatusOr<uint64_t> RequireSeed(Fields& fields, absl::string_view owner) {
  OF_ASSIGN_OR_RETURN(absl::string_view text, fields.Require("seed", owner));
  return ParseUint64(text, "'seed'");
}

}  // namespace

absl::StatusOr<Initializer> TakeInitializer(Fields& fields, absl::string_view owner,
                                            std::string* valid_keys) {
  OF_ASSIGN_OR_RETURN(absl::string_view name, fields.Require("init", owner));
  const InitializerKind* kind = nullptr;
  for (const InitializerKind& candidate : kInitializerKinds) {
    if (candidate.name == name) kind = &candidate;
  }
  if (kind == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown init '", name, "' for ", owner,
                     "; valid: zeros, ones, normal, uniform, xavier_uniform"));
  }
  Initializer initializer = Initializer::Of(kind->kind, 0);
  absl::StrAppend(valid_keys, "init");
  if (!kind->first.empty()) {
    OF_ASSIGN_OR_RETURN(const double first, RequireDouble(fields, kind->first, owner));
    OF_ASSIGN_OR_RETURN(const double second, RequireDouble(fields, kind->second, owner));
    if (kind->kind == proto::Initializer::NORMAL) {
      initializer.mean = first;
      initializer.stddev = second;
    } else {
      initializer.low = first;
      initializer.high = second;
    }
    absl::StrAppend(valid_keys, ", ", kind->first, ", ", kind->second);
  }
  if (std::optional<absl::string_view> seed = fields.Take("seed")) {
    OF_ASSIGN_OR_RETURN(initializer.seed, ParseUint64(*seed, "'seed'"));
  }
  absl::StrAppend(valid_keys, ", seed");
  return initializer;
}

absl::StatusOr<DataSource> ReadDataSource(absl::string_view kind, Fields& fields,
                                          absl::string_view owner) {
  DataSource source;
  std::string valid;
  if (kind == "synthetic_classification" || kind == "synthetic_tokens") {
    const bool tokens = kind == "synthetic_tokens";
    const absl::string_view size_key = tokens ? "vocab" : "num_classes";
    OF_ASSIGN_OR_RETURN(uint64_t seed, RequireSeed(fields, owner));
    OF_ASSIGN_OR_RETURN(int64_t size, RequireInt(fields, size_key, owner));
    source = tokens ? DataSource::SyntheticTokens(seed, size)
                    : DataSource::SyntheticClassification(seed, size);
    valid = absl::StrCat("seed, ", size_key);
  } else if (kind == "token_file" || kind == "record_file" || kind == "text_file") {
    OF_ASSIGN_OR_RETURN(absl::string_view text, fields.Require("path", owner));
    OF_ASSIGN_OR_RETURN(std::string path, ParseQuoted(text, "'path'"));
    source = kind == "token_file"  ? DataSource::TokenFile(path)
             : kind == "text_file" ? DataSource::TextFile(path)
                                   : DataSource::RecordFile(path);
    valid = "path";
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown kind '", kind, "' of ", owner,
        "; valid: synthetic_classification, synthetic_tokens, token_file, record_file, text_file"));
  }
  OF_RETURN_IF_ERROR(fields.CheckAllTaken(absl::StrCat(owner, " (", kind, ")"), valid));
  return source;
}

absl::StatusOr<Optimizer> ReadOptimizer(absl::string_view kind, Fields& fields) {
  if (kind != "sgd" && kind != "adamw") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown optimizer '", kind, "'; valid: sgd, adamw"));
  }
  const std::string owner = absl::StrCat("optimizer ", kind);
  OF_ASSIGN_OR_RETURN(double lr, RequireDouble(fields, "lr", owner));
  Optimizer optimizer;
  std::string valid;
  if (kind == "sgd") {
    OF_ASSIGN_OR_RETURN(double momentum, TakeDouble(fields, "momentum", 0));
    optimizer = Optimizer::Sgd(lr, momentum);
    valid = "lr, momentum, schedule";
  } else {
    // The fallbacks are Optimizer::AdamW's defaults, read from a default-built one so
    // that the two cannot drift apart.
    const proto::AdamWOptimizer defaults = Optimizer::AdamW(lr).def.adamw();
    OF_ASSIGN_OR_RETURN(double beta1, TakeDouble(fields, "beta1", defaults.beta1()));
    OF_ASSIGN_OR_RETURN(double beta2, TakeDouble(fields, "beta2", defaults.beta2()));
    OF_ASSIGN_OR_RETURN(double epsilon, TakeDouble(fields, "epsilon", defaults.epsilon()));
    OF_ASSIGN_OR_RETURN(double decay, TakeDouble(fields, "weight_decay", defaults.weight_decay()));
    OF_ASSIGN_OR_RETURN(int64_t frozen_from, TakeInt(fields, "variance_frozen_from", 0));
    optimizer = Optimizer::AdamW(lr, beta1, beta2, epsilon, decay).WithFrozenVariance(frozen_from);
    valid = "lr, beta1, beta2, epsilon, weight_decay, variance_frozen_from, schedule";
  }
  const absl::string_view schedule = fields.Take("schedule").value_or("constant");
  if (schedule == "warmup_cosine") {
    const std::string scheduled = absl::StrCat(owner, " with schedule=warmup_cosine");
    OF_ASSIGN_OR_RETURN(int64_t warmup, RequireInt(fields, "warmup", scheduled));
    OF_ASSIGN_OR_RETURN(int64_t total, RequireInt(fields, "total", scheduled));
    OF_ASSIGN_OR_RETURN(double min_lr, RequireDouble(fields, "min_lr", scheduled));
    optimizer.WithWarmupCosine(warmup, total, min_lr);
    absl::StrAppend(&valid, ", warmup, total, min_lr");
  } else if (schedule != "constant") {
    return absl::InvalidArgumentError(absl::StrCat("unknown schedule '", schedule, "' for ",
                                                   owner, "; valid: constant, warmup_cosine"));
  }
  OF_ASSIGN_OR_RETURN(int64_t zero, TakeInt(fields, "zero", 0));
  OF_ASSIGN_OR_RETURN(int64_t zero_axis, TakeInt(fields, "zero_axis", 0));
  optimizer.WithZero(zero, zero_axis);
  absl::StrAppend(&valid, ", zero, zero_axis");
  OF_RETURN_IF_ERROR(fields.CheckAllTaken(owner, valid));
  return optimizer;
}

}  // namespace graph_text
}  // namespace oneflow
