// Real text for the gpt (examples/gpt --text_file): a small model trained on the bytes of
// the GPL-3 text every Debian machine has (/usr/share/common-licenses, package
// base-files) gets below 3 bits per byte within the demo's iterations (tools/dev.sh demo),
// and a missing or too short file is a clear error naming the flag.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"
#include "gtest/gtest.h"

namespace oneflow {
namespace {

constexpr char kLicense[] = "/usr/share/common-licenses/GPL-3";

// The demo's model and schedule (tools/dev.sh, demo_text).
examples::GptConfig TextGpt(const std::string& path) {
  examples::GptConfig config;
  config.text_file = path;
  config.batch = 16;
  config.seq = 64;
  config.hidden = 64;
  config.heads = 4;
  config.layers = 2;
  config.learning_rate = 3e-3;
  return config;
}

examples::ParallelLayout OneDevice() {
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(examples::ParallelFlags());
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

TEST(TextFileTrainingTest, LossFallsBelowThreeBitsPerByteOnTheLicenseText) {
  if (!std::ifstream(kLicense)) GTEST_SKIP() << kLicense << " is missing (Debian's base-files installs it)";
  const examples::ParallelLayout layout = OneDevice();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(TextGpt(kLicense), layout);
  ASSERT_TRUE(job.ok()) << job.status();
  CompileOptions options;
  options.cluster = layout.cluster();
  absl::StatusOr<proto::Plan> plan = Compile(*job, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  actors::TrainOptions train;
  train.iterations = 700;
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(*plan, train);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->iterations.size(), 700u);
  // Cross-entropy in nats per byte; windows follow the file, so average the last 50.
  double last = 0;
  for (size_t i = 650; i < 700; ++i) last += result->iterations[i].loss;
  const double bits_per_byte = last / 50 / std::log(2.0);
  // A uniform guess over 256 byte values is 8 bits; the first iteration is close to it.
  EXPECT_GT(result->iterations[0].loss / std::log(2.0), 7.0);
  EXPECT_LT(bits_per_byte, 3.0) << "mean loss of iterations 650..699: " << bits_per_byte << " bits per byte";
  std::printf("text_file: %.3f bits per byte after 700 iterations\n", bits_per_byte);
}

TEST(TextFileTrainingTest, MissingOrShortFileIsAClearError) {
  const examples::ParallelLayout layout = OneDevice();
  // A missing file is found where every data file is checked, at compile time
  // (examples/common/compile_driver.h, ResolveDataFiles), for gpt and any other model.
  absl::StatusOr<proto::Job> missing = examples::BuildGpt(TextGpt("/nonexistent/text"), layout);
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(examples::ResolveDataFiles(&*missing).message(),
            "text_file '/nonexistent/text' of data source 'data' does not exist");
  const std::string empty = std::string(getenv("TEST_TMPDIR")) + "/empty.txt";
  std::ofstream(empty).close();
  EXPECT_EQ(examples::BuildGpt(TextGpt(empty), layout).status().message(),
            "--text_file=" + empty + " has 0 bytes, fewer than one window of --seq + 1 = 65");
  examples::GptConfig both = TextGpt(empty);
  both.token_file = "tokens.bin";
  EXPECT_EQ(examples::BuildGpt(both, layout).status().message(),
            "--text_file=" + empty + " and --token_file=tokens.bin both name the data; give one");
}

}  // namespace
}  // namespace oneflow
