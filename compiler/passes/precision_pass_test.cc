// The precision pass on a small graph written as text: the state after the pass, line by
// line, for fp32 (nothing marked) and bf16 (every product, forward and backward, marked;
// nothing else), and the attribute as the plan carries it to the kernels.
#include "compiler/passes/precision_pass.h"

#include <string>

#include "compiler/compiler.h"
#include "compiler/passes/pass_test_util.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace {

absl::StatusOr<proto::Plan> CompileText(Precision precision, std::string* dump) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(kOneDeviceTwoLayerGraph);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster.set_num_nodes(1);
  options.cluster.set_devices_per_node(1);
  options.cluster.set_intra_node_bandwidth(100e9);
  options.cluster.set_inter_node_bandwidth(10e9);
  options.precision = precision;
  options.dump_after = {"precision"};
  options.dump = dump;
  return Compile(*job, options);
}

// The dump's op lines (those with " = ").
std::string OpLines(const std::string& dump) {
  std::string lines;
  size_t begin = 0;
  while (begin < dump.size()) {
    const size_t end = dump.find('\n', begin);
    const std::string line = dump.substr(begin, end - begin);
    if (line.find(" = ") != std::string::npos && line.rfind("boxing#", 0) != 0) lines += line + "\n";
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return lines;
}

TEST(PrecisionPassTest, Fp32ChangesNothing) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(Precision::kFp32, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(dump.find("=== after precision (unchanged)"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("compute="), std::string::npos) << dump;
  for (const proto::OpDef& op : plan->job().ops()) EXPECT_EQ(op.attrs().count("compute_dtype"), 0u) << op.name();
}

TEST(PrecisionPassTest, Bf16MarksEveryProductAndNothingElse) {
  std::string dump;
  absl::StatusOr<proto::Plan> plan = CompileText(Precision::kBf16, &dump);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(dump.find("=== after precision (changed)"), std::string::npos) << dump;
  // The fused forward product, the second forward product and the three gradient
  // products (x, an input, gets none) compute in bf16; the loss, its gradient, relu's and
  // the bias's gradients and the optimizer stay fp32.
  EXPECT_EQ(OpLines(dump),
            "%relu_2: f32[4, 8] S(0) = fused_matmul_bias(a=%x:S(0), b=%w1:B, bias=%b1:B) compute=bf16 @0\n"
            "%matmul_3: f32[4, 4] S(0) = matmul(a=%relu_2:S(0), b=%w2:B) compute=bf16 @0\n"
            "%sparse_softmax_cross_entropy_4: f32[4] S(0) = sparse_softmax_cross_entropy(logits=%matmul_3:S(0), "
            "labels=%labels:S(0)) @0\n"
            "%reduce_mean_5: f32[] B = reduce_mean(x=%sparse_softmax_cross_entropy_4:B) @0\n"
            "%reduce_mean_5_grad/ones_like_6: f32[] B = ones_like(x=%reduce_mean_5:B) @0\n"
            "%reduce_mean_5_grad/broadcast_like_7: f32[4] S(0) = broadcast_like(x=%reduce_mean_5_grad/ones_like_6:B, "
            "like=%sparse_softmax_cross_entropy_4:S(0)) @0\n"
            "%reduce_mean_5_grad/scalar_mul_8: f32[4] S(0) = scalar_mul(x=%reduce_mean_5_grad/broadcast_like_7:S(0)) @0\n"
            "%sparse_softmax_cross_entropy_4_grad/sparse_softmax_cross_entropy_grad_9: f32[4, 4] S(0) = "
            "sparse_softmax_cross_entropy_grad(logits=%matmul_3:S(0), labels=%labels:S(0), "
            "dy=%reduce_mean_5_grad/scalar_mul_8:S(0)) @0\n"
            "%matmul_3_grad/matmul_10: f32[4, 8] S(0) = matmul(a=%sparse_softmax_cross_entropy_4_grad/"
            "sparse_softmax_cross_entropy_grad_9:S(0), b=%w2:B) compute=bf16 @0\n"
            "%matmul_3_grad/matmul_11: f32[8, 4] S(0) = matmul(a=%relu_2:S(1), b=%sparse_softmax_cross_entropy_4_grad/"
            "sparse_softmax_cross_entropy_grad_9:B) compute=bf16 @0\n"
            "%relu_2_grad/relu_grad_12: f32[4, 8] S(0) = relu_grad(dy=%matmul_3_grad/matmul_10:S(0), y=%relu_2:S(0)) @0\n"
            "%bias_add_1_grad/reduce_sum_13: f32[8] S(0) = reduce_sum(x=%relu_2_grad/relu_grad_12:S(1)) @0\n"
            "%matmul_0_grad/matmul_15: f32[8, 8] S(0) = matmul(a=%x:S(1), b=%relu_2_grad/relu_grad_12:B) compute=bf16 @0\n"
            "op w1_update/sgd_update_16 = sgd_update(param=%w1:S(0), grad=%matmul_0_grad/matmul_15:S(0), "
            "momentum=%w1/momentum:S(0)) @0\n"
            "op b1_update/sgd_update_17 = sgd_update(param=%b1:S(0), grad=%bias_add_1_grad/reduce_sum_13:S(0), "
            "momentum=%b1/momentum:S(0)) @0\n"
            "op w2_update/sgd_update_18 = sgd_update(param=%w2:S(0), grad=%matmul_3_grad/matmul_11:S(0), "
            "momentum=%w2/momentum:S(0)) @0\n")
      << dump;
}

}  // namespace
}  // namespace oneflow
