// The memory_planning pass on a small graph written as text: where each register's
// bytes go, and the waits that make reusing them safe.
#include "compiler/passes/memory_planning_pass.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(MemoryPlanningPassTest, RegistersWhoseLifetimesDoNotOverlapShareBytes) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kOneDeviceLinearGraph, "memory_planning");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Block 0 holds w and its momentum (persistent, 2 x 128 B). The arena holds one
  // iteration's activations in 512 B (offsets on 64-byte boundaries, largest first at
  // the lowest free offset) and 2 copies of it (register count 2): peak 256 + 1024 =
  // 1280 B, the lower bound. Three registers reuse bytes of registers dead by then:
  // scalar_mul's r9 takes r5's (read last by #7), the cross-entropy gradient's r10
  // r7's and r8's, w's gradient r11 labels' (read last by #9); so their writers wait for
  // those readers (#8 after #5 #7, #9 after #7, #10 after #4 #9).
  EXPECT_EQ(ChangedLines(*texts),
            "- device 0:0 actors=13 registers=12 collectives=0 peak=0 lower_bound=0\n"
            "- actor 0:0 #8 reduce_mean_2_grad/scalar_mul_5 compute reads r8 writes r9\n"
            "- actor 0:0 #9 sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6 compute "
            "reads r4 r1 r9 writes r10\n"
            "- actor 0:0 #10 matmul_0_grad/matmul_8 compute reads r0 r10 writes r11\n"
            "- register 0:0 r0 x 128 B x2 from #0 to #3 #10\n"
            "- register 0:0 r1 labels 16 B x2 from #0 to #4 #9\n"
            "- register 0:0 r2 w 128 B x1 from #1 to #3 #11 persistent\n"
            "- register 0:0 r3 w/momentum 128 B x1 from #2 to #11 persistent\n"
            "- register 0:0 r4 matmul_0 64 B x2 from #3 to #4 #9\n"
            "- register 0:0 r5 sparse_softmax_cross_entropy_1 16 B x2 from #4 to #5 #7\n"
            "- register 0:0 r6 reduce_mean_2 4 B x2 from #5 to #6 #12\n"
            "- register 0:0 r7 reduce_mean_2_grad/ones_like_3 4 B x2 from #6 to #7\n"
            "- register 0:0 r8 reduce_mean_2_grad/broadcast_like_4 16 B x2 from #7 to #8\n"
            "- register 0:0 r9 reduce_mean_2_grad/scalar_mul_5 16 B x2 from #8 to #9\n"
            "- register 0:0 r10 sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6 64 B x2 "
            "from #9 to #10\n"
            "- register 0:0 r11 matmul_0_grad/matmul_8 128 B x2 from #10 to #11\n"
            "+ device 0:0 actors=13 registers=12 collectives=0 peak=1280 lower_bound=1280\n"
            "+ actor 0:0 #8 reduce_mean_2_grad/scalar_mul_5 compute reads r8 writes r9 after #5 #7\n"
            "+ actor 0:0 #9 sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6 compute "
            "reads r4 r1 r9 writes r10 after #7\n"
            "+ actor 0:0 #10 matmul_0_grad/matmul_8 compute reads r0 r10 writes r11 after #4 #9\n"
            "+ register 0:0 r0 x 128 B x2 from #0 to #3 #10 at block 1 offset 0\n"
            "+ register 0:0 r1 labels 16 B x2 from #0 to #4 #9 at block 1 offset 128\n"
            "+ register 0:0 r2 w 128 B x1 from #1 to #3 #11 persistent at block 0 offset 0\n"
            "+ register 0:0 r3 w/momentum 128 B x1 from #2 to #11 persistent at block 0 offset 128\n"
            "+ register 0:0 r4 matmul_0 64 B x2 from #3 to #4 #9 at block 1 offset 192\n"
            "+ register 0:0 r5 sparse_softmax_cross_entropy_1 16 B x2 from #4 to #5 #7 at block 1 offset 256\n"
            "+ register 0:0 r6 reduce_mean_2 4 B x2 from #5 to #6 #12 at block 1 offset 320\n"
            "+ register 0:0 r7 reduce_mean_2_grad/ones_like_3 4 B x2 from #6 to #7 at block 1 offset 384\n"
            "+ register 0:0 r8 reduce_mean_2_grad/broadcast_like_4 16 B x2 from #7 to #8 at block 1 offset 448\n"
            "+ register 0:0 r9 reduce_mean_2_grad/scalar_mul_5 16 B x2 from #8 to #9 at block 1 offset 256\n"
            "+ register 0:0 r10 sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6 64 B x2 "
            "from #9 to #10 at block 1 offset 384\n"
            "+ register 0:0 r11 matmul_0_grad/matmul_8 128 B x2 from #10 to #11 at block 1 offset 128\n"
            "+ block 0:0 #0 persistent 256 B slot_stride=0\n"
            "+ block 0:0 #1 arena 1024 B slot_stride=512\n")
      << texts->after;
}

// One zig-zag ring attention step on one device (2 blocks of 128 positions, head
// dimension 8, one query row per position), its loss and its gradients.
constexpr char kRingAttentionGraph[] = R"(graph ring
placement cpu{0:0}
%q = variable f32[1, 2, 128, 8] init=xavier_uniform seed=1
%k = variable f32[1, 2, 128, 8] init=xavier_uniform seed=2
%v = variable f32[1, 2, 128, 8] init=xavier_uniform seed=3
%ring_attention_0 = ring_attention(q=%q, k=%k, v=%v, axis=1, step=0, scale=0.35, zigzag=true) f32[1, 2, 128, 9]
%reduce_mean_1 = reduce_mean(x=%ring_attention_0, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %reduce_mean_1
)";

// The ring kernels' scratch is part of the plan: each ring act declares
// RingAttentionWorkspaceFloats x 4 B, the device gets one workspace block the size of
// the largest (its compute acts run one at a time), and the peak grows by exactly that.
// Zig-zag chunks of 64 positions make tiles of 64 query rows against the block's 128
// keys: forward 64 x 128 scores + 64 x 8 = 8704 floats (34816 B), the gradients 2 x 64 x
// 128 + max(64, 64) x 8 = 16896 floats (67584 B, a multiple of 64).
TEST(MemoryPlanningPassTest, RingAttentionWorkspaceIsOneBlockAddedToThePeak) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kRingAttentionGraph, "memory_planning");
  ASSERT_TRUE(texts.ok()) << texts.status();
  std::string workspace_lines;
  for (absl::string_view line : absl::StrSplit(texts->after, '\n')) {
    if (absl::StrContains(line, "workspace")) absl::StrAppend(&workspace_lines, line, "\n");
  }
  EXPECT_EQ(workspace_lines,
            "actor 0:0 #6 ring_attention_0 compute reads r0 r1 r2 writes r6 workspace=34816 B\n"
            "actor 0:0 #11 ring_attention_0_grad/ring_attention_grad_5 compute reads r0 r1 r2 r6 r10 writes r11 "
            "after #10 workspace=67584 B\n"
            "actor 0:0 #12 ring_attention_0_grad/ring_attention_grad_6 compute reads r0 r1 r2 r6 r10 writes r12 "
            "workspace=67584 B\n"
            "actor 0:0 #13 ring_attention_0_grad/ring_attention_grad_7 compute reads r0 r1 r2 r6 r10 writes r13 "
            "workspace=67584 B\n"
            "block 0:0 #2 workspace 67584 B slot_stride=0\n")
      << texts->after;
  // Peak = the persistent block + the arena + the workspace block.
  int64_t blocks = 0;
  for (absl::string_view line : absl::StrSplit(LinesStartingWith(texts->after, "block 0:0 "), '\n')) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ');
    if (words.size() < 5) continue;
    int64_t bytes = 0;
    ASSERT_TRUE(absl::SimpleAtoi(words[4], &bytes)) << line;
    blocks += bytes;
  }
  const std::string device = LinesStartingWith(texts->after, "device 0:0 ");
  EXPECT_TRUE(absl::StrContains(device, absl::StrCat(" peak=", blocks, " "))) << device << " blocks " << blocks;
  EXPECT_FALSE(absl::StrContains(texts->before, "workspace")) << texts->before;
}

// With micro-batches the per-iteration registers (the accumulated gradient, what the
// optimizer computes from it) own their bytes outside the arena, one copy each: the next
// iteration writes them only after this one's update, which waits for every reader.
TEST(MemoryPlanningPassTest, PerIterationRegistersOfMicroBatchesHoldOneCopy) {
  absl::StatusOr<proto::Job> job = JobFromText(kOneDeviceLinearGraph);
  ASSERT_TRUE(job.ok()) << job.status();
  job->set_micro_batches(2);
  absl::StatusOr<PassTexts> texts = RunThroughPass(*job, "memory_planning");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // w_accumulate: register_count slots before, one after, in a block of its own of one
  // copy; peak = 256 B persistent + 2 x 512 B of arena + 128 B.
  EXPECT_EQ(LinesStartingWith(texts->before, "register 0:0 r12 "),
            "register 0:0 r12 w_accumulate 128 B x2 from #11 to #12\n");
  EXPECT_EQ(LinesStartingWith(texts->after, "register 0:0 r12 "),
            "register 0:0 r12 w_accumulate 128 B x1 from #11 to #12 at block 2 offset 0\n");
  EXPECT_EQ(LinesStartingWith(texts->after, "block 0:0 "),
            "block 0:0 #0 persistent 256 B slot_stride=0\n"
            "block 0:0 #1 arena 1024 B slot_stride=512\n"
            "block 0:0 #2 arena 128 B slot_stride=128 copies=1\n");
  EXPECT_TRUE(absl::StrContains(texts->after, "device 0:0 actors=14 registers=13 collectives=0 peak=1408 "))
      << texts->after;
}

// A plan whose ops declare no workspace has no workspace block and no declarations.
TEST(MemoryPlanningPassTest, NoWorkspaceBlockWithoutDeclarations) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kOneDeviceLinearGraph, "memory_planning");
  ASSERT_TRUE(texts.ok()) << texts.status();
  EXPECT_FALSE(absl::StrContains(texts->after, "workspace")) << texts->after;
}

}  // namespace
}  // namespace oneflow
