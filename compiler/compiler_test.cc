// The compiler on small graphs written as text (oneflow_core/dsl/text), XLA style: the
// graph in, the state after a pass out, checked line by line; and every bad input with
// its exact message.
#include "compiler/compiler.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace {

proto::Cluster Cluster(int64_t nodes, int64_t devices_per_node) {
  proto::Cluster cluster;
  cluster.set_num_nodes(nodes);
  cluster.set_devices_per_node(devices_per_node);
  cluster.set_intra_node_bandwidth(100e9);
  cluster.set_inter_node_bandwidth(10e9);
  return cluster;
}

proto::Job Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(text);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<proto::Job> job = (*graph)->Build();
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

// Compiles and returns the dump after `pass` (or the error).
std::string DumpAfter(const std::string& text, const std::string& pass, const proto::Cluster& cluster,
                      CompressionMode compression = CompressionMode::kOff) {
  CompileOptions options;
  options.cluster = cluster;
  options.compression.mode = compression;
  options.dump_after = {pass};
  std::string dump;
  options.dump = &dump;
  absl::StatusOr<proto::Plan> plan = Compile(Parse(text), options);
  if (!plan.ok()) return std::string(plan.status().message());
  return dump;
}

// A Megatron pair on 2 devices, inference only: the column-parallel matmul needs no
// traffic, the row-parallel one leaves a partial sum that relu cannot take.
constexpr char kTensorParallel[] = R"(graph tp
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%w1 = variable f32[16, 32] init=xavier_uniform seed=1 sbp=S(1)
%w2 = variable f32[32, 4] init=xavier_uniform seed=2 sbp=S(0)
%matmul_0 = matmul(a=%x, b=%w1) f32[8, 32]
%relu_1 = relu(x=%matmul_0) f32[8, 32]
%matmul_2 = matmul(a=%relu_1, b=%w2) f32[8, 4]
%relu_3 = relu(x=%matmul_2) f32[8, 4]
)";

TEST(CompilerTest, SbpChoiceFollowsMegatronHints) {
  EXPECT_EQ(DumpAfter(kTensorParallel, "boxing_insertion", Cluster(1, 2)),
            "=== after boxing_insertion (changed)\n"
            "placement #0 cpu{0:0-1}\n"
            "input %x: f32[8, 16] B @0\n"
            "variable %w1: f32[16, 32] S(1) @0\n"
            "variable %w2: f32[32, 4] S(0) @0\n"
            "%matmul_0: f32[8, 32] S(1) = matmul(a=%x:B, b=%w1:S(1)) @0\n"
            "%relu_1: f32[8, 32] S(1) = relu(x=%matmul_0:S(1)) @0\n"
            "%matmul_2: f32[8, 4] P = matmul(a=%relu_1:S(1), b=%w2:S(0)) @0\n"
            "%relu_3: f32[8, 4] S(0) = relu(x=%matmul_2:S(0) via boxing#0) @0\n"
            "boxing#0 %matmul_2 P @0 -> S(0) @0: reduce_scatter[axis 0] (64 B/device)\n");
}

TEST(CompilerTest, CrossNodeAxisPrefersTheCheapLinks) {
  // Data parallel over 2 nodes x 2 devices as [2, 2]: the gradient of w is P on both
  // axes; reducing within nodes first (reduce-scatter on axis 1) sends only half of the
  // 4096 bytes over the slow links: 2048 + 2048 + 2048 bytes per device in all.
  const std::string text = R"(graph dp
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[64, 256] source=data sbp=[S(0), S(0)]
%labels = input i32[64] source=data sbp=[S(0), S(0)]
%w = variable f32[256, 4] init=xavier_uniform seed=1 sbp=[B, B]
%matmul_0 = matmul(a=%x, b=%w) f32[64, 4]
%sparse_softmax_cross_entropy_1 = sparse_softmax_cross_entropy(logits=%matmul_0, labels=%labels) f32[64]
%reduce_mean_2 = reduce_mean(x=%sparse_softmax_cross_entropy_1, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_2
)";
  const std::string dump = DumpAfter(text, "boxing_insertion", Cluster(2, 2));
  EXPECT_NE(dump.find("boxing#0 %matmul_0_grad/matmul_"), std::string::npos) << dump;
  EXPECT_NE(dump.find(" [P, P] @0 -> [B, B] @0: reduce_scatter[axis 1], all_reduce[axis 0], "
                      "all_gather[axis 1] (6144 B/device)"),
            std::string::npos)
      << dump;
}

proto::Cluster SlowNetwork(int64_t nodes, int64_t devices_per_node) {
  proto::Cluster cluster = Cluster(nodes, devices_per_node);
  cluster.set_inter_node_bandwidth(1.25e8);
  return cluster;
}

// Automatic compression over a slow network: the data-parallel gradient above, reduced
// inside nodes first, crosses nodes compressed (one device per node in each axis-0
// group); the steps inside nodes stay dense. Not int4 G=128 hadamard: under SGD without
// error feedback its measured training gap is outside auto's accuracy bound
// (sbp/codec_accuracy.h), so int8 G=128, which the reduction and the gather use alike:
// one compressed all-reduce across the nodes, 2048 + 528 + 2048 bytes per device (512
// elements as int8 with four f32 scales, reduced and gathered). Before session 68 the
// reduction's int8 was G=512 hadamard and the gather's G=128, so the planner split it
// into a reduce-scatter and an all-gather (4620 B).
TEST(CompilerTest, AutomaticCompressionShowsInTheBoxingDump) {
  const std::string text = R"(graph dp
placement cpu{0:0-1, 1:0-1}[2, 2]
source data synthetic_classification seed=1 num_classes=4
%x = input f32[64, 256] source=data sbp=[S(0), S(0)]
%labels = input i32[64] source=data sbp=[S(0), S(0)]
%w = variable f32[256, 4] init=xavier_uniform seed=1 sbp=[B, B]
%matmul_0 = matmul(a=%x, b=%w) f32[64, 4]
%sparse_softmax_cross_entropy_1 = sparse_softmax_cross_entropy(logits=%matmul_0, labels=%labels) f32[64]
%reduce_mean_2 = reduce_mean(x=%sparse_softmax_cross_entropy_1, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0
loss %reduce_mean_2
)";
  const std::string dump = DumpAfter(text, "boxing_insertion", SlowNetwork(2, 2), CompressionMode::kAuto);
  EXPECT_NE(dump.find(" [P, P] @0 -> [B, B] @0: reduce_scatter[axis 1], all_reduce[axis 0]{int8 G=128}, "
                      "all_gather[axis 1] (4624 B/device)"),
            std::string::npos)
      << dump;
}

// The Megatron pair with its devices on two nodes: the partial activation crosses the
// slow link as rotated FP8 E4M3, TACO's codec (its 16 elements as 16 bytes and one f32
// scale), unless the tensor's hint says otherwise.
TEST(CompilerTest, ActivationsCompressAsRotatedFp8UnlessHinted) {
  std::string text = kTensorParallel;
  text.replace(text.find("cpu{0:0-1}"), 10, "cpu{0:0, 1:0}");
  const std::string dump = DumpAfter(text, "boxing_insertion", SlowNetwork(2, 1), CompressionMode::kAuto);
  EXPECT_NE(dump.find("boxing#0 %matmul_2 P @0 -> S(0) @0: reduce_scatter[axis 0]{fp8e4m3 G=128 hadamard} (20 B/device)"),
            std::string::npos)
      << dump;
  text.replace(text.find("f32[8, 4]\n%relu_3"), 9, "f32[8, 4] compression=none");
  EXPECT_NE(DumpAfter(text, "boxing_insertion", SlowNetwork(2, 1), CompressionMode::kAuto)
                .find("boxing#0 %matmul_2 P @0 -> S(0) @0: reduce_scatter[axis 0] (64 B/device)"),
            std::string::npos);
}

// Data parallel over 2 devices: two reshapes in a row of the matmul's S(0) output, whose
// slices are the matmul's bytes (a chain of views), and a reshape of a variable, which
// keeps its copy (the variable's update writes it in place).
constexpr char kReshapes[] = R"(graph views
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data sbp=S(0)
%w = variable f32[16, 64] init=xavier_uniform seed=1
%v = variable f32[4, 4] init=xavier_uniform seed=2
%matmul_0 = matmul(a=%x, b=%w) f32[8, 64]
%reshape_1 = reshape(x=%matmul_0, shape=[8, 8, 8]) f32[8, 8, 8]
%reshape_2 = reshape(x=%reshape_1, shape=[512]) f32[512]
%reduce_sum_3 = reduce_sum(x=%reshape_2, axes=[], keep_dims=false) f32[]
%reshape_4 = reshape(x=%v, shape=[16]) f32[16] sbp=B
%relu_5 = relu(x=%reshape_4) f32[16] sbp=B
)";

const proto::RegisterDef& RegisterOf(const proto::DevicePlan& device, const std::string& tensor) {
  for (const proto::RegisterDef& reg : device.registers()) {
    if (reg.tensor() == tensor) return reg;
  }
  ADD_FAILURE() << "no register holds " << tensor;
  return device.registers(0);
}

TEST(CompilerTest, ReshapesOfActivationsAreViews) {
  CompileOptions options;
  options.cluster = Cluster(1, 2);
  const absl::StatusOr<proto::Plan> plan = Compile(Parse(kReshapes), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const proto::DevicePlan& device : plan->devices()) {
    const proto::RegisterDef& matmul = RegisterOf(device, "matmul_0");
    const proto::RegisterDef& first = RegisterOf(device, "reshape_1");
    const proto::RegisterDef& second = RegisterOf(device, "reshape_2");
    EXPECT_FALSE(matmul.has_alias_of());
    EXPECT_EQ(first.alias_of(), matmul.id());
    EXPECT_EQ(second.alias_of(), first.id());  // A chain, ending at the matmul's bytes.
    for (const proto::RegisterDef* view : {&first, &second}) {
      EXPECT_EQ(view->size_bytes(), 1024);  // [4, 64] f32 on each device.
      EXPECT_EQ(view->memory_block(), matmul.memory_block());
      EXPECT_EQ(view->offset(), matmul.offset());
    }
    EXPECT_FALSE(RegisterOf(device, "reshape_4").has_alias_of());
    // reshape_4's copy reuses the matmul's bytes: it waits for the last reader of the
    // view at the end of the chain (reduce_sum_3), not only for the matmul's own
    // consumer (reshape_1).
    const int64_t first_actor = device.actors(0).id();
    const proto::RegisterDef& copy = RegisterOf(device, "reshape_4");
    ASSERT_EQ(copy.offset(), matmul.offset());
    const proto::ActorDef& writer = device.actors(static_cast<int>(copy.producer_actor() - first_actor));
    const proto::ActorDef& reader = device.actors(static_cast<int>(second.consumer_actors(0) - first_actor));
    EXPECT_EQ(reader.name(), "reduce_sum_3");
    EXPECT_NE(std::find(writer.control_predecessors().begin(), writer.control_predecessors().end(), reader.id()),
              writer.control_predecessors().end());
  }
}

// Per device: persistent w (4096 B) and v (64 B), then 2 slots of the arena, whose
// fullest moment is the matmul (x's 256 B and its own 1024 B): 4160 + 2 x 1280. Copies
// would hold a second 1024 B at each reshape: a lower bound of 4160 + 2 x 2048.
TEST(CompilerTest, ViewsTakeNoMemory) {
  const std::string dump = DumpAfter(kReshapes, "memory_planning", Cluster(1, 2));
  EXPECT_NE(dump.find("device 0:0 actors=9 registers=9 collectives=0 peak=6720 lower_bound=6720\n"),
            std::string::npos)
      << dump;
}

// An mlp layer pair with biases, data parallel on 2 devices, and a tensor-parallel pair
// whose second product is a partial sum.
constexpr char kBiasedLayers[] = R"(graph biased
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data sbp=S(0)
%labels = input i32[8] source=data sbp=S(0)
%w1 = variable f32[16, 32] init=xavier_uniform seed=1
%b1 = variable f32[32] init=zeros seed=0
%w2 = variable f32[32, 4] init=xavier_uniform seed=2
%b2 = variable f32[4] init=zeros seed=0
%matmul_0 = matmul(a=%x, b=%w1) f32[8, 32]
%bias_add_1 = bias_add(x=%matmul_0, bias=%b1) f32[8, 32]
%relu_2 = relu(x=%bias_add_1) f32[8, 32]
%matmul_3 = matmul(a=%relu_2, b=%w2) f32[8, 4]
%bias_add_4 = bias_add(x=%matmul_3, bias=%b2) f32[8, 4]
%sparse_softmax_cross_entropy_5 = sparse_softmax_cross_entropy(logits=%bias_add_4, labels=%labels) f32[8]
)";

// The fused op of each op in the plan's job, by the op's name: its type and whether it
// applies relu.
std::string OpSummary(const proto::Plan& plan, const std::string& name) {
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.name() != name) continue;
    auto relu = op.attrs().find("relu");
    return op.type() + (relu != op.attrs().end() && relu->second.b() ? " relu" : "");
  }
  return "none";
}

// Data parallel: both products fuse, the first with its relu, the second (read by the
// loss) with its bias only.
TEST(CompilerTest, EpilogueFusionFusesBiasAndRelu) {
  EXPECT_EQ(DumpAfter(kBiasedLayers, "epilogue_fusion", Cluster(1, 2)),
            "=== after epilogue_fusion (changed)\n"
            "placement #0 cpu{0:0-1}\n"
            "input %x: f32[8, 16] S(0) @0\n"
            "input %labels: i32[8] S(0) @0\n"
            "variable %w1: f32[16, 32] B @0\n"
            "variable %b1: f32[32] B @0\n"
            "variable %w2: f32[32, 4] B @0\n"
            "variable %b2: f32[4] B @0\n"
            "%relu_2: f32[8, 32] S(0) = fused_matmul_bias(a=%x:S(0), b=%w1:B, bias=%b1:B) @0\n"
            "%bias_add_4: f32[8, 4] S(0) = fused_matmul_bias(a=%relu_2:S(0), b=%w2:B, bias=%b2:B) @0\n"
            "%sparse_softmax_cross_entropy_5: f32[8] S(0) = sparse_softmax_cross_entropy("
            "logits=%bias_add_4:S(0), labels=%labels:S(0)) @0\n");
  CompileOptions options;
  options.cluster = Cluster(1, 2);
  const absl::StatusOr<proto::Plan> plan = Compile(Parse(kBiasedLayers), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(OpSummary(*plan, "matmul_0"), "fused_matmul_bias relu");
  EXPECT_EQ(OpSummary(*plan, "matmul_3"), "fused_matmul_bias");
  EXPECT_EQ(OpSummary(*plan, "bias_add_1"), "none");
  EXPECT_EQ(OpSummary(*plan, "relu_2"), "none");
  options.fuse_epilogues = false;
  const absl::StatusOr<proto::Plan> unfused = Compile(Parse(kBiasedLayers), options);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ(OpSummary(*unfused, "matmul_0"), "matmul");
  EXPECT_EQ(OpSummary(*unfused, "bias_add_1"), "bias_add");
  EXPECT_EQ(OpSummary(*unfused, "relu_2"), "relu");
}

// Megatron: the column-parallel product fuses with its S(0) bias and relu; the
// row-parallel one leaves a partial sum, to which each device adds its part of the bias
// (B -> P keeps the bias on one device, zeros elsewhere) before the one reduction.
TEST(CompilerTest, EpilogueFusionOfTensorParallelProducts) {
  std::string tp = kBiasedLayers;
  tp.replace(tp.find("seed=1\n"), 7, "seed=1 sbp=S(1)\n");
  tp.replace(tp.find("init=zeros seed=0\n"), 18, "init=zeros seed=0 sbp=S(0)\n");
  tp.replace(tp.find("seed=2\n"), 7, "seed=2 sbp=S(0)\n");
  EXPECT_EQ(DumpAfter(tp, "boxing_insertion", Cluster(1, 2)),
            "=== after boxing_insertion (changed)\n"
            "placement #0 cpu{0:0-1}\n"
            "input %x: f32[8, 16] S(0) @0\n"
            "input %labels: i32[8] S(0) @0\n"
            "variable %w1: f32[16, 32] S(1) @0\n"
            "variable %b1: f32[32] S(0) @0\n"
            "variable %w2: f32[32, 4] S(0) @0\n"
            "variable %b2: f32[4] B @0\n"
            "%relu_2: f32[8, 32] S(1) = fused_matmul_bias(a=%x:B via boxing#0, b=%w1:S(1), bias=%b1:S(0)) @0\n"
            "%bias_add_4: f32[8, 4] P = fused_matmul_bias(a=%relu_2:S(1), b=%w2:S(0), bias=%b2:P via boxing#1) @0\n"
            "%sparse_softmax_cross_entropy_5: f32[8] S(0) = sparse_softmax_cross_entropy("
            "logits=%bias_add_4:S(0) via boxing#2, labels=%labels:S(0)) @0\n"
            "boxing#0 %x S(0) @0 -> B @0: all_gather[axis 0] (256 B/device)\n"
            "boxing#1 %b2 B @0 -> P @0: local_partial[axis 0] (0 B/device)\n"
            "boxing#2 %bias_add_4 P @0 -> S(0) @0: reduce_scatter[axis 0] (64 B/device)\n");
}

// A tensor the user put a hint on stays: here the first product's output.
TEST(CompilerTest, EpilogueFusionKeepsHintedTensors) {
  std::string hinted = kBiasedLayers;
  hinted.replace(hinted.find("f32[8, 32]\n"), 11, "f32[8, 32] sbp=S(0)\n");
  const std::string dump = DumpAfter(hinted, "epilogue_fusion", Cluster(1, 2));
  EXPECT_NE(dump.find("%matmul_0: f32[8, 32] S(0) = matmul(a=%x:S(0), b=%w1:B) @0\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("%relu_2: f32[8, 32] S(0) = relu(x=%bias_add_1:S(0)) @0\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("%bias_add_4: f32[8, 4] S(0) = fused_matmul_bias("), std::string::npos) << dump;
}

TEST(CompilerErrorsTest, CompressionHintOnAnIntegerTensor) {
  const std::string text = R"(graph hinted
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%labels = input i32[8] source=data compression=int4
%w = variable f32[16, 4] init=xavier_uniform seed=1
%matmul_0 = matmul(a=%x, b=%w) f32[8, 4]
%sparse_softmax_cross_entropy_1 = sparse_softmax_cross_entropy(logits=%matmul_0, labels=%labels) f32[8]
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 2), CompressionMode::kAuto),
            "compression hint int4 on tensor 'labels' (i32, produced by data source 'data'): only floating tensors "
            "compress, and compressed boxing runs on f32; remove the hint");
}

TEST(CompilerErrorsTest, HintWithTheWrongNumberOfAxes) {
  const std::string text = R"(graph bad
placement cpu{0:0-3}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data sbp=[S(0), B]
%relu_0 = relu(x=%x) f32[8, 16]
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 4)),
            "sbp hint [S(0), B] of tensor 'x' has 2 axes but its placement cpu{0:0-3} has 1; "
            "give one SBP per hierarchy axis");
}

TEST(CompilerErrorsTest, PartialHintOnAVariable) {
  const std::string text = R"(graph bad
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%w = variable f32[16, 4] init=xavier_uniform seed=1 sbp=P
%matmul_0 = matmul(a=%x, b=%w) f32[8, 4]
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 2)),
            "sbp hint P of variable 'w' is partial (P) on axis 0: a variable is stored whole or in slices; "
            "give B or S(i) on every axis");
}

TEST(CompilerErrorsTest, HintSplittingAnAxisTheTensorLacks) {
  const std::string text = R"(graph bad
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data sbp=S(2)
%relu_0 = relu(x=%x) f32[8, 16]
)";
  const std::string message = DumpAfter(text, "sbp_choice", Cluster(1, 2));
  EXPECT_EQ(message.rfind("sbp hint of tensor 'x': ", 0), 0u) << message;
  EXPECT_NE(message.find("S(2)"), std::string::npos) << message;
}

TEST(CompilerErrorsTest, PlacementOutsideTheCluster) {
  const std::string text = R"(graph bad
placement cpu{0:0-7}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%relu_0 = relu(x=%x) f32[8, 16]
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 4)),
            "placement cpu{0:0-7} of tensor 'x' uses device cpu 0:4, which is not in the "
            "cluster cpu{0:0-3}");
}

TEST(CompilerErrorsTest, OutputHintNoSignatureProduces) {
  const std::string text = R"(graph bad
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%relu_0 = relu(x=%x) f32[8, 16] sbp=P
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 2)),
            "op 'relu_0' (relu) cannot produce the hinted SBP of its output (relu_0: P); its "
            "1-D signatures are: S(0) -> S(0); S(1) -> S(1); B -> B");
}

TEST(CompilerErrorsTest, UnknownPassToDump) {
  EXPECT_EQ(DumpAfter(kTensorParallel, "sbp", Cluster(1, 2)),
            "dump_after names unknown pass 'sbp'; passes: shape_inference, autograd, gradient_accumulation, "
            "optimizer, dead_op_elimination, sbp_choice, sbp_search, epilogue_fusion, precision, recompute, activation_storage, boxing_insertion, gradient_bucketing, "
            "lowering, pipeline_schedule, actor_graph, collective_ordering, memory_planning, plan_emission (or all)");
}

TEST(CompilerErrorsTest, EmptyCluster) {
  CompileOptions options;
  options.cluster = Cluster(0, 4);
  EXPECT_EQ(Compile(Parse(kTensorParallel), options).status().message(),
            "cluster has 0 nodes x 4 devices; both must be >= 1");
}

TEST(CompilerErrorsTest, OptimizerWithoutLoss) {
  const std::string text = R"(graph bad
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%w = variable f32[16, 4] init=zeros
%matmul_0 = matmul(a=%x, b=%w) f32[8, 4]
optimizer sgd lr=0.1 momentum=0.0
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 2)),
            "job 'bad' has an optimizer but no loss; call Graph::SetLoss");
}

TEST(CompilerErrorsTest, BadLearningRateSchedule) {
  const std::string text = R"(graph bad
placement cpu{0:0-1}
source data synthetic_classification seed=1 num_classes=4
%x = input f32[8, 16] source=data
%w = variable f32[16, 4] init=zeros
%matmul_0 = matmul(a=%x, b=%w) f32[8, 4]
%reduce_mean_1 = reduce_mean(x=%matmul_0, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1 momentum=0.0 schedule=warmup_cosine warmup=100 total=50 min_lr=0.0
loss %reduce_mean_1
)";
  EXPECT_EQ(DumpAfter(text, "sbp_choice", Cluster(1, 2)),
            "warmup-cosine schedule warmup_steps=100 total_steps=50 min_lr=0 base_lr=0.1 is "
            "invalid; need 0 <= warmup_steps < total_steps and 0 <= min_lr <= base_lr");
}

}  // namespace
}  // namespace oneflow
