#include "sbp/calibration.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::string Error(const std::string& text) {
  const absl::StatusOr<Calibration> parsed = ParseCalibration(text, "c.jsonl");
  return parsed.ok() ? "parsed" : std::string(parsed.status().message());
}

TEST(CalibrationTest, LinkAndComputeLinesRoundTripBesideCodecLines) {
  const std::string text =
      LinkMeasurementLine("intra_node", {3.25e-6, 5.5e9, "in-process"}) + "\n" +
      LinkMeasurementLine("inter_node", {4.5e-4, 1.5e9, "gloo"}) + "\n" +
      R"({"codec": "int4", "group_size": 128, "hadamard": true, "bytes_per_second": 3e9})" + "\n" +
      ComputeMeasurementLine("gemm", 1.2e11, "sgemm") + "\n" + ComputeMeasurementLine("memory", 1.4e10, "memcpy");
  EXPECT_EQ(LinkMeasurementLine("inter_node", {4.5e-4, 1.5e9, "gloo"}),
            R"({"link": "inter_node", "latency_seconds": 0.00045, "bytes_per_second": 1.5e+09, "method": "gloo"})");
  const absl::StatusOr<Calibration> parsed = ParseCalibration(text, "c.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->intra_node.has_value());
  EXPECT_EQ(parsed->intra_node->latency_seconds, 3.25e-6);
  EXPECT_EQ(parsed->intra_node->bytes_per_second, 5.5e9);
  ASSERT_TRUE(parsed->inter_node.has_value());
  EXPECT_EQ(parsed->inter_node->latency_seconds, 4.5e-4);
  EXPECT_EQ(parsed->inter_node->method, "gloo");
  EXPECT_EQ(parsed->compute.gemm_flops_per_second, 1.2e11);
  EXPECT_EQ(parsed->compute.memory_bytes_per_second, 1.4e10);
  EXPECT_EQ(parsed->codecs.BytesPerSecond({CompressionKind::kInt4, 128, true}), 3e9);
  // A file of link lines only leaves the codecs at their defaults.
  const absl::StatusOr<Calibration> links_only =
      ParseCalibration(LinkMeasurementLine("intra_node", {1e-6, 1e10, ""}), "c.jsonl");
  ASSERT_TRUE(links_only.ok()) << links_only.status();
  EXPECT_FALSE(links_only->inter_node.has_value());
  EXPECT_EQ(links_only->compute.gemm_flops_per_second, 0);
}

TEST(CalibrationTest, BadLinesNameTheFileAndLine) {
  const std::string link = LinkMeasurementLine("intra_node", {1e-6, 1e10, ""});
  EXPECT_EQ(Error(""), "calibration file 'c.jsonl' has no measurement; write one with `oneflow calibrate --out=c.jsonl`");
  EXPECT_EQ(Error(R"({"link": "wan", "latency_seconds": 0, "bytes_per_second": 1})"),
            "calibration file 'c.jsonl' line 1: \"link\" is \"wan\"; valid: intra_node, inter_node");
  EXPECT_EQ(Error(R"({"link": "inter_node", "latency_seconds": -1, "bytes_per_second": 1})"),
            "calibration file 'c.jsonl' line 1: \"latency_seconds\" is -1; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"link": "inter_node", "latency_seconds": 0})"),
            "calibration file 'c.jsonl' line 1: missing key \"bytes_per_second\"");
  EXPECT_EQ(Error(R"({"link": "inter_node", "latency_seconds": 0, "bytes_per_second": 1, "rtt": 2})"),
            "calibration file 'c.jsonl' line 1: unknown key \"rtt\"; valid keys: link, latency_seconds, "
            "bytes_per_second, method");
  EXPECT_EQ(Error(link + "\n" + link), "calibration file 'c.jsonl' line 2: link intra_node is measured twice");
  EXPECT_EQ(Error(R"({"compute": "fft", "per_second": 1})"),
            "calibration file 'c.jsonl' line 1: \"compute\" is \"fft\"; valid: gemm, memory, memory_cached, gemm_shape");
  EXPECT_EQ(Error(R"({"compute": "gemm", "per_second": 0})"),
            "calibration file 'c.jsonl' line 1: \"per_second\" is 0; it must be a finite number > 0");
  // Codec lines keep their own checks.
  EXPECT_EQ(Error(link + "\n" + R"({"codec": "int4", "group_size": 128, "hadamard": true})"),
            "codec calibration file 'c.jsonl' line 2: missing key \"bytes_per_second\"");
}

TEST(CalibrationTest, HostLinesRoundTripOnePerDeviceCount) {
  const HostMeasurement four{4, 2.5e-6, 1.25e-5, 2, "tiny mlp"};
  const HostMeasurement eight{8, 3e-6, 4e-5, 2, "", 1.5, 4.25e-5};
  EXPECT_EQ(HostMeasurementLine(four),
            R"({"host": "in_process", "devices": 4, "act_seconds": 2.5e-06, "collective_call_seconds": 1.25e-05, )"
            R"("cores": 2, "method": "tiny mlp"})");
  // The share of the cores the process obtained and the boxing act's own cost, when
  // measured, come before the method.
  EXPECT_EQ(HostMeasurementLine(eight),
            R"({"host": "in_process", "devices": 8, "act_seconds": 3e-06, "collective_call_seconds": 4e-05, )"
            R"("cores": 2, "core_share": 1.5, "boxing_act_seconds": 4.25e-05, "method": ""})");
  const std::string text = LinkMeasurementLine("intra_node", {1e-6, 1e10, ""}) + "\n" + HostMeasurementLine(four) +
                           "\n" + R"({"codec": "int4", "group_size": 128, "hadamard": true, "bytes_per_second": 3e9})" +
                           "\n" + HostMeasurementLine(eight);
  const absl::StatusOr<Calibration> parsed = ParseCalibration(text, "c.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->hosts.size(), 2u);
  EXPECT_EQ(parsed->hosts[0].devices, 4);
  EXPECT_EQ(parsed->hosts[0].act_seconds, 2.5e-6);
  EXPECT_EQ(parsed->hosts[0].collective_call_seconds, 1.25e-5);
  EXPECT_EQ(parsed->hosts[0].cores, 2);
  EXPECT_EQ(parsed->hosts[0].method, "tiny mlp");
  EXPECT_EQ(parsed->hosts[0].core_share, 0);  // a line without it: not measured
  EXPECT_EQ(parsed->hosts[1].devices, 8);
  EXPECT_EQ(parsed->hosts[1].core_share, 1.5);
  EXPECT_FALSE(parsed->hosts[0].boxing_act_seconds.has_value());  // boxing acts cost act_seconds
  EXPECT_EQ(parsed->hosts[1].boxing_act_seconds, 4.25e-5);
  // The codec lines still parse beside host lines.
  EXPECT_EQ(parsed->codecs.BytesPerSecond({CompressionKind::kInt4, 128, true}), 3e9);
  // The nearest device count; a tie goes to the larger one.
  EXPECT_EQ(NearestHostMeasurement(*parsed, 4)->devices, 4);
  EXPECT_EQ(NearestHostMeasurement(*parsed, 2)->devices, 4);
  EXPECT_EQ(NearestHostMeasurement(*parsed, 6)->devices, 8);
  EXPECT_EQ(NearestHostMeasurement(*parsed, 64)->devices, 8);
  EXPECT_EQ(NearestHostMeasurement(Calibration{}, 4), nullptr);
}

// A file `oneflow calibrate` wrote before host lines existed (links, compute, codecs)
// loads as it did, with no host measurement.
TEST(CalibrationTest, FilesWithoutHostLinesStillLoad) {
  const std::string old_file =
      R"({"codec": "fp8e4m3", "group_size": 128, "hadamard": false, "bytes_per_second": 2.1e+09, )"
      R"("encode_bytes_per_second": 4e+09, "decode_bytes_per_second": 4.4e+09, "elements": 1048576, "repetitions": 7})"
      "\n"
      R"({"link": "intra_node", "latency_seconds": 3.1e-06, "bytes_per_second": 5.2e+09, "method": "in-process all_reduce, 2 ranks"})"
      "\n"
      R"({"link": "inter_node", "latency_seconds": 0.00043, "bytes_per_second": 1.6e+09, "method": "gloo all_reduce, 2 processes, 127.0.0.1"})"
      "\n"
      R"({"compute": "gemm", "per_second": 1.2e+11, "method": "sgemm 512x512x512, 1 thread"})"
      "\n"
      R"({"compute": "memory", "per_second": 1.4e+10, "method": "memcpy 64 MiB, read + written"})"
      "\n";
  const absl::StatusOr<Calibration> parsed = ParseCalibration(old_file, "old.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->hosts.empty());
  EXPECT_EQ(parsed->inter_node->latency_seconds, 0.00043);
  EXPECT_EQ(parsed->compute.gemm_flops_per_second, 1.2e11);
  // Its codec line has no metering-encode figure: the encode's rate stands in.
  const CompressionChoice fp8{CompressionKind::kFp8E4M3, 128, false};
  EXPECT_DOUBLE_EQ(parsed->codecs.EncodeMeasuredSeconds(fp8, 4e6), 1e-3);
  // A codec line with one gives the metering encode its rate in the whole-file reader too.
  const absl::StatusOr<Calibration> metering = ParseCalibration(
      R"({"codec": "fp8e4m3", "group_size": 128, "hadamard": false, "bytes_per_second": 2.1e+09, )"
      R"("encode_bytes_per_second": 4e+09, "decode_bytes_per_second": 4.4e+09, )"
      R"("encode_measured_bytes_per_second": 2e+09, "elements": 1048576, "repetitions": 7})",
      "new.jsonl");
  ASSERT_TRUE(metering.ok()) << metering.status();
  EXPECT_DOUBLE_EQ(metering->codecs.EncodeMeasuredSeconds(fp8, 4e6), 2e-3);
  EXPECT_DOUBLE_EQ(metering->codecs.EncodeSeconds(fp8, 4e6), 1e-3);
}

TEST(CalibrationTest, BadHostLinesNameTheLine) {
  const std::string link = LinkMeasurementLine("intra_node", {1e-6, 1e10, ""});
  const std::string host = HostMeasurementLine({4, 1e-6, 1e-5, 2, ""});
  EXPECT_EQ(Error(link + "\n" + R"({"host": "gpu", "devices": 4, "act_seconds": 0, "collective_call_seconds": 0, "cores": 1})"),
            "calibration file 'c.jsonl' line 2: \"host\" is \"gpu\"; valid: in_process");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "act_seconds": -1e-6, "collective_call_seconds": 0, "cores": 1})"),
            "calibration file 'c.jsonl' line 1: \"act_seconds\" is -1e-6; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "act_seconds": 0, "collective_call_seconds": "fast", "cores": 1})"),
            "calibration file 'c.jsonl' line 1: \"collective_call_seconds\" is fast; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "act_seconds": 0, "collective_call_seconds": 0, "cores": 0})"),
            "calibration file 'c.jsonl' line 1: \"cores\" is 0; it must be a whole number >= 1");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 2.5, "act_seconds": 0, "collective_call_seconds": 0, "cores": 1})"),
            "calibration file 'c.jsonl' line 1: \"devices\" is 2.5; it must be a whole number >= 1");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "collective_call_seconds": 0, "cores": 1})"),
            "calibration file 'c.jsonl' line 1: missing key \"act_seconds\"");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "act_seconds": 0, "collective_call_seconds": 0, "cores": 1, "acts": 3})"),
            "calibration file 'c.jsonl' line 1: unknown key \"acts\"; valid keys: host, devices, act_seconds, "
            "collective_call_seconds, cores, core_share, boxing_act_seconds, method");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "act_seconds": 0, "collective_call_seconds": 0, "cores": 1, "boxing_act_seconds": -1})"),
            "calibration file 'c.jsonl' line 1: \"boxing_act_seconds\" is -1; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"host": "in_process", "devices": 4, "act_seconds": 0, "collective_call_seconds": 0, "cores": 1, "core_share": 0})"),
            "calibration file 'c.jsonl' line 1: \"core_share\" is 0; it must be a finite number > 0");
  EXPECT_EQ(Error(host + "\n\n" + host), "calibration file 'c.jsonl' line 3: host for 4 devices is measured twice");
}

// The "machine" line of `oneflow calibrate --nodes` (every node on one machine): read
// back as written, beside the other kinds and without disturbing the codec lines.
TEST(CalibrationTest, TheSharedMachineLineRoundTrips) {
  const std::string machine = SharedMachineLine({3, 2, "one boot id"});
  EXPECT_EQ(machine, R"({"machine": "shared", "nodes": 3, "cores": 2, "method": "one boot id"})");
  const std::string codec = R"({"codec": "int8", "group_size": 128, "hadamard": false, "bytes_per_second": 2e+09})";
  absl::StatusOr<Calibration> calibration =
      ParseCalibration(codec + "\n" + machine + "\n" + LinkMeasurementLine("inter_node", {1e-4, 1e8, ""}), "c.jsonl");
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  ASSERT_TRUE(calibration->shared_machine.has_value());
  EXPECT_EQ(calibration->shared_machine->nodes, 3);
  EXPECT_EQ(calibration->shared_machine->cores, 2);
  EXPECT_EQ(calibration->shared_machine->method, "one boot id");
  EXPECT_TRUE(calibration->hosts.empty());
  // A file without the line: no shared machine.
  absl::StatusOr<Calibration> without = ParseCalibration(codec, "c.jsonl");
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->shared_machine.has_value());

  EXPECT_EQ(Error(R"({"machine": "own", "nodes": 3, "cores": 2})"),
            "calibration file 'c.jsonl' line 1: \"machine\" is \"own\"; valid: shared");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 1, "cores": 2})"),
            "calibration file 'c.jsonl' line 1: \"nodes\" is 1; a shared machine holds at least 2 nodes");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 0})"),
            "calibration file 'c.jsonl' line 1: \"cores\" is 0; it must be a whole number >= 1");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3})"), "calibration file 'c.jsonl' line 1: missing key \"cores\"");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 2, "boot_id": "x"})"),
            "calibration file 'c.jsonl' line 1: unknown key \"boot_id\"; valid keys: machine, nodes, cores, devices, "
            "processes, act_seconds, collective_call_seconds, core_share, boxing_act_seconds, own_core_act_seconds, "
            "method");
  EXPECT_EQ(Error(machine + "\n" + machine), "calibration file 'c.jsonl' line 2: the shared machine is given twice");
}

// With a core per node calibrate measures an act's cost on its own core onto the machine
// line, without the turns; read back as written; a negative cost is refused.
TEST(CalibrationTest, TheSharedMachineLineCarriesAnActOnItsOwnCore) {
  SharedMachineMeasurement measured{2, 2, "one boot id", std::nullopt};
  measured.own_core_act_seconds = 1.25e-06;
  const std::string machine = SharedMachineLine(measured);
  EXPECT_EQ(machine,
            R"({"machine": "shared", "nodes": 2, "cores": 2, "own_core_act_seconds": 1.25e-06, )"
            R"("method": "one boot id"})");
  absl::StatusOr<Calibration> calibration = ParseCalibration(machine, "c.jsonl");
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  ASSERT_TRUE(calibration->shared_machine.has_value());
  EXPECT_FALSE(calibration->shared_machine->turns.has_value());
  ASSERT_TRUE(calibration->shared_machine->own_core_act_seconds.has_value());
  EXPECT_EQ(*calibration->shared_machine->own_core_act_seconds, 1.25e-06);
  // A line without it (written before session 59): not measured.
  absl::StatusOr<Calibration> old_line = ParseCalibration(SharedMachineLine({2, 2, "one boot id"}), "c.jsonl");
  ASSERT_TRUE(old_line.ok()) << old_line.status();
  EXPECT_FALSE(old_line->shared_machine->own_core_act_seconds.has_value());
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 2, "cores": 2, "own_core_act_seconds": -1e-6})"),
            "calibration file 'c.jsonl' line 1: \"own_core_act_seconds\" is -1e-6; it must be a finite number >= 0");
}

TEST(CalibrationTest, TransferLineRoundTripsAndOldFilesHaveNone) {
  const TransferMeasurement measured{1.25e-4, 3.1e-4, 4096, "ucx send_recv round trips, 2 processes"};
  const std::string line = TransferMeasurementLine(measured);
  EXPECT_EQ(line,
            R"({"transfer": "inter_node", "latency_seconds": 0.000125, "round_trip_seconds": 0.00031, "bytes": 4096, )"
            R"("method": "ucx send_recv round trips, 2 processes"})");
  const std::string inter_node = LinkMeasurementLine("inter_node", {0, 1.19e8, "ucx all_reduce"});
  // Beside a codec line (the codecs' own parser reads the same file and skips it).
  const std::string codec = R"({"codec": "int4", "group_size": 128, "hadamard": true, "bytes_per_second": 3e9})";
  const absl::StatusOr<Calibration> parsed =
      ParseCalibration(codec + "\n" + inter_node + "\n" + line + "\n", "c.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->inter_node_transfer.has_value());
  EXPECT_EQ(parsed->inter_node_transfer->latency_seconds, 1.25e-4);
  EXPECT_EQ(parsed->inter_node_transfer->round_trip_seconds, 3.1e-4);
  EXPECT_EQ(parsed->inter_node_transfer->bytes, 4096);
  EXPECT_EQ(parsed->inter_node_transfer->method, "ucx send_recv round trips, 2 processes");
  EXPECT_EQ(parsed->inter_node->bytes_per_second, 1.19e8);
  // The link line alone (a file from before the transfer line): no transfer.
  const absl::StatusOr<Calibration> old_file = ParseCalibration(inter_node, "c.jsonl");
  ASSERT_TRUE(old_file.ok()) << old_file.status();
  EXPECT_FALSE(old_file->inter_node_transfer.has_value());

  EXPECT_EQ(Error(R"({"transfer": "intra_node", "latency_seconds": 0, "round_trip_seconds": 1e-5, "bytes": 4096})"),
            "calibration file 'c.jsonl' line 1: \"transfer\" is \"intra_node\"; valid: inter_node");
  EXPECT_EQ(Error(R"({"transfer": "inter_node", "latency_seconds": -1, "round_trip_seconds": 1e-5, "bytes": 4096})"),
            "calibration file 'c.jsonl' line 1: \"latency_seconds\" is -1; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"transfer": "inter_node", "latency_seconds": 0, "round_trip_seconds": 0, "bytes": 4096})"),
            "calibration file 'c.jsonl' line 1: \"round_trip_seconds\" is 0; it must be a finite number > 0");
  EXPECT_EQ(Error(R"({"transfer": "inter_node", "latency_seconds": 0, "round_trip_seconds": 1e-5})"),
            "calibration file 'c.jsonl' line 1: missing key \"bytes\"");
  EXPECT_EQ(Error(R"({"transfer": "inter_node", "latency_seconds": 0, "round_trip_seconds": 1e-5, "bytes": 1, )"
                  R"("rtt": 1})"),
            "calibration file 'c.jsonl' line 1: unknown key \"rtt\"; valid keys: transfer, latency_seconds, "
            "round_trip_seconds, bytes, method");
  EXPECT_EQ(Error(line + "\n" + line), "calibration file 'c.jsonl' line 2: the inter_node transfer is measured twice");
}

// With more nodes than cores calibrate measures the devices' turns on the cores onto the
// machine line: written after the cores, read back with the line's cores; a line with some
// of the terms but not the three a host line needs is refused.
TEST(CalibrationTest, TheSharedMachineLineCarriesTheMeasuredTurns) {
  SharedMachineMeasurement measured{3, 2, "one boot id", std::nullopt};
  measured.turns = HostMeasurement{3, 1.5e-06, 4.75e-05, 2, "", 1.25, std::nullopt};
  const std::string machine = SharedMachineLine(measured);
  EXPECT_EQ(machine,
            R"({"machine": "shared", "nodes": 3, "cores": 2, "devices": 3, "act_seconds": 1.5e-06, )"
            R"("collective_call_seconds": 4.75e-05, "core_share": 1.25, "method": "one boot id"})");
  absl::StatusOr<Calibration> calibration = ParseCalibration(machine, "c.jsonl");
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  ASSERT_TRUE(calibration->shared_machine.has_value());
  ASSERT_TRUE(calibration->shared_machine->turns.has_value());
  const HostMeasurement& turns = *calibration->shared_machine->turns;
  EXPECT_EQ(turns.devices, 3);
  EXPECT_EQ(turns.act_seconds, 1.5e-06);
  EXPECT_EQ(turns.collective_call_seconds, 4.75e-05);
  EXPECT_EQ(turns.core_share, 1.25);
  EXPECT_EQ(turns.cores, 2);
  EXPECT_FALSE(turns.boxing_act_seconds.has_value());
  // Not a host line: the search applies it to a cluster of 3 nodes only.
  EXPECT_TRUE(calibration->hosts.empty());
  measured.turns->boxing_act_seconds = 2e-05;
  absl::StatusOr<Calibration> boxing = ParseCalibration(SharedMachineLine(measured), "c.jsonl");
  ASSERT_TRUE(boxing.ok()) << boxing.status();
  EXPECT_EQ(boxing->shared_machine->turns->boxing_act_seconds, 2e-05);

  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 2, "core_share": 1.5})"),
            "calibration file 'c.jsonl' line 1: missing key \"devices\"");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 2, "devices": 3, "act_seconds": 1e-6})"),
            "calibration file 'c.jsonl' line 1: missing key \"collective_call_seconds\"");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 2, "devices": 3, "act_seconds": 0, )"
                  R"("collective_call_seconds": 0})"),
            "calibration file 'c.jsonl' line 1: missing key \"core_share\"");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 2, "devices": 3, "act_seconds": 0, )"
                  R"("collective_call_seconds": 0, "core_share": 0})"),
            "calibration file 'c.jsonl' line 1: \"core_share\" is 0; it must be a finite number > 0");
}

// Since session 47 calibrate measures the turns' act cost and core share across one
// process per device, as the launched job runs: "processes" says so, after "devices", and
// is read back; it needs the turns it describes and one device per process.
TEST(CalibrationTest, TheSharedMachineLineSaysAcrossHowManyProcessesItsTurnsWereMeasured) {
  SharedMachineMeasurement measured{3, 2, "three processes", std::nullopt};
  measured.turns = HostMeasurement{3, 1.5e-06, 4.75e-05, 2, "", 1.875, std::nullopt};
  measured.processes = 3;
  const std::string machine = SharedMachineLine(measured);
  EXPECT_EQ(machine,
            R"({"machine": "shared", "nodes": 3, "cores": 2, "devices": 3, "processes": 3, "act_seconds": 1.5e-06, )"
            R"("collective_call_seconds": 4.75e-05, "core_share": 1.875, "method": "three processes"})");
  absl::StatusOr<Calibration> calibration = ParseCalibration(machine, "c.jsonl");
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  ASSERT_TRUE(calibration->shared_machine.has_value());
  EXPECT_EQ(calibration->shared_machine->processes, 3);
  ASSERT_TRUE(calibration->shared_machine->turns.has_value());
  EXPECT_EQ(calibration->shared_machine->turns->core_share, 1.875);
  // A line written before session 47 has none: its turns were threads of one process.
  measured.processes = 0;
  absl::StatusOr<Calibration> threads = ParseCalibration(SharedMachineLine(measured), "c.jsonl");
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_EQ(threads->shared_machine->processes, 0);

  const std::string turns = R"("devices": 3, "act_seconds": 1e-6, "collective_call_seconds": 0, "core_share": 1.5)";
  EXPECT_EQ(Error(absl::StrCat(R"({"machine": "shared", "nodes": 3, "cores": 2, "processes": 2, )", turns, "}")),
            "calibration file 'c.jsonl' line 1: \"processes\" is 2 for 3 devices; the turns are measured with one "
            "device per process");
  EXPECT_EQ(Error(absl::StrCat(R"({"machine": "shared", "nodes": 3, "cores": 2, "processes": 0, )", turns, "}")),
            "calibration file 'c.jsonl' line 1: \"processes\" is 0; it must be a whole number >= 1");
  EXPECT_EQ(Error(R"({"machine": "shared", "nodes": 3, "cores": 2, "processes": 3})"),
            "calibration file 'c.jsonl' line 1: \"processes\" is given without the measured turns (devices, "
            "act_seconds, collective_call_seconds, core_share) whose measurement it describes");
}

TEST(CalibrationTest, MissingFileIsNotFound) {
  const absl::StatusOr<Calibration> missing = ReadCalibrationFile(::testing::TempDir() + "/absent.jsonl");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

// The "memory_cached" compute line (sbp/compute_cost.h's cache term): its rate and the
// cache's bytes round trip; it needs "bytes", which no other compute line takes; a file
// without it (every file before session 47) prices every byte at the memory rate.
TEST(CalibrationTest, TheCachedMemoryLineRoundTripsWithItsCacheBytes) {
  const std::string line = CachedMemoryMeasurementLine(5.4e10, 2097152, "memcpy 1024 KiB");
  EXPECT_EQ(line, R"({"compute": "memory_cached", "per_second": 5.4e+10, "bytes": 2097152, "method": "memcpy 1024 KiB"})");
  const absl::StatusOr<Calibration> parsed =
      ParseCalibration(ComputeMeasurementLine("memory", 1.1e10, "memcpy") + "\n" + line, "c.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->compute.memory_bytes_per_second, 1.1e10);
  EXPECT_EQ(parsed->compute.memory_cached_bytes_per_second, 5.4e10);
  EXPECT_EQ(parsed->compute.cache_bytes, 2097152);
  const ComputeRates rates = WithDefaults(parsed->compute);
  EXPECT_TRUE(FitsInCache(rates, 2097152));
  EXPECT_FALSE(FitsInCache(rates, 2097153));

  EXPECT_EQ(Error(R"({"compute": "memory_cached", "per_second": 5e10})"),
            "calibration file 'c.jsonl' line 1: missing key \"bytes\"");
  EXPECT_EQ(Error(R"({"compute": "memory_cached", "per_second": 5e10, "bytes": 0})"),
            "calibration file 'c.jsonl' line 1: \"bytes\" is 0; it must be a finite number > 0");
  EXPECT_EQ(Error(R"({"compute": "memory", "per_second": 1e10, "bytes": 2097152})"),
            "calibration file 'c.jsonl' line 1: unknown key \"bytes\"; valid keys: compute, per_second, method");
  EXPECT_EQ(Error(line + "\n" + line), "calibration file 'c.jsonl' line 2: compute memory_cached is measured twice");

  const absl::StatusOr<Calibration> old_file =
      ParseCalibration(ComputeMeasurementLine("memory", 1.1e10, "memcpy"), "old.jsonl");
  ASSERT_TRUE(old_file.ok()) << old_file.status();
  const ComputeRates old_rates = WithDefaults(old_file->compute);
  EXPECT_EQ(old_rates.memory_cached_bytes_per_second, 1.1e10);
  EXPECT_FALSE(FitsInCache(old_rates, 1));
}

// The "gemm_shape" compute line (sbp/gemm_shape_model.h): its three figures round trip
// into ComputeRates::gemm_shape, which then prices a GEMM by its shape; each figure is
// required (0 allowed for the bytes and the call); a file without it prices at "gemm".
TEST(CalibrationTest, TheGemmShapeLineRoundTripsIntoTheShapeModel) {
  GemmShapeModel model;
  model.flops_per_second = 1.1e11;
  model.operand_bytes_per_second = 6.2e9;
  model.call_seconds = 1.4e-6;
  const std::string line = GemmShapeMeasurementLine(model, "21 shapes");
  EXPECT_EQ(line, R"({"compute": "gemm_shape", "per_second": 1.1e+11, "operand_bytes_per_second": 6.2e+09, )"
                  R"("call_seconds": 1.4e-06, "method": "21 shapes"})");
  const absl::StatusOr<Calibration> parsed =
      ParseCalibration(ComputeMeasurementLine("gemm", 9e10, "sgemm") + "\n" + line, "c.jsonl");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->compute.gemm_flops_per_second, 9e10);
  EXPECT_EQ(parsed->compute.gemm_shape.flops_per_second, 1.1e11);
  EXPECT_EQ(parsed->compute.gemm_shape.operand_bytes_per_second, 6.2e9);
  EXPECT_EQ(parsed->compute.gemm_shape.call_seconds, 1.4e-6);
  const ComputeRates rates = WithDefaults(parsed->compute);
  const GemmShape shape{8, 32, 32, 8};
  EXPECT_DOUBLE_EQ(GemmShapeSeconds(rates, shape), model.Seconds(shape));
  EXPECT_GT(GemmShapeSeconds(rates, shape), GemmSeconds(rates, shape.Flops()));

  EXPECT_EQ(Error(R"({"compute": "gemm_shape", "per_second": 1e11, "call_seconds": 0})"),
            "calibration file 'c.jsonl' line 1: missing key \"operand_bytes_per_second\"");
  EXPECT_EQ(Error(R"({"compute": "gemm_shape", "per_second": 1e11, "operand_bytes_per_second": 0})"),
            "calibration file 'c.jsonl' line 1: missing key \"call_seconds\"");
  EXPECT_EQ(Error(R"({"compute": "gemm_shape", "per_second": 1e11, "operand_bytes_per_second": -1, )"
                  R"("call_seconds": 0})"),
            "calibration file 'c.jsonl' line 1: \"operand_bytes_per_second\" is -1; it must be a finite number >= 0");
  EXPECT_EQ(Error(R"({"compute": "gemm", "per_second": 1e11, "call_seconds": 0})"),
            "calibration file 'c.jsonl' line 1: unknown key \"call_seconds\"; valid keys: compute, per_second, method");
  EXPECT_EQ(Error(line + "\n" + line), "calibration file 'c.jsonl' line 2: compute gemm_shape is measured twice");

  const absl::StatusOr<Calibration> old_file = ParseCalibration(ComputeMeasurementLine("gemm", 9e10, "sgemm"), "old.jsonl");
  ASSERT_TRUE(old_file.ok()) << old_file.status();
  const ComputeRates flat = WithDefaults(old_file->compute);
  EXPECT_FALSE(flat.gemm_shape.measured());
  EXPECT_DOUBLE_EQ(GemmShapeSeconds(flat, shape), shape.Flops() / 9e10);
}

}  // namespace
}  // namespace oneflow
