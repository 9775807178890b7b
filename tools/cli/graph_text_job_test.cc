// `oneflow compile`'s path (graph text -> JobFromGraphText -> Compile) against the
// examples' C++ path (BuildMlp / BuildGpt -> Compile): with the text's loc= fields
// (`--print_graph`) the same plan bytes; without them the same plan once source
// locations, which then say where each op was written (mlp_model.cc:40 or mlp.txt:12),
// are set aside. And the errors of the text path, exactly.
#include "tools/cli/graph_text_job.h"

#include <unistd.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/compiler.h"
#include "plan/plan_checksum.h"
#include "plan/plan_io.h"
#include "examples/common/compile_driver.h"
#include "examples/common/tensor_parallel_hinting.h"
#include "examples/gpt/gpt_model.h"
#include "examples/mlp/mlp_model.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/graph.h"

namespace oneflow::cli {
namespace {

examples::ParallelLayout Layout(int64_t devices, int64_t dp, int64_t tp, int64_t pp = 1, int64_t micro_batches = 1,
                                int64_t zero = 0) {
  examples::ParallelFlags flags;
  flags.devices_per_node = devices;
  flags.dp = dp;
  flags.tp = tp;
  flags.pp = pp;
  flags.micro_batches = micro_batches;
  flags.zero = zero;
  absl::StatusOr<examples::ParallelLayout> layout = examples::ParallelLayout::Create(flags);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

std::string TextOf(const proto::Job& job, Graph::Locations locations = Graph::Locations::kOmit) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = Graph::FromJob(job);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return (*graph)->ToText(locations);
}

proto::Plan CompileFor(const proto::Job& job, const examples::ParallelLayout& layout) {
  std::string dump;
  absl::StatusOr<CompileOptions> options = examples::CompileOptionsFor(layout, examples::CompileSettings(), &dump);
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<proto::Plan> plan = Compile(job, *options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// The plan with every source location of its job cleared, resealed (the checksum covers
// the locations too).
proto::Plan WithoutLocations(proto::Plan plan) {
  for (proto::TensorDef& tensor : *plan.mutable_job()->mutable_tensors()) tensor.clear_location();
  for (proto::OpDef& op : *plan.mutable_job()->mutable_ops()) op.clear_location();
  const absl::Status sealed = SealPlan(&plan);
  EXPECT_TRUE(sealed.ok()) << sealed;
  return plan;
}

// The plan's file bytes.
std::string Bytes(const proto::Plan& plan) {
  absl::StatusOr<std::string> bytes = SerializePlan(plan);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return *bytes;
}

// The same file bytes; where not, the fields that differ.
void ExpectSameBytes(const proto::Plan& expected, const proto::Plan& actual) {
  if (Bytes(expected) == Bytes(actual)) return;
  google::protobuf::util::MessageDifferencer differencer;
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  differencer.Compare(expected, actual);
  ADD_FAILURE() << "the plans differ: " << differences.substr(0, 3000);
}

// The small gpt these tests compile.
examples::GptConfig SmallGpt() {
  examples::GptConfig config;
  config.layers = 2;
  config.hidden = 32;
  config.seq = 16;
  config.vocab = 64;
  return config;
}

void ExpectSamePlan(const proto::Job& cpp_job, const examples::ParallelLayout& layout) {
  const std::string text = TextOf(cpp_job);
  absl::StatusOr<proto::Job> text_job = JobFromGraphText(text, "model.txt", layout);
  ASSERT_TRUE(text_job.ok()) << text_job.status();
  const proto::Plan from_cpp = CompileFor(cpp_job, layout);
  const proto::Plan from_text = CompileFor(*text_job, layout);
  EXPECT_GT(from_text.boxings_size(), 0);
  ExpectSameBytes(WithoutLocations(from_cpp), WithoutLocations(from_text));
  // The locations point into the file: line N of the text holds op N's statement.
  for (const proto::OpDef& op : from_text.job().ops()) {
    if (op.location().file().empty()) continue;  // ops the compiler added (autograd, optimizer)
    EXPECT_EQ(op.location().file(), "model.txt") << op.name();
  }

  // The text as --print_graph writes it, with loc= fields: the C++ plan's bytes exactly.
  absl::StatusOr<proto::Job> located_job =
      JobFromGraphText(TextOf(cpp_job, Graph::Locations::kPrint), "model.txt", layout);
  ASSERT_TRUE(located_job.ok()) << located_job.status();
  const proto::Plan from_located_text = CompileFor(*located_job, layout);
  ExpectSameBytes(from_cpp, from_located_text);
}

TEST(GraphTextJob, MlpDp2Tp2CompilesToTheCppPlan) {
  const examples::ParallelLayout layout = Layout(4, 2, 2);
  examples::MlpConfig config;
  config.optimizer = "adamw";
  absl::StatusOr<proto::Job> job = examples::BuildMlp(config, layout);
  ASSERT_TRUE(job.ok()) << job.status();
  ExpectSamePlan(*job, layout);
}

TEST(GraphTextJob, GptDp2Tp2CompilesToTheCppPlan) {
  const examples::ParallelLayout layout = Layout(4, 2, 2);
  const examples::GptConfig config = SmallGpt();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  ASSERT_TRUE(job.ok()) << job.status();
  ExpectSamePlan(*job, layout);
}

TEST(GraphTextJob, GptPipelineWithMicroBatchesAndZeroCompilesToTheCppPlan) {
  const examples::ParallelLayout layout = Layout(4, 2, 1, /*pp=*/2, /*micro_batches=*/2, /*zero=*/1);
  const examples::GptConfig config = SmallGpt();
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
  ASSERT_TRUE(job.ok()) << job.status();
  ExpectSamePlan(*job, layout);
}

// A model written without any sbp hint gets Megatron's split on a layout with tp
// (compiler/tensor_parallel_hints.h): the gpt's and the mlp's texts with every hint taken
// out compile to the plans of their hand-hinted C++ models, and the note says what was
// split; on a layout without tp nothing is inferred.
proto::Job WithoutHints(proto::Job job) {
  examples::ClearSbpHints(&job);
  return job;
}

void ExpectHintFreeTextCompilesToTheHintedPlan(const proto::Job& hinted, const examples::ParallelLayout& layout,
                                               const std::string& expected_note) {
  std::string note;
  absl::StatusOr<proto::Job> text_job = JobFromGraphText(TextOf(WithoutHints(hinted)), "model.txt", layout, &note);
  ASSERT_TRUE(text_job.ok()) << text_job.status();
  EXPECT_EQ(note, expected_note);
  const proto::Plan from_cpp = CompileFor(hinted, layout);
  const proto::Plan from_text = CompileFor(*text_job, layout);
  ExpectSameBytes(WithoutLocations(from_cpp), WithoutLocations(from_text));
}

TEST(GraphTextJob, AHintFreeGptGetsMegatronsSplit) {
  const examples::GptConfig config = SmallGpt();
  for (const auto& [dp, tp] : {std::pair<int64_t, int64_t>{2, 2}, {1, 4}}) {
    const examples::ParallelLayout layout = Layout(4, dp, tp);
    absl::StatusOr<proto::Job> job = examples::BuildGpt(config, layout);
    ASSERT_TRUE(job.ok()) << job.status();
    ExpectHintFreeTextCompilesToTheHintedPlan(
        *job, layout,
        absl::StrCat("tensor parallelism: the graph has no sbp hint that splits; split over --tp=", tp,
                     " as Megatron would: wte S(0), block0/attn/w_q S(1), block0/attn/w_k S(1), block0/attn/w_v "
                     "S(1), block0/attn/w_o S(0), block0/mlp/w_fc S(1), block0/mlp/w_proj S(0), block1/attn/w_q "
                     "S(1), block1/attn/w_k S(1), block1/attn/w_v S(1), block1/attn/w_o S(0), block1/mlp/w_fc "
                     "S(1), block1/mlp/w_proj S(0); every other variable replicated"));
  }
  // Without tp, nothing to infer: the text stays as written.
  std::string note = "unset";
  const examples::ParallelLayout dp4 = Layout(4, 4, 1);
  absl::StatusOr<proto::Job> job = examples::BuildGpt(config, dp4);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<proto::Job> text_job = JobFromGraphText(TextOf(WithoutHints(*job)), "model.txt", dp4, &note);
  ASSERT_TRUE(text_job.ok()) << text_job.status();
  EXPECT_EQ(note, "");
  for (const proto::TensorDef& tensor : text_job->tensors()) EXPECT_FALSE(tensor.has_sbp_hint()) << tensor.name();
}

// A one-device --print_graph writes `sbp=B` on its inputs and variables: hints that split
// nothing, which cannot be a tp layout's constraint. They are replaced as if absent.
TEST(GraphTextJob, AOneDevicePrintGetsMegatronsSplitOnATpLayout) {
  const examples::GptConfig config = SmallGpt();
  absl::StatusOr<proto::Job> one_device = examples::BuildGpt(config, Layout(1, 1, 1));
  ASSERT_TRUE(one_device.ok()) << one_device.status();
  std::string text;
  for (absl::string_view line : absl::StrSplit(TextOf(*one_device), '\n')) {
    if (!absl::StartsWith(line, "placement ")) absl::StrAppend(&text, line, "\n");
  }
  ASSERT_THAT(text, testing::HasSubstr("sbp=B"));
  const examples::ParallelLayout layout = Layout(4, 2, 2);
  std::string note;
  absl::StatusOr<proto::Job> text_job = JobFromGraphText(text, "gpt.txt", layout, &note);
  ASSERT_TRUE(text_job.ok()) << text_job.status();
  EXPECT_THAT(note, testing::HasSubstr("block0/attn/w_q S(1)"));
  absl::StatusOr<proto::Job> hinted = examples::BuildGpt(config, layout);
  ASSERT_TRUE(hinted.ok()) << hinted.status();
  ExpectSameBytes(WithoutLocations(CompileFor(*hinted, layout)), WithoutLocations(CompileFor(*text_job, layout)));
}

TEST(GraphTextJob, AHintFreeMlpGetsMegatronsSplit) {
  const examples::ParallelLayout layout = Layout(4, 2, 2);
  examples::MlpConfig config;
  config.optimizer = "adamw";
  absl::StatusOr<proto::Job> job = examples::BuildMlp(config, layout);
  ASSERT_TRUE(job.ok()) << job.status();
  // Column-parallel layers with their biases split alike, row-parallel ones with theirs
  // replicated (added after the reduction), as the mlp example hints them.
  ExpectHintFreeTextCompilesToTheHintedPlan(
      *job, layout,
      "tensor parallelism: the graph has no sbp hint that splits; split over --tp=2 as Megatron would: layer0/weight S(1), "
      "layer0/bias S(0), layer1/weight S(0), layer2/weight S(1), layer2/bias S(0), layer3/weight S(0); every other "
      "variable replicated");
}

constexpr char kTiny[] = R"(graph tiny
source data synthetic_classification seed=1 num_classes=3
%x = input f32[8, 4] source=data
%labels = input i32[8] source=data
%w = variable f32[4, 3] init=xavier_uniform seed=7
%logits = matmul(a=%x, b=%w) f32[8, 3]
%ce = sparse_softmax_cross_entropy(logits=%logits, labels=%labels) f32[8]
%loss = reduce_mean(x=%ce, axes=[], keep_dims=false) f32[]
optimizer sgd lr=0.1
loss %loss
)";

TEST(GraphTextJob, AGraphWithoutPlacementGetsTheLayoutsAndItsLinesAsLocations) {
  absl::StatusOr<proto::Job> job = JobFromGraphText(kTiny, "tiny.txt", Layout(2, 2, 1));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->default_placement().hierarchy(0), 2);
  EXPECT_EQ(job->default_placement().devices_size(), 2);
  EXPECT_EQ(job->ops(0).location().file(), "tiny.txt");
  EXPECT_EQ(job->ops(0).location().line(), 6);
}

TEST(GraphTextJob, ErrorsNameTheFileAndLine) {
  std::string text = kTiny;
  text.replace(text.find("matmul("), 7, "matmull(");
  EXPECT_THAT(std::string(JobFromGraphText(text, "tiny.txt", Layout(1, 1, 1)).status().message()),
              testing::StartsWith("tiny.txt: line 6: unknown op type 'matmull'; known: "));
  // A placement written for another layout.
  EXPECT_EQ(std::string(JobFromGraphText(absl::StrCat("graph p\nplacement cpu{0:0-1}[2]\n", std::string(kTiny).substr(11)),
                                         "p.txt", Layout(4, 2, 2))
                            .status()
                            .message()),
            "p.txt: the graph's placement cpu{0:0-1} is not the layout's cpu{0:0-3}[2, 2] (from --nodes=1 "
            "--devices_per_node=4 --dp=2 --tp=2); give the flags it was written for, or remove its `placement` "
            "line and its sbp hints");
  std::string zero = kTiny;
  zero.replace(zero.find("lr=0.1"), 6, "lr=0.1 zero=2 zero_axis=0");
  EXPECT_EQ(JobFromGraphText(zero, "z.txt", Layout(2, 2, 1, 1, 1, /*zero=*/1)).status().message(),
            "z.txt: --zero=1 but the graph's optimizer line says zero=2; give one of them");
  std::string no_optimizer = kTiny;
  no_optimizer.erase(no_optimizer.find("optimizer sgd lr=0.1\n"), 21);
  EXPECT_EQ(JobFromGraphText(no_optimizer, "n.txt", Layout(2, 2, 1, 1, 1, 1)).status().message(),
            "n.txt: --zero=1 shards optimizer state, but the graph has no `optimizer` line");
}

TEST(GraphTextJob, DataFilesBecomeAbsoluteAndADirectoryIsRefused) {
  const std::string directory = testing::TempDir();
  std::string text = kTiny;
  const std::string synthetic = "synthetic_classification seed=1 num_classes=3";
  text.replace(text.find(synthetic), synthetic.size(),
               absl::StrCat("record_file path=\"", directory, "\""));
  EXPECT_EQ(JobFromGraphText(text, "r.txt", Layout(1, 1, 1)).status().message(),
            absl::StrCat("r.txt: record_file '", directory, "' of data source 'data' is a directory; give a regular file"));

  ASSERT_EQ(chdir(directory.c_str()), 0);
  { std::ofstream(directory + "/records.bin") << std::string(20 * 4, '\0'); }
  std::string relative = kTiny;
  relative.replace(relative.find(synthetic), synthetic.size(),
                   "record_file path=\"records.bin\"");
  absl::StatusOr<proto::Job> job = JobFromGraphText(relative, "r.txt", Layout(1, 1, 1));
  ASSERT_TRUE(job.ok()) << job.status();
  const std::string absolute = job->data_sources(0).file().path();
  EXPECT_EQ(absolute.front(), '/');
  EXPECT_THAT(absolute, testing::EndsWith("/records.bin"));
  std::string missing = relative;
  missing.replace(missing.find("records.bin"), 11, "missing.bin");
  EXPECT_EQ(JobFromGraphText(missing, "r.txt", Layout(1, 1, 1)).status().message(),
            absl::StrCat("r.txt: record_file 'missing.bin' of data source 'data' (",
                         absolute.substr(0, absolute.size() - 11), "missing.bin) does not exist"));
}

}  // namespace
}  // namespace oneflow::cli
