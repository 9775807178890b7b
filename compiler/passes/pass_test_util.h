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

// The lines of `text` that start with `prefix`, each with its newline, in order (for
// one device's lines of a dump: "node 0:1 ", "actor 0:1 ").
std::string LinesStartingWith(absl::string_view text, absl::string_view prefix);

// One node of one device (100 GB/s in node, 10 GB/s across), every other option at its
// default: what a test changes from.
CompileOptions OneDeviceOptions();

// One linear layer, cross entropy and its mean, trained with SGD with momentum, on one
// device (the autograd, optimizer and gradient-accumulation pass tests).
inline constexpr char kOneDeviceLinearGraph[] = R"(graph linear
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w = variable f32[8, 4] init=xavier_uniform seed=1
%matmul_0 = matmul(a=%x, b=%w) f32[4, 4]
%sparse_softmax_cross_entropy_1 = sparse_softmax_cross_entropy(logits=%matmul_0, labels=%labels) f32[4]
%reduce_mean_2 = reduce_mean(x=%sparse_softmax_cross_entropy_1, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.9
loss %reduce_mean_2
)";

// One linear layer, cross entropy and its mean, trained with SGD with momentum, on two
// devices: the data-parallel layout is the cheapest.
inline constexpr char kTwoDeviceLinearGraph[] = R"(graph linear
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w = variable f32[8, 4] init=xavier_uniform seed=1
%matmul_0 = matmul(a=%x, b=%w) f32[4, 4]
%sparse_softmax_cross_entropy_1 = sparse_softmax_cross_entropy(logits=%matmul_0, labels=%labels) f32[4]
%reduce_mean_2 = reduce_mean(x=%sparse_softmax_cross_entropy_1, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.9
loss %reduce_mean_2
)";

// Two layers: matmul -> bias_add -> relu (epilogue_fusion fuses them into one
// fused_matmul_bias writing relu_2), a classifier matmul, cross entropy and its mean,
// trained with SGD, on one device and on two (data parallel): the epilogue_fusion,
// precision and activation_storage pass tests.
#define ONEFLOW_TWO_LAYER_GRAPH_BODY \
  "source data synthetic_classification seed=1 num_classes=4\n" \
  "%x = input f32[4, 8] source=data\n" \
  "%labels = input i32[4] source=data\n" \
  "%w1 = variable f32[8, 8] init=xavier_uniform seed=1\n" \
  "%b1 = variable f32[8] init=zeros\n" \
  "%w2 = variable f32[8, 4] init=xavier_uniform seed=2\n" \
  "%matmul_0 = matmul(a=%x, b=%w1) f32[4, 8]\n" \
  "%bias_add_1 = bias_add(x=%matmul_0, bias=%b1) f32[4, 8]\n" \
  "%relu_2 = relu(x=%bias_add_1) f32[4, 8]\n" \
  "%matmul_3 = matmul(a=%relu_2, b=%w2) f32[4, 4]\n" \
  "%sparse_softmax_cross_entropy_4 = sparse_softmax_cross_entropy(logits=%matmul_3, labels=%labels) f32[4]\n" \
  "%reduce_mean_5 = reduce_mean(x=%sparse_softmax_cross_entropy_4, axes=[], keep_dims=false) f32[]\n" \
  "optimizer sgd lr=0.1 momentum=0.0\n" \
  "loss %reduce_mean_5\n"
inline constexpr char kOneDeviceTwoLayerGraph[] =
    "graph two_layers\nplacement cpu{0:0}\n" ONEFLOW_TWO_LAYER_GRAPH_BODY;
inline constexpr char kTwoDeviceTwoLayerGraph[] =
    "graph two_layers\nplacement cpu{0:0-1}\n" ONEFLOW_TWO_LAYER_GRAPH_BODY;
#undef ONEFLOW_TWO_LAYER_GRAPH_BODY

// OneDeviceOptions with two devices on the node (for kTwoDeviceLinearGraph).
CompileOptions TwoDeviceOptions();

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
