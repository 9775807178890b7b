// The compression metrics of the same compressed plan through `oneflow run` (every device
// in one process) and `oneflow launch` (two daemons, a worker per node, the client adding
// the nodes' sums): the same lines, iteration by iteration: the same codecs, the same wire
// and dense bytes, the same relative error up to the order the sums were added in.
#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_harness.h"
#include "tests/cluster/process.h"

namespace oneflow::testing {
namespace {

using std::chrono::milliseconds;

struct Entry {
  double rel_l2 = 0;
  long long wire_bytes = 0;
  long long dense_bytes = 0;
};

// iteration -> codec -> entry, from the metrics lines among `lines`.
std::map<int, std::map<std::string, Entry>> CompressionOf(const std::vector<std::string>& lines) {
  static const std::regex entry(
      "\"([a-z0-9_]+/[0-9]+)\": \\{\"rel_l2\": ([0-9.e+-]+), \"wire_bytes\": ([0-9]+), \"dense_bytes\": ([0-9]+)\\}");
  std::map<int, std::map<std::string, Entry>> result;
  for (const std::string& line : lines) {
    const int iteration = IterationOf(line);
    if (iteration < 0) continue;
    std::map<std::string, Entry>& codecs = result[iteration];
    for (std::sregex_iterator it(line.begin(), line.end(), entry), end; it != end; ++it) {
      codecs[(*it)[1]] = Entry{std::stod((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4])};
    }
  }
  return result;
}

TEST(CompressionMetricsLaunchTest, LaunchPrintsTheLinesRunPrints) {
  constexpr int kIterations = 4;
  const std::string plan = CompilePlan("gpt",
                                       {"--batch=4", "--seq=8", "--layers=1", "--hidden=32", "--heads=4", "--vocab=32",
                                        "--nodes=2", "--devices_per_node=2", "--dp=2", "--tp=2", "--compression=int4"},
                                       "gpt-int4");
  Process run({Runfile("tools/cli/oneflow"), "run", plan, absl::StrCat("--iters=", kIterations)});
  ASSERT_TRUE(run.Wait(milliseconds(120000)));
  ASSERT_EQ(run.exit_code(), 0) << run.Stderr();
  Daemons daemons(2);
  std::unique_ptr<Process> launch = Launch(daemons, plan, kIterations, "gpt-int4-metrics");
  ASSERT_TRUE(launch->Wait(milliseconds(120000)));
  ASSERT_EQ(launch->exit_code(), 0) << launch->Stderr();

  const std::map<int, std::map<std::string, Entry>> one = CompressionOf(run.StdoutLines());
  const std::map<int, std::map<std::string, Entry>> two = CompressionOf(launch->StdoutLines());
  ASSERT_EQ(one.size(), static_cast<size_t>(kIterations));
  ASSERT_EQ(two.size(), static_cast<size_t>(kIterations));
  for (int i = 0; i < kIterations; ++i) {
    ASSERT_FALSE(one.at(i).empty()) << "iteration " << i << ": no compression in the run's line";
    ASSERT_EQ(one.at(i).size(), two.at(i).size()) << "iteration " << i;
    for (const auto& [codec, want] : one.at(i)) {
      ASSERT_EQ(two.at(i).count(codec), 1u) << codec << " iteration " << i;
      const Entry& got = two.at(i).at(codec);
      EXPECT_EQ(got.wire_bytes, want.wire_bytes) << codec << " iteration " << i;
      EXPECT_EQ(got.dense_bytes, want.dense_bytes) << codec << " iteration " << i;
      // Printed with 4 significant digits from sums added in another order.
      EXPECT_NEAR(got.rel_l2, want.rel_l2, 2e-3 * want.rel_l2) << codec << " iteration " << i;
      EXPECT_GT(want.rel_l2, 0) << codec;
    }
  }
}

}  // namespace
}  // namespace oneflow::testing
