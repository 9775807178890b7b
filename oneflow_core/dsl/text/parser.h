// The parser behind ParseGraphText (graph_text.h), private to this package. It reads
// the text line by line and builds the graph through Graph's public API as it goes, so
// each statement is checked, by the parser and by the graph, when its line is read.
// Statements are in graph_text.cc; tensor lines (inputs, variables, ops) in
// tensor_lines.cc.
#ifndef ONEFLOW_CORE_DSL_TEXT_PARSER_H_
#define ONEFLOW_CORE_DSL_TEXT_PARSER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/dsl/text/scanner.h"
#include "oneflow_core/ops/op_definition.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"

namespace oneflow {
namespace graph_text {

// The source location of line `line` of the text: "<text>:5", so compiler errors about a
// parsed graph's ops point at its lines.
SourceLocation LineLocation(int line);

// A tensor's sbp= and placement= fields, read before the tensor exists.
struct Hints {
  std::optional<NdSbp> sbp;
  std::optional<Placement> placement;
  std::optional<Compression> compression;
};

// The part of an op line after the op type: "(a=%x, b=%w) f32[8, 3] sbp=S(0)".
struct Call {
  std::vector<Tensor> inputs;  // In the op definition's order.
  AttrMap attrs;
  TensorType type;  // As written after ')'; unset for an op without outputs.
  Hints hints;
  // loc="FILE:LINE" as written (Graph::ToText(Locations::kPrint)); nullopt: none.
  std::optional<SourceLocation> location;
  // recompute=true|false on an op output (Tensor::WithRecompute); UNSET when absent.
  proto::RecomputeMode recompute = proto::RECOMPUTE_UNSET;
  // block=, block_recompute= and attention_core= (Graph::BlockScope, AttentionCoreScope).
  Graph::OpScope scope;
};

class Parser {
 public:
  // Every error's message starts with "line N: ".
  absl::StatusOr<std::unique_ptr<Graph>> Parse(absl::string_view text);

 private:
  absl::Status Statement(int line, absl::string_view body);
  absl::Status Header(int line, LineScanner& scanner);
  absl::Status Batch(int line, LineScanner& scanner);
  absl::Status Source(int line, LineScanner& scanner);
  absl::Status OptimizerLine(int line, LineScanner& scanner);
  absl::Status Loss(int line, LineScanner& scanner);
  absl::Status TensorLine(int line, LineScanner& scanner);
  absl::Status InputLine(int line, const std::string& name, LineScanner& scanner);
  absl::Status VariableLine(int line, const std::string& name, LineScanner& scanner);
  absl::Status OpLine(int line, const std::string& name, absl::string_view type,
                      LineScanner& scanner);
  absl::Status NextOutputLine(int line, absl::string_view body);
  absl::StatusOr<Call> ReadCall(const std::string& name, const OpDefinition& op,
                                LineScanner& scanner);
  absl::Status CheckOutput(Tensor output, const Call& call, absl::string_view type);
  absl::Status CheckSources() const;
  // Takes a loc="FILE:LINE" field; the graph keeps the file name alive.
  absl::StatusOr<std::optional<SourceLocation>> TakeLocation(Fields& fields, absl::string_view tensor);

  // Statements that may appear once: an error if `*first_line` is already set.
  static absl::Status Once(absl::string_view keyword, int line, int* first_line);
  static absl::Status ExpectEnd(LineScanner& scanner, absl::string_view after);

  std::unique_ptr<Graph> graph_;
  int graph_line_ = 0;
  int batch_line_ = 0;
  int placement_line_ = 0;
  int optimizer_line_ = 0;
  int loss_line_ = 0;
  absl::flat_hash_map<std::string, int> tensor_lines_;
  std::vector<std::string> sources_;
  absl::flat_hash_map<std::string, int> source_lines_;
  struct InputSource {
    std::string tensor;
    std::string source;
    int line;
  };
  std::vector<InputSource> input_sources_;
  // A multi-output op prints one line per output, each repeating the call. After its
  // first line, this is what the next lines must be.
  struct PendingOutputs {
    std::string op;
    const OpDefinition* definition;
    std::vector<Tensor> inputs;
    AttrMap attrs;
    std::vector<Tensor> outputs;
    size_t next;
    int line;
    std::optional<SourceLocation> location;
  };
  std::optional<PendingOutputs> pending_;
};

}  // namespace graph_text
}  // namespace oneflow

#endif  // ONEFLOW_CORE_DSL_TEXT_PARSER_H_
