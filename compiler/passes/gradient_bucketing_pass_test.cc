// The gradient bucketing pass on small graphs written as text (oneflow_core/dsl/text):
// the graph in, the boxings and buckets after the pass out (CompilationToText), checked
// line by line.
#include "compiler/passes/gradient_bucketing_pass.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace {

proto::Cluster Cluster(int64_t nodes, int64_t devices_per_node, double inter_node_bandwidth) {
  proto::Cluster cluster;
  cluster.set_num_nodes(nodes);
  cluster.set_devices_per_node(devices_per_node);
  cluster.set_intra_node_bandwidth(100e9);
  cluster.set_inter_node_bandwidth(inter_node_bandwidth);
  return cluster;
}

// The boxing and bucket lines of the dump after gradient_bucketing (or the error), on
// 2 nodes x 2 devices whose nodes talk at `inter_node_bandwidth` bytes/s.
std::string BucketsAfterPass(const std::string& text, double bucket_mb, double inter_node_bandwidth = 10e9,
                             bool bucket_mb_given = false) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(text);
  if (!graph.ok()) return std::string(graph.status().message());
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  if (!job.ok()) return std::string(job.status().message());
  CompileOptions options;
  options.cluster = Cluster(2, 2, inter_node_bandwidth);
  options.bucket_mb = bucket_mb;
  options.bucket_mb_given = bucket_mb_given;
  options.dump_after = {"gradient_bucketing"};
  std::string dump;
  options.dump = &dump;
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  if (!plan.ok()) return std::string(plan.status().message());
  std::string lines;
  size_t start = 0;
  while (start < dump.size()) {
    size_t end = dump.find('\n', start);
    if (end == std::string::npos) end = dump.size();
    const std::string line = dump.substr(start, end - start);
    if (line.rfind("boxing#", 0) == 0 || line.rfind("bucket#", 0) == 0) lines += line + "\n";
    start = end + 1;
  }
  return lines;
}

// Two layers with a bias, data parallel over 2 nodes x 2 devices as [2, 2]: every
// gradient is [P, P]. The cost model reduces each inside the nodes first.
constexpr char kTwoDimensional[] = R"(graph dp2d
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[64, 256] source=data sbp=[S(0), S(0)]
%labels = input i32[64] source=data sbp=[S(0), S(0)]
%w1 = variable f32[256, 16] init=xavier_uniform seed=1 sbp=[B, B]
%b1 = variable f32[16] init=zeros seed=0 sbp=[B, B]
%w2 = variable f32[16, 4] init=xavier_uniform seed=2 sbp=[B, B]
%matmul_0 = matmul(a=%x, b=%w1) f32[64, 16]
%bias_add_1 = bias_add(x=%matmul_0, bias=%b1) f32[64, 16]
%relu_2 = relu(x=%bias_add_1) f32[64, 16]
%matmul_3 = matmul(a=%relu_2, b=%w2) f32[64, 4]
%sparse_softmax_cross_entropy_4 = sparse_softmax_cross_entropy(logits=%matmul_3, labels=%labels) f32[64]
%reduce_mean_5 = reduce_mean(x=%sparse_softmax_cross_entropy_4, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_5
)";

constexpr char kBoxings[] =
    "boxing#0 %matmul_0_grad/matmul_15 [P, P] @0 -> [B, B] @0: reduce_scatter[axis 1], all_reduce[axis 0], "
    "all_gather[axis 1] (24576 B/device)\n"
    "boxing#1 %bias_add_1_grad/reduce_sum_13 [P, P] @0 -> [B, B] @0: reduce_scatter[axis 1], all_reduce[axis 0], "
    "all_gather[axis 1] (96 B/device)\n"
    "boxing#2 %matmul_3_grad/matmul_11 [P, P] @0 -> [B, B] @0: reduce_scatter[axis 1], all_reduce[axis 0], "
    "all_gather[axis 1] (384 B/device)\n"
    "boxing#3 %reduce_mean_5 [P, P] @0 -> [B, B] @0: all_reduce[axis 1], all_reduce[axis 0] (16 B/device)\n";

// Step 0 of the three gradients' chains (the in-node reduce-scatters) joins one
// reduce-scatter bucket, rank-major: each of the 2 chunks holds that rank's half of w2
// (128 B), b1 (32 B, at 128) and w1 (8192 B, at 192), 8384 B a chunk. Step 1 of each
// chain (the cross-node all-reduce) then joins one all-reduce bucket, in the order the
// values are produced (the loss, then backward's gradients), after the op producing the
// last (w1's gradient); the loss's lone all-reduce on axis 1 (a bucket of one is none)
// runs on its own, early. Members pack at 64-byte offsets: each device's loss (4 B,
// whole), half of w2 (128 B), of b1 (32 B), of w1 (8192 B).
TEST(GradientBucketingPassTest, TwoDimensionalChainsBucketLevelByLevel) {
  EXPECT_EQ(BucketsAfterPass(kTwoDimensional, 25),
            absl::StrCat(kBoxings,
                         "bucket#0 level 0 reduce_scatter[axis 1] @0 after %matmul_0_grad/matmul_15: boxing#2.0, "
                         "boxing#1.0, boxing#0.0 (16768 B)\n"
                         "bucket#1 level 1 all_reduce[axis 0] @0 after %matmul_0_grad/matmul_15: boxing#3.1, "
                         "boxing#2.1, boxing#1.1, boxing#0.1 (8448 B)\n"));
}

// A limit of 4 KiB (first bucket 4 KiB too): w1's 8 KiB half travels alone, its
// reduce-scatter (16 KiB, two chunks) too; the others share a bucket at each level that
// closes before it, right after the op producing b1's gradient.
TEST(GradientBucketingPassTest, AMemberOverTheLimitTravelsAlone) {
  EXPECT_EQ(BucketsAfterPass(kTwoDimensional, 4.0 / 1024),
            absl::StrCat(kBoxings,
                         "bucket#0 level 0 reduce_scatter[axis 1] @0 after %bias_add_1_grad/reduce_sum_13: "
                         "boxing#2.0, boxing#1.0 (384 B)\n"
                         "bucket#1 level 1 all_reduce[axis 0] @0 after %bias_add_1_grad/reduce_sum_13: boxing#3.1, "
                         "boxing#2.1, boxing#1.1 (224 B)\n"));
}

// ZeRO-2 over dp=2 on one node: every gradient is P -> S(0), one reduce_scatter, and
// they share one reduce-scatter bucket (the loss's all-reduce for the sink is the only
// all-reduce: a bucket of one is none). Each rank's chunk holds its half of w2 (8 rows
// of 4: 128 B), of b1 (32 B, at 128) and of w1 (128 rows of 16: 8192 B, at 192).
constexpr char kZeroTwo[] = R"(graph zero2
placement cpu{0:0-1}[2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[64, 256] source=data sbp=[S(0)]
%labels = input i32[64] source=data sbp=[S(0)]
%w1 = variable f32[256, 16] init=xavier_uniform seed=1 sbp=[B]
%b1 = variable f32[16] init=zeros seed=0 sbp=[B]
%w2 = variable f32[16, 4] init=xavier_uniform seed=2 sbp=[B]
%matmul_0 = matmul(a=%x, b=%w1) f32[64, 16]
%bias_add_1 = bias_add(x=%matmul_0, bias=%b1) f32[64, 16]
%relu_2 = relu(x=%bias_add_1) f32[64, 16]
%matmul_3 = matmul(a=%relu_2, b=%w2) f32[64, 4]
%sparse_softmax_cross_entropy_4 = sparse_softmax_cross_entropy(logits=%matmul_3, labels=%labels) f32[64]
%reduce_mean_5 = reduce_mean(x=%sparse_softmax_cross_entropy_4, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.9 zero=2 zero_axis=0
loss %reduce_mean_5
)";

TEST(GradientBucketingPassTest, ZeroTwoReduceScattersShareABucket) {
  const std::string lines = BucketsAfterPass(kZeroTwo, 25);
  EXPECT_EQ(lines.substr(lines.find("bucket#")),
            "bucket#0 level 0 reduce_scatter[axis 0] @0 after %matmul_0_grad/matmul_15: boxing#5.0, boxing#3.0, "
            "boxing#1.0 (16768 B)\n");
}

// Buckets off: no bucket, every step on its own.
TEST(GradientBucketingPassTest, ZeroTurnsBucketsOff) { EXPECT_EQ(BucketsAfterPass(kTwoDimensional, 0), kBoxings); }


// Four 512 x 512 layers (1 MiB gradients) and a small output layer over 2 nodes x 2
// devices, every gradient a 2-D chain: in-node reduce-scatter (axis 1), cross-node
// all-reduce of the half (axis 0), in-node all-gather.
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

// The bucket lines only.
std::string BucketLines(const std::string& lines) {
  const size_t start = lines.find("bucket#");
  return start == std::string::npos ? std::string() : lines.substr(start);
}

// Boxings: #0..#3 w1..w4 (1 MiB each), #4 w5, #5 the loss. At 10 GB/s nothing caps the
// 25 MiB: the in-node reduce-scatters of w4..w1 share one 4 MiB bucket that closes after
// the last backward op (w1's gradient), and both cross-node buckets follow it there.
constexpr char kDeepFast[] =
    "bucket#0 level 0 reduce_scatter[axis 1] @0 after %matmul_0_grad/matmul_28: boxing#3.0, boxing#2.0, boxing#1.0, "
    "boxing#0.0 (4194304 B)\n"
    "bucket#1 level 1 all_reduce[axis 0] @0 after %matmul_0_grad/matmul_28: boxing#2.1, boxing#1.1, boxing#0.1 "
    "(1572864 B)\n"
    "bucket#2 level 1 all_reduce[axis 0] @0 after %matmul_0_grad/matmul_28: boxing#5.1, boxing#4.1, boxing#3.1 "
    "(528448 B)\n";

TEST(GradientBucketingPassTest, DeepChainsOnFastLinksWaitForTheEndOfBackward) {
  EXPECT_EQ(BucketLines(BucketsAfterPass(kDeep, 25)), kDeepFast);
}

// At 100 Mbit/s the cross-node all-reduces are capped at 1 MiB (40 ms move 0.49 MB; never
// below the first bucket) and the in-node reduce-scatters before them at 2 MiB (the cap x
// the 2 ranks of the tp axis: a 2 MiB register hands 1 MiB on). So the reduce-scatter
// buckets follow backward: w4 and w3 close after w3's gradient (matmul_4_grad), and the
// first cross-node bucket (the loss, w5 and w4's halves; w5's reduce-scatter alone, early)
// runs right after it, mid-backward; then w2 and w1, and the cross-node bucket of w2's and
// w1's halves at the end. Buckets in backward order at each level. w3's half (512 KiB),
// ready with w4's, does not fit beside them; alone in the open bucket it already fills
// half the 1 MiB cap, so it does not wait for w2's half, ready only when the second
// reduce-scatter bucket has run (at the end of backward): it runs on its own, right after
// the first reduce-scatter bucket (greedy packing took w3's and w2's halves together).
TEST(GradientBucketingPassTest, OnASlowLinkTwoDimensionalChainsBucketInBackwardOrder) {
  EXPECT_EQ(BucketLines(BucketsAfterPass(kDeep, 25, 12.5e6)),
            "bucket#0 level 0 reduce_scatter[axis 1] @0 after %matmul_4_grad/matmul_22: boxing#3.0, boxing#2.0 "
            "(2097152 B) limit 2097152 B\n"
            "bucket#1 level 1 all_reduce[axis 0] @0 after %matmul_4_grad/matmul_22: boxing#5.1, boxing#4.1, boxing#3.1 "
            "(528448 B) limit 1048576 B\n"
            "bucket#2 level 0 reduce_scatter[axis 1] @0 after %matmul_0_grad/matmul_28: boxing#1.0, boxing#0.0 "
            "(2097152 B) limit 2097152 B\n"
            "bucket#3 level 1 all_reduce[axis 0] @0 after %matmul_0_grad/matmul_28: boxing#1.1, boxing#0.1 "
            "(1048576 B) limit 1048576 B\n");
}

TEST(GradientBucketingPassTest, AGivenLimitIsNotCappedByTheLink) {
  EXPECT_EQ(BucketLines(BucketsAfterPass(kDeep, 25, 12.5e6, /*bucket_mb_given=*/true)), kDeepFast);
}

}  // namespace
}  // namespace oneflow
