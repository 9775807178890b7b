// Context parallelism (docs/context_parallelism.md) with Ulysses and ring attention: gpt
// and llama trained on one device against cp=2, cp=4, cp=2 x tp=2, cp=2 x pp=2 (2
// micro-batches), cp=2 x dp=2, cp=2 x tp=2 x dp=2 and cp=2 x dp=2 x pp=2, each loss
// within 1e-4 of one device's for 10 iterations (the sequence-first cp graph against the
// ordinary one; a wrong mask at a chunk edge, a position mixed up in the all-to-alls or
// the ring, or a wrong rotary angle on a chunk would change the losses); the plan's
// all-to-alls and ring send/recvs per layer; and the errors of the flags.
#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/context_parallel.h"
#include "examples/gpt/gpt_model.h"
#include "examples/llama/llama_model.h"
#include "gtest/gtest.h"
#include "tests/loss_curves.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

constexpr int kIterations = 10;

struct Layout {
  const char* name;
  int64_t cp = 1, tp = 1, pp = 1, micro_batches = 1, dp = 1;
  const char* cp_attention = "auto";
  const char* cp_ring_split = "contiguous";
  int64_t batch = 2;  // The models' --batch.
};

absl::StatusOr<ParallelLayout> MakeLayout(const Layout& l) {
  ParallelFlags flags;
  flags.devices_per_node = l.dp * l.tp * l.cp * l.pp;
  flags.dp = l.dp;
  flags.tp = l.tp;
  flags.cp = l.cp;
  flags.cp_attention = l.cp_attention;
  flags.cp_ring_split = l.cp_ring_split;
  flags.pp = l.pp;
  flags.micro_batches = l.micro_batches;
  return ParallelLayout::Create(flags);
}

// 2 blocks, sequences of 16 (4 positions per device at cp=4), 4 heads.
examples::GptConfig TinyGpt() {
  examples::GptConfig config;
  config.batch = 2;
  config.seq = 16;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 32;
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  return config;
}

// 8 query heads over 4 kv heads (grouped-query), head dimension 8.
examples::LlamaConfig TinyLlama() {
  examples::LlamaConfig config;
  config.batch = 2;
  config.seq = 16;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 8;
  config.kv_heads = 4;
  config.ffn_hidden = 48;
  config.vocab = 32;
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  return config;
}

absl::StatusOr<proto::Job> Build(bool gpt, const ParallelLayout& layout, int64_t batch = 2) {
  examples::GptConfig gpt_config = TinyGpt();
  gpt_config.batch = batch;
  examples::LlamaConfig llama_config = TinyLlama();
  llama_config.batch = batch;
  return gpt ? examples::BuildGpt(gpt_config, layout) : examples::BuildLlama(llama_config, layout);
}

absl::StatusOr<proto::Plan> CompileModel(bool gpt, const Layout& l) {
  absl::StatusOr<ParallelLayout> layout = MakeLayout(l);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<proto::Job> job = Build(gpt, *layout, l.batch);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  return Compile(*job, options);
}

std::vector<double> Train(bool gpt, const Layout& l) {
  absl::StatusOr<proto::Plan> plan = CompileModel(gpt, l);
  EXPECT_TRUE(plan.ok()) << l.name << ": " << plan.status();
  if (!plan.ok()) return {};
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = kIterations;
  train.progress_timeout = std::chrono::milliseconds(20000);
  train.collective_timeout = absl::Seconds(20);
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  EXPECT_TRUE(result.ok()) << l.name << ": " << result.status();
  std::vector<double> losses;
  if (result.ok()) {
    for (const actors::IterationMetrics& m : result->iterations) losses.push_back(m.loss);
  }
  return losses;
}

const std::vector<Layout>& CpLayouts() {
  static const std::vector<Layout> layouts = {
      {"cp=2 ulysses", 2, 1, 1, 1, 1, "ulysses"},
      {"cp=4 ulysses", 4, 1, 1, 1, 1, "ulysses"},
      {"cp=2 x tp=2 ulysses", 2, 2, 1, 1, 1, "ulysses"},
      {"cp=2 x pp=2 x 2 micro-batches ulysses", 2, 1, 2, 2, 1, "ulysses"},
      {"cp=2 auto", 2},
  };
  return layouts;
}

// Ring attention (RingAttention): the K/V blocks travel the ring, the queries stay; the
// sequence in zig-zag blocks (the default) and contiguous ones. At cp=4 each device holds
// 16 / 8 = 2 positions per zig-zag chunk, so every chunk edge is a causal-mask edge.
const std::vector<Layout>& RingLayouts() {
  static const std::vector<Layout> layouts = {
      {"cp=2 ring", 2, 1, 1, 1, 1, "ring"},
      {"cp=4 ring", 4, 1, 1, 1, 1, "ring"},
      {"cp=2 x tp=2 ring", 2, 2, 1, 1, 1, "ring"},
      {"cp=2 x pp=2 x 2 micro-batches ring", 2, 1, 2, 2, 1, "ring"},
      {"cp=2 ring zig-zag", 2, 1, 1, 1, 1, "ring", "zigzag"},
      {"cp=4 ring zig-zag", 4, 1, 1, 1, 1, "ring", "zigzag"},
      {"cp=2 x tp=2 ring zig-zag", 2, 2, 1, 1, 1, "ring", "zigzag"},
      {"cp=2 x pp=2 x 2 micro-batches ring zig-zag", 2, 1, 2, 2, 1, "ring", "zigzag"},
      // One device, attention as one ring step (the blockwise kernel in its planned
      // workspace) against the plain attention core of the reference.
      {"1 device ring", 1, 1, 1, 1, 1, "ring"},
      {"1 device ring zig-zag", 1, 1, 1, 1, 1, "ring", "zigzag"},
  };
  return layouts;
}

// cp x dp: each data-parallel group's positions stacked along the sequence axis
// (SequenceFirst), so the rows are split by batch group over dp and, nested, by position
// over cp. Batch 4: two rows per group, so a wrong interleaving of the groups' rows and
// positions would mix sequences and change the losses.
const std::vector<Layout>& CpWithDpLayouts() {
  static const std::vector<Layout> layouts = {
      {"cp=2 x dp=2 ulysses", 2, 1, 1, 1, 2, "ulysses", "contiguous", 4},
      {"cp=2 x dp=2 ring zig-zag", 2, 1, 1, 1, 2, "ring", "zigzag", 4},
      {"cp=2 x dp=2 ring", 2, 1, 1, 1, 2, "ring", "contiguous", 4},
      {"cp=2 x dp=2 ulysses", 2, 1, 1, 1, 2, "ulysses", "contiguous", 4},
  };
  return layouts;
}

// gpt on the first two layouts, llama on the last two (each layout's code path is the
// models' shared SequenceFirst and attention; the split keeps the test short).
TEST(ContextParallelTest, CpWithDpFollowsTheOneDeviceCurve) {
  for (bool gpt : {true, false}) {
    const std::vector<double> reference = Train(gpt, {"1 device", 1, 1, 1, 1, 1, "auto", "contiguous", 4});
    for (size_t i = gpt ? 0 : 2; i < (gpt ? 2u : 4u); ++i) {
      const Layout& layout = CpWithDpLayouts()[i];
      EXPECT_TRUE(testing::MatchesReference(Train(gpt, layout), reference, kIterations))
          << (gpt ? "gpt " : "llama ") << layout.name;
    }
  }
}

// cp with dp and a third axis: tp (a [dp, tp, cp] hierarchy on 8 devices: heads over tp,
// then over cp, the batch over dp) and pp (two stages of [dp, cp], 2 micro-batches of 4
// sequences, 2 per data-parallel group). Batch 8: the micro-batch's rows 0-3 and 4-7 go
// to different iterations' halves, so mixing micro-batches or dp groups changes the
// losses. gpt and llama take one scheme each per layout (Ulysses' all-to-alls on the cp
// axis of the three-axis hierarchy, the ring's send/recvs between stages' rotated
// placements).
const std::vector<std::pair<bool, Layout>>& CpWithDpAndAThirdAxisLayouts() {
  static const std::vector<std::pair<bool, Layout>> layouts = {
      {true, {"cp=2 x tp=2 x dp=2 ulysses", 2, 2, 1, 1, 2, "ulysses", "contiguous", 8}},
      {false, {"cp=2 x tp=2 x dp=2 ring", 2, 2, 1, 1, 2, "ring", "contiguous", 8}},
      {true, {"cp=2 x dp=2 x pp=2 x 2 micro-batches ring zig-zag", 2, 1, 2, 2, 2, "ring", "zigzag", 8}},
      {false, {"cp=2 x dp=2 x pp=2 x 2 micro-batches ulysses", 2, 1, 2, 2, 2, "ulysses", "contiguous", 8}},
  };
  return layouts;
}

TEST(ContextParallelTest, CpWithDpAndTpOrPpFollowsTheOneDeviceCurve) {
  std::map<bool, std::vector<double>> references;
  for (bool gpt : {true, false}) {
    references[gpt] = Train(gpt, {"1 device", 1, 1, 1, 1, 1, "auto", "contiguous", 8});
  }
  for (const auto& [gpt, layout] : CpWithDpAndAThirdAxisLayouts()) {
    EXPECT_TRUE(testing::MatchesReference(Train(gpt, layout), references[gpt], kIterations))
        << (gpt ? "gpt " : "llama ") << layout.name;
  }
}

// No collective carries an activation across dp: the weights' gradients are the only
// data-parallel traffic, as at dp = 1 (the position split and the batch split nest).
TEST(ContextParallelTest, CpWithDpAddsOnlyTheGradientReductions) {
  for (bool gpt : {true, false}) {
    for (const char* attention : {"ulysses", "ring"}) {
      const Layout alone{"cp=2", 2, 1, 1, 1, 1, attention, "contiguous", 4};
      const Layout with_dp{"cp=2 x dp=2", 2, 1, 1, 1, 2, attention, "contiguous", 4};
      absl::StatusOr<proto::Plan> plan_alone = CompileModel(gpt, alone);
      absl::StatusOr<proto::Plan> plan_dp = CompileModel(gpt, with_dp);
      ASSERT_TRUE(plan_alone.ok()) << plan_alone.status();
      ASSERT_TRUE(plan_dp.ok()) << plan_dp.status();
      auto activation_steps = [](const proto::Plan& plan) {
        int64_t steps = 0;
        for (const proto::BoxingDef& boxing : plan.boxings()) {
          if (boxing.consumer_op().find("_update") != std::string::npos || boxing.consumer_op() == "loss_sink") continue;
          for (const proto::BoxingStepDef& step : boxing.steps()) steps += step.bytes_per_device() > 0;
        }
        return steps;
      };
      const std::string name = std::string(gpt ? "gpt " : "llama ") + attention;
      EXPECT_GT(activation_steps(*plan_alone), 0) << name;
      EXPECT_EQ(activation_steps(*plan_dp), activation_steps(*plan_alone)) << name;
    }
  }
}

TEST(ContextParallelTest, GptRingFollowsTheOneDeviceCurve) {
  const std::vector<double> reference = Train(/*gpt=*/true, {"1 device"});
  for (const Layout& layout : RingLayouts()) {
    EXPECT_TRUE(testing::MatchesReference(Train(/*gpt=*/true, layout), reference, kIterations))
        << "gpt " << layout.name;
  }
}

TEST(ContextParallelTest, LlamaRingFollowsTheOneDeviceCurve) {
  const std::vector<double> reference = Train(/*gpt=*/false, {"1 device"});
  for (const Layout& layout : RingLayouts()) {
    EXPECT_TRUE(testing::MatchesReference(Train(/*gpt=*/false, layout), reference, kIterations))
        << "llama " << layout.name;
  }
}

TEST(ContextParallelTest, GptEveryCpLayoutFollowsTheOneDeviceCurve) {
  const std::vector<double> reference = Train(/*gpt=*/true, {"1 device"});
  for (const Layout& layout : CpLayouts()) {
    EXPECT_TRUE(testing::MatchesReference(Train(/*gpt=*/true, layout), reference, kIterations))
        << "gpt " << layout.name;
  }
}

TEST(ContextParallelTest, LlamaEveryCpLayoutFollowsTheOneDeviceCurve) {
  const std::vector<double> reference = Train(/*gpt=*/false, {"1 device"});
  for (const Layout& layout : CpLayouts()) {
    EXPECT_TRUE(testing::MatchesReference(Train(/*gpt=*/false, layout), reference, kIterations))
        << "llama " << layout.name;
  }
}

// Ulysses' communication is the compiler's all-to-all boxing: in the forward pass of each
// block, q, k and v go from positions to heads over cp and the attention context back,
// four all-to-alls per block and no other collective on an activation; nothing of the
// sequence is gathered whole. The backward mirrors it (the layouts pinned for both passes,
// context_parallel.cc): four more all-to-alls per block, and no reduce-scatter or
// all-gather on an activation or its gradient (a free S -> P boxing there would leave a
// full-size partial sum of the scores' or the rows' gradient on every device); only the
// weights' gradients are reduced over cp.
TEST(ContextParallelTest, UlyssesIsFourAllToAllsPerBlockInEachPass) {
  for (bool gpt : {true, false}) {
    absl::StatusOr<proto::Plan> plan = CompileModel(gpt, {"cp=2", 2, 1, 1, 1, 1, "ulysses"});
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::map<std::string, std::string> block_of_op;
    for (const proto::OpDef& op : plan->job().ops()) block_of_op[op.name()] = op.block();
    std::map<std::string, int> all_to_alls;
    int forward_gathers = 0, all_to_alls_in_all = 0, scatters_or_gathers_in_all = 0;
    for (const proto::BoxingDef& boxing : plan->boxings()) {
      // Into an optimizer step: a weight's gradient (gpt's position embedding's is split
      // by position, and all-gathered for its replicated update).
      if (boxing.consumer_op().find("_update") != std::string::npos) continue;
      for (const proto::BoxingStepDef& step : boxing.steps()) {
        if (step.kind() == proto::STEP_ALL_TO_ALL) ++all_to_alls_in_all;
        if (step.kind() == proto::STEP_REDUCE_SCATTER || step.kind() == proto::STEP_ALL_GATHER) {
          ++scatters_or_gathers_in_all;
        }
      }
    }
    for (const proto::BoxingDef& boxing : plan->boxings()) {
      const std::string& consumer = boxing.consumer_op();
      if (consumer.find("_grad") != std::string::npos || consumer.find("_update") != std::string::npos ||
          consumer == "loss_sink") {
        continue;
      }
      for (const proto::BoxingStepDef& step : boxing.steps()) {
        if (step.kind() == proto::STEP_ALL_TO_ALL) ++all_to_alls[block_of_op[consumer]];
        if (step.kind() == proto::STEP_ALL_GATHER || step.kind() == proto::STEP_ALL_REDUCE) ++forward_gathers;
      }
    }
    const std::string prefix = gpt ? "block" : "layers";
    EXPECT_EQ(all_to_alls.size(), 2u) << (gpt ? "gpt" : "llama");
    for (int layer = 0; layer < 2; ++layer) {
      EXPECT_EQ(all_to_alls[prefix + std::to_string(layer)], 4) << (gpt ? "gpt " : "llama ") << prefix << layer;
    }
    EXPECT_EQ(forward_gathers, 0) << (gpt ? "gpt" : "llama");
    EXPECT_EQ(all_to_alls_in_all, 2 * 4 * 2) << (gpt ? "gpt" : "llama");
    EXPECT_EQ(scatters_or_gathers_in_all, 0) << (gpt ? "gpt" : "llama");
  }
}

// Ring attention's communication is one send/recv per ring step of each of k and v, from
// the placement into its rotation (compiler/ring_shift.h): at cp=4 three steps, six per
// block forward; backward k and v travel the ring again with dk and dv alongside: three
// shifts of each of k and v, the first of which reuses the forward's delivered block (the
// compiler boxes a tensor once per destination), so two send/recvs each, and four of each
// of dk and dv (the last brings them home): 12 per block; no all-to-all and no
// gather of an activation or its gradient. Its bytes per layer, as `oneflow inspect`
// reads them from the plan, equal the ring formula of the cost model.
// Both splits: the zig-zag reorder of the tokens and targets (integers, whole per cp
// device) and of gpt's position embedding moves nothing, so the zig-zag plan holds the
// contiguous plan's collectives and no other.
TEST(ContextParallelTest, RingIsOneSendRecvPerStepOfKAndV) {
  for (const char* split : {"contiguous", "zigzag"}) {
  for (bool gpt : {true, false}) {
    const Layout layout{"cp=4 ring", 4, 1, 1, 1, 1, "ring", split};
    absl::StatusOr<proto::Plan> plan = CompileModel(gpt, layout);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::map<std::string, const proto::OpDef*> ops;
    for (const proto::OpDef& op : plan->job().ops()) ops[op.name()] = &op;
    int forward = 0, backward = 0, other = 0;
    for (const proto::BoxingDef& boxing : plan->boxings()) {
      // Weights' gradients into their updates, the loss into the loss sink.
      if (boxing.consumer_op().find("_update") != std::string::npos || boxing.consumer_op() == "loss_sink") continue;
      const proto::OpDef* consumer = ops.count(boxing.consumer_op()) ? ops[boxing.consumer_op()] : nullptr;
      for (const proto::BoxingStepDef& step : boxing.steps()) {
        if (step.bytes_per_device() == 0) continue;
        if (step.kind() == proto::STEP_SEND_RECV && consumer != nullptr && consumer->type() == "ring_shift") {
          (boxing.consumer_op().find("_grad") == std::string::npos ? forward : backward) += 1;
        } else {
          ++other;
          ADD_FAILURE() << boxing.tensor() << " into " << boxing.consumer_op() << ": " << boxing.reason();
        }
      }
    }
    const std::string model = std::string(gpt ? "gpt " : "llama ") + split;
    EXPECT_EQ(forward, 2 * 3 * 2) << model;  // 2 blocks x 3 steps x (k, v)
    EXPECT_EQ(backward, 2 * (2 * 2 + 4 * 2)) << model;  // 2 blocks x (2 x (k, v) + 4 x (dk, dv))
    EXPECT_EQ(other, 0) << model;
    absl::StatusOr<ParallelLayout> parallel = MakeLayout(layout);
    ASSERT_TRUE(parallel.ok()) << parallel.status();
    const examples::AttentionShape shape =
        gpt ? examples::AttentionShape{2, 16, 32, 4, 4, "heads"} : examples::AttentionShape{2, 16, 64, 8, 4, "kv_heads"};
    const double formula = examples::EstimateCpAttention(shape, *parallel).ring_bytes;
    const std::vector<examples::CpLayerTraffic> layers = examples::CpAttentionTraffic(*plan);
    ASSERT_EQ(layers.size(), 2u) << model;
    for (const examples::CpLayerTraffic& layer : layers) {
      EXPECT_EQ(layer.attention, "ring");
      EXPECT_EQ(layer.collectives, 6) << layer.block;
      EXPECT_EQ(static_cast<double>(layer.bytes_per_device), formula) << layer.block;
    }
  }
  }
}

// Ring attention's backward keeps nothing of the forward's steps: it passes k and v around
// the ring again (ring_attention_result's gradient) and recomputes each step's
// probabilities from the merged log-sum-exp. So no backward op reads a forward step's
// result or running merge, and no step gradient reads a K/V block the forward shifted:
// per device the backward holds q, k, v and the merged result, one block each, not cp
// blocks of K/V and cp step results (the autograd of the steps one by one would keep
// those, and this test fails on it).
TEST(ContextParallelTest, RingBackwardPassesKAndVAroundTheRingAgain) {
  for (bool gpt : {true, false}) {
    absl::StatusOr<proto::Plan> plan = CompileModel(gpt, {"cp=4 ring", 4, 1, 1, 1, 1, "ring", "zigzag"});
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::map<std::string, const proto::OpDef*> producer;
    for (const proto::OpDef& op : plan->job().ops()) {
      for (const auto& [arg, tensor] : op.outputs()) producer[tensor] = &op;
    }
    auto backward = [](const proto::OpDef& op) { return op.name().find("_grad") != std::string::npos; };
    int step_gradients = 0, backward_shifts = 0;
    for (const proto::OpDef& op : plan->job().ops()) {
      if (!backward(op)) continue;
      step_gradients += op.type() == "ring_attention_grad";
      backward_shifts += op.type() == "ring_shift";
      for (const auto& [arg, tensor] : op.inputs()) {
        auto from = producer.find(tensor);
        if (from == producer.end() || backward(*from->second)) continue;
        const std::string& type = from->second->type();
        EXPECT_NE(type, "ring_attention") << op.name() << " reads the forward step " << tensor;
        EXPECT_NE(type, "ring_attention_merge") << op.name() << " reads the forward merge " << tensor;
        if (op.type() == "ring_attention_grad") {
          EXPECT_NE(type, "ring_shift") << op.name() << " reads the forward's shifted block " << tensor;
        }
      }
    }
    const char* model = gpt ? "gpt" : "llama";
    EXPECT_EQ(step_gradients, 2 * 4 * 3) << model;       // 2 blocks x 4 steps x (dq, dk, dv)
    EXPECT_EQ(backward_shifts, 2 * (2 * 3 + 2 * 4)) << model;  // (k, v) x 3 and (dk, dv) x 4 per block
  }
}

// Memory planning's peak per device (DevicePlan.peak_bytes, the ring kernels' workspace
// block included): at cp=4 a device holds its quarter of a 4x longer sequence in about
// one device's memory for the same kernel (one ring step over the whole sequence,
// --cp_attention=ring at cp=1), for ring and for Ulysses: every activation kept for the
// backward is O(N / cp) per device. (Ring's backward keeping every step's K/V block, or
// Ulysses' local attention keeping its heads' [s, s] probabilities, adds what grows
// with N, and this fails: the code before the change planned 1.82x for ring and 37.8x
// for Ulysses.) Llama with 8 heads over 4 kv heads, 2 blocks, whose weights are small
// next to its activations at these lengths; measured 1.077x (ring) and 1.005x (Ulysses).
TEST(ContextParallelTest, Cp4HoldsFourTimesTheSequenceOfOneDevice) {
  auto peak = [](const Layout& l, int64_t seq) -> int64_t {
    absl::StatusOr<ParallelLayout> layout = MakeLayout(l);
    EXPECT_TRUE(layout.ok()) << layout.status();
    if (!layout.ok()) return 0;
    examples::LlamaConfig config = TinyLlama();
    config.seq = seq;
    absl::StatusOr<proto::Job> job = examples::BuildLlama(config, *layout);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return 0;
    CompileOptions options;
    options.cluster = layout->cluster();
    absl::StatusOr<proto::Plan> plan = Compile(*job, options);
    EXPECT_TRUE(plan.ok()) << l.name << ": " << plan.status();
    if (!plan.ok()) return 0;
    int64_t bytes = 0;
    for (const proto::DevicePlan& device : plan->devices()) {
      bytes = std::max(bytes, device.peak_bytes());
    }
    return bytes;
  };
  constexpr int64_t kSeq = 512;
  const int64_t one = peak({"1 device ring", 1, 1, 1, 1, 1, "ring"}, kSeq);
  ASSERT_GT(one, 0);
  for (const Layout& layout : {Layout{"cp=4 ring zig-zag", 4, 1, 1, 1, 1, "ring", "zigzag"},
                               Layout{"cp=4 ulysses", 4, 1, 1, 1, 1, "ulysses"}}) {
    const int64_t four = peak(layout, 4 * kSeq);
    EXPECT_LT(static_cast<double>(four), 1.15 * static_cast<double>(one)) << layout.name << ": " << four << " B at "
                                                                         << 4 * kSeq << " positions vs one device's "
                                                                         << one << " B at " << kSeq;
  }
}

// All the collectives of a plan, weights' gradients included: the zig-zag plan has as
// many as the contiguous one (the reorder adds none), at cp=4 and at cp=2 x dp=2, except
// gpt's position embedding under dp: its gradient, taken in zig-zag order, is one more
// reduction (a reduce-scatter) before its update.
TEST(ContextParallelTest, ZigZagPlanHasTheContiguousPlansCollectives) {
  for (bool gpt : {true, false}) {
    for (const Layout& base : {Layout{"cp=4 ring", 4, 1, 1, 1, 1, "ring"},
                               Layout{"cp=2 x dp=2 ring", 2, 1, 1, 1, 2, "ring", "contiguous", 4}}) {
      Layout zigzag = base;
      zigzag.cp_ring_split = "zigzag";
      absl::StatusOr<proto::Plan> contiguous_plan = CompileModel(gpt, base);
      absl::StatusOr<proto::Plan> zigzag_plan = CompileModel(gpt, zigzag);
      ASSERT_TRUE(contiguous_plan.ok()) << contiguous_plan.status();
      ASSERT_TRUE(zigzag_plan.ok()) << zigzag_plan.status();
      auto collectives = [](const proto::Plan& plan) {
        int64_t steps = 0;
        for (const proto::BoxingDef& boxing : plan.boxings()) {
          for (const proto::BoxingStepDef& step : boxing.steps()) steps += step.bytes_per_device() > 0;
        }
        return steps;
      };
      const std::string name = std::string(gpt ? "gpt " : "llama ") + base.name;
      EXPECT_GT(collectives(*contiguous_plan), 0) << name;
      const int64_t position_embedding = gpt && base.dp > 1 ? 1 : 0;
      EXPECT_EQ(collectives(*zigzag_plan), collectives(*contiguous_plan) + position_embedding) << name;
    }
  }
}

// The work each cp rank's ring steps compute (the fused ring_attention ops skip the tiles
// the causal mask hides), as `oneflow inspect` reads it from the plan: contiguous blocks
// at cp=4 give rank r r + 1 of its 4 block pairs (rank 3 four times rank 0's work);
// zig-zag blocks (two chunks per rank, 16 chunk pairs over the 4 steps) give every rank
// 3 tiles at step 0 (two diagonal chunks and the late chunk against the early one) and 2
// at each later step, 9 of 16: equal work, the causal half (plus the diagonal) skipped.
TEST(ContextParallelTest, RingSkipsMaskedTilesAndZigZagBalancesThem) {
  for (bool gpt : {true, false}) {
    const char* model = gpt ? "gpt" : "llama";
    absl::StatusOr<proto::Plan> contiguous = CompileModel(gpt, {"cp=4", 4, 1, 1, 1, 1, "ring", "contiguous"});
    ASSERT_TRUE(contiguous.ok()) << contiguous.status();
    absl::StatusOr<proto::Plan> zigzag = CompileModel(gpt, {"cp=4", 4, 1, 1, 1, 1, "ring", "zigzag"});
    ASSERT_TRUE(zigzag.ok()) << zigzag.status();
    const std::vector<examples::CpLayerTraffic> contiguous_layers = examples::CpAttentionTraffic(*contiguous);
    const std::vector<examples::CpLayerTraffic> zigzag_layers = examples::CpAttentionTraffic(*zigzag);
    ASSERT_EQ(contiguous_layers.size(), 2u) << model;
    ASSERT_EQ(zigzag_layers.size(), 2u) << model;
    for (const examples::CpLayerTraffic& layer : contiguous_layers) {
      EXPECT_FALSE(layer.ring_zigzag);
      EXPECT_EQ(layer.ring_tiles_per_rank, (std::vector<int64_t>{1, 2, 3, 4})) << model << " " << layer.block;
      EXPECT_EQ(layer.ring_tiles_per_rank_total, 4) << model;
    }
    for (const examples::CpLayerTraffic& layer : zigzag_layers) {
      EXPECT_TRUE(layer.ring_zigzag);
      EXPECT_EQ(layer.ring_tiles_per_rank, (std::vector<int64_t>{9, 9, 9, 9})) << model << " " << layer.block;
      EXPECT_EQ(layer.ring_tiles_per_rank_total, 16) << model;
    }
    // The backward recomputes each step's probabilities and skips the same tiles: one
    // gradient op per input of each forward step, with the step's attributes.
    int forward = 0, backward = 0;
    for (const proto::OpDef& op : zigzag->job().ops()) {
      forward += op.type() == "ring_attention";
      backward += op.type() == "ring_attention_grad" && op.attrs().at("zigzag").b();
    }
    EXPECT_EQ(forward, 2 * 4) << model;  // 2 blocks x 4 steps
    EXPECT_EQ(backward, 3 * forward) << model;
  }
}

TEST(ContextParallelTest, BytesPerLayerFollowTheFormulas) {
  absl::StatusOr<ParallelLayout> layout = MakeLayout({"cp=4", 4});
  ASSERT_TRUE(layout.ok()) << layout.status();
  // N = 2 x 16 tokens, h = 32, multi-head: Ulysses 3/4 x 8 x (2 x 32 + 2 x 32) x 4 B;
  // ring 3 x 8 x 2 x 32 x 4 B.
  const examples::CpAttentionCost cost = examples::EstimateCpAttention({2, 16, 32, 4, 4, "heads"}, *layout);
  EXPECT_DOUBLE_EQ(cost.ulysses_bytes, 3072);
  EXPECT_DOUBLE_EQ(cost.ring_bytes, 6144);
  EXPECT_EQ(cost.choice, examples::CpAttention::kUlysses);
  // Grouped-query attention with 2 kv heads of 4 at cp=2: ring moves fewer bytes, and
  // auto takes it.
  absl::StatusOr<ParallelLayout> cp2 = MakeLayout({"cp=2", 2});
  ASSERT_TRUE(cp2.ok()) << cp2.status();
  const examples::CpAttentionCost grouped = examples::EstimateCpAttention({2, 16, 32, 4, 2, "kv_heads"}, *cp2);
  EXPECT_EQ(grouped.choice, examples::CpAttention::kRing) << grouped.reason;
  absl::StatusOr<examples::CpAttention> resolved =
      examples::ResolveCpAttention({2, 16, 32, 4, 2, "kv_heads"}, *cp2);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, examples::CpAttention::kRing);
  // 2 kv heads at cp=4: Ulysses cannot split them, auto takes ring.
  absl::StatusOr<examples::CpAttention> undivided =
      examples::ResolveCpAttention({2, 16, 32, 4, 2, "kv_heads"}, *layout);
  ASSERT_TRUE(undivided.ok()) << undivided.status();
  EXPECT_EQ(*undivided, examples::CpAttention::kRing);
}

// What `oneflow inspect` prints per block (examples/common/cp_traffic.h), read from the
// plan's boxings next to the tagged transposes, equals the Ulysses formula of the cost
// model: gpt cp=2 (multi-head) and llama cp=2 x tp=2 (grouped-query, heads over tp).
TEST(ContextParallelTest, PlannedUlyssesBytesPerLayerEqualTheFormula) {
  for (bool gpt : {true, false}) {
    const Layout layout = gpt ? Layout{"cp=2", 2, 1, 1, 1, 1, "ulysses"} : Layout{"cp=2 x tp=2", 2, 2, 1, 1, 1, "ulysses"};
    absl::StatusOr<proto::Plan> plan = CompileModel(gpt, layout);
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<ParallelLayout> parallel = MakeLayout(layout);
    ASSERT_TRUE(parallel.ok()) << parallel.status();
    const examples::AttentionShape shape =
        gpt ? examples::AttentionShape{2, 16, 32, 4, 4, "heads"} : examples::AttentionShape{2, 16, 64, 8, 4, "kv_heads"};
    const double formula = examples::EstimateCpAttention(shape, *parallel).ulysses_bytes;
    const std::vector<examples::CpLayerTraffic> layers = examples::CpAttentionTraffic(*plan);
    ASSERT_EQ(layers.size(), 2u) << (gpt ? "gpt" : "llama");
    for (const examples::CpLayerTraffic& layer : layers) {
      EXPECT_EQ(layer.attention, "ulysses");
      EXPECT_EQ(layer.collectives, 4) << layer.block;
      EXPECT_EQ(static_cast<double>(layer.bytes_per_device), formula) << layer.block;
    }
    EXPECT_EQ(layers[0].block, gpt ? "block0" : "layers0");
  }
  absl::StatusOr<proto::Plan> one = CompileModel(true, {"1 device"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(examples::CpAttentionTraffic(*one).empty());
}

absl::Status BuildStatus(bool gpt, const Layout& l, int64_t seq, int64_t kv_heads = 4) {
  absl::StatusOr<ParallelLayout> layout = MakeLayout(l);
  if (!layout.ok()) return layout.status();
  if (gpt) {
    examples::GptConfig config = TinyGpt();
    config.seq = seq;
    return examples::BuildGpt(config, *layout).status();
  }
  examples::LlamaConfig config = TinyLlama();
  config.seq = seq;
  config.kv_heads = kv_heads;
  return examples::BuildLlama(config, *layout).status();
}

TEST(ContextParallelTest, BadInputIsRefusedNamingTheFlags) {
  absl::Status uneven = BuildStatus(true, {"cp=4", 4}, 10);
  EXPECT_EQ(uneven.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(uneven.message(),
            "--seq=10 is not divisible by --cp=4: every context-parallel device needs as many positions; use a --seq "
            "that is a multiple of 4");
  absl::Status heads = BuildStatus(false, {"cp=4 ulysses", 4, 1, 1, 1, 1, "ulysses"}, 16, 2);
  EXPECT_EQ(heads.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(heads.message(),
            "--cp_attention=ulysses splits the kv heads over --tp=1 x --cp=4, but --kv_heads=2 is not divisible by "
            "4; use a --cp that divides --kv_heads / --tp");
  absl::Status ring_uneven = BuildStatus(false, {"cp=4 ring", 4, 1, 1, 1, 1, "ring"}, 18);
  EXPECT_EQ(ring_uneven.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ring_uneven.message(),
            "--seq=18 is not divisible by --cp=4: every context-parallel device needs as many positions; use a --seq "
            "that is a multiple of 4");
  // Zig-zag: two chunks per device.
  absl::Status zigzag_uneven = BuildStatus(false, {"cp=4 ring", 4, 1, 1, 1, 1, "ring", "zigzag"}, 12);
  EXPECT_EQ(zigzag_uneven.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(zigzag_uneven.message(),
            "--cp_ring_split=zigzag gives every context-parallel device two chunks of the sequence, but --seq=12 is "
            "not divisible by 2 x --cp=8; use a --seq that is a multiple of 8, or --cp_ring_split=contiguous");
  EXPECT_TRUE(BuildStatus(false, {"cp=4 ring", 4, 1, 1, 1, 1, "ring", "contiguous"}, 12).ok());
  absl::Status split = MakeLayout({"cp=2", 2, 1, 1, 1, 1, "ring", "striped"}).status();
  EXPECT_EQ(split.message(), "--cp_ring_split=striped is not one of: zigzag, contiguous");
  // Ring needs no head split: 2 kv heads at cp=4 build.
  EXPECT_TRUE(BuildStatus(false, {"cp=4 ring", 4, 1, 1, 1, 1, "ring"}, 16, 2).ok());
  absl::StatusOr<ParallelLayout> ring_tp = MakeLayout({"cp=2 x tp=2 ring", 2, 2, 1, 1, 1, "ring"});
  ASSERT_TRUE(ring_tp.ok()) << ring_tp.status();
  absl::Status ring_heads = examples::ResolveCpAttention({2, 16, 48, 6, 3, "kv_heads"}, *ring_tp).status();
  EXPECT_EQ(ring_heads.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ring_heads.message(),
            "--cp_attention=ring keeps whole kv heads on each --tp device, but --kv_heads=3 is not divisible by --tp=2");
  absl::Status unknown = MakeLayout({"cp=2", 2, 1, 1, 1, 1, "striped"}).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.message(), "--cp_attention=striped is not one of: ulysses, ring, auto");
  absl::StatusOr<ParallelLayout> dp4 = MakeLayout({"cp=2 x dp=4", 2, 1, 1, 1, 4});
  ASSERT_TRUE(dp4.ok()) << dp4.status();
  absl::Status uneven_batch = examples::ResolveCpAttention({2, 16, 32, 4, 4, "heads"}, *dp4).status();
  EXPECT_EQ(uneven_batch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(uneven_batch.message(),
            "--batch gives 2 rows per micro-batch, not divisible by --dp=4: with --cp every data-parallel group holds "
            "whole sequences of an equal share of the batch; use a --batch that is a multiple of --dp x "
            "--micro_batches");
  ParallelFlags zero_flags;
  zero_flags.cp = 0;
  absl::Status zero = ParallelLayout::Create(zero_flags).status();
  EXPECT_EQ(zero.message(), "--cp=0 must be >= 1");
  ParallelFlags flags;
  flags.devices_per_node = 4;
  flags.cp = 2;
  absl::Status devices = ParallelLayout::Create(flags).status();
  EXPECT_EQ(devices.message(),
            "--dp=1 x --tp=1 x --cp=2 is 2 devices, but --nodes=1 x --devices_per_node=4 is 4; they must match");
}

}  // namespace
}  // namespace oneflow
