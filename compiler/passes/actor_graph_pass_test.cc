// The actor_graph pass on small graphs written as text: the actors and registers it
// makes of each device's program.
#include "compiler/passes/actor_graph_pass.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(ActorGraphPassTest, OneActorPerNodeAndOneRegisterPerOutput) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kOneDeviceLinearGraph, "actor_graph");
  ASSERT_TRUE(texts.ok()) << texts.status();
  // One actor per node of the program, in its order; one register per output, read by
  // the actors of the ops that take it. Activations get the default 2 slots (the next
  // iteration may start while one is read), variables one persistent slot. The update
  // of w waits for w's other reader (matmul_0, #3) though it reads no register of it.
  // Nothing is placed in memory yet (no blocks, peak 0).
  EXPECT_EQ(ChangedLines(*texts),
            "+ device 0:0 actors=13 registers=12 collectives=0 peak=0 lower_bound=0\n"
            "+ actor 0:0 #0 data_source/data data_source reads - writes r0 r1\n"
            "+ actor 0:0 #1 w variable reads - writes r2\n"
            "+ actor 0:0 #2 w/momentum variable reads - writes r3\n"
            "+ actor 0:0 #3 matmul_0 compute reads r0 r2 writes r4\n"
            "+ actor 0:0 #4 sparse_softmax_cross_entropy_1 compute reads r4 r1 writes r5\n"
            "+ actor 0:0 #5 reduce_mean_2 compute reads r5 writes r6\n"
            "+ actor 0:0 #6 reduce_mean_2_grad/ones_like_3 compute reads r6 writes r7\n"
            "+ actor 0:0 #7 reduce_mean_2_grad/broadcast_like_4 compute reads r7 r5 writes r8\n"
            "+ actor 0:0 #8 reduce_mean_2_grad/scalar_mul_5 compute reads r8 writes r9\n"
            "+ actor 0:0 #9 sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6 compute "
            "reads r4 r1 r9 writes r10\n"
            "+ actor 0:0 #10 matmul_0_grad/matmul_8 compute reads r0 r10 writes r11\n"
            "+ actor 0:0 #11 w_update/sgd_update_9 compute reads r2 r11 r3 writes - after #3\n"
            "+ actor 0:0 #12 loss_sink sink reads r6 writes -\n"
            "+ register 0:0 r0 x 128 B x2 from #0 to #3 #10\n"
            "+ register 0:0 r1 labels 16 B x2 from #0 to #4 #9\n"
            "+ register 0:0 r2 w 128 B x1 from #1 to #3 #11 persistent\n"
            "+ register 0:0 r3 w/momentum 128 B x1 from #2 to #11 persistent\n"
            "+ register 0:0 r4 matmul_0 64 B x2 from #3 to #4 #9\n"
            "+ register 0:0 r5 sparse_softmax_cross_entropy_1 16 B x2 from #4 to #5 #7\n"
            "+ register 0:0 r6 reduce_mean_2 4 B x2 from #5 to #6 #12\n"
            "+ register 0:0 r7 reduce_mean_2_grad/ones_like_3 4 B x2 from #6 to #7\n"
            "+ register 0:0 r8 reduce_mean_2_grad/broadcast_like_4 16 B x2 from #7 to #8\n"
            "+ register 0:0 r9 reduce_mean_2_grad/scalar_mul_5 16 B x2 from #8 to #9\n"
            "+ register 0:0 r10 sparse_softmax_cross_entropy_1_grad/sparse_softmax_cross_entropy_grad_6 64 B x2 "
            "from #9 to #10\n"
            "+ register 0:0 r11 matmul_0_grad/matmul_8 128 B x2 from #10 to #11\n")
      << texts->after;
}

TEST(ActorGraphPassTest, TheBucketRunsOnTheCommunicationThreadIntoOneRegisterWithAViewPerMember) {
  absl::StatusOr<PassTexts> texts = RunThroughPass(kTwoDeviceLinearGraph, "actor_graph", TwoDeviceOptions());
  ASSERT_TRUE(texts.ok()) << texts.status();
  // Device 0:1's actors are numbered after 0:0's (ids are unique in the plan). Its
  // bucket all-reduce reads the loss (r8) and w's partial gradient (r13), runs on the
  // communication thread, and writes one 192-byte register: the loss at offset 0 and the
  // gradient at 64 (members pack at 64-byte offsets) are views of it, read by the sink
  // and the update. The slices (boxing#0, #1) are local boxing actors on the compute thread.
  EXPECT_EQ(LinesStartingWith(texts->after, "actor 0:1 #19 "),
            "actor 0:1 #19 x/boxing_0/local_slice boxing reads r0 writes r4\n");
  EXPECT_EQ(LinesStartingWith(texts->after, "actor 0:1 #29 "),
            "actor 0:1 #29 bucket_0/all_reduce boxing thread=communication reads r8 r13 writes r14 r15 r16\n");
  EXPECT_EQ(absl::StrCat(LinesStartingWith(texts->after, "register 0:1 r14 "),
                         LinesStartingWith(texts->after, "register 0:1 r15 "),
                         LinesStartingWith(texts->after, "register 0:1 r16 ")),
            "register 0:1 r14 bucket_0 192 B x2 from #29 to -\n"
            "register 0:1 r15 reduce_mean_2/boxing_3/0 4 B x2 from #29 to #31 view of r14 +0\n"
            "register 0:1 r16 matmul_0_grad/matmul_8/boxing_2/0 128 B x2 from #29 to #30 view of r14 +64\n")
      << texts->after;
}

}  // namespace
}  // namespace oneflow
