// The graph text of ops with several outputs (one line per output, each repeating the
// call) and with none (in-place optimizer updates, written with the empty type "()"), as
// the compiler's autograd and optimizer passes emit them. Uses layer_norm_grad and
// sgd_update from the op registry.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "oneflow_core/dsl/text/round_trip_testing.h"

namespace oneflow {
namespace {

using graph_text::ExpectRoundTrip;

const SourceLocation kHere{"graph_text_backward_test.cc", 1};

AttrMap SgdAttrs() {
  return {{"momentum", 0.9}, {"lr_schedule", std::string("constant")}, {"base_lr", 0.1}};
}

TEST(GraphTextBackwardTest, MultiOutputAndNoOutputOpsRoundTrip) {
  Graph graph("backward");
  Tensor x = graph.Input("x", Shape{4, 8}, DType::kF32, "data");
  Tensor dy = graph.Input("dy", Shape{4, 8}, DType::kF32, "data");
  Tensor gamma = graph.Variable("gamma", Shape{8}, Initializer::Ones());
  std::vector<Tensor> grads =
      graph.AddOp("layer_norm_grad", {x, gamma, dy}, {{"epsilon", 1e-5}}, "ln_grad", kHere);
  ASSERT_EQ(grads.size(), 3u) << graph.status();
  grads[1].WithSbp("P");
  Tensor momentum = graph.Variable("gamma/momentum", Shape{8}, Initializer::Zeros(),
                                   DType::kF32, /*trainable=*/false);
  graph.AddOp("sgd_update", {gamma, grads[1], momentum}, SgdAttrs(), "", kHere);
  // Created after the update: its line must stay after the update's, and the relu's too.
  Tensor late = graph.Variable("late", Shape{8}, Initializer::Zeros());
  graph.AddSingleOutputOp("relu", {grads[2]}, {}, kHere);
  graph.AddOp("sgd_update", {late, grads[2], momentum}, SgdAttrs(), "late_update", kHere);
  ASSERT_TRUE(graph.status().ok()) << graph.status();
  const std::string call =
      "layer_norm_grad(x=%x, gamma=%gamma, dy=%dy, epsilon=1e-05)";
  EXPECT_EQ(graph.ToText(),
            absl::StrCat("graph backward\n"
                         "%x = input f32[4, 8] source=data\n"
                         "%dy = input f32[4, 8] source=data\n"
                         "%gamma = variable f32[8] init=ones\n"
                         "%ln_grad/dx = ", call, " f32[4, 8]\n"
                         "%ln_grad/dgamma = ", call, " f32[8] sbp=P\n"
                         "%ln_grad/dbeta = ", call, " f32[8]\n"
                         "%gamma/momentum = variable f32[8] init=zeros trainable=false\n"
                         // The input and the attribute share the name 'momentum'.
                         "%sgd_update_1 = sgd_update(param=%gamma, grad=%ln_grad/dgamma, "
                         "momentum=%gamma/momentum, base_lr=0.1, lr_schedule=\"constant\", "
                         "momentum=0.9) ()\n"
                         "%late = variable f32[8] init=zeros\n"
                         "%relu_2 = relu(x=%ln_grad/dbeta) f32[8]\n"
                         "%late_update = sgd_update(param=%late, grad=%ln_grad/dbeta, "
                         "momentum=%gamma/momentum, base_lr=0.1, lr_schedule=\"constant\", "
                         "momentum=0.9) ()\n"));
  ExpectRoundTrip(graph);
}

struct ErrorCase {
  std::string text;
  std::string message;
};

TEST(GraphTextBackwardTest, Errors) {
  const std::string head =
      "graph g\n"
      "%x = input f32[4, 8] source=data\n"
      "%gamma = variable f32[8] init=ones\n";
  const std::string call = "layer_norm_grad(x=%x, gamma=%gamma, dy=%x, epsilon=1e-05)";
  const std::string first = absl::StrCat("%ln/dx = ", call, " f32[4, 8]\n");
  const ErrorCase cases[] = {
      {absl::StrCat(head, "%ln = ", call, " f32[4, 8]\n"),
       "line 4: op type 'layer_norm_grad' has outputs dx, dgamma, dbeta: its first line must "
       "define %OP/dx, got %ln"},
      {absl::StrCat(head, first, "loss %x\n"),
       "line 5: op ln (layer_norm_grad) of line 4 has outputs dx, dgamma, dbeta, so the line "
       "of %ln/dgamma must come next, got 'loss %x'"},
      {absl::StrCat(head, first, "%ln/dbeta = ", call, " f32[8]\n"),
       "line 5: op ln (layer_norm_grad) of line 4 has outputs dx, dgamma, dbeta, so the line "
       "of %ln/dgamma must come next, got '%ln/dbeta = " + call + " f32[8]'"},
      {absl::StrCat(head, first, "%ln/dgamma = relu(x=%x) f32[8]\n"),
       "line 5: %ln/dgamma is an output of op ln (layer_norm_grad) of line 4, got type 'relu'"},
      {absl::StrCat(head, first,
                    "%ln/dgamma = layer_norm_grad(x=%x, gamma=%gamma, dy=%x, epsilon=0.001) "
                    "f32[8]\n"),
       "line 5: the arguments of %ln/dgamma differ from those of op ln on line 4; each output "
       "line of an op repeats the same call"},
      {absl::StrCat(head, first, "%ln/dgamma = ", call, " f32[4]\n"),
       "line 5: %ln/dgamma (layer_norm_grad) is written as f32[4] but its inferred type is "
       "f32[8]"},
      {absl::StrCat(head, first, "%ln/dgamma = ", call, " f32[8]\n"),
       "line 5: the text ends before the line of %ln/dbeta (op ln of line 4 has outputs dx, "
       "dgamma, dbeta)"},
      {absl::StrCat(head,
                    "%u = sgd_update(param=%gamma, grad=%gamma, momentum=%gamma, "
                    "base_lr=0.1) f32[8]\n"),
       "line 4: %u (sgd_update) has no outputs, so '()' must follow the call, got 'f32[8]'"},
      {absl::StrCat(head,
                    "%u = sgd_update(param=%gamma, grad=%gamma, momentum=0.9, base_lr=0.1) "
                    "()\n"),
       "line 4: input 'momentum' of %u (sgd_update) must be a tensor like %x, got '0.9'"},
      {absl::StrCat(head,
                    "%u = sgd_update(param=%gamma, grad=%gamma, momentum=%gamma, "
                    "base_lr=0.1) () sbp=B\n"),
       "line 4: unknown key 'sbp' for %u; valid: loc (the op has no outputs)"},
      {absl::StrCat(head, "%ln/dx = ", call, " f32[4, 8] loc=\"m.cc:7\"\n%ln/dgamma = ", call,
                    " f32[8] loc=\"m.cc:8\"\n"),
       "line 5: the loc of %ln/dgamma differs from that of op ln on line 4; each output line of an "
       "op repeats the op's loc"},
      {absl::StrCat(head, "%y = relu(x=%x) ()\n"),
       "line 4: %y (relu) has outputs (out), so its type must follow the call, e.g. f32[8, 3], "
       "not '()'"},
  };
  for (const ErrorCase& c : cases) {
    absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(c.text);
    ASSERT_FALSE(graph.ok()) << "parsed without error:\n" << c.text;
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument) << graph.status();
    EXPECT_EQ(std::string(graph.status().message()), c.message) << "text:\n" << c.text;
  }
}

}  // namespace
}  // namespace oneflow
