// CheckPlanForInspection: one test per rule, each asserting the exact message, and the
// spellings of plan_format.h that every output format shares.
#include "plan/plan_check.h"

#include <string>

#include "gtest/gtest.h"
#include "plan/plan_format.h"
#include "tools/cli/sample_plan.h"

namespace oneflow::cli {
namespace {

std::string Check(const proto::Plan& plan) {
  const absl::Status status = CheckPlanForInspection(plan);
  if (status.ok()) return "OK";
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST(PlanCheckTest, SamplePlanPasses) { EXPECT_EQ(Check(SampleDataParallelPlan()), "OK"); }

TEST(PlanCheckTest, FormatVersion) {
  // Version 2 added Plan.checksum; the sample plan is written in it.
  EXPECT_EQ(kPlanFormatVersion, 2);
  proto::Plan plan = SampleDataParallelPlan();
  EXPECT_EQ(plan.format_version(), 2);
  // A plan from before the checksum existed is refused by its version.
  plan.set_format_version(1);
  EXPECT_EQ(Check(plan), "format_version is 1, but this build reads only version 2");
  plan.set_format_version(3);
  EXPECT_EQ(Check(plan), "format_version is 3, but this build reads only version 2");
  plan.set_format_version(0);
  EXPECT_EQ(Check(plan),
            "format_version is 0 (unset): not a plan, or a damaged one; this build reads "
            "version 2");
}

TEST(PlanCheckTest, RepeatedIds) {
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(1)->mutable_actors(0)->set_id(3);
  EXPECT_EQ(Check(plan), "actor id 3 is defined twice, on device 0 (0:0) and device 1 (0:1)");

  plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_registers(1)->set_id(0);
  EXPECT_EQ(Check(plan), "device 0 (0:0) defines register 0 twice");

  plan = SampleDataParallelPlan();
  *plan.add_collectives() = plan.collectives(0);
  EXPECT_EQ(Check(plan), "collective id 0 is defined twice");
}

TEST(PlanCheckTest, RegisterIdsAreLookedUpOnTheActorsOwnDevice) {
  // Both devices number their registers 0-6. Without device 0's register 6, device 1's
  // register 6 still exists, but device 0's actors cannot use it.
  proto::Plan plan = SampleDataParallelPlan();
  ASSERT_EQ(plan.devices(0).registers(6).id(), 6);
  ASSERT_EQ(plan.devices(1).registers(6).id(), 6);
  plan.mutable_devices(0)->mutable_registers()->RemoveLast();
  EXPECT_EQ(Check(plan),
            "device 0 (0:0) actor 5 'w_grad all_reduce' produces register 6, which device 0 "
            "does not define");

  // The same for a register id that no device defines.
  plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_actors(6)->add_produced_registers(10);
  EXPECT_EQ(Check(plan),
            "device 0 (0:0) actor 6 'sgd' produces register 10, which device 0 does not define");
}

TEST(PlanCheckTest, RegisterActorsMustExist) {
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(1)->mutable_registers(3)->set_producer_actor(42);
  EXPECT_EQ(Check(plan),
            "device 1 (0:1) register 3 'y' has producer actor 42, which the plan does not "
            "define");

  plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_registers(0)->add_consumer_actors(99);
  EXPECT_EQ(Check(plan),
            "device 0 (0:0) register 0 'x' has consumer actor 99, which the plan does not "
            "define");

  // An actor of another device is fine here: it exists (the full plan verifier, which
  // ReadPlanFile also runs, refuses a consumer that does not consume on this device).
  plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_registers(0)->add_consumer_actors(12);
  EXPECT_EQ(Check(plan), "OK");
}

TEST(PlanCheckTest, CollectiveReferencesMustExist) {
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_actors(5)->set_collective_id(4);
  EXPECT_EQ(Check(plan),
            "device 0 (0:0) actor 5 'w_grad all_reduce' issues collective 4, which the plan "
            "does not define");

  plan = SampleDataParallelPlan();
  plan.mutable_devices(0)->mutable_actors(5)->set_collective_id(-1);  // a local boxing
  EXPECT_EQ(Check(plan), "OK");

  plan = SampleDataParallelPlan();
  plan.mutable_devices(1)->add_collective_order(5);
  EXPECT_EQ(Check(plan),
            "device 1 (0:1) collective_order lists collective 5, which the plan does not "
            "define");

  plan = SampleDataParallelPlan();
  plan.mutable_boxings(0)->mutable_steps(0)->set_collective_id(8);
  EXPECT_EQ(Check(plan),
            "boxing 0 'w_grad' step 0 uses collective 8, which the plan does not define");
  plan.mutable_boxings(0)->mutable_steps(0)->set_collective_id(-1);
  EXPECT_EQ(Check(plan), "OK");
}

TEST(PlanCheckTest, SbpsAndPlacementsMustBeWellFormed) {
  proto::Plan plan = SampleDataParallelPlan();
  (*plan.mutable_op_sbps(0)->mutable_signature()->mutable_inputs())["a"].add_sbp();
  EXPECT_EQ(Check(plan),
            "op 'mm' input 'a' SBP: SbpParallel has no kind set (split, broadcast, partial)");

  plan = SampleDataParallelPlan();
  plan.mutable_boxings(0)->mutable_dst_placement()->add_hierarchy(3);
  EXPECT_EQ(Check(plan).rfind("boxing 0 'w_grad' dst_placement: ", 0), 0u) << Check(plan);

  plan = SampleDataParallelPlan();
  plan.mutable_boxings(0)->mutable_steps(0)->mutable_src_sbp()->clear_sbp();  // unset: fine
  EXPECT_EQ(Check(plan), "OK");
}

TEST(PlanFormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB (1024 B)");
  EXPECT_EQ(FormatBytes(1572864), "1.50 MiB (1572864 B)");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.00 GiB (3221225472 B)");
  EXPECT_EQ(FormatBytesShort(22528), "22.00 KiB");
}

TEST(PlanFormatTest, ValuesSpelledAsOneflowCoreDoes) {
  EXPECT_EQ(FormatBandwidth(12.5e9), "12.5 GB/s");
  proto::NdSbp nd_sbp;
  nd_sbp.add_sbp()->mutable_split()->set_axis(0);
  nd_sbp.add_sbp()->mutable_broadcast();
  EXPECT_EQ(SbpText(nd_sbp), "[S(0), B]");
  EXPECT_EQ(SbpText(proto::NdSbp()), "-");
  EXPECT_EQ(PlacementText(SampleDataParallelPlan().op_sbps(0).placement()), "cpu{0:0-1}");
  EXPECT_EQ(DTypeText(proto::DTYPE_BF16), "bf16");
  EXPECT_EQ(DTypeText(proto::DTYPE_INVALID), "?");
  EXPECT_EQ(ActorKindText(proto::ACTOR_DATA_SOURCE), "data_source");
  EXPECT_EQ(ActorKindText(static_cast<proto::ActorKind>(42)), "unknown(42)");
  EXPECT_EQ(CollectiveKindText(proto::SPARSE_ALL_GATHER), "sparse_all_gather");
  EXPECT_EQ(CompressionKindText(proto::Compression::FP8_E4M3), "fp8_e4m3");
  EXPECT_EQ(SignatureText(SampleDataParallelPlan().op_sbps(1).signature()),
            "pred: S(0), target: S(0) -> grad: S(0)");
}

TEST(PlanFormatTest, DeviceFigures) {
  const DeviceFigures figures = ComputeDeviceFigures(SampleDataParallelPlan().devices(0));
  EXPECT_EQ(figures.num_actors, 7);
  EXPECT_EQ(figures.num_registers, 7);
  // count x size: x (4096 B) and the five [32, 16] f32 activations (2048 B each) have
  // 2 slots, the persistent w (2048 B) 1: 2 x 14336 + 2048 = 30720.
  EXPECT_EQ(figures.register_bytes, 2 * (4096 + 5 * 2048) + 1 * 2048);
  EXPECT_EQ(figures.register_bytes, 30720);
  ASSERT_EQ(figures.actors_by_kind.size(), 4u);
  EXPECT_EQ(figures.actors_by_kind[0], std::make_pair(std::string("data_source"), int64_t{1}));
  EXPECT_EQ(figures.actors_by_kind[1], std::make_pair(std::string("variable"), int64_t{1}));
  EXPECT_EQ(figures.actors_by_kind[2], std::make_pair(std::string("compute"), int64_t{4}));
  EXPECT_EQ(figures.actors_by_kind[3], std::make_pair(std::string("boxing"), int64_t{1}));
  // Peak 2048 persistent + 2 x 14336 arena = 30720 over the lower bound of 20480.
  EXPECT_DOUBLE_EQ(figures.peak_to_lower_bound.value(), 1.5);
  // The layout those figures come from, by hand: w alone in block 0; the activations
  // x 4096 + t, y, y_grad, w_grad, w_grad 2048 each = a stride of 14336 in block 1.
  const proto::DevicePlan device = SampleDataParallelPlan().devices(0);
  ASSERT_EQ(device.memory_blocks_size(), 2);
  EXPECT_TRUE(device.memory_blocks(0).persistent());
  EXPECT_EQ(device.memory_blocks(0).size_bytes(), 2048);
  EXPECT_FALSE(device.memory_blocks(1).persistent());
  EXPECT_EQ(device.memory_blocks(1).slot_stride_bytes(), 14336);
  EXPECT_EQ(device.memory_blocks(1).size_bytes(), 2 * 14336);
  EXPECT_EQ(device.peak_bytes(), 30720);
  EXPECT_EQ(device.lower_bound_bytes(), 20480);
  proto::DevicePlan empty;
  EXPECT_FALSE(ComputeDeviceFigures(empty).peak_to_lower_bound.has_value());
}

}  // namespace
}  // namespace oneflow::cli
