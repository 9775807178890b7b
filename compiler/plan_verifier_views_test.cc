// The plan verifier on views (registers that alias another register's bytes, as a
// reshape's output does): each damage to a compiled plan with views is refused, naming it.
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/plan_verifier_test_util.h"
#include "gtest/gtest.h"
#include "oneflow_core/dsl/ops.h"
#include "plan/plan_verifier.h"

namespace oneflow {
namespace {

// On one device: h = relu(matmul(x, w)) [8, 32], reshaped twice (views of h, then of
// the first view), then y = relu of the second view.
proto::Plan ViewPlan() {
  Graph graph("views");
  graph.AddDataSource("data", DataSource::SyntheticClassification(1, 10));
  Tensor x = graph.Input("x", Shape{8, 16}, DType::kF32, "data");
  Tensor w = graph.Variable("w", Shape{16, 32}, Initializer::Xavier(1));
  Tensor h = Relu(MatMul(x, w));
  Tensor y = Relu(Reshape(Reshape(h, {4, 64}), {256}));
  graph.SetLoss(ReduceMean(y));
  return Compiled(graph, 1, 1);
}

// The registers of ViewPlan's device: h, its two views and y.
struct ViewRegisters {
  int h = -1, first = -1, second = -1, y = -1;
};

ViewRegisters FindViews(const proto::DevicePlan& device) {
  ViewRegisters found;
  for (const proto::RegisterDef& reg : device.registers()) {
    if (!reg.has_alias_of()) continue;
    const proto::RegisterDef& source = device.registers(static_cast<int>(reg.alias_of()));
    if (source.has_alias_of()) {
      found.second = static_cast<int>(reg.id());
      found.first = static_cast<int>(source.id());
      found.h = static_cast<int>(source.alias_of());
      found.y = static_cast<int>(device.actors(static_cast<int>(reg.consumer_actors(0) - device.actors(0).id()))
                                     .produced_registers(0));
    }
  }
  return found;
}

std::string RegisterText(const proto::DevicePlan& device, int r) {
  return absl::StrCat("register ", r, " ('", device.registers(r).tensor(), "')");
}

TEST(PlanVerifierTest, CompiledViewsPass) {
  const proto::Plan plan = ViewPlan();
  const ViewRegisters views = FindViews(plan.devices(0));
  ASSERT_GE(views.h, 0);
  const proto::DevicePlan& device = plan.devices(0);
  EXPECT_EQ(device.registers(views.first).offset(), device.registers(views.h).offset());
  EXPECT_EQ(device.registers(views.second).offset(), device.registers(views.h).offset());
  EXPECT_TRUE(VerifyPlan(plan).ok()) << VerifyPlan(plan);
}

TEST(PlanVerifierTest, RejectsAViewOfNoRegister) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  device->mutable_registers(views.first)->set_alias_of(device->registers_size());
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: ", RegisterText(*device, views.first), " is a view of register ",
                         device->registers_size(), ", which is not another register of the device"));
}

TEST(PlanVerifierTest, RejectsViewsInACycle) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  // Each view's producer reads the other: every view alone looks well made.
  device->mutable_registers(views.first)->set_alias_of(views.second);
  const int64_t producer = device->registers(views.first).producer_actor() - device->actors(0).id();
  (*device->mutable_actors(static_cast<int>(producer))->mutable_kernels(0)->mutable_inputs())["x"] = views.second;
  EXPECT_EQ(VerifyPlanStructure(plan).message(),
            absl::StrCat("device 0:0: registers ", views.first, " -> ", views.second, " -> ", views.first,
                         " are views of each other in a cycle; a chain of views must end at a register that "
                         "owns its bytes"));
}

TEST(PlanVerifierTest, RejectsAViewOfAnotherSize) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  proto::RegisterDef* second = device->mutable_registers(views.second);
  second->set_shape(0, 128);
  second->set_size_bytes(512);
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: ", RegisterText(*device, views.second), " of 512 bytes is a view of ",
                         RegisterText(*device, views.first), " of 1024 bytes; a view has its source's size"));
}

TEST(PlanVerifierTest, RejectsAViewItsProducerDoesNotRead) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  device->mutable_registers(views.second)->set_alias_of(views.h);  // Same size, but read by another actor.
  const proto::ActorDef& producer =
      device->actors(static_cast<int>(device->registers(views.second).producer_actor() - device->actors(0).id()));
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: ", RegisterText(*device, views.second), " is a view of register ", views.h,
                         ", so its producer actor ", producer.id(), " ('", producer.name(),
                         "') must be a compute actor whose one kernel reads only register ", views.h,
                         " and writes only register ", views.second));
}

TEST(PlanVerifierTest, RejectsAPersistentView) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  device->mutable_registers(views.h)->set_persistent(true);
  EXPECT_EQ(VerifyPlanStructure(plan).message(),
            absl::StrCat("device 0:0: ", RegisterText(*device, views.first), " is a view of register ", views.h,
                         " ('", device->registers(views.h).tensor(),
                         "') but one of them is persistent; views alias activations only"));
}

TEST(PlanVerifierTest, RejectsAViewAwayFromItsSource) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  const int64_t offset = device->registers(views.first).offset();
  device->mutable_registers(views.second)->set_offset(offset + 64);
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: ", RegisterText(*device, views.second), " is a view of register ", views.first,
                         " but lies in memory block 1 at offset ", offset + 64, ", not where register ", views.first,
                         " lies (block 1, offset ", offset, ")"));
}

// y is made while its input, the second view, is read: h's bytes are live until then,
// although h's own only reader (the first reshape) acted before.
TEST(PlanVerifierTest, RejectsBytesReusedWhileAViewOfThemIsRead) {
  proto::Plan plan = ViewPlan();
  proto::DevicePlan* device = plan.mutable_devices(0);
  const ViewRegisters views = FindViews(*device);
  ASSERT_EQ(device->registers(views.y).size_bytes(), device->registers(views.h).size_bytes());
  device->mutable_registers(views.y)->set_offset(device->registers(views.h).offset());
  const int64_t first = device->actors(0).id();
  const int64_t h_from = device->registers(views.h).producer_actor() - first;
  const int64_t y_from = device->registers(views.y).producer_actor() - first;
  const int64_t y_to = device->registers(views.y).consumer_actors(0) - first;
  EXPECT_EQ(Resealed(plan).message(),
            absl::StrCat("device 0:0: registers ", views.h, " and ", views.y,
                         " share bytes in memory block 1 while both are live (actor positions ", h_from, "-", y_from,
                         " and ", y_from, "-", y_to, ")"));
}

}  // namespace
}  // namespace oneflow
