// The collective_ordering pass on a small graph written as text: the collectives it
// numbers on each device.
#include "compiler/passes/collective_ordering_pass.h"

#include <string>

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

}  // namespace
}  // namespace oneflow
