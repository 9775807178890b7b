#include "tools/cli/diagnose.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kBase = 1700000000000000000;

// A dump of one device of a two-member all-reduce group "devices [0:0, 0:1]": `count`
// collectives 10 ms apart, entered `late_ms` after the group's start, each taking 1 ms.
proto::FlightDump DeviceDump(const std::string& device, int64_t count, double late_ms, int64_t bytes = 4096) {
  proto::FlightDump dump;
  dump.set_format("oneflow-flight-recorder");
  dump.set_version(1);
  dump.set_dumped_unix_ns(kBase + (count + 1) * 10 * kMs);
  proto::FlightCollective* collective = dump.add_collectives();
  collective->set_collective(3);
  collective->set_kind("ALL_REDUCE");
  collective->set_group("devices [0:0, 0:1]");
  collective->add_members("0:0");
  collective->add_members("0:1");
  collective->set_bytes(bytes);
  collective->set_actor("grad/all_reduce");
  proto::FlightDevice* flight = dump.add_devices();
  flight->set_device(device);
  flight->set_capacity(256);
  flight->set_recorded(count);
  for (int64_t s = 0; s < count; ++s) {
    proto::FlightEntry* entry = flight->add_entries();
    entry->set_sequence(s);
    entry->set_collective(3);
    entry->set_iteration(s);
    entry->set_enqueue_unix_ns(kBase + s * 10 * kMs + static_cast<int64_t>(late_ms * kMs));
    entry->set_start_unix_ns(entry->enqueue_unix_ns());
    entry->set_end_unix_ns(entry->enqueue_unix_ns() + kMs);
    entry->set_state("ok");
  }
  return dump;
}

TEST(DiagnoseTest, CleanRunRaisesNothing) {
  // ±20% jitter of the 10 ms step, alternating which rank is last.
  proto::FlightDump a = DeviceDump("0:0", 20, 0), b = DeviceDump("0:1", 20, 0);
  for (int s = 0; s < 20; ++s) {
    auto* e = b.mutable_devices(0)->mutable_entries(s);
    e->set_enqueue_unix_ns(e->enqueue_unix_ns() + (s % 2 == 0 ? 2 : -2) * kMs);
  }
  const Diagnosis diagnosis = Diagnose({a, b});
  EXPECT_TRUE(diagnosis.findings.empty()) << RenderDiagnosisText(diagnosis);
  EXPECT_EQ(diagnosis.devices, 2);
  EXPECT_EQ(diagnosis.aligned, 20);
  EXPECT_NE(RenderDiagnosisText(diagnosis).find("no hang, slow rank or mismatch found"), std::string::npos);
}

TEST(DiagnoseTest, RankThatNeverEnteredIsAHang) {
  // Rank 0 entered sequence 7 and timed out; rank 1 stopped after sequence 6.
  proto::FlightDump a = DeviceDump("0:0", 8, 0), b = DeviceDump("0:1", 7, 0);
  auto* waiting = a.mutable_devices(0)->mutable_entries(7);
  waiting->set_end_unix_ns(waiting->enqueue_unix_ns() + 500 * kMs);
  waiting->set_state("failed");
  const Diagnosis diagnosis = Diagnose({a, b});
  ASSERT_EQ(diagnosis.findings.size(), 1u) << RenderDiagnosisText(diagnosis);
  const Finding& hang = diagnosis.findings[0];
  EXPECT_EQ(hang.kind, Finding::Kind::kHang);
  EXPECT_EQ(hang.sequence, 7);
  EXPECT_EQ(hang.collective, 3);
  EXPECT_EQ(hang.collective_kind, "ALL_REDUCE");
  EXPECT_EQ(hang.suspects, std::vector<std::string>{"0:1"});
  EXPECT_EQ(hang.arrived, std::vector<std::string>{"0:0"});
  EXPECT_EQ(hang.text,
            "hang: collective 3 (ALL_REDUCE, 4096 B, actor 'grad/all_reduce') sequence 7 of group devices [0:0, 0:1]: "
            "device 0:1 (rank 1 of devices [0:0, 0:1]) never entered it (its last: sequence 6); arrived: 0:0 "
            "(waited 500 ms)");
  EXPECT_NE(RenderDiagnosisJson(diagnosis).find("\"suspects\": [\n        \"0:1\""), std::string::npos)
      << RenderDiagnosisJson(diagnosis);
}

TEST(DiagnoseTest, SnapshotOfAHealthyRunIsNoHang) {
  // SIGUSR1 caught rank 0 just inside sequence 7 (0.5 ms in): not a hang.
  proto::FlightDump a = DeviceDump("0:0", 8, 0), b = DeviceDump("0:1", 7, 0);
  auto* entry = a.mutable_devices(0)->mutable_entries(7);
  entry->set_end_unix_ns(0);
  entry->set_state("running");
  a.set_dumped_unix_ns(entry->enqueue_unix_ns() + kMs / 2);
  EXPECT_TRUE(Diagnose({a, b}).findings.empty());
  // The same wait at 2 s is one.
  a.set_dumped_unix_ns(entry->enqueue_unix_ns() + 2000 * kMs);
  const Diagnosis diagnosis = Diagnose({a, b});
  ASSERT_EQ(diagnosis.findings.size(), 1u);
  EXPECT_EQ(diagnosis.findings[0].suspects, std::vector<std::string>{"0:1"});
}

TEST(DiagnoseTest, MissingDumpIsNamed) {
  proto::FlightDump a = DeviceDump("0:0", 8, 0);
  auto* waiting = a.mutable_devices(0)->mutable_entries(7);
  waiting->set_state("failed");
  const Diagnosis diagnosis = Diagnose({a});
  ASSERT_EQ(diagnosis.findings.size(), 1u);
  EXPECT_EQ(diagnosis.findings[0].no_dump, std::vector<std::string>{"0:1"});
  EXPECT_NE(diagnosis.findings[0].text.find("no dump for 0:1"), std::string::npos) << diagnosis.findings[0].text;
}

TEST(DiagnoseTest, TenTimesSlowerRankIsSlow) {
  // Rank 1's compute takes 10x: it enters every collective 90 ms after rank 0, whose
  // collectives are then 100 ms apart.
  proto::FlightDump a = DeviceDump("0:0", 12, 0), b = DeviceDump("0:1", 12, 90);
  for (auto* dump : {&a, &b}) {
    for (auto& e : *dump->mutable_devices(0)->mutable_entries()) {
      e.set_enqueue_unix_ns(kBase + (e.enqueue_unix_ns() - kBase) * 10 - (dump == &b ? 810 * kMs : 0));
    }
  }
  const Diagnosis diagnosis = Diagnose({a, b});
  ASSERT_EQ(diagnosis.findings.size(), 1u) << RenderDiagnosisText(diagnosis);
  const Finding& slow = diagnosis.findings[0];
  EXPECT_EQ(slow.kind, Finding::Kind::kSlow);
  EXPECT_EQ(slow.suspects, std::vector<std::string>{"0:1"});
  EXPECT_NEAR(slow.late_ms, 90, 0.01);
  EXPECT_EQ(slow.last_count, 12);
  EXPECT_NE(slow.text.find("slow: device 0:1 (rank 1 of devices [0:0, 0:1]) entered its collectives 90.0 ms after"),
            std::string::npos)
      << slow.text;
}

TEST(DiagnoseTest, MismatchedBytesAreReportedWithBothSides) {
  proto::FlightDump a = DeviceDump("0:0", 3, 0), b = DeviceDump("0:1", 3, 0, /*bytes=*/2048);
  const Diagnosis diagnosis = Diagnose({a, b});
  ASSERT_EQ(diagnosis.findings.size(), 3u) << RenderDiagnosisText(diagnosis);
  const Finding& mismatch = diagnosis.findings[0];
  EXPECT_EQ(mismatch.kind, Finding::Kind::kMismatch);
  EXPECT_EQ(mismatch.sequence, 0);
  EXPECT_EQ(mismatch.text,
            "mismatch: group devices [0:0, 0:1] sequence 0: the ranks called different collectives: ALL_REDUCE 2048 B "
            "on 0:1; ALL_REDUCE 4096 B on 0:0");
}

// One dump of devices 0:0 and 1:0 with two streams each: a dp all-gather group
// "devices [0:0, 1:0]" (collective 2) and each device's tp all-reduce group (0 and 1).
// 0:0 entered the dp gathers 0..6 and waited 500 ms in the last (failed); 1:0 completed
// the dp gathers 0..5 and then only tp all-reduces: its tp stream ran 14 calls ahead.
proto::FlightDump TwoStreamHangDump(bool group_numbers) {
  proto::FlightDump dump;
  dump.set_format("oneflow-flight-recorder");
  dump.set_version(1);
  dump.set_node(-1);
  dump.set_dumped_unix_ns(kBase + 1000 * kMs);
  auto add_collective = [&](int64_t id, const std::string& kind, const std::string& group,
                            std::vector<std::string> members, int64_t bytes, const std::string& actor) {
    proto::FlightCollective* collective = dump.add_collectives();
    collective->set_collective(id);
    collective->set_kind(kind);
    collective->set_group(group);
    for (const std::string& member : members) collective->add_members(member);
    collective->set_bytes(bytes);
    collective->set_actor(actor);
  };
  add_collective(0, "ALL_REDUCE", "devices [0:0, 0:1]", {"0:0", "0:1"}, 2560, "tp/all_reduce");
  add_collective(1, "ALL_REDUCE", "devices [1:0, 1:1]", {"1:0", "1:1"}, 2560, "tp/all_reduce");
  add_collective(2, "ALL_GATHER", "devices [0:0, 1:0]", {"0:0", "1:0"}, 20, "dp/all_gather");
  auto add_entry = [&](proto::FlightDevice* device, int64_t collective, int64_t group_sequence, int64_t at_ms) {
    proto::FlightEntry* entry = device->add_entries();
    entry->set_sequence(device->entries_size() - 1);
    if (group_numbers) entry->set_group_sequence(group_sequence);
    entry->set_collective(collective);
    entry->set_enqueue_unix_ns(kBase + at_ms * kMs);
    entry->set_start_unix_ns(entry->enqueue_unix_ns());
    entry->set_end_unix_ns(entry->enqueue_unix_ns() + kMs);
    entry->set_state("ok");
    device->set_recorded(device->entries_size());
    return entry;
  };
  proto::FlightDevice* first = dump.add_devices();
  first->set_device("0:0");
  first->set_capacity(256);
  for (int64_t g = 0; g <= 6; ++g) add_entry(first, 2, g, 10 * g);
  proto::FlightEntry* waiting = first->mutable_entries(6);
  waiting->set_end_unix_ns(waiting->enqueue_unix_ns() + 500 * kMs);
  waiting->set_state("failed");
  proto::FlightDevice* second = dump.add_devices();
  second->set_device("1:0");
  second->set_capacity(256);
  for (int64_t g = 0; g <= 5; ++g) add_entry(second, 2, g, 10 * g);
  for (int64_t g = 0; g < 14; ++g) add_entry(second, 1, g, 60 + g);
  if (group_numbers) {
    (*first->mutable_group_recorded())["devices [0:0, 1:0]"] = 7;
    (*second->mutable_group_recorded())["devices [0:0, 1:0]"] = 6;
    (*second->mutable_group_recorded())["devices [1:0, 1:1]"] = 14;
  }
  return dump;
}

TEST(DiagnoseTest, RankWhoseOtherStreamRanAheadIsStillNamedInAHang) {
  const Diagnosis diagnosis = Diagnose({TwoStreamHangDump(/*group_numbers=*/true)});
  EXPECT_FALSE(diagnosis.by_device_sequence);
  ASSERT_EQ(diagnosis.findings.size(), 1u) << RenderDiagnosisText(diagnosis);
  const Finding& hang = diagnosis.findings[0];
  EXPECT_EQ(hang.kind, Finding::Kind::kHang);
  EXPECT_EQ(hang.sequence, 6);
  EXPECT_EQ(hang.suspects, std::vector<std::string>{"1:0"});
  EXPECT_EQ(hang.text,
            "hang: collective 2 (ALL_GATHER, 20 B, actor 'dp/all_gather') sequence 6 of group devices [0:0, 1:0]: "
            "device 1:0 (rank 1 of devices [0:0, 1:0]) never entered it (its last in the group: sequence 5); "
            "arrived: 0:0 (waited 500 ms)");
  EXPECT_NE(RenderDiagnosisJson(diagnosis).find("\"alignment\": \"group_sequence\""), std::string::npos);
  // By the devices' own numbers 1:0 (its last: sequence 19) looks past sequence 6: no hang
  // is named, and the text says the dumps were aligned that way.
  const Diagnosis by_device = Diagnose({TwoStreamHangDump(/*group_numbers=*/false)});
  EXPECT_TRUE(by_device.by_device_sequence);
  for (const Finding& finding : by_device.findings) EXPECT_NE(finding.kind, Finding::Kind::kHang) << finding.text;
  EXPECT_NE(RenderDiagnosisText(by_device).find("aligned by each device's own sequence number"), std::string::npos);
  EXPECT_NE(RenderDiagnosisJson(by_device).find("\"alignment\": \"device_sequence\""), std::string::npos);
}

TEST(DiagnoseTest, BadFilesAreNamed) {
  const absl::StatusOr<proto::FlightDump> missing = ReadFlightDump("/nonexistent/flight-node0.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'/nonexistent/flight-node0.json': cannot open"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/not_a_dump.json";
  std::ofstream(path) << "{\"traceEvents\": []}";
  const absl::StatusOr<proto::FlightDump> other = ReadFlightDump(path);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find(absl::StrCat("'", path, "' is not a flight recorder dump")),
            std::string::npos)
      << other.status().message();
  std::ofstream(path) << "garbage";
  EXPECT_EQ(ReadFlightDump(path).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oneflow::cli
