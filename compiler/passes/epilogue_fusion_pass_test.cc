// The epilogue_fusion pass on a small graph written as text: which chains it fuses.
#include "compiler/passes/epilogue_fusion_pass.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(EpilogueFusionPassTest, FusesMatmulBiasAddRelu) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kOneDeviceTwoLayerGraph, "epilogue_fusion");
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
  absl::StatusOr<PassTexts> texts = RunThroughPass(kOneDeviceTwoLayerGraph, "epilogue_fusion", options);
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(ChangedLines(*texts), "") << texts->after;
}

}  // namespace
}  // namespace oneflow
