#include "compiler/passes/pass_test_util.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "compiler/compilation.h"
#include "compiler/compiler.h"
#include "compiler/pass_pipeline.h"
#include "compiler/standard_pipeline.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/status.h"

namespace oneflow {

std::string ChangedLines(const PassTexts& texts) {
  const std::vector<absl::string_view> before = absl::StrSplit(texts.before, '\n', absl::SkipEmpty());
  const std::vector<absl::string_view> after = absl::StrSplit(texts.after, '\n', absl::SkipEmpty());
  const absl::flat_hash_set<absl::string_view> before_set(before.begin(), before.end());
  const absl::flat_hash_set<absl::string_view> after_set(after.begin(), after.end());
  std::string changed;
  for (absl::string_view line : before) {
    if (!after_set.contains(line)) absl::StrAppend(&changed, "- ", line, "\n");
  }
  for (absl::string_view line : after) {
    if (!before_set.contains(line)) absl::StrAppend(&changed, "+ ", line, "\n");
  }
  return changed;
}

std::string LinesStartingWith(absl::string_view text, absl::string_view prefix) {
  std::string lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, prefix)) absl::StrAppend(&lines, line, "\n");
  }
  return lines;
}

CompileOptions OneDeviceOptions() {
  CompileOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(1);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_inter_node_bandwidth(10e9);
  return options;
}

CompileOptions TwoDeviceOptions() {
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_devices_per_node(2);
  return options;
}

absl::StatusOr<proto::Job> JobFromText(absl::string_view graph_text) {
  OF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, ParseGraphText(graph_text));
  return graph->Build();
}

absl::StatusOr<PassTexts> RunThroughPass(absl::string_view graph_text, absl::string_view pass,
                                         CompileOptions options) {
  OF_ASSIGN_OR_RETURN(proto::Job job, JobFromText(graph_text));
  return RunThroughPass(job, pass, std::move(options));
}

absl::StatusOr<PassTexts> RunThroughPass(const proto::Job& job, absl::string_view pass, CompileOptions options) {
  PassPipeline pipeline = StandardPipeline();
  OF_RETURN_IF_ERROR(pipeline.StopAfter(pass));
  const std::vector<std::string> names = pipeline.PassNames();
  // The pipeline's own dumps give the text after the pass and after the one before it
  // (the state the pass starts from; the parsed job's graph is not indexed before the
  // first pass, so the first pass starts from empty text).
  std::string dump;
  options.dump_after = {names.back()};
  if (names.size() > 1) options.dump_after.push_back(names[names.size() - 2]);
  options.dump = &dump;
  Compilation compilation;
  OF_RETURN_IF_ERROR(PrepareCompilation(job, options, &compilation));
  OF_RETURN_IF_ERROR(pipeline.Run(&compilation));
  PassTexts texts;
  const std::string marker = absl::StrCat("=== after ", names.back(), " (");
  const size_t last = dump.find(marker);
  if (last == std::string::npos) return absl::InternalError(absl::StrCat("no dump after ", names.back()));
  if (last > 0) texts.before = dump.substr(dump.find('\n') + 1, last - dump.find('\n') - 1);
  texts.after = dump.substr(dump.find('\n', last) + 1);
  return texts;
}

}  // namespace oneflow
