// One device's kernel seconds of an op in each SBP candidate (CandidateComputeSeconds, what
// sbp_search adds to the boxing seconds): a GEMM at the one rate, or by its shape on the
// device's slices with the cluster's GEMM shape model (sbp/gemm_shape_model.h).
#include "compiler/passes/sbp_candidates.h"

#include <string>

#include "compiler/compilation.h"
#include "compiler/compiler.h"
#include "compiler/pass_pipeline.h"
#include "compiler/passes/pass_test_util.h"
#include "compiler/standard_pipeline.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

// One product of 256 rows by a 64 x 128 weight on 2 nodes x 2 devices.
constexpr char kProduct[] = R"(graph product
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[256, 64] source=data sbp=[S(0), B]
%labels = input i32[256] source=data sbp=[S(0), B]
%w = variable f32[64, 128] init=xavier_uniform seed=1 sbp=[B, S(1)]
%w_head = variable f32[128, 4] init=xavier_uniform seed=2 sbp=[B, B]
%fc = matmul(a=%x, b=%w) f32[256, 128]
%logits = matmul(a=%fc, b=%w_head) f32[256, 4]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[256]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)";

TEST(SbpCandidatesTest, AGemmsSecondsFollowTheShapeModelOnTheDevicesSlices) {
  absl::StatusOr<proto::Job> job = JobFromText(kProduct);
  ASSERT_TRUE(job.ok()) << job.status();
  CompileOptions options = OneDeviceOptions();
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(2);
  PassPipeline pipeline = StandardPipeline();
  ASSERT_TRUE(pipeline.StopAfter("sbp_choice").ok());
  Compilation compilation;
  ASSERT_TRUE(PrepareCompilation(*job, options, &compilation).ok());
  ASSERT_TRUE(pipeline.Run(&compilation).ok());
  const LogicalGraph& graph = compilation.graph;
  const LogicalOp* fc = nullptr;
  for (const LogicalOp& op : graph.ops) {
    if (op.name == "fc") fc = &op;
  }
  ASSERT_NE(fc, nullptr);
  absl::StatusOr<OpSbpCandidates> candidates = SbpCandidatesOf(graph, *fc);
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  ASSERT_FALSE(candidates->candidates.empty());

  const ComputeRates flat = WithDefaults(ComputeRates{1e11, 1e10});
  ComputeRates peak_only = flat;
  peak_only.gemm_shape.flops_per_second = 1e11;
  ComputeRates with_call = peak_only;
  with_call.gemm_shape.call_seconds = 1e-3;
  ComputeRates with_bytes = peak_only;
  with_bytes.gemm_shape.operand_bytes_per_second = 1e9;
  bool found_column_parallel = false;
  for (const SbpCandidate& candidate : candidates->candidates) {
    const double one_rate = CandidateComputeSeconds(graph, *fc, candidate, flat);
    EXPECT_NEAR(CandidateComputeSeconds(graph, *fc, candidate, peak_only), one_rate, 1e-9 * one_rate);
    EXPECT_NEAR(CandidateComputeSeconds(graph, *fc, candidate, with_call), one_rate + 1e-3, 1e-9);
    // Rows over the nodes, the weight's columns over the devices of a node: each device
    // multiplies 128 rows by a 64 x 64 slice.
    if (candidate.inputs[0] == NdSbp({Sbp::Split(0), Sbp::Broadcast()}) &&
        candidate.inputs[1] == NdSbp({Sbp::Broadcast(), Sbp::Split(1)})) {
      found_column_parallel = true;
      EXPECT_NEAR(one_rate, 2.0 * 128 * 64 * 64 / 1e11, 1e-15);
      EXPECT_NEAR(CandidateComputeSeconds(graph, *fc, candidate, with_bytes),
                  one_rate + 4.0 * (128 * 64 + 64 * 64 + 128 * 64) / 1e9, 1e-12);
    }
  }
  EXPECT_TRUE(found_column_parallel);
}

}  // namespace
}  // namespace oneflow
