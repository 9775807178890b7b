// AdamWOptimizer.variance_frozen_from (Optimizer::WithFrozenVariance, the examples'
// --adamw_freeze_variance_from; docs/sbp_and_boxing.md, "Error feedback under a frozen
// variance") checked on compiled gpt plans: every adamw kernel of every device runs an op
// that carries it, on a data-parallel, a ZeRO-1 (the sharded adamw_step path) and a
// tensor-parallel layout; without it no op carries the attribute (the plans of every
// other AdamW job stay as they were); a negative step is refused naming the value.
// That a frozen variance trains as 1-bit Adam's is tests/int4_frozen_variance_test.cc's.
#include <map>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/codec_gpt.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;
using ::testing::HasSubstr;

constexpr int64_t kFrozenFrom = 10;

struct LayoutCase {
  std::string label;
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t zero = 0;
};

void PrintTo(const LayoutCase& layout_case, std::ostream* out) { *out << layout_case.label; }

absl::StatusOr<proto::Plan> CompileGpt(const LayoutCase& layout_case, int64_t frozen_from) {
  ParallelFlags flags;
  flags.devices_per_node = layout_case.dp * layout_case.tp;
  flags.dp = layout_case.dp;
  flags.tp = layout_case.tp;
  flags.zero = layout_case.zero;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  if (!layout.ok()) return layout.status();
  // The gpt of tests/int4_frozen_variance_test.cc, which trains the option.
  examples::GptConfig config = testing::CodecTestGpt();
  config.adamw_freeze_variance_from = frozen_from;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, *layout);
  if (!job.ok()) return job.status();
  CompileOptions options;
  options.cluster = layout->cluster();
  return Compile(*job, options);
}

bool IsAdamW(const std::string& type) { return type == "adamw_update" || type == "adamw_step"; }

// The variance_frozen_from of every adamw op of the plan's job, by op name (-1: absent).
std::map<std::string, int64_t> FrozenFromByOp(const proto::Plan& plan) {
  std::map<std::string, int64_t> frozen_from;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (!IsAdamW(op.type())) continue;
    const auto attr = op.attrs().find("variance_frozen_from");
    frozen_from[op.name()] = attr == op.attrs().end() ? -1 : attr->second.i();
  }
  return frozen_from;
}

int TrainableVariables(const proto::Plan& plan) {
  int trainable = 0;
  for (const proto::VariableDef& variable : plan.job().variables()) trainable += variable.trainable();
  return trainable;
}

class FrozenVariancePlanTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(FrozenVariancePlanTest, EveryAdamWKernelRunsAnOpWithTheOption) {
  absl::StatusOr<proto::Plan> plan = CompileGpt(GetParam(), kFrozenFrom);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::map<std::string, int64_t> frozen_from = FrozenFromByOp(*plan);
  // One update per trainable variable, each carrying the option.
  EXPECT_EQ(static_cast<int>(frozen_from.size()), TrainableVariables(*plan));
  EXPECT_GE(frozen_from.size(), 8u);
  int steps = 0;
  for (const proto::OpDef& op : plan->job().ops()) steps += op.type() == "adamw_step";
  // ZeRO-1 updates the shards out of place (adamw_step); the other layouts in place.
  if (GetParam().zero == 1) {
    EXPECT_GT(steps, 0);
  } else {
    EXPECT_EQ(steps, 0);
  }
  for (const auto& [op, from] : frozen_from) EXPECT_EQ(from, kFrozenFrom) << op;
  // What the devices run: every adamw kernel's op is one of those.
  int kernels = 0;
  for (const proto::DevicePlan& device : plan->devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      for (const proto::KernelDef& kernel : actor.kernels()) {
        if (!IsAdamW(kernel.name())) continue;
        ++kernels;
        const auto op = frozen_from.find(kernel.op_name());
        ASSERT_NE(op, frozen_from.end()) << kernel.op_name();
        EXPECT_EQ(op->second, kFrozenFrom) << kernel.op_name();
      }
    }
  }
  EXPECT_GE(kernels, static_cast<int>(frozen_from.size()));
}

TEST_P(FrozenVariancePlanTest, WithoutTheOptionNoOpCarriesTheAttribute) {
  absl::StatusOr<proto::Plan> plan = CompileGpt(GetParam(), 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::map<std::string, int64_t> frozen_from = FrozenFromByOp(*plan);
  EXPECT_EQ(static_cast<int>(frozen_from.size()), TrainableVariables(*plan));
  for (const auto& [op, from] : frozen_from) EXPECT_EQ(from, -1) << op;
}

INSTANTIATE_TEST_SUITE_P(Layouts, FrozenVariancePlanTest,
                         ::testing::Values(LayoutCase{"dp4", 4, 1, 0}, LayoutCase{"dp4_zero1", 4, 1, 1},
                                           LayoutCase{"tp4", 1, 4, 0}),
                         [](const ::testing::TestParamInfo<LayoutCase>& info) { return info.param.label; });

TEST(FrozenVariancePlanErrorsTest, ANegativeStepIsRefusedNamingIt) {
  const absl::Status status = CompileGpt(LayoutCase{"dp4", 4, 1, 0}, -3).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("AdamW variance_frozen_from=-3 is invalid; valid: 0 (the variance "
                                          "never frozen) or a step >= 1 from which it is frozen"));
  // Where the user may have written it: the examples' flag as well as the field.
  EXPECT_THAT(status.message(), HasSubstr("--adamw_freeze_variance_from"));
}

}  // namespace
}  // namespace oneflow
