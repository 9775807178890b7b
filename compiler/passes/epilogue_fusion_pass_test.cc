// The epilogue_fusion pass on a small graph written as text: which chains it fuses.
#include "compiler/passes/epilogue_fusion_pass.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// matmul -> bias_add -> relu, then a classifier matmul (nothing after it to fuse).
constexpr char kTwoLayers[] = R"(graph mlp
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w1 = variable f32[8, 8] init=xavier_uniform seed=1
%b1 = variable f32[8] init=zeros
%w2 = variable f32[8, 4] init=xavier_uniform seed=2
%matmul_0 = matmul(a=%x, b=%w1) f32[4, 8]
%bias_add_1 = bias_add(x=%matmul_0, bias=%b1) f32[4, 8]
%relu_2 = relu(x=%bias_add_1) f32[4, 8]
%matmul_3 = matmul(a=%relu_2, b=%w2) f32[4, 4]
%sparse_softmax_cross_entropy_4 = sparse_softmax_cross_entropy(logits=%matmul_3, labels=%labels) f32[4]
%reduce_mean_5 = reduce_mean(x=%sparse_softmax_cross_entropy_4, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_5
)";

TEST(EpilogueFusionPassTest, FusesMatmulBiasAddRelu) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoLayers, "epilogue_fusion");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // The chain becomes one op writing relu's output from the matmul's and bias_add's
  // inputs; backward (relu_grad reads relu_2, still written) and the classifier stay.
  EXPECT_EQ(ChangedLines(*texts),
            "- %matmul_0: f32[4, 8] S(0) = matmul(a=%x:S(0), b=%w1:B) @0\n"
            "- %bias_add_1: f32[4, 8] S(0) = bias_add(x=%matmul_0:S(0), bias=%b1:B) @0\n"
            "- %relu_2: f32[4, 8] S(0) = relu(x=%bias_add_1:S(0)) @0\n"
            "+ %relu_2: f32[4, 8] S(0) = fused_matmul_bias(a=%x:S(0), b=%w1:B, bias=%b1:B) @0\n")
      << texts->after;
}

TEST(EpilogueFusionPassTest, FuseEpiloguesFalseLeavesTheChain) {
  CompileOptions options = OneDeviceOptions();
  options.fuse_epilogues = false;
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoLayers, "epilogue_fusion", options);
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
