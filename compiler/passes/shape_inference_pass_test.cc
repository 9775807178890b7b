// The shape_inference pass on a small graph written as text: the logical graph it
// indexes, and the recorded type it rejects.
#include "compiler/passes/shape_inference_pass.h"

#include <string>

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// One linear layer and its mean, no optimizer (inference only).
constexpr char kLinear[] = R"(graph linear
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%w = variable f32[8, 4] init=xavier_uniform seed=1
%matmul_0 = matmul(a=%x, b=%w) f32[4, 4]
%relu_1 = relu(x=%matmul_0) f32[4, 4]
)";

TEST(ShapeInferencePassTest, IndexesTheGraphWithItsTypesAndPlacements) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "shape_inference");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // The first pass: nothing is indexed before it.
  EXPECT_EQ(texts->before, "");
  EXPECT_EQ(texts->after,
            "placement #0 cpu{0:0}\n"
            "input %x: f32[4, 8] @0\n"
            "variable %w: f32[8, 4] @0\n"
            "%matmul_0: f32[4, 4] = matmul(a=%x, b=%w) @0\n"
            "%relu_1: f32[4, 4] = relu(x=%matmul_0) @0\n");
}

TEST(ShapeInferencePassTest, ARecordedTypeInferenceDisagreesWithIsAnError) {
  absl::StatusOr<proto::Job> job = JobFromText(kLinear);
  ASSERT_TRUE(job.ok()) << job.status();
  // What a hand-edited job could say: relu's output as f32[4, 5].
  for (proto::TensorDef& tensor : *job->mutable_tensors()) {
    if (tensor.name() == "relu_1") tensor.set_shape(1, 5);
  }
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "shape_inference");
  EXPECT_EQ(texts.status().code(), absl::StatusCode::kInvalidArgument) << texts.status();
  EXPECT_EQ(std::string(texts.status().message()),
            "tensor 'relu_1' is recorded as f32[4, 5] but inference gives f32[4, 4]");
}

}  // namespace
}  // namespace oneflow
