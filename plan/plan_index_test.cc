// PlanIndex: each lookup over a small plan written as text — found, missing (nullptr or
// the error naming the entry), registers keyed per device, attributes converted, and the
// slice each device holds of a split tensor.
#include "plan/plan_index.h"

#include <string>
#include <variant>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/plan.pb.h"

namespace oneflow {
namespace {

// Two devices of node 0; x [4, 6] split on axis 0 over both; mm reads x and w (S(0), B).
constexpr char kPlan[] = R"pb(
  job {
    tensors { name: "x" shape: [ 4, 6 ] }
    tensors { name: "w" shape: [ 6, 2 ] }
    tensors { name: "y" shape: [ 4, 2 ] }
    ops {
      name: "mm"
      type: "matmul"
      inputs { key: "a" value: "x" }
      inputs { key: "b" value: "w" }
      outputs { key: "out" value: "y" }
      attrs { key: "transpose_b" value { b: false } }
    }
    variables { tensor: "w" }
    data_sources { name: "data" outputs: "x" }
  }
  op_sbps {
    op_name: "mm"
    signature {
      inputs { key: "a" value { sbp { split { axis: 0 } } } }
      inputs { key: "b" value { sbp { broadcast {} } } }
      outputs { key: "out" value { sbp { split { axis: 0 } } } }
    }
    placement { devices { node: 0 device: 0 } devices { node: 0 device: 1 } }
  }
  tensor_layouts {
    tensor: "x"
    sbp { sbp { split { axis: 0 } } }
    placement { devices { node: 0 device: 0 } devices { node: 0 device: 1 } }
  }
  collectives { id: 7 }
  devices {
    device { node: 0 device: 0 }
    actors { id: 1 name: "mm" }
    registers { id: 10 tensor: "y" producer_actor: 1 }
  }
  devices {
    device { node: 0 device: 1 }
    actors { id: 2 name: "mm" }
    registers { id: 10 tensor: "y" producer_actor: 2 }
  }
)pb";

proto::Plan ParsePlan(const std::string& text) {
  proto::Plan plan;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &plan));
  return plan;
}

TEST(PlanIndexTest, FindsByNameAndIdAndReturnsNullForMissing) {
  const proto::Plan plan = ParsePlan(kPlan);
  const PlanIndex index(plan);
  ASSERT_NE(index.FindOp("mm"), nullptr);
  EXPECT_EQ(index.FindOp("mm")->type(), "matmul");
  EXPECT_EQ(index.FindOp("nope"), nullptr);
  ASSERT_NE(index.FindTensor("w"), nullptr);
  EXPECT_EQ(index.FindTensor("w")->shape(0), 6);
  EXPECT_EQ(index.FindTensor("nope"), nullptr);
  ASSERT_NE(index.FindOpSbp("mm"), nullptr);
  EXPECT_EQ(index.FindOpSbp("mm")->op_name(), "mm");
  EXPECT_NE(index.FindCollective(7), nullptr);
  EXPECT_EQ(index.FindCollective(8), nullptr);
  ASSERT_NE(index.FindActor(2), nullptr);
  EXPECT_EQ(index.FindActor(2)->device_index, 1);
  EXPECT_EQ(index.FindActor(3), nullptr);
  EXPECT_TRUE(index.IsVariable("w"));
  EXPECT_FALSE(index.IsVariable("x"));
  EXPECT_TRUE(index.IsDataSourceOutput("x"));
  EXPECT_FALSE(index.IsDataSourceOutput("w"));
}

TEST(PlanIndexTest, RegistersAreKeyedPerDevice) {
  const proto::Plan plan = ParsePlan(kPlan);
  const PlanIndex index(plan);
  ASSERT_NE(index.FindRegister(0, 10), nullptr);
  ASSERT_NE(index.FindRegister(1, 10), nullptr);
  EXPECT_EQ(index.FindRegister(0, 10)->producer_actor(), 1);
  EXPECT_EQ(index.FindRegister(1, 10)->producer_actor(), 2);
  EXPECT_EQ(index.FindRegister(2, 10), nullptr);
}

TEST(PlanIndexTest, MissingEntriesAreNamedInTheError) {
  const proto::Plan plan = ParsePlan(kPlan);
  const PlanIndex index(plan);
  EXPECT_EQ(index.Tensor("z").status(),
            absl::FailedPreconditionError("the plan has no tensor 'z'"));
  EXPECT_EQ(index.Op("z").status(), absl::FailedPreconditionError("the plan has no op 'z'"));
  EXPECT_EQ(index.Attrs("z").status(), absl::FailedPreconditionError("the plan has no op 'z'"));
  EXPECT_EQ(index.LeafLayout("w", 0).status(),
            absl::FailedPreconditionError("the plan has no tensor layout for 'w'"));
  EXPECT_EQ(index.OpArgumentLayout("mm", "c", /*input=*/true, 0).status(),
            absl::FailedPreconditionError("op 'mm' has no argument 'c'"));
}

TEST(PlanIndexTest, AttributesAreConverted) {
  const proto::Plan plan = ParsePlan(kPlan);
  const absl::StatusOr<PlanIndex> index = PlanIndex::Create(plan);
  ASSERT_TRUE(index.ok()) << index.status();
  const absl::StatusOr<const AttrMap*> attrs = index->Attrs("mm");
  ASSERT_TRUE(attrs.ok()) << attrs.status();
  ASSERT_EQ((*attrs)->count("transpose_b"), 1u);
  EXPECT_EQ(std::get<bool>((*attrs)->at("transpose_b")), false);
}

TEST(PlanIndexTest, AnAttributeWithoutValueIsRefusedByCreateAndReportedByAttrs) {
  proto::Plan plan = ParsePlan(kPlan);
  (*plan.mutable_job()->mutable_ops(0)->mutable_attrs())["broken"];  // no value set
  EXPECT_EQ(PlanIndex::Create(plan).status(),
            absl::InvalidArgumentError("attribute has no value set"));
  // The plain index still serves the lookups a reader of an unchecked plan needs.
  const PlanIndex index(plan);
  EXPECT_NE(index.FindOp("mm"), nullptr);
  EXPECT_EQ(index.Attrs("mm").status(), absl::InvalidArgumentError("attribute has no value set"));
}

TEST(PlanIndexTest, LayoutsGiveEachDeviceItsSlice) {
  const proto::Plan plan = ParsePlan(kPlan);
  const PlanIndex index(plan);
  // x [4, 6] split on axis 0 over two devices: rows 0:2 on device 0, 2:4 on device 1.
  absl::StatusOr<TensorLayout> leaf = index.LeafLayout("x", 1);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(leaf->logical.dims(), std::vector<int64_t>({4, 6}));
  EXPECT_EQ(leaf->slice.ToString(), "[2:4, 0:6]");
  // mm's b (w [6, 2]) is broadcast: each device holds all of it.
  absl::StatusOr<TensorLayout> b = index.OpArgumentLayout("mm", "b", /*input=*/true, 0);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->slice.ToString(), "[0:6, 0:2]");
  absl::StatusOr<TensorLayout> out = index.OpArgumentLayout("mm", "out", /*input=*/false, 0);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->slice.ToString(), "[0:2, 0:2]");
}

TEST(PlanIndexTest, ADeviceOutsideThePlacementIsRefused) {
  proto::Plan plan = ParsePlan(kPlan);
  *plan.add_devices()->mutable_device() = ParsePlan("devices { device { node: 1 device: 0 } }").devices(0).device();
  const PlanIndex index(plan);
  EXPECT_EQ(index.LeafLayout("x", 2).status(),
            absl::FailedPreconditionError("device 1:0 is not in placement cpu{0:0-1}"));
}

}  // namespace
}  // namespace oneflow
