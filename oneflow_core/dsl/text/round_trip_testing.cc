#include "oneflow_core/dsl/text/round_trip_testing.h"

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/text/graph_text.h"

namespace oneflow {
namespace graph_text {
namespace {

proto::Job WithoutLocations(proto::Job job) {
  for (proto::TensorDef& tensor : *job.mutable_tensors()) tensor.clear_location();
  for (proto::OpDef& op : *job.mutable_ops()) op.clear_location();
  return job;
}

}  // namespace

std::unique_ptr<Graph> MustParse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Graph>> graph = ParseGraphText(text);
  EXPECT_TRUE(graph.ok()) << graph.status() << "\ntext:\n" << text;
  return graph.ok() ? *std::move(graph) : std::make_unique<Graph>("<parse failed>");
}

void ExpectRoundTrip(const Graph& original) {
  ASSERT_TRUE(original.status().ok()) << original.status();
  const std::string text = original.ToText();
  std::unique_ptr<Graph> parsed = MustParse(text);
  EXPECT_EQ(parsed->ToText(), text);
  absl::StatusOr<proto::Job> want = original.Build();
  absl::StatusOr<proto::Job> got = parsed->Build();
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  google::protobuf::util::MessageDifferencer differencer;
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(WithoutLocations(*want), WithoutLocations(*got)))
      << differences;

  // With loc= fields the text carries the source locations too: the parsed graph builds
  // the original's Job exactly, as `oneflow compile` of `--print_graph` text must.
  const std::string located = original.ToText(Graph::Locations::kPrint);
  std::unique_ptr<Graph> parsed_located = MustParse(located);
  EXPECT_EQ(parsed_located->ToText(Graph::Locations::kPrint), located);
  absl::StatusOr<proto::Job> got_located = parsed_located->Build();
  ASSERT_TRUE(got_located.ok()) << got_located.status();
  std::string located_differences;
  google::protobuf::util::MessageDifferencer located_differencer;
  located_differencer.ReportDifferencesToString(&located_differences);
  EXPECT_TRUE(located_differencer.Compare(*want, *got_located)) << located_differences;
}

}  // namespace graph_text
}  // namespace oneflow
