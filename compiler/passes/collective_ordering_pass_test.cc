// The collective_ordering pass on a small graph written as text: the collectives it
// numbers on each device.
#include "compiler/passes/collective_ordering_pass.h"

#include <string>

#include "absl/strings/str_cat.h"

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(CollectiveOrderingPassTest, OneCollectivePerBucket) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "collective_ordering", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Both all_reduces are packed into one gradient bucket, so each device runs one
  // collective, which the pass numbers; nothing else changes.
  EXPECT_NE(texts->after.find("bucket#0 level 0 all_reduce[axis 0] @0 after %matmul_0_grad/matmul_8: "
                              "boxing#3.0, boxing#2.0 (192 B)\n"),
            std::string::npos)
      << texts->after;
  EXPECT_EQ(ChangedLines(*texts),
            "- device 0:0 actors=16 registers=17 collectives=0 peak=0 lower_bound=0\n"
            "- device 0:1 actors=16 registers=17 collectives=0 peak=0 lower_bound=0\n"
            "+ device 0:0 actors=16 registers=17 collectives=1 peak=0 lower_bound=0\n"
            "+ device 0:1 actors=16 registers=17 collectives=1 peak=0 lower_bound=0\n");
}

TEST(CollectiveOrderingPassTest, OneCollectivePerAllReduceWithoutBuckets) {
  CompileOptions options = TwoDeviceOptions();
  options.bucket_mb = 0;  // gradient buckets off
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "collective_ordering", options);
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_EQ(texts->after.find("bucket#"), std::string::npos) << texts->after;
  // The two all_reduces run on their own: two collectives per device (and one actor
  // each where the bucket had one for both, and no bucket register).
  EXPECT_EQ(ChangedLines(*texts),
            "- device 0:0 actors=17 registers=16 collectives=0 peak=0 lower_bound=0\n"
            "- device 0:1 actors=17 registers=16 collectives=0 peak=0 lower_bound=0\n"
            "+ device 0:0 actors=17 registers=16 collectives=2 peak=0 lower_bound=0\n"
            "+ device 0:1 actors=17 registers=16 collectives=2 peak=0 lower_bound=0\n");
}

// With micro-batches the gradients reach the optimizer through accumulate ops, and the
// loss is reduced once per micro-batch. The iteration's gradient bucket takes the
// accumulated gradients in the order backward produces them (w2's, b1's, w1's), so on a
// model of many layers its first bucket closes early in the last micro-batch's backward;
// and the loss's all-reduce runs right after the loss (in forward), not at the program's
// end, where it ran after backward and the buckets behind it in the collective order
// waited for it (a 2-device gpt: the first bucket started only when backward had ended).
TEST(CollectiveOrderingPassTest, WithMicroBatchesNoGradientBucketWaitsForTheEndOfBackward) {
  absl::StatusOr<proto::Job> job = JobFromText(kTwoDeviceTwoLayerGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "collective_ordering", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  const std::string& after = texts->after;
  EXPECT_NE(after.find("boxing#5 %reduce_mean_5 P @0 -> B @0: all_reduce[axis 0]"), std::string::npos) << after;
  EXPECT_NE(after.find("bucket#0 level 0 all_reduce[axis 0] @0 after %w1_accumulate: boxing#4.0, boxing#3.0, "
                       "boxing#2.0 (448 B)\n"),
            std::string::npos)
      << after;
  for (const char* device : {"0:0", "0:1"}) {
    EXPECT_NE(after.find(absl::StrCat("node ", device, " #12 op %reduce_mean_5: []\nnode ", device,
                                      " #13 boxing#5.0: []\n")),
              std::string::npos)
        << device << ": the loss's all-reduce is not emitted right after the loss\n"
        << after;
  }
}

}  // namespace
}  // namespace oneflow
