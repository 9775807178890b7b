// The collective_ordering pass on a small graph written as text: the collectives it
// numbers on each device.
#include "compiler/passes/collective_ordering_pass.h"

#include <string>

#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// One linear layer, cross entropy and its mean, trained with SGD with momentum, on two
// devices, data parallel: two all_reduces (w's gradient and the loss, both partial sums).
constexpr char kLinear[] = R"(graph linear
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

CompileOptions TwoDevices() {
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_devices_per_node(2);
  return options;
}

TEST(CollectiveOrderingPassTest, OneCollectivePerBucket) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "collective_ordering", TwoDevices());
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
  CompileOptions options = TwoDevices();
  options.bucket_mb = 0;  // gradient buckets off
  absl::StatusOr<PassTexts> texts = RunThroughPass(kLinear, "collective_ordering", options);
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
