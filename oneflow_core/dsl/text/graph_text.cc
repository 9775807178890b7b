#include "oneflow_core/dsl/text/graph_text.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "oneflow_core/dsl/text/parser.h"
#include "oneflow_core/dsl/text/settings.h"
#include "oneflow_core/dsl/text/values.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace graph_text {
namespace {

// The file of the source locations of a parsed graph, so compiler errors about its ops
// point at the line of the text ("<text>:5"). A literal, because SourceLocation keeps a
// const char* that must outlive the graph.
constexpr char kTextFile[] = "<text>";

}  // namespace

SourceLocation LineLocation(int line) { return SourceLocation{kTextFile, line}; }

absl::StatusOr<std::unique_ptr<Graph>> Parser::Parse(absl::string_view text) {
  int line = 0;
  // Errors found at the end of the text name its last non-blank line (1 if none).
  int last_line = 1;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line;
    absl::ConsumeSuffix(&raw, "\r");
    const absl::string_view body = absl::StripAsciiWhitespace(raw);
    if (!body.empty()) last_line = line;
    if (body.empty() || body.front() == '#') continue;
    const absl::Status status = Statement(line, body);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("line ", line, ": ", status.message()));
    }
  }
  absl::Status status = absl::OkStatus();
  if (graph_ == nullptr) {
    status = absl::InvalidArgumentError("the text ends before its 'graph NAME' line");
  } else if (pending_) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "the text ends before the line of %", pending_->outputs[pending_->next].name(),
        " (op ", pending_->op, " of line ", pending_->line, " has outputs ",
        absl::StrJoin(pending_->definition->outputs, ", "), ")"));
  }
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("line ", last_line, ": ", status.message()));
  }
  OF_RETURN_IF_ERROR(CheckSources());
  return std::move(graph_);
}

absl::Status Parser::Statement(int line, absl::string_view body) {
  if (pending_) return NextOutputLine(line, body);
  if (graph_ == nullptr) {
    LineScanner probe(body);
    absl::StatusOr<absl::string_view> keyword = probe.Word("");
    if (!keyword.ok() || *keyword != "graph") {
      return absl::InvalidArgumentError(
          absl::StrCat("a graph text starts with 'graph NAME', got '", body, "'"));
    }
  }
  LineScanner scanner(body);
  absl::Status status;
  if (scanner.NextIs('%')) {
    status = TensorLine(line, scanner);
  } else {
    OF_ASSIGN_OR_RETURN(absl::string_view keyword, scanner.Word("a statement"));
    if (keyword == "graph") {
      status = Header(line, scanner);
    } else if (keyword == "batch") {
      status = Batch(line, scanner);
    } else if (keyword == "placement") {
      OF_RETURN_IF_ERROR(Once("placement", line, &placement_line_));
      absl::StatusOr<Placement> placement = Placement::Parse(scanner.Rest());
      if (!placement.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("default placement: ", placement.status().message()));
      }
      graph_->SetDefaultPlacement(*placement);
    } else if (keyword == "source") {
      status = Source(line, scanner);
    } else if (keyword == "optimizer") {
      status = OptimizerLine(line, scanner);
    } else if (keyword == "loss") {
      status = Loss(line, scanner);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown statement '", keyword,
          "'; valid: graph, batch, placement, source, optimizer, loss, %name = ..."));
    }
  }
  OF_RETURN_IF_ERROR(status);
  // What the graph itself rejects (op inference, names, a non-scalar loss).
  return graph_->status();
}

absl::Status Parser::Once(absl::string_view keyword, int line, int* first_line) {
  if (*first_line != 0) {
    return absl::InvalidArgumentError(absl::StrCat("a second '", keyword,
                                                   "' statement; the first is on line ",
                                                   *first_line));
  }
  *first_line = line;
  return absl::OkStatus();
}

absl::Status Parser::ExpectEnd(LineScanner& scanner, absl::string_view after) {
  if (scanner.AtEnd()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unexpected ", scanner.Upcoming(), " after ", after));
}

absl::Status Parser::Header(int line, LineScanner& scanner) {
  OF_RETURN_IF_ERROR(Once("graph", line, &graph_line_));
  const absl::string_view name = scanner.Rest();
  if (name.empty()) return absl::InvalidArgumentError("expected a graph name after 'graph'");
  graph_ = std::make_unique<Graph>(std::string(name));
  return absl::OkStatus();
}

absl::Status Parser::Batch(int line, LineScanner& scanner) {
  OF_RETURN_IF_ERROR(Once("batch", line, &batch_line_));
  OF_ASSIGN_OR_RETURN(absl::string_view text, scanner.Value("a batch size after 'batch'"));
  OF_ASSIGN_OR_RETURN(int64_t batch, ParseInt(text, "the batch size"));
  if (batch <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the batch size must be positive, got '", text, "'"));
  }
  OF_RETURN_IF_ERROR(ExpectEnd(scanner, absl::StrCat("'batch ", text, "'")));
  graph_->SetBatchSize(batch);
  return absl::OkStatus();
}

absl::Status Parser::Source(int line, LineScanner& scanner) {
  OF_ASSIGN_OR_RETURN(absl::string_view name, scanner.Name("a data source name"));
  const std::string owner = absl::StrCat("data source '", name, "'");
  if (auto it = source_lines_.find(name); it != source_lines_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(owner, " is already declared on line ", it->second));
  }
  OF_ASSIGN_OR_RETURN(absl::string_view kind,
                      scanner.Word(absl::StrCat("the kind of ", owner)));
  OF_ASSIGN_OR_RETURN(Fields fields, Fields::ReadSpaced(scanner));
  OF_ASSIGN_OR_RETURN(DataSource source, ReadDataSource(kind, fields, owner));
  source_lines_[std::string(name)] = line;
  sources_.emplace_back(name);
  graph_->AddDataSource(std::string(name), source, LineLocation(line));
  return absl::OkStatus();
}

absl::Status Parser::OptimizerLine(int line, LineScanner& scanner) {
  OF_RETURN_IF_ERROR(Once("optimizer", line, &optimizer_line_));
  OF_ASSIGN_OR_RETURN(absl::string_view kind, scanner.Word("an optimizer (sgd, adamw)"));
  OF_ASSIGN_OR_RETURN(Fields fields, Fields::ReadSpaced(scanner));
  OF_ASSIGN_OR_RETURN(Optimizer optimizer, ReadOptimizer(kind, fields));
  graph_->SetOptimizer(optimizer);
  return absl::OkStatus();
}

absl::Status Parser::Loss(int line, LineScanner& scanner) {
  OF_RETURN_IF_ERROR(Once("loss", line, &loss_line_));
  OF_ASSIGN_OR_RETURN(absl::string_view name, scanner.TensorRef("the loss tensor"));
  OF_RETURN_IF_ERROR(ExpectEnd(scanner, absl::StrCat("'loss %", name, "'")));
  Tensor loss = graph_->FindTensor(std::string(name));
  if (!loss.valid()) {
    return absl::NotFoundError(absl::StrCat("loss %", name, " is not defined above"));
  }
  graph_->SetLoss(loss, LineLocation(line));
  return absl::OkStatus();
}

// As Graph::Build checks, but naming the line: once any source is declared, every input
// must read a declared one.
absl::Status Parser::CheckSources() const {
  if (sources_.empty()) return absl::OkStatus();
  for (const InputSource& input : input_sources_) {
    if (!source_lines_.contains(input.source)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", input.line, ": input %", input.tensor, " reads data source '",
                       input.source, "', which is not declared; declared: ",
                       absl::StrJoin(sources_, ", ")));
    }
  }
  return absl::OkStatus();
}

}  // namespace graph_text

absl::StatusOr<std::unique_ptr<Graph>> ParseGraphText(absl::string_view text) {
  return graph_text::Parser().Parse(text);
}

}  // namespace oneflow
