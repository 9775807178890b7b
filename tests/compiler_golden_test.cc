// The compiler end to end on the examples: the plan `oneflow inspect` prints for each
// layout the issue names, checked line by line against golden files; determinism; and
// the layout-level properties a reader of those files would check by eye.
#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "compiler/compiler.h"
#include "plan/plan_verifier.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "tests/golden.h"
#include "tools/cli/inspect.h"
#include "plan/plan_io.h"

namespace oneflow {
namespace {

using examples::ParallelFlags;
using examples::ParallelLayout;

ParallelLayout Layout(int64_t nodes, int64_t devices_per_node, int64_t dp, int64_t tp) {
  ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = devices_per_node;
  flags.dp = dp;
  flags.tp = tp;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

examples::MlpConfig SmallMlp() {
  examples::MlpConfig config;
  config.batch = 16;
  config.in_features = 8;
  config.hidden = 32;
  config.classes = 4;
  config.layers = 4;
  return config;
}

examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 1;
  // Wide enough that moving activations costs less than gathering weights, so the
  // cost model keeps Megatron's column/row-parallel layout.
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 32;
  return config;
}

proto::Plan CompileOrDie(const proto::Job& job, const ParallelLayout& layout, double bucket_mb = 25) {
  CompileOptions options;
  options.cluster = layout.cluster();
  options.bucket_mb = bucket_mb;
  absl::StatusOr<proto::Plan> plan = Compile(job, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : proto::Plan();
}

std::string Inspect(const proto::Plan& plan) {
  absl::StatusOr<std::string> text = cli::InspectPlan(plan, {});
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

struct Case {
  const char* name;
  bool gpt;
  int64_t nodes, devices_per_node, dp, tp;
};

class CompilerGoldenTest : public ::testing::TestWithParam<Case> {};

TEST_P(CompilerGoldenTest, InspectTextMatchesGolden) {
  const Case& c = GetParam();
  const ParallelLayout layout = Layout(c.nodes, c.devices_per_node, c.dp, c.tp);
  absl::StatusOr<proto::Job> job =
      c.gpt ? examples::BuildGpt(SmallGpt(), layout) : examples::BuildMlp(SmallMlp(), layout);
  ASSERT_TRUE(job.ok()) << job.status();
  const proto::Plan plan = CompileOrDie(*job, layout);
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
  EXPECT_TRUE(testing::MatchesGolden(Inspect(plan),
                                     absl::StrCat("tests/testdata/golden/", c.name, ".txt")));
}

INSTANTIATE_TEST_SUITE_P(Layouts, CompilerGoldenTest,
                         ::testing::Values(Case{"mlp_1device", false, 1, 1, 1, 1},
                                           Case{"mlp_dp4", false, 1, 4, 4, 1},
                                           Case{"mlp_tp4", false, 1, 4, 1, 4},
                                           Case{"mlp_dp2_tp2", false, 1, 4, 2, 2},
                                           Case{"gpt_2x2_dp2_tp2", true, 2, 2, 2, 2}),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// `oneflow inspect`'s text keeps every line within 200 characters (tools/cli/text_wrap.h):
// a 2-block gpt's collective order is thousands of characters on one line unwrapped. The
// list stays whole: every collective of device 0's order is in the text, in order.
TEST(CompilerTest, InspectTextOfATwoBlockGptHasNoLineOver200Characters) {
  const ParallelLayout layout = Layout(2, 2, 2, 2);
  examples::GptConfig config = SmallGpt();
  config.layers = 2;
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  ASSERT_TRUE(job.ok()) << job.status();
  const proto::Plan plan = CompileOrDie(*job, layout, /*bucket_mb=*/0);
  const std::string text = Inspect(plan);
  size_t longest = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    longest = std::max(longest, line.size());
    EXPECT_LE(line.size(), 200u) << line;
  }
  EXPECT_GT(longest, 150u);  // wrapping keeps lines long enough to read
  // Device 0's collectives as "ID KIND(TENSOR)", from the plan and from the text: its
  // "collective order[, stream N]: " lines (one per communication stream) joined with
  // their continuation lines, split at ", ".
  const proto::DevicePlan& device = plan.devices(0);
  std::vector<std::string> want;
  size_t unwrapped_size = 0;
  for (int64_t id : device.collective_order()) {
    const proto::CollectiveDef& collective = plan.collectives(id);
    ASSERT_EQ(collective.id(), id);
    want.push_back(absl::StrCat(id, " ", absl::AsciiStrToLower(proto::CollectiveKind_Name(collective.kind())), "(",
                                collective.tensor(), ")"));
    unwrapped_size += want.back().size() + 2;
  }
  ASSERT_GT(unwrapped_size, 400u);
  const size_t start = text.find("    collective order");
  ASSERT_NE(start, std::string::npos) << text;
  std::vector<std::string> got;
  std::string joined;
  auto flush = [&] {
    if (joined.empty()) return;
    for (absl::string_view item : absl::StrSplit(joined, ", ")) got.emplace_back(item);
    joined.clear();
  };
  for (absl::string_view line : absl::StrSplit(text.substr(start), '\n')) {
    if (absl::StartsWith(line, "    collective order")) {
      flush();
      joined = std::string(line.substr(line.find(": ") + 2));
    } else if (absl::StartsWith(line, "        ")) {
      absl::StrAppend(&joined, " ", absl::StripLeadingAsciiWhitespace(line));
    } else {
      break;
    }
  }
  flush();
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(CompilerTest, SameJobGivesByteIdenticalPlans) {
  const ParallelLayout layout = Layout(2, 2, 2, 2);
  absl::StatusOr<proto::Job> first_job = examples::BuildGpt(SmallGpt(), layout);
  absl::StatusOr<proto::Job> second_job = examples::BuildGpt(SmallGpt(), layout);
  ASSERT_TRUE(first_job.ok() && second_job.ok());
  absl::StatusOr<std::string> first = SerializePlan(CompileOrDie(*first_job, layout));
  absl::StatusOr<std::string> second = SerializePlan(CompileOrDie(*second_job, layout));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_GT(first->size(), 1000u);
  EXPECT_TRUE(*first == *second);
}

TEST(CompilerTest, DataParallelAllReducesEveryGradientOnce) {
  const ParallelLayout layout = Layout(1, 4, 4, 1);
  absl::StatusOr<proto::Job> job = examples::BuildMlp(SmallMlp(), layout);
  ASSERT_TRUE(job.ok());
  // 4 weights + 4 biases, each P -> B once, and the loss for the sink: one collective
  // each without buckets, one bucket for all 9 with them. Nothing else moves: data
  // parallelism needs no activation traffic.
  for (const auto& [bucket_mb, collectives] : std::vector<std::pair<double, int>>{{0, 9}, {25, 1}}) {
    const proto::Plan plan = CompileOrDie(*job, layout, bucket_mb);
    ASSERT_EQ(plan.collectives_size(), collectives) << "bucket_mb " << bucket_mb;
    for (const proto::CollectiveDef& collective : plan.collectives()) {
      EXPECT_EQ(collective.kind(), proto::ALL_REDUCE) << collective.tensor();
      EXPECT_EQ(collective.group_size(), 4);
    }
    // Each device sends the ring all-reduce bytes of all parameters: 2 (n-1)/n of them.
    int64_t parameter_bytes = 0;
    for (const auto& [in, out] : std::vector<std::pair<int64_t, int64_t>>{{8, 32}, {32, 32}, {32, 32}, {32, 4}}) {
      parameter_bytes += (in * out + out) * 4;
    }
    const int64_t loss_bytes = 2 * 3 * 4;  // One f32: 2 (n-1) steps of one element.
    EXPECT_EQ(plan.devices(0).bytes_sent_per_iter(), parameter_bytes * 2 * 3 / 4 + loss_bytes)
        << "bucket_mb " << bucket_mb;
  }
}

TEST(CompilerTest, MemoryPeakIsWithinTenPercentOfTheLowerBound) {
  for (const auto& [dp, tp] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 2}, {4, 1}}) {
    const ParallelLayout layout = Layout(1, dp * tp, dp, tp);
    absl::StatusOr<proto::Job> job = examples::BuildGpt(SmallGpt(), layout);
    ASSERT_TRUE(job.ok());
    const proto::Plan plan = CompileOrDie(*job, layout);
    for (const proto::DevicePlan& device : plan.devices()) {
      EXPECT_LE(device.peak_bytes() * 10, device.lower_bound_bytes() * 11)
          << "dp=" << dp << " tp=" << tp << " device " << device.device().device();
      EXPECT_GE(device.peak_bytes(), device.lower_bound_bytes());
    }
  }
}

}  // namespace
}  // namespace oneflow
