// The order of the node-crossing gradient buckets (reduction_priority.h) on a small graph
// written as text: the collective_ordering pass run on it, device 0:0's program after it.
#include "compiler/passes/reduction_priority.h"

#include <memory>
#include <string>

#include "compiler/compiler.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"
#include "proto/plan.pb.h"

namespace oneflow {
namespace {

// Four 512 x 512 layers and a small output layer, data parallel over 2 nodes x 2 devices
// as [2, 2]: every gradient an in-node reduce-scatter (axis 1), a cross-node all-reduce
// of its half (axis 0), an in-node all-gather (gradient_bucketing_pass_test's kDeep).
constexpr char kDeep[] = R"(graph deep2d
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[64, 512] source=data sbp=[S(0), S(0)]
%labels = input i32[64] source=data sbp=[S(0), S(0)]
%w1 = variable f32[512, 512] init=xavier_uniform seed=1 sbp=[B, B]
%w2 = variable f32[512, 512] init=xavier_uniform seed=2 sbp=[B, B]
%w3 = variable f32[512, 512] init=xavier_uniform seed=3 sbp=[B, B]
%w4 = variable f32[512, 512] init=xavier_uniform seed=4 sbp=[B, B]
%w5 = variable f32[512, 4] init=xavier_uniform seed=5 sbp=[B, B]
%matmul_0 = matmul(a=%x, b=%w1) f32[64, 512]
%relu_1 = relu(x=%matmul_0) f32[64, 512]
%matmul_2 = matmul(a=%relu_1, b=%w2) f32[64, 512]
%relu_3 = relu(x=%matmul_2) f32[64, 512]
%matmul_4 = matmul(a=%relu_3, b=%w3) f32[64, 512]
%relu_5 = relu(x=%matmul_4) f32[64, 512]
%matmul_6 = matmul(a=%relu_5, b=%w4) f32[64, 512]
%relu_7 = relu(x=%matmul_6) f32[64, 512]
%matmul_8 = matmul(a=%relu_7, b=%w5) f32[64, 4]
%sparse_softmax_cross_entropy_9 = sparse_softmax_cross_entropy(logits=%matmul_8, labels=%labels) f32[64]
%reduce_mean_10 = reduce_mean(x=%sparse_softmax_cross_entropy_9, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_10
)";

// Device 0:0's node-crossing collectives in the order it issues them (its collective
// order restricted to groups that span nodes), one actor name a line, after compiling
// kDeep on 2 nodes x 2 devices whose nodes talk at `inter_node_bandwidth` bytes/s.
std::string CrossNodeOrder(double inter_node_bandwidth, double shared_machine_cores = 0) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(kDeep);
  if (!graph.ok()) return std::string(graph.status().message());
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  if (!job.ok()) return std::string(job.status().message());
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(2);
  options.cluster.set_inter_node_bandwidth(inter_node_bandwidth);
  options.shared_machine_cores = shared_machine_cores;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  if (!plan.ok()) return std::string(plan.status().message());
  const proto::DevicePlan& device = plan->devices(0);
  std::string lines;
  for (int64_t id : device.collective_order()) {
    const proto::CollectiveDef& collective = plan->collectives(id);
    bool crosses = false;
    for (const proto::DeviceId& member : collective.group()) crosses |= member.node() != collective.group(0).node();
    if (!crosses) continue;
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.kind() == proto::ACTOR_BOXING && actor.collective_id() == id) lines += actor.name() + "\n";
    }
  }
  return lines;
}

// At 100 Mbit/s (gradient_bucketing_pass_test, OnASlowLinkTwoDimensionalChainsBucketInBackwardOrder)
// the cross-node buckets are: w3's half alone (512 KiB, right after the first reduce-scatter
// bucket), bucket 1 (the loss, w5's and w4's halves, 528448 B, after w3's gradient) and
// bucket 3 (w2's and w1's halves, 1 MiB, at the end of backward). Each device computes
// 16 rows: a 512 x 512 layer's gradients are 2 x 16 x 512 x 512 x 2 FLOP, 0.34 ms at 5e10
// FLOP/s, backward ~2 ms; w3's half crosses in 2 rounds of 512 KiB at half the link (both
// devices of a node cross it at once: 6.25e6 B/s), 84 ms. So w3's half starts
// mid-backward and bucket 1, ready then, waits behind it past the end of backward, where
// bucket 3 is ready: the two are issued in the order the next forward reads their
// variables, w1 (matmul_0) first, w4 (matmul_6) after. In backward order bucket 1 went first.
TEST(ReductionPriorityTest, OnASlowLinkTheBucketsWaitingAtTheEndOfBackwardGoInForwardOrder) {
  EXPECT_EQ(CrossNodeOrder(12.5e6),
            "matmul_4_grad/matmul_22/boxing_2/all_reduce\n"
            "bucket_3/all_reduce\n"
            "bucket_1/all_reduce\n");
}

// At 10 GB/s the examples' default link: the cross-node buckets are two, both closing at
// the end of backward, the one of w3..w1 (read first) already first: backward order.
TEST(ReductionPriorityTest, OnAFastLinkNothingMoves) {
  EXPECT_EQ(CrossNodeOrder(10e9),
            "bucket_1/all_reduce\n"
            "bucket_2/all_reduce\n");
}

// gpt_dp3tp2 on 3 emulated hosts of one 2-core machine: 6 device threads on 2 cores.
TEST(ReductionPriorityTest, DevicesSharingCoresComputeSlower) {
  proto::Cluster cluster;
  cluster.set_num_nodes(3);
  cluster.set_devices_per_node(2);
  EXPECT_DOUBLE_EQ(SharedCoresSlowdown(cluster, 2), 3.0);
  EXPECT_DOUBLE_EQ(SharedCoresSlowdown(cluster, 4), 1.5);
  EXPECT_DOUBLE_EQ(SharedCoresSlowdown(cluster, 8), 1.0);  // A core per device and spare ones.
  EXPECT_DOUBLE_EQ(SharedCoresSlowdown(cluster, 0), 1.0);  // No machine line.
  // Calibrate measured the devices taking turns: 1.5 cores' worth of CPU time.
  EXPECT_DOUBLE_EQ(SharedCoresSlowdown(cluster, 1.5), 4.0);
}

}  // namespace
}  // namespace oneflow
