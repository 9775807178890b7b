// For per-pass tests, text in and text out: a graph written as text (docs/graph_text.md)
// runs through the standard pipeline up to a pass, and the test compares the state as
// text (CompilationToText) before and after that pass with what the pass should do.
#ifndef COMPILER_PASSES_PASS_TEST_UTIL_H_
#define COMPILER_PASSES_PASS_TEST_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/compile_options.h"
#include "proto/job.pb.h"

namespace oneflow {

// The state as text just before and just after one pass.
struct PassTexts {
  std::string before;
  std::string after;
};

// What the pass changed: each line of `before` that `after` lacks as "- line", then each
// line of `after` that `before` lacks as "+ line", each in its text's order.
std::string ChangedLines(const PassTexts& texts);

// One node of one device (100 GB/s in node, 10 GB/s across), every other option at its
// default: what a test changes from.
CompileOptions OneDeviceOptions();

// Parses `graph_text`, prepares the state as Compile does (with `options`), runs the
// standard pipeline's passes in order up to and including `pass` (the earlier ones
// provide what it reads), and returns the state as text before and after `pass`.
absl::StatusOr<PassTexts> RunThroughPass(absl::string_view graph_text, absl::string_view pass,
                                         CompileOptions options = OneDeviceOptions());

// The job of a graph written as text, for tests that set what the text does not say
// (e.g. Job.micro_batches) before RunThroughPass.
absl::StatusOr<proto::Job> JobFromText(absl::string_view graph_text);
absl::StatusOr<PassTexts> RunThroughPass(const proto::Job& job, absl::string_view pass,
                                         CompileOptions options = OneDeviceOptions());

}  // namespace oneflow

#endif  // COMPILER_PASSES_PASS_TEST_UTIL_H_
