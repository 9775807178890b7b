// The precision pass on a small graph written as text: the state after the pass, line by
// line, for fp32 (nothing marked) and bf16 (every product, forward and backward, marked;
// nothing else), and the attribute as the plan carries it to the kernels.
#include "compiler/passes/precision_pass.h"

#include <string>

#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace {

// matmul -> bias_add -> relu (fused by epilogue_fusion), then a second matmul and the loss.
constexpr char kTwoLayers[] = R"(graph two_layers
placement cpu{0:0}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[4, 8] source=data
%labels = input i32[4] source=data
%w1 = variable f32[8, 8] init=xavier_uniform seed=1
%b1 = variable f32[8] init=zeros
%w2 = variable f32[8, 4] init=xavier_uniform seed=2
%matmul_0 = matmul(a=%x, b=%w1) f32[4, 8]
%bias_add_1 = bias_add(x=%matmul_0, bias=%b1) f32[4, 8]
%relu_2 = relu(x=%bias_add_1) f32[4, 8]
%matmul_3 = matmul(a=%relu_2, b=%w2) f32[4, 4]
%sparse_softmax_cross_entropy_4 = sparse_softmax_cross_entropy(logits=%matmul_3, labels=%labels) f32[4]
%reduce_mean_5 = reduce_mean(x=%sparse_softmax_cross_entropy_4, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_5
)";

absl::StatusOr<proto::Plan> CompileText(Precision precision, std::string* dump) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(kTwoLayers);
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
  // The fused forward product, the second forward product and the four gradient products
  // compute in bf16; the loss, the relu and bias gradients and the optimizer stay fp32.
  EXPECT_EQ(OpLines(dump),
            "%matmul_0: f32[4, 8] S(0) = fused_matmul_bias(a=%x:S(0), b=%w1:B, bias=%b1:B) compute=bf16 @0\n"
            "%matmul_3: f32[4, 4] S(0) = matmul(a=%matmul_0:S(0), b=%w2:B) compute=bf16 @0\n"
            "%sparse_softmax_cross_entropy_4: f32[4] S(0) = sparse_softmax_cross_entropy(logits=%matmul_3:S(0), "
            "labels=%labels:S(0)) @0\n"
            "%reduce_mean_5: f32[] P = reduce_mean(x=%sparse_softmax_cross_entropy_4:S(0)) @0\n")
      << dump;
}

}  // namespace
}  // namespace oneflow
