// The cost model's activations are those backward reads (compiler/auto_parallel/
// kept_activations.h), found in the compiled probe plan: the attention's scores before
// their softmax die in forward (scale, mask and softmax need no input in backward), the
// softmax's output and the attention's q and k are kept; and the bytes the plan keeps
// fit in its arena's slot.
#include <string>

#include "absl/container/flat_hash_map.h"
#include "compiler/auto_parallel/kept_activations.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "gtest/gtest.h"
#include "tests/auto_parallel_testing.h"

namespace oneflow {
namespace {

struct Counted {
  proto::Job job;
  proto::Plan plan;
  auto_parallel::ModelProfile profile;
};

// The search's probe (tp = 2 on two devices) compiled and its kept activations counted.
Counted CountedProbe() {
  Counted counted;
  counted.job = TwoDeviceTpGpt(TinyGpt());
  examples::CompileSettings settings;
  settings.compression.compression = "off";
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(TwoDeviceTpLayout(), settings, &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(counted.job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  counted.plan = *plan;
  counted.profile = ProfileOfTwoDevices(TinyGpt());
  const absl::Status status = auto_parallel::CountKeptActivations(counted.plan, 2, 1, &counted.profile);
  EXPECT_TRUE(status.ok()) << status;
  return counted;
}

TEST(AutoParallelKeptActivationsTest, BackwardKeepsTheSoftmaxOutputAndNotTheScoresBeforeIt) {
  const Counted counted = CountedProbe();
  EXPECT_TRUE(counted.profile.kept_activations_counted);
  absl::flat_hash_map<std::string, std::string> producer_type;
  for (const proto::OpDef& op : counted.job.ops()) {
    for (const auto& [port, tensor] : op.outputs()) producer_type[tensor] = op.type();
  }
  int blocks = 0;
  for (const auto_parallel::ProfileUnit& unit : counted.profile.units) {
    if (!unit.stageable) continue;
    ++blocks;
    // Which of the unit's activations a backward actor reads: the attention core's softmax
    // yes, the scaled and masked scores feeding it no.
    int softmaxes = 0, scores = 0;
    int64_t kept = 0;
    for (const auto_parallel::UnitActivation& activation : unit.activations) {
      const std::string& type = producer_type[activation.tensor];
      bool read_in_backward = false;
      for (const proto::RegisterDef& reg : counted.plan.devices(0).registers()) {
        if (reg.tensor() != activation.tensor) continue;
        for (int64_t consumer : reg.consumer_actors()) {
          const proto::ActorDef& actor =
              counted.plan.devices(0).actors(static_cast<int>(consumer - counted.plan.devices(0).actors(0).id()));
          for (const proto::KernelDef& kernel : actor.kernels()) {
            if (kernel.op_name().find("_grad/") != std::string::npos) read_in_backward = true;
          }
        }
      }
      if (type == "softmax") {
        ++softmaxes;
        EXPECT_TRUE(read_in_backward) << activation.tensor;
        kept += activation.bytes;
      }
      if (type == "scalar_mul" || type == "causal_mask") {
        ++scores;
        EXPECT_FALSE(read_in_backward) << activation.tensor << " (" << type << ")";
      }
    }
    EXPECT_EQ(softmaxes, 1) << unit.name;
    EXPECT_EQ(scores, 2) << unit.name;
    // The unit keeps its softmax and less than every activation it makes.
    EXPECT_GE(unit.kept_activation_bytes, kept) << unit.name;
    EXPECT_LT(unit.kept_activation_bytes, unit.activation_bytes) << unit.name;
    EXPECT_LE(unit.kept_attention_core_activation_bytes, unit.attention_core_activation_bytes) << unit.name;
    EXPECT_GT(unit.planned_kept_bytes, 0) << unit.name;
    EXPECT_GT(unit.planned_kept_attention_core_bytes, 0) << unit.name;
  }
  EXPECT_EQ(blocks, 3);
}

TEST(AutoParallelKeptActivationsTest, ThePlannedKeptBytesFitInTheArenasSlot) {
  const Counted counted = CountedProbe();
  int64_t planned_kept = 0;
  for (const auto_parallel::ProfileUnit& unit : counted.profile.units) planned_kept += unit.planned_kept_bytes;
  EXPECT_EQ(counted.profile.planned_kept_tp, 2);
  EXPECT_EQ(counted.profile.planned_kept_row_parts, 1);
  // Kept from forward to backward, they are all live when backward starts: one slot of the
  // arena (memory block 1) holds them together.
  int64_t slot = 0;
  for (const proto::MemoryBlock& block : counted.plan.devices(0).memory_blocks()) {
    if (block.id() == 1) slot = block.slot_stride_bytes();
  }
  EXPECT_GT(planned_kept, 0);
  EXPECT_LE(planned_kept, slot);
}

TEST(AutoParallelKeptActivationsTest, APlanWithoutActorsIsRefused) {
  auto_parallel::ModelProfile profile = ProfileOfTwoDevices(TinyGpt());
  const absl::Status status = auto_parallel::CountKeptActivations(proto::Plan(), 2, 1, &profile);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(profile.kept_activations_counted);
}

}  // namespace
}  // namespace oneflow
