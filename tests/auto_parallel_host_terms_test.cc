// --auto_parallel priced with a calibration file's host lines (sbp/calibration.h, written by
// `oneflow calibrate`): the per-act cost joins the predicted step act by act, the line
// nearest the cluster's device count is used and recorded in the plan, files without host
// lines price as before, and a bad host line is refused naming the file and line.
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/auto_parallel/host_terms.h"
#include "compiler/auto_parallel/price.h"
#include "examples/common/auto_parallel_driver.h"
#include "examples/common/compile_driver.h"
#include "examples/mlp/mlp_model.h"
#include "gtest/gtest.h"
#include "sbp/calibration.h"
#include "tools/cli/inspect.h"

namespace oneflow {
namespace {

using examples::ParallelLayout;

// A codec line as every `oneflow calibrate` file has one; it prices nothing here
// (compression off).
constexpr char kCodecLine[] =
    R"({"codec": "int8", "group_size": 128, "hadamard": false, "bytes_per_second": 2e+09})";

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << text;
  return path;
}

examples::JobBuilder TinyMlp() {
  examples::MlpConfig config;
  config.batch = 32;
  config.in_features = 16;
  config.hidden = 32;
  config.classes = 4;
  return [config](const ParallelLayout& layout) { return examples::BuildMlp(config, layout); };
}

absl::StatusOr<examples::AutoParallelResult> Search(int64_t devices, const std::string& calibration) {
  examples::AutoParallelRequest request;
  request.cluster.devices_per_node = devices;
  request.settings.compression.compression = "off";
  request.settings.compression.codec_calibration = calibration;
  return examples::AutoParallelCompile(TinyMlp(), request);
}

// On one device the probe layout is the chosen one (dp = tp = pp = 1, one micro-batch):
// every actor of the plan's device acts once per iteration, so the calibrated per-act
// cost adds exactly act_seconds x its actors to the predicted step (the host's 64 cores
// leave the other terms as they were).
TEST(AutoParallelHostTermsTest, ActSecondsTimesTheActsJoinThePredictedStep) {
  constexpr double kActSeconds = 1e-4;
  const std::string file =
      WriteFile("acts.jsonl", absl::StrCat(kCodecLine, "\n", HostMeasurementLine({1, kActSeconds, 0, 64, "test"}), "\n"));
  absl::StatusOr<examples::AutoParallelResult> plain = Search(1, WriteFile("codecs.jsonl", kCodecLine));
  absl::StatusOr<examples::AutoParallelResult> priced = Search(1, file);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(priced.ok()) << priced.status();
  const proto::AutoParallelDecision& decision = priced->plan.auto_parallel();
  EXPECT_EQ(decision.chosen().layout().SerializeAsString(),
            plain->plan.auto_parallel().chosen().layout().SerializeAsString());
  const int64_t acts = priced->plan.devices(0).actors_size();
  ASSERT_GT(acts, 10);
  EXPECT_NEAR(auto_parallel::StepSeconds(decision.chosen()) -
                  auto_parallel::StepSeconds(plain->plan.auto_parallel().chosen()),
              kActSeconds * static_cast<double>(acts), 1e-9);
  ASSERT_TRUE(decision.has_host_terms());
  EXPECT_EQ(decision.host_terms().act_seconds(), kActSeconds);
  EXPECT_EQ(decision.host_terms().host_cores(), 64);
  EXPECT_EQ(decision.host_terms().measured_devices(), 1);
  EXPECT_EQ(decision.host_terms().calibration_file(), file);
  EXPECT_FALSE(plain->plan.auto_parallel().has_host_terms());
}

// A line with the share of the cores the process obtained (`oneflow calibrate` measures it
// with the act-count probe): on one device of a one-core host the iteration is its compute
// over that share, so a quarter of a core makes the predicted step exactly 4 times the one
// the same line without the share gives; the record and inspect carry the share.
TEST(AutoParallelHostTermsTest, TheCoreShareDividesTheDevicesCompute) {
  HostMeasurement whole_core{1, 0, 0, 1, "test"};
  HostMeasurement quarter = whole_core;
  quarter.core_share = 0.25;
  absl::StatusOr<examples::AutoParallelResult> alone =
      Search(1, WriteFile("whole.jsonl", absl::StrCat(kCodecLine, "\n", HostMeasurementLine(whole_core), "\n")));
  const std::string file = WriteFile("quarter.jsonl", absl::StrCat(kCodecLine, "\n", HostMeasurementLine(quarter), "\n"));
  absl::StatusOr<examples::AutoParallelResult> shared = Search(1, file);
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_TRUE(shared.ok()) << shared.status();
  const double alone_step = auto_parallel::StepSeconds(alone->plan.auto_parallel().chosen());
  ASSERT_GT(alone_step, 0);
  EXPECT_NEAR(auto_parallel::StepSeconds(shared->plan.auto_parallel().chosen()) / alone_step, 4.0, 1e-9);
  EXPECT_EQ(alone->plan.auto_parallel().host_terms().host_core_share(), 0);
  EXPECT_EQ(shared->plan.auto_parallel().host_terms().host_core_share(), 0.25);
  absl::StatusOr<std::string> text = cli::InspectPlan(shared->plan, {cli::InspectFormat::kText});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "    host terms: act 0 us, collective call 0 us, 1 host cores, core share 0.25 "
                                       "(measured for 1 devices,"))
      << *text;
}

// The line measured for the cluster's device count, else the nearest (a tie: the larger);
// `oneflow inspect` names the terms, the count and the file.
TEST(AutoParallelHostTermsTest, TheLineNearestTheClusterIsUsedAndShown) {
  const std::string two = HostMeasurementLine({2, 1e-6, 2e-6, 2, ""});
  const std::string four = HostMeasurementLine({4, 3e-6, 4e-6, 2, ""});
  const std::string eight = HostMeasurementLine({8, 5e-6, 6e-6, 2, ""});
  const std::string all = WriteFile("all.jsonl", absl::StrCat(kCodecLine, "\n", two, "\n", eight, "\n", four, "\n"));
  absl::StatusOr<examples::AutoParallelResult> exact = Search(4, all);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->plan.auto_parallel().host_terms().measured_devices(), 4);
  EXPECT_EQ(exact->plan.auto_parallel().host_terms().act_seconds(), 3e-6);
  EXPECT_EQ(exact->plan.auto_parallel().host_terms().collective_call_seconds(), 4e-6);
  const std::string six = HostMeasurementLine({6, 5e-6, 6e-6, 2, ""});
  absl::StatusOr<examples::AutoParallelResult> nearest =
      Search(4, WriteFile("nearest.jsonl", absl::StrCat(kCodecLine, "\n", eight, "\n", two, "\n")));
  ASSERT_TRUE(nearest.ok()) << nearest.status();
  EXPECT_EQ(nearest->plan.auto_parallel().host_terms().measured_devices(), 2);
  absl::StatusOr<examples::AutoParallelResult> tie =
      Search(4, WriteFile("tie.jsonl", absl::StrCat(kCodecLine, "\n", two, "\n", six, "\n")));
  ASSERT_TRUE(tie.ok()) << tie.status();
  EXPECT_EQ(tie->plan.auto_parallel().host_terms().measured_devices(), 6);

  absl::StatusOr<std::string> text = cli::InspectPlan(exact->plan, {cli::InspectFormat::kText});
  ASSERT_TRUE(text.ok()) << text.status();
  // (inspect wraps the line before the file name.)
  EXPECT_TRUE(absl::StrContains(
      *text, "    host terms: act 3 us, collective call 4 us, 2 host cores (measured for 4 devices,"))
      << *text;
  EXPECT_TRUE(absl::StrContains(*text, absl::StrCat(all, ")\n"))) << *text;
  absl::StatusOr<std::string> json = cli::InspectPlan(exact->plan, {cli::InspectFormat::kJson});
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(absl::StrContains(*json, "\"measured_devices\": 4")) << *json;
  EXPECT_TRUE(absl::StrContains(examples::AutoParallelSummary(exact->plan.auto_parallel(), 0.5),
                                "\n  host terms: act 3 us, collective call 4 us, 2 host cores (measured for 4 devices"));
}

// The SBP search's cost of a collective call (CompileOptions::collective_call_seconds)
// comes from the same host terms for the layout's cluster (the line nearest its devices),
// unless the settings give one; without a file calls cost their links' latency only.
TEST(AutoParallelHostTermsTest, TheSbpSearchChargesTheHostLinesCallCost) {
  const std::string file = WriteFile(
      "calls.jsonl", absl::StrCat(kCodecLine, "\n", HostMeasurementLine({2, 1e-6, 2e-6, 2, ""}), "\n",
                                  HostMeasurementLine({8, 1e-6, 1.5e-4, 2, ""}), "\n"));
  examples::ParallelFlags flags;
  flags.devices_per_node = 8;
  flags.dp = 8;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Create(flags);
  ASSERT_TRUE(layout.ok()) << layout.status();
  examples::CompileSettings settings;
  settings.sbp_search = true;
  std::string dump;
  absl::StatusOr<CompileOptions> none = examples::CompileOptionsFor(*layout, settings, &dump);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->collective_call_seconds, 0);
  settings.compression.codec_calibration = file;
  absl::StatusOr<CompileOptions> calibrated = examples::CompileOptionsFor(*layout, settings, &dump);
  ASSERT_TRUE(calibrated.ok()) << calibrated.status();
  EXPECT_EQ(calibrated->collective_call_seconds, 1.5e-4);
  settings.collective_call_seconds = 3e-5;
  absl::StatusOr<CompileOptions> given = examples::CompileOptionsFor(*layout, settings, &dump);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->collective_call_seconds, 3e-5);
  settings.collective_call_seconds = -1;
  absl::StatusOr<CompileOptions> negative = examples::CompileOptionsFor(*layout, settings, &dump);
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(absl::StrContains(negative.status().message(), "-1 s is not a finite number of seconds >= 0"))
      << negative.status();
}

// A line with a boxing act's own cost (`oneflow calibrate`'s two-kind fit on an even
// device count): the record carries it, the pricing takes it for boxing acts, inspect
// shows it; a line without it leaves boxing acts at the act's cost.
TEST(AutoParallelHostTermsTest, TheBoxingActsOwnCostReachesThePriceAndTheRecord) {
  HostMeasurement with_boxing{2, 3e-6, 4e-6, 2, ""};
  with_boxing.boxing_act_seconds = 4e-5;
  const std::string file = WriteFile("boxing.jsonl", absl::StrCat(kCodecLine, "\n", HostMeasurementLine(with_boxing), "\n"));
  absl::StatusOr<examples::AutoParallelResult> result = Search(2, file);
  ASSERT_TRUE(result.ok()) << result.status();
  const proto::AutoParallelHostTerms& terms = result->plan.auto_parallel().host_terms();
  ASSERT_TRUE(terms.has_boxing_act_seconds());
  EXPECT_EQ(terms.boxing_act_seconds(), 4e-5);
  auto_parallel::PriceOptions options;
  auto_parallel::ApplyHostTerms(terms, &options);
  EXPECT_EQ(options.boxing_act_seconds, 4e-5);
  EXPECT_EQ(options.act_seconds, 3e-6);
  absl::StatusOr<std::string> text = cli::InspectPlan(result->plan, {cli::InspectFormat::kText});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "    host terms: act 3 us, boxing act 40 us, collective call 4 us, 2 host cores"))
      << *text;

  absl::StatusOr<examples::AutoParallelResult> without =
      Search(2, WriteFile("no_boxing.jsonl",
                          absl::StrCat(kCodecLine, "\n", HostMeasurementLine({2, 3e-6, 4e-6, 2, ""}), "\n")));
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_FALSE(without->plan.auto_parallel().host_terms().has_boxing_act_seconds());
  options.boxing_act_seconds = 1;
  auto_parallel::ApplyHostTerms(without->plan.auto_parallel().host_terms(), &options);
  EXPECT_FALSE(options.boxing_act_seconds.has_value());
}

// A file `oneflow calibrate` wrote before host lines existed prices as without a file:
// acts free, every device its own core, and the record says so.
TEST(AutoParallelHostTermsTest, FilesWithoutHostLinesPriceAsBefore) {
  absl::StatusOr<examples::AutoParallelResult> none = Search(4, "");
  absl::StatusOr<examples::AutoParallelResult> old = Search(4, WriteFile("old.jsonl", kCodecLine));
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->plan.auto_parallel().has_host_terms());
  EXPECT_EQ(old->plan.auto_parallel().chosen().SerializeAsString(),
            none->plan.auto_parallel().chosen().SerializeAsString());
  absl::StatusOr<std::string> text = cli::InspectPlan(old->plan, {cli::InspectFormat::kText});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "    host terms: none: acts free, every device its own core\n")) << *text;
}

// `oneflow calibrate --nodes` found every node on one machine (emulated hosts): without a
// host line its "machine" line makes the nodes' devices share its cores, acts free; on a
// cluster of another node count, or beside a host line (which measured more), it is not
// used.
TEST(AutoParallelHostTermsTest, AMachineLineSharesItsCoresAmongTheNodesItNames) {
  const std::string machine = SharedMachineLine({2, 1, "test"});
  const std::string file = WriteFile("machine.jsonl", absl::StrCat(kCodecLine, "\n", machine, "\n"));
  auto search = [](int64_t nodes, const std::string& calibration) {
    examples::AutoParallelRequest request;
    request.cluster.nodes = nodes;
    request.cluster.devices_per_node = 1;
    request.settings.compression.compression = "off";
    request.settings.compression.codec_calibration = calibration;
    return examples::AutoParallelCompile(TinyMlp(), request);
  };
  absl::StatusOr<examples::AutoParallelResult> shared = search(2, file);
  ASSERT_TRUE(shared.ok()) << shared.status();
  const proto::AutoParallelHostTerms& terms = shared->plan.auto_parallel().host_terms();
  EXPECT_EQ(terms.host_cores(), 1);
  EXPECT_EQ(terms.shared_machine_nodes(), 2);
  EXPECT_EQ(terms.act_seconds(), 0);
  EXPECT_EQ(terms.collective_call_seconds(), 0);
  EXPECT_EQ(terms.host_core_share(), 0);
  // Priced as the devices of one machine's single core (the cost model's shared-core
  // terms, tests/auto_parallel_cost_terms_test.cc), acts free.
  auto_parallel::PriceOptions options;
  auto_parallel::ApplyHostTerms(terms, &options);
  EXPECT_EQ(options.host_cores, 1);
  EXPECT_EQ(options.host_core_share, 0);
  EXPECT_EQ(options.act_seconds, 0);
  // The same file without its machine line: the nodes are separate machines.
  absl::StatusOr<examples::AutoParallelResult> separate =
      search(2, WriteFile("separate.jsonl", absl::StrCat(kCodecLine, "\n")));
  ASSERT_TRUE(separate.ok()) << separate.status();
  EXPECT_FALSE(separate->plan.auto_parallel().has_host_terms());
  absl::StatusOr<std::string> text = cli::InspectPlan(shared->plan, {cli::InspectFormat::kText});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(*text, "    host terms: 2 nodes on one machine of 1 cores,")) << *text;
  absl::StatusOr<std::string> json = cli::InspectPlan(shared->plan, {cli::InspectFormat::kJson});
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(absl::StrContains(*json, "\"shared_machine_nodes\": 2")) << *json;

  // A cluster of 3 nodes is not the machine's 2.
  absl::StatusOr<examples::AutoParallelResult> other = search(3, file);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(other->plan.auto_parallel().has_host_terms());
  // A host line wins: it measured the per-act cost and the share too.
  const std::string both = WriteFile(
      "both.jsonl", absl::StrCat(kCodecLine, "\n", machine, "\n", HostMeasurementLine({2, 3e-6, 4e-6, 2, ""}), "\n"));
  absl::StatusOr<examples::AutoParallelResult> host = search(2, both);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->plan.auto_parallel().host_terms().shared_machine_nodes(), 0);
  EXPECT_EQ(host->plan.auto_parallel().host_terms().act_seconds(), 3e-6);
}

// The machine line with the turns calibrate measured (more nodes than cores): a cluster of
// its nodes with more devices than cores is priced with them, as with a host line, and
// the record and inspect say so; with a core a device they are not used (each process
// has its core, and its calls are the links').
TEST(AutoParallelHostTermsTest, AMachineLinesMeasuredTurnsPriceItsNodesWhenTheyOutnumberTheCores) {
  SharedMachineMeasurement measured{3, 2, "test", std::nullopt};
  measured.turns = HostMeasurement{3, 2e-06, 5e-05, 2, "", 1.5, 3e-05};
  const std::string file =
      WriteFile("turns.jsonl", absl::StrCat(kCodecLine, "\n", SharedMachineLine(measured), "\n"));
  auto search = [&](int64_t nodes, int64_t devices_per_node) {
    examples::AutoParallelRequest request;
    request.cluster.nodes = nodes;
    request.cluster.devices_per_node = devices_per_node;
    request.settings.compression.compression = "off";
    request.settings.compression.codec_calibration = file;
    return examples::AutoParallelCompile(TinyMlp(), request);
  };
  absl::StatusOr<examples::AutoParallelResult> shared = search(3, 1);
  ASSERT_TRUE(shared.ok()) << shared.status();
  const proto::AutoParallelHostTerms& terms = shared->plan.auto_parallel().host_terms();
  EXPECT_EQ(terms.shared_machine_nodes(), 3);
  EXPECT_EQ(terms.host_cores(), 2);
  EXPECT_EQ(terms.act_seconds(), 2e-06);
  EXPECT_EQ(terms.collective_call_seconds(), 5e-05);
  EXPECT_EQ(terms.host_core_share(), 1.5);
  EXPECT_EQ(terms.boxing_act_seconds(), 3e-05);
  EXPECT_EQ(terms.measured_devices(), 3);
  auto_parallel::PriceOptions options;
  auto_parallel::ApplyHostTerms(terms, &options);
  EXPECT_EQ(options.host_core_share, 1.5);
  EXPECT_EQ(options.act_seconds, 2e-06);
  EXPECT_EQ(options.boxing_act_seconds, 3e-05);
  absl::StatusOr<std::string> text = cli::InspectPlan(shared->plan, {cli::InspectFormat::kText});
  ASSERT_TRUE(text.ok()) << text.status();
  // (The file's path follows, wrapped onto the next line.)
  EXPECT_TRUE(absl::StrContains(*text,
                                "    host terms: 3 nodes on one machine of 2 cores: act 2 us, boxing act 30 us, "
                                "collective call 50 us, core share 1.5 (measured for 3 devices,"))
      << *text;

  // The same line's nodes on a machine of 3 cores: a core each, the turns unused.
  measured.cores = 3;
  ASSERT_EQ(WriteFile("turns.jsonl", absl::StrCat(kCodecLine, "\n", SharedMachineLine(measured), "\n")), file);
  absl::StatusOr<examples::AutoParallelResult> own_cores = search(3, 1);
  ASSERT_TRUE(own_cores.ok()) << own_cores.status();
  const proto::AutoParallelHostTerms& free = own_cores->plan.auto_parallel().host_terms();
  EXPECT_EQ(free.shared_machine_nodes(), 3);
  EXPECT_EQ(free.host_cores(), 3);
  EXPECT_EQ(free.act_seconds(), 0);
  EXPECT_EQ(free.host_core_share(), 0);
  EXPECT_FALSE(free.has_boxing_act_seconds());
}

TEST(AutoParallelHostTermsTest, ABadHostLineIsRefusedNamingTheLine) {
  const std::string file = WriteFile(
      "bad.jsonl",
      absl::StrCat(kCodecLine, "\n",
                   R"({"host": "in_process", "devices": 4, "act_seconds": 1e-6, "collective_call_seconds": 0, "cores": 0})",
                   "\n"));
  absl::StatusOr<examples::AutoParallelResult> result = Search(4, file);
  ASSERT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_EQ(result.status().message(),
            absl::StrCat("--codec_calibration: calibration file '", file,
                         "' line 2: \"cores\" is 0; it must be a whole number >= 1"));
}

}  // namespace
}  // namespace oneflow
