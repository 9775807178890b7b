// The pipeline holds passes to the parts of the state they declare (state_parts.h).
#include "compiler/pass_pipeline.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compilation.h"
#include "compiler/passes/sbp_choice_pass.h"
#include "compiler/passes/shape_inference_pass.h"
#include "compiler/standard_pipeline.h"
#include "compiler/state_parts.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow {
namespace {

// A pass whose declaration and body the test chooses.
class TestPass : public CompilerPass {
 public:
  TestPass(std::string name, StateParts reads, StateParts writes, std::function<void(Compilation*)> body)
      : name_(std::move(name)), reads_(reads), writes_(writes), body_(std::move(body)) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(Compilation* compilation) override {
    body_(compilation);
    return true;
  }
  StateParts Reads() const override { return reads_; }
  StateParts Writes() const override { return writes_; }

 private:
  std::string name_;
  StateParts reads_, writes_;
  std::function<void(Compilation*)> body_;
};

Compilation SmallCompilation(bool verify_each_pass = true) {
  Graph graph("mlp");
  graph.AddDataSource("data", DataSource::SyntheticClassification(1, 10));
  Tensor x = graph.Input("x", Shape{8, 16}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{16, 10}, Initializer::Xavier(1));
  MatMul(x, w);
  Compilation compilation;
  compilation.job = *graph.Build();
  compilation.options.verify_each_pass = verify_each_pass;
  compilation.options.check_read_parts = true;  // whatever the build
  compilation.cluster_placement = *Placement::Grid(DeviceType::kCpu, 1, 2);
  compilation.default_placement = compilation.cluster_placement;
  return compilation;
}

TEST(PassPipelineTest, StandardPipelineReadsOnlyWhatEarlierPassesWrite) {
  EXPECT_TRUE(StandardPipeline().CheckDataflow().ok()) << StandardPipeline().CheckDataflow();
}

TEST(PassPipelineTest, StopAfterKeepsThePassesUpToTheNamedOne) {
  PassPipeline pipeline = StandardPipeline();
  ASSERT_TRUE(pipeline.StopAfter("optimizer").ok());
  EXPECT_EQ(pipeline.PassNames(),
            (std::vector<std::string>{"shape_inference", "autograd", "gradient_accumulation", "optimizer"}));
  const absl::Status unknown = pipeline.StopAfter("lowering");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.message(),
            "no pass named 'lowering'; the passes are: shape_inference, autograd, gradient_accumulation, optimizer");
}

TEST(PassPipelineTest, ReadingAPartNoEarlierPassWritesIsRejectedBeforeAnythingRuns) {
  bool ran = false;
  PassPipeline pipeline;
  pipeline.AddPass<TestPass>("early", StateParts{StatePart::kJob}, StateParts{StatePart::kGraph},
                             [&](Compilation*) { ran = true; });
  pipeline.AddPass<TestPass>("reads_boxings", StateParts{StatePart::kBoxings},
                             StateParts{StatePart::kDevices}, [](Compilation*) {});
  pipeline.AddPass<TestPass>("late", StateParts{}, StateParts{StatePart::kBoxings}, [](Compilation*) {});
  Compilation compilation = SmallCompilation();
  const absl::Status status = pipeline.Run(&compilation);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(
      status.message(),
      "compiler bug: pass 'reads_boxings' reads boxings, which no earlier pass writes (written by: late)");
  EXPECT_FALSE(ran);

  // Provided by the caller instead, it is fine.
  pipeline.Provide({StatePart::kBoxings});
  EXPECT_TRUE(pipeline.CheckDataflow().ok());
}

TEST(PassPipelineTest, APassSeesOnlyThePartsItDeclares) {
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  bool saw_job = true, saw_graph = false;
  pipeline.AddPass<TestPass>("graph_reader", StateParts{StatePart::kGraph}, StateParts{StatePart::kBoxings},
                             [&](Compilation* c) {
                               saw_job = c->job.ops_size() > 0;
                               saw_graph = !c->graph.ops.empty();
                             });
  Compilation compilation = SmallCompilation();
  const std::string job_before = compilation.job.SerializeAsString();
  ASSERT_TRUE(pipeline.Run(&compilation).ok());
  EXPECT_FALSE(saw_job) << "the job was visible to a pass that does not read it";
  EXPECT_TRUE(saw_graph);
  // Hidden parts come back whole, pointers into them still valid (LogicalOp::def).
  EXPECT_EQ(compilation.job.SerializeAsString(), job_before);
  EXPECT_EQ(compilation.graph.ops[0].def, &compilation.job.ops(0));
}

TEST(PassPipelineTest, WritingAnUndeclaredPartIsACompilerBugAndIsDropped) {
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<TestPass>("sneaky", StateParts{StatePart::kGraph}, StateParts{StatePart::kGraph},
                             [](Compilation* c) { c->boxings.emplace_back(); });
  Compilation compilation = SmallCompilation(/*verify_each_pass=*/false);
  const absl::Status status = pipeline.Run(&compilation);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            "compiler bug: pass 'sneaky' wrote boxings, which it does not declare (writes: graph)");
  EXPECT_TRUE(compilation.boxings.empty());
}

TEST(PassPipelineTest, ChangingAPartDeclaredOnlyAsReadIsACompilerBug) {
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<TestPass>("renamer", StateParts{StatePart::kGraph}, StateParts{StatePart::kBoxings},
                             [](Compilation* c) { c->graph.tensors[0].consumers.push_back(0); });
  Compilation compilation = SmallCompilation();
  const absl::Status status = pipeline.Run(&compilation);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(),
            "compiler bug: pass 'renamer' changed graph, which it declares only as read (writes: boxings)");
}

// The fingerprint of each part sees a change of one field of it, and only of it.
TEST(StatePartsTest, FingerprintsFollowTheirPartsOnly) {
  PassPipeline pipeline;
  pipeline.AddPass<ShapeInferencePass>();
  pipeline.AddPass<SbpChoicePass>();
  Compilation compilation = SmallCompilation();
  ASSERT_TRUE(pipeline.Run(&compilation).ok());
  auto all = [&] {
    std::vector<uint64_t> prints;
    for (int p = 0; p < kStatePartCount; ++p) prints.push_back(PartFingerprint(compilation, StatePart(p)));
    return prints;
  };
  const std::vector<uint64_t> before = all();
  const std::vector<std::pair<StatePart, std::function<void()>>> edits = {
      {StatePart::kJob, [&] { compilation.job.mutable_ops(0)->set_name("renamed"); }},
      {StatePart::kGraph, [&] { compilation.graph.tensors.back().producer_output += 1; }},
      {StatePart::kGradients, [&] { compilation.gradients.emplace_back("w", "w_grad"); }},
      {StatePart::kBuckets, [&] { compilation.boxing_step_bucket.push_back({-1}); }},
      {StatePart::kDevices, [&] { compilation.devices.emplace_back(); }},
      {StatePart::kBucketCollective, [&] { compilation.bucket_collective.push_back(3); }},
      {StatePart::kPlan, [&] { compilation.plan.set_format_version(7); }},
  };
  std::vector<uint64_t> expected = before;
  for (const auto& [part, edit] : edits) {
    edit();
    const std::vector<uint64_t> after = all();
    for (int p = 0; p < kStatePartCount; ++p) {
      if (StatePart(p) == part) {
        EXPECT_NE(after[p], expected[p]) << "editing " << StatePartName(part) << " left its fingerprint";
      } else {
        EXPECT_EQ(after[p], expected[p])
            << "editing " << StatePartName(part) << " changed " << StatePartName(StatePart(p));
      }
    }
    expected = after;
  }
}

TEST(StatePartsTest, NamesListInDeclarationOrder) {
  EXPECT_EQ((StateParts{StatePart::kPlan, StatePart::kJob, StatePart::kBoxingStepActors}).ToString(),
            "job, boxing_step_actors, plan");
  EXPECT_EQ(StateParts{}.ToString(), "none");
  EXPECT_EQ((StateParts::All() - StateParts::All()).ToString(), "none");
}

}  // namespace
}  // namespace oneflow
