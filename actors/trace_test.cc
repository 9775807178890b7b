#include "actors/trace.h"

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

using ::testing::HasSubstr;

proto::Plan SmallPlan() {
  proto::Plan plan;
  plan.mutable_job()->set_name("tiny");
  plan.set_checksum(0x1234abcd);
  proto::DevicePlan* d0 = plan.add_devices();
  proto::ActorDef* mm = d0->add_actors();
  mm->set_id(1);
  mm->set_name("mm");
  mm->set_kind(proto::ACTOR_COMPUTE);
  mm->set_collective_id(-1);
  proto::DevicePlan* d1 = plan.add_devices();
  d1->mutable_device()->set_device(1);
  proto::ActorDef* reduce = d1->add_actors();
  reduce->set_id(2);
  reduce->set_name("reduce \"w\"");
  reduce->set_kind(proto::ACTOR_BOXING);
  reduce->set_thread(proto::THREAD_COMMUNICATION);
  reduce->set_collective_id(-1);
  return plan;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir == nullptr ? "/tmp" : dir) + "/" + name;
}

TEST(ChromeTraceTest, RoundTrip) {
  const proto::Plan plan = SmallPlan();
  // Starts past a second: the file keeps nanoseconds, not 6 significant digits.
  const std::vector<ActRecord> acts = {{0, 0, 1, 0, 5'000'000'000, 5'000'001'234},
                                       {1, 1, 2, 3, 6'234'567'891, 6'234'600'000}};
  const std::string path = TempPath("round_trip.json");
  ASSERT_TRUE(WriteChromeTrace(path, plan, acts).ok());
  absl::StatusOr<std::vector<ActRecord>> read = ReadChromeTrace(path, plan);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].actor_id, 1);
  EXPECT_EQ((*read)[0].start_ns, 0);
  EXPECT_EQ((*read)[0].end_ns, 1234);
  EXPECT_EQ((*read)[1].actor_id, 2);
  EXPECT_EQ((*read)[1].device_index, 1);
  EXPECT_EQ((*read)[1].thread, proto::THREAD_COMMUNICATION);
  EXPECT_EQ((*read)[1].iteration, 3);
  EXPECT_EQ((*read)[1].start_ns, 1'234'567'891);
  EXPECT_EQ((*read)[1].end_ns, 1'234'600'000);
  EXPECT_THAT(ChromeTraceJson(plan, acts),
              HasSubstr("\"otherData\":{\"job\":\"tiny\",\"plan_checksum\":\"0x1234abcd\",\"micro_batches\":1,"
                        "\"plan\":\""));
  // The trace carries its plan: read back, it is the same message.
  absl::StatusOr<proto::Plan> carried = ReadPlanOfChromeTrace(path);
  ASSERT_TRUE(carried.ok()) << carried.status();
  EXPECT_EQ(carried->SerializeAsString(), plan.SerializeAsString());
}

TEST(ChromeTraceTest, TraceWithoutOrWithADamagedPlan) {
  const std::string old = TempPath("no_plan.json");
  std::ofstream(old) << R"({"traceEvents":[],"otherData":{"job":"tiny","plan_checksum":"0x1234abcd"}})";
  absl::StatusOr<proto::Plan> carried = ReadPlanOfChromeTrace(old);
  EXPECT_EQ(carried.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(carried.status().message(),
            "trace file '" + old +
                "': holds no plan (written by an older `oneflow run --trace`); name the plan the run trained as well");
  const std::string damaged = TempPath("damaged_plan.json");
  std::ofstream(damaged) << R"({"traceEvents":[],"otherData":{"plan_checksum":"0x1234abcd","plan":"@@@"}})";
  carried = ReadPlanOfChromeTrace(damaged);
  EXPECT_EQ(carried.status().message(),
            "trace file '" + damaged + "': its otherData.plan is damaged (not a base64-encoded plan)");
  // A plan that decodes but is not the one the trace names (checksum 0 vs 0x1234abcd).
  const std::string other = TempPath("other_plan.json");
  std::ofstream(other) << R"({"traceEvents":[],"otherData":{"plan_checksum":"0x1234abcd","plan":"CgA="}})";
  carried = ReadPlanOfChromeTrace(other);
  EXPECT_EQ(carried.status().message(), "trace file '" + other +
                                            "': its otherData.plan has checksum 0x00000000 but the trace names "
                                            "0x1234abcd: the file is damaged");
  EXPECT_EQ(ReadPlanOfChromeTrace(TempPath("missing.json")).status().code(), absl::StatusCode::kNotFound);
}

TEST(ChromeTraceTest, TraceOfAnotherPlan) {
  proto::Plan plan = SmallPlan();
  const std::string path = TempPath("other.json");
  ASSERT_TRUE(WriteChromeTrace(path, plan, {{0, 0, 1, 0, 0, 10}}).ok());
  plan.set_checksum(0x5e8c01d2);
  absl::StatusOr<std::vector<ActRecord>> read = ReadChromeTrace(path, plan);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "trace file '" + path +
                "': written for plan 'tiny' (checksum 0x1234abcd), not for this plan 'tiny' (checksum 0x5e8c01d2)");
}

TEST(ChromeTraceTest, ActorThePlanDoesNotHave) {
  // A trace without otherData (as written before it existed) is checked act by act.
  const std::string path = TempPath("old.json");
  std::ofstream(path) << R"({"traceEvents":[{"ph":"X","name":"mm","pid":1,"tid":0,"ts":0,"dur":1,)"
                      << R"("args":{"iteration":0,"actor":1}}]})";
  absl::StatusOr<std::vector<ActRecord>> read = ReadChromeTrace(path, SmallPlan());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(), "trace file '" + path +
                                         "': traceEvents[0] is an act of actor 1 'mm' on device index 1, which plan "
                                         "'tiny' does not have: not a trace of this plan");
}

TEST(ChromeTraceTest, NotATrace) {
  const std::string path = TempPath("notes.txt");
  std::ofstream(path) << "not json";
  absl::StatusOr<std::vector<ActRecord>> read = ReadChromeTrace(path, SmallPlan());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(),
              HasSubstr("trace file '" + path + "': not a trace written by `oneflow run --trace` (not JSON: "));
  const std::string object = TempPath("object.json");
  std::ofstream(object) << "{\"a\": 1}";
  read = ReadChromeTrace(object, SmallPlan());
  EXPECT_EQ(read.status().message(),
            "trace file '" + object + "': not a trace written by `oneflow run --trace` (no traceEvents array)");
}

TEST(ChromeTraceTest, MissingFile) {
  const std::string path = TempPath("missing.json");
  absl::StatusOr<std::vector<ActRecord>> read = ReadChromeTrace(path, SmallPlan());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(), "trace file '" + path + "': cannot open: No such file or directory");
}

}  // namespace
}  // namespace oneflow::actors
