// The graph text format's settings (graph_text.h): a variable's initializer, a data
// source and the optimizer, each read from the key=value fields of its line and built
// with the DSL's own factories (Initializer::Normal, DataSource::SyntheticTokens,
// Optimizer::Sgd(...).WithWarmupCosine(...)), so a parsed setting equals a written one.
#ifndef ONEFLOW_CORE_DSL_TEXT_SETTINGS_H_
#define ONEFLOW_CORE_DSL_TEXT_SETTINGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/text/scanner.h"

namespace oneflow {
namespace graph_text {

// Takes init=KIND and that kind's parameters from a variable's fields:
//   init=zeros | init=ones | init=xavier_uniform seed=7
//   init=normal mean=0.0 stddev=0.02 seed=3 | init=uniform low=-0.1 high=0.1 seed=3
// seed is optional (0). Leaves other keys for the caller and appends the keys it knows
// for this kind to `valid_keys`, for the caller's unknown-key error. `owner` names the
// variable in errors ("variable %w").
absl::StatusOr<Initializer> TakeInitializer(Fields& fields, absl::string_view owner,
                                            std::string* valid_keys);

// A data source of kind `kind` from all of its fields:
//   synthetic_classification seed=1 num_classes=10 | synthetic_tokens seed=1 vocab=100
//   token_file path="data/tokens.bin" | record_file path="data/records.bin"
absl::StatusOr<DataSource> ReadDataSource(absl::string_view kind, Fields& fields,
                                          absl::string_view owner);

// An optimizer of kind `kind` from all of its fields; omitted hyperparameters take the
// defaults of Optimizer::Sgd / Optimizer::AdamW:
//   sgd lr=0.1 [momentum=0.9]
//   adamw lr=0.001 [beta1=0.9] [beta2=0.999] [epsilon=1e-08] [weight_decay=0.01]
//         [variance_frozen_from=0]
// either followed by [schedule=constant] or schedule=warmup_cosine warmup=W total=T min_lr=M.
absl::StatusOr<Optimizer> ReadOptimizer(absl::string_view kind, Fields& fields);

}  // namespace graph_text
}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_TEXT_SETTINGS_H_
