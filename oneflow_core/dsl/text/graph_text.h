// Reading a Graph from the text that Graph::ToText prints, so compiler tests can be
// written "text in, text out" (as XLA's HLO pass tests are) and tools can take a small
// model as a file. The grammar, with an example, is in docs/graph_text.md:
//
//   graph mlp
//   source data synthetic_classification seed=1 num_classes=10
//   %x = input f32[8, 4] source=data sbp=S(0)
//   %labels = input i32[8] source=data
//   %w = variable f32[4, 3] init=xavier_uniform seed=7
//   %logits = matmul(a=%x, b=%w) f32[8, 3]
//   %ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[8]
//   %loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
//   optimizer sgd lr=0.1 momentum=0.9
//   loss %loss
//
// The graph is built through Graph's public API, so every check the DSL makes (op
// inference, unique names, a scalar loss) applies, and the printed type of each op is
// compared with the inferred one. For every graph g built without errors,
// ParseGraphText(g.ToText()) gives a graph with the same ToText() and the same Build()
// Job, except for source locations: those of a parsed graph are "<text>:LINE".
#ifndef ONEFLOW_CORE_DSL_TEXT_GRAPH_TEXT_H_
#define ONEFLOW_CORE_DSL_TEXT_GRAPH_TEXT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/dsl/graph.h"

namespace oneflow {

// Parses a whole graph. Lines are statements; blank lines and lines whose first
// non-space character is '#' are skipped. On error returns INVALID_ARGUMENT (NOT_FOUND
// for an unknown op type or tensor name) whose message starts with the 1-based line
// number and quotes what was written there:
//   line 5: unknown op type 'matmull'; known: matmul, add, ...
//   line 6: input 'b' of %y (matmul) names %foo, which is not defined above
absl::StatusOr<std::unique_ptr<Graph>> ParseGraphText(absl::string_view text);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_TEXT_GRAPH_TEXT_H_
