// `oneflow profile`'s report: a hand-made trace of the sample plan (acts with known
// durations written by the trace writer and read back) gives exact figures, and a real
// run of a tiny data-parallel gpt adds up (op types plus idle = the step on every compute
// thread; the critical path = the iteration's wall time).
#include "tools/cli/profile_report.h"

#include <cmath>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "actors/trace.h"
#include "compiler/compiler.h"
#include "examples/gpt/gpt_model.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tools/cli/sample_plan.h"

namespace oneflow::cli {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempPath(const std::string& name) { return std::string(getenv("TEST_TMPDIR")) + "/" + name; }

// The sample plan (matmul_dp: actors 0-6 on device 0, 10-16 on device 1; actor 5/15 the
// all_reduce of 2048 B per device) with two iterations of 1000 ns per act, in program
// order on each thread, but device 1's all_reduce takes 2000 ns.
std::vector<actors::ActRecord> SampleActs() {
  std::vector<actors::ActRecord> acts;
  for (int64_t iteration = 0; iteration < 2; ++iteration) {
    const int64_t base = 10000 * iteration;
    for (int device = 0; device < 2; ++device) {
      int64_t t = base;
      for (int64_t actor = 0; actor < 7; ++actor) {
        const int thread = actor == 5 ? proto::THREAD_COMMUNICATION : proto::THREAD_COMPUTE;
        const int64_t start = t, end = actor == 5 && device == 1 ? t + 2000 : t + 1000;
        if (actor == 5 && device == 1) t += 1000;
        acts.push_back({thread, device, 10 * device + actor, iteration, start, end});
        t += 1000;
      }
    }
  }
  return acts;
}

TEST(ProfileReportTest, HandMadeTraceGivesExactFigures) {
  const proto::Plan plan = SampleDataParallelPlan();
  const std::string path = TempPath("sample.json");
  ASSERT_TRUE(actors::WriteChromeTrace(path, plan, SampleActs()).ok());
  absl::StatusOr<ProfileReport> report = ProfileTrace(plan, path);
  ASSERT_TRUE(report.ok()) << report.status();
  // Iteration 0 ends at 8000 (device 1's update), iteration 1 at 18000.
  EXPECT_EQ(report->profile.step_ns, 10000);
  const std::string text = RenderProfile(plan, *report, {ProfileFormat::kText, 3});
  EXPECT_THAT(text, StartsWith("profile of plan 'matmul_dp' from trace '" + path +
                               "': iterations 1..1 (iteration 0 is warm-up)\n"
                               "step: 10.00 us per iteration (end of iteration 0 to end of iteration 1, "
                               "10.00 us / 1); devices: 0:0, 0:1\n"));
  // Device 0 computes 6 acts of 1 us in its 10 us, device 1 too; device 1's all_reduce
  // takes 2 us, device 0's 1 us.
  EXPECT_THAT(text, HasSubstr("  0:0     compute        6.00 us  60.0%  0.00 us        0.0%   4.00 us  40.0%\n"));
  EXPECT_THAT(text, HasSubstr("  0:1     communication  0.00 us  0.0%   2.00 us        20.0%  8.00 us  80.0%\n"));
  EXPECT_THAT(text, HasSubstr("op types, per iteration and device (top 3 of 7; "));
  EXPECT_THAT(text, HasSubstr("  boxing       communication  1.50 us  15.0%  1      2.00 KiB  1.37 GB/s\n"));
  EXPECT_THAT(text, HasSubstr("  0:1     w_grad all_reduce  boxing       communication  2.00 us  20.0%  1      2.00 KiB  1.02 GB/s\n"));
  // Critical path: device 1's seven acts of iteration 1, the first 2 us after iteration
  // 0 ended (8 us, device 1's update), the all_reduce 2 us.
  EXPECT_THAT(text, HasSubstr("critical path of iteration 1 (the median of 1): 10.00 us from the end of iteration 0 "
                              "to the end of iteration 1\n"
                              "  7 acts on 1 device: compute acts 6.00 us (60.0%), communication acts 2.00 us "
                              "(20.0%), waiting 2.00 us (20.0%)\n"));
  EXPECT_THAT(text, HasSubstr("    0:1     data               data_source  1     1.00 us  2.00 us  30.0%\n"));
  // The all_reduce of w_grad (read by sgd_update) is the gradient reduction: 1 us on
  // device 0, 2 us on device 1, while neither's own compute thread acted; device 0's update
  // [6, 7) us runs beside device 1's second microsecond: 1 of the 3 us while a member computed.
  EXPECT_THAT(text, HasSubstr("gradient reductions: 2 acts, 1.50 us per iteration and device, 0.0% of it hidden behind "
                              "compute (0.00 us); compute 6.00 us per iteration and device\n"
                              "gradient reductions from each call's last arrival (the transfer, no waiting for "
                              "peers): 1.50 us per iteration and device, 0.0% of it hidden behind compute (0.00 us); "
                              "exposed 1.50 us; 33.3% of it while a member's compute still acted (after every "
                              "member's: 1.00 us)\n"));
  const actors::CriticalPath& critical = report->critical_path;
  int64_t total = 0;
  for (const actors::PathStep& step : critical.steps) total += step.path_end_ns - step.path_start_ns + step.wait_ns;
  EXPECT_EQ(total, 10000);
  EXPECT_EQ(critical.steps.back().act.actor_id, 16);
}

TEST(ProfileReportTest, JsonIsOneObject) {
  const proto::Plan plan = SampleDataParallelPlan();
  const std::string path = TempPath("sample_json.json");
  ASSERT_TRUE(actors::WriteChromeTrace(path, plan, SampleActs()).ok());
  absl::StatusOr<ProfileReport> report = ProfileTrace(plan, path);
  ASSERT_TRUE(report.ok()) << report.status();
  google::protobuf::Struct json;
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(RenderProfile(plan, *report, {ProfileFormat::kJson, 0}), &json).ok());
  EXPECT_DOUBLE_EQ(json.fields().at("step_ms").number_value(), 0.01);
  EXPECT_EQ(json.fields().at("op_types").list_value().values_size(), 7);
  EXPECT_EQ(json.fields().at("actors").list_value().values_size(), 14);
  EXPECT_DOUBLE_EQ(json.fields().at("critical_path").struct_value().fields().at("wall_ms").number_value(), 0.01);
  // w_grad's all_reduce: 1 us + 2 us over 2 devices and 1 iteration, none of it hidden.
  const auto& reductions = json.fields().at("gradient_reductions").struct_value().fields();
  EXPECT_DOUBLE_EQ(reductions.at("acts").number_value(), 2);
  EXPECT_DOUBLE_EQ(reductions.at("ms_per_iteration_and_device").number_value(), 0.0015);
  EXPECT_DOUBLE_EQ(reductions.at("hidden_fraction").number_value(), 0);
  EXPECT_DOUBLE_EQ(reductions.at("compute_ms_per_iteration_and_device").number_value(), 0.006);
  // Both members start the call together: the transfer is the acts' own time, all exposed.
  EXPECT_DOUBLE_EQ(reductions.at("transfer_ms_per_iteration_and_device").number_value(), 0.0015);
  EXPECT_DOUBLE_EQ(reductions.at("transfer_hidden_fraction").number_value(), 0);
  EXPECT_DOUBLE_EQ(reductions.at("exposed_ms_per_iteration_and_device").number_value(), 0.0015);
  // Device 0's update runs during device 1's second microsecond of the call.
  EXPECT_DOUBLE_EQ(reductions.at("transfer_hidden_by_members_fraction").number_value(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(reductions.at("exposed_after_members_ms_per_iteration_and_device").number_value(), 0.001);
}

// A collective on communication stream 1 is drawn on its own track (actors/trace.h,
// kStreamTrackBase + 1); the critical path names that track, not an unknown thread kind.
TEST(ProfileReportTest, CriticalPathNamesAStreamTrack) {
  proto::Plan plan = SampleDataParallelPlan();
  ASSERT_GT(plan.collectives_size(), 0);
  plan.mutable_collectives(0)->set_stream(1);
  const std::string path = TempPath("sample_stream.json");
  ASSERT_TRUE(actors::WriteChromeTrace(path, plan, SampleActs()).ok());
  absl::StatusOr<ProfileReport> report = ProfileTrace(plan, path);
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string text = RenderProfile(plan, *report, {ProfileFormat::kText, 3});
  EXPECT_THAT(text, HasSubstr("  7 acts on 1 device: compute acts 6.00 us (60.0%), communication stream 1 acts "
                              "2.00 us (20.0%), waiting 2.00 us (20.0%)\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("unknown")));
}

TEST(ProfileReportTest, Errors) {
  const proto::Plan plan = SampleDataParallelPlan();
  EXPECT_THAT(std::string(ProfileTrace(plan, TempPath("missing.json")).status().message()),
              HasSubstr("trace file '" + TempPath("missing.json") + "': cannot open"));
  std::vector<actors::ActRecord> warmup = SampleActs();
  warmup.resize(14);
  const std::string path = TempPath("warmup.json");
  ASSERT_TRUE(actors::WriteChromeTrace(path, plan, warmup).ok());
  const absl::Status status = ProfileTrace(plan, path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), StartsWith("trace file '" + path + "': the trace has acts of iterations 0..0 only"));
  EXPECT_EQ(ParseProfileFormat("dot").status().message(), "--format='dot' is not a format; valid: text, json");
}

// A tiny gpt, data parallel over two devices, run for 5 iterations with acts recorded.
TEST(ProfileReportTest, RealGptAddsUp) {
  examples::ParallelFlags flags;
  flags.devices_per_node = 2;
  flags.dp = 2;
  const examples::ParallelLayout layout = *examples::ParallelLayout::Create(flags);
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 1;
  config.hidden = 32;
  config.heads = 2;
  config.vocab = 32;
  CompileOptions options;
  options.cluster = layout.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*examples::BuildGpt(config, layout), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  actors::TrainOptions train;
  train.iterations = 5;
  train.record_acts = true;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  ASSERT_TRUE(result.ok()) << result.status();
  const std::string path = TempPath("gpt.json");
  ASSERT_TRUE(actors::WriteChromeTrace(path, *plan, result->engine.acts).ok());
  absl::StatusOr<ProfileReport> report = ProfileTrace(*plan, path);
  ASSERT_TRUE(report.ok()) << report.status();
  const actors::StepProfile& profile = report->profile;
  ASSERT_EQ(profile.devices.size(), 2u);
  for (const actors::ThreadTime& thread : profile.threads) {
    if (thread.thread != proto::THREAD_COMPUTE) continue;
    double types = 0;
    for (const actors::ProfileRow& row : profile.op_types) {
      if (row.thread == proto::THREAD_COMPUTE) types += row.ns_per_device[thread.device_index];
    }
    EXPECT_THAT(types + thread.idle_ns, DoubleNear(profile.step_ns, 0.02 * profile.step_ns))
        << "device " << thread.device_index;
  }
  const actors::CriticalPath& critical = report->critical_path;
  int64_t total = 0;
  for (const actors::PathStep& step : critical.steps) total += step.path_end_ns - step.path_start_ns + step.wait_ns;
  const double wall = critical.end_ns - critical.start_ns;
  EXPECT_GT(wall, 0);
  EXPECT_THAT(static_cast<double>(total), DoubleNear(wall, 0.02 * wall));
  // The path ends with the act that ended the iteration, and has acts of more than the
  // data source: it walked the graph.
  EXPECT_GT(critical.steps.size(), 10u);
  EXPECT_EQ(critical.steps.back().path_end_ns, critical.end_ns);
  // Every act of the gradient bucket (and any reduction outside it) of the 4 measured
  // iterations counts, and no more time is hidden than the reductions took.
  const actors::GradientReductions reductions(*plan);
  int64_t reducers = 0;
  for (const proto::DevicePlan& device : plan->devices()) {
    for (const proto::ActorDef& actor : device.actors()) reducers += reductions.Contains(actor) ? 1 : 0;
  }
  EXPECT_GE(reducers, 2);
  EXPECT_EQ(report->reductions.reduction_acts, 4 * reducers);
  EXPECT_GT(report->reductions.reduction_ns, 0);
  EXPECT_LE(report->reductions.hidden_ns, report->reductions.reduction_ns);
}

}  // namespace
}  // namespace oneflow::cli
