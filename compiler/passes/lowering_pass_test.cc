// The lowering pass on small graphs written as text: the program of physical nodes it
// gives each device, with their per-device shapes.
#include "compiler/passes/lowering_pass.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(LoweringPassTest, OneDeviceRunsEveryOpOnWholeShapes) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kOneDeviceLinearGraph, "lowering");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // The data source (x and labels), the variables, then every op in the job's order with
  // its logical shape (one device holds all of it), the update and the loss sink. No
  // boxing: on one device every SBP is the whole tensor. Nothing logical changes.
  EXPECT_EQ(ChangedLines(*texts),
            "+ node 0:0 #0 source data: [4, 8] [4]\n"
            "+ node 0:0 #1 variable %w: [8, 4]\n"
            "+ node 0:0 #2 variable %w/momentum: [8, 4]\n"
            "+ node 0:0 #3 op %matmul_0: [4, 4]\n"
            "+ node 0:0 #4 op %sparse_softmax_cross_entropy_1: [4]\n"
            "+ node 0:0 #5 op %reduce_mean_2: []\n"
            "+ node 0:0 #6 op %reduce_mean_2_grad/ones_like_3: []\n"
            "+ node 0:0 #7 op %reduce_mean_2_grad/broadcast_like_4: [4]\n"
            "+ node 0:0 #8 op %reduce_mean_2_grad/scalar_mul_5: [4]\n"
            "+ node 0:0 #9 op %sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6: [4, 4]\n"
            "+ node 0:0 #10 op %matmul_0_grad/matmul_8: [8, 4]\n"
            "+ node 0:0 #11 op %w_update/sgd_update_9\n"
            "+ node 0:0 #12 sink %reduce_mean_2\n")
      << texts->after;
}

TEST(LoweringPassTest, DataParallelHalvesTheBatchAndRunsTheBoxingsAndTheBucket) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "lowering", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Data parallel over two devices: each reads the whole batch and slices its half
  // (boxing#0 and #1, B -> S(0)) before the op that needs it, computes on 2 of the 4 rows
  // and its whole partial gradient of w ([8, 4]); the bucket reduces the loss ([]) and
  // that gradient together, after which the update runs. Both devices run the same order.
  const std::string program =
      "#0 source data: [4, 8] [4]\n"
      "#1 variable %w: [8, 4]\n"
      "#2 variable %w/momentum: [8, 4]\n"
      "#3 boxing#0.0: [2, 8]\n"
      "#4 op %matmul_0: [2, 4]\n"
      "#5 boxing#1.0: [2]\n"
      "#6 op %sparse_softmax_cross_entropy_1: [2]\n"
      "#7 op %reduce_mean_2: []\n"
      "#8 op %reduce_mean_2_grad/ones_like_3: []\n"
      "#9 op %reduce_mean_2_grad/broadcast_like_4: [2]\n"
      "#10 op %reduce_mean_2_grad/scalar_mul_5: [2]\n"
      "#11 op %sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6: [2, 4]\n"
      "#12 op %matmul_0_grad/matmul_8: [8, 4]\n"
      "#13 bucket#0: [] [8, 4]\n"
      "#14 op %w_update/sgd_update_9\n"
      "#15 sink %reduce_mean_2\n";
  std::string expected;
  for (const char* device : {"0:0", "0:1"}) {
    for (absl::string_view line : absl::StrSplit(program, '\n', absl::SkipEmpty())) {
      absl::StrAppend(&expected, "+ node ", device, " ", line, "\n");
    }
  }
  EXPECT_EQ(ChangedLines(*texts), expected) << texts->after;
}

}  // namespace
}  // namespace oneflow
