#include "actors/predicted_step.h"

#include "gtest/gtest.h"

namespace oneflow::actors {
namespace {

proto::Plan PlanPredicting(double compute, double communication, double bubble) {
  proto::Plan plan;
  proto::AutoParallelPrediction& chosen = *plan.mutable_auto_parallel()->mutable_chosen();
  chosen.set_compute_seconds(compute);
  chosen.set_exposed_communication_seconds(communication);
  chosen.set_bubble_seconds(bubble);
  return plan;
}

TEST(PredictedStepTest, MeanOfTheIterationsAfterTheFirstBesideThePrediction) {
  MeasuredStep measured;
  measured.Add(0, 100);  // allocation and warm-up: not counted
  measured.Add(1, 6);
  measured.Add(2, 10);
  EXPECT_EQ(measured.steps(), 2);
  EXPECT_DOUBLE_EQ(measured.mean_ms(), 8);
  EXPECT_EQ(PredictedStepLine(PlanPredicting(1e-3, 0.5e-3, 0.5e-3), measured),
            "auto-parallel: predicted step 2.000 ms (compute 1.000 + exposed communication 0.500 + bubble 0.500; "
            "host terms: none), measured 8.000 ms (mean of 2 iterations after the first): measured / predicted "
            "4.00x\n");
}

TEST(PredictedStepTest, NamesTheHostTermsThePlanWasPricedWith) {
  proto::Plan plan = PlanPredicting(4e-3, 0, 0);
  proto::AutoParallelHostTerms& terms = *plan.mutable_auto_parallel()->mutable_host_terms();
  terms.set_act_seconds(2.5e-6);
  terms.set_collective_call_seconds(1.25e-5);
  terms.set_host_cores(2);
  MeasuredStep measured;
  measured.Add(1, 5);
  EXPECT_EQ(PredictedStepLine(plan, measured),
            "auto-parallel: predicted step 4.000 ms (compute 4.000 + exposed communication 0.000 + bubble 0.000; "
            "host terms: act 2.5 us, collective call 12.5 us, 2 host cores), measured 5.000 ms (mean of 1 "
            "iterations after the first): measured / predicted 1.25x\n");
  // From a calibration's machine line (`oneflow calibrate --nodes` on one machine).
  terms.Clear();
  terms.set_host_cores(2);
  terms.set_shared_machine_nodes(3);
  EXPECT_EQ(PredictedStepLine(plan, measured),
            "auto-parallel: predicted step 4.000 ms (compute 4.000 + exposed communication 0.000 + bubble 0.000; "
            "host terms: 3 nodes on one machine of 2 cores, acts free), measured 5.000 ms (mean of 1 "
            "iterations after the first): measured / predicted 1.25x\n");
  // With the turns calibrate measured on that machine (more nodes than cores).
  terms.set_act_seconds(1.5e-6);
  terms.set_collective_call_seconds(5e-5);
  terms.set_host_core_share(1.5);
  EXPECT_EQ(PredictedStepLine(plan, measured),
            "auto-parallel: predicted step 4.000 ms (compute 4.000 + exposed communication 0.000 + bubble 0.000; "
            "host terms: 3 nodes on one machine of 2 cores: act 1.5 us, collective call 50 us, core share 1.5), "
            "measured 5.000 ms (mean of 1 iterations after the first): measured / predicted 1.25x\n");
}

// A plan of --compression_warmup=3 on one device: an int8 step (1 ms, dense 3 ms) and a
// compressed bucket of one member (1 ms, dense 2 ms). The first three iterations run both
// dense, so they are measured apart and set beside the steady prediction plus 2 + 1 ms.
TEST(PredictedStepTest, TheDenseWarmUpIsMeasuredAndPredictedApart) {
  proto::Plan plan = PlanPredicting(1e-3, 0, 0);
  proto::BoxingDef& boxing = *plan.add_boxings();
  proto::BoxingStepDef& step = *boxing.add_steps();
  step.set_collective_id(0);
  step.set_seconds(1e-3);
  step.set_dense_seconds(3e-3);
  step.mutable_compression()->set_kind(proto::Compression::INT8);
  step.mutable_compression()->set_dense_warmup_iterations(3);
  proto::BoxingStepDef& member = *boxing.add_steps();
  member.set_collective_id(1);
  member.set_bucket_id(0);
  member.set_seconds(1e-3);
  member.set_dense_seconds(2e-3);
  member.mutable_compression()->set_kind(proto::Compression::INT8);
  member.mutable_compression()->set_dense_warmup_iterations(3);
  proto::GradientBucketDef& bucket = *plan.add_buckets();
  bucket.set_collective_id(1);
  bucket.mutable_placement()->add_devices();
  bucket.mutable_compression()->set_kind(proto::Compression::INT8);
  bucket.mutable_compression()->set_dense_warmup_iterations(3);
  proto::BucketMemberDef& in_bucket = *bucket.add_members();
  in_bucket.set_boxing_id(0);
  in_bucket.set_boxing_step(1);
  proto::DevicePlan& device = *plan.add_devices();
  device.add_actors()->set_collective_id(0);
  device.add_actors()->set_collective_id(1);
  device.add_actors()->set_collective_id(-1);  // a compute actor
  EXPECT_EQ(DenseWarmupIterations(plan), 3);
  EXPECT_DOUBLE_EQ(DenseWarmupExtraSeconds(plan), 3e-3);

  MeasuredStep measured(DenseWarmupIterations(plan));
  measured.Add(0, 100);  // allocation: not counted
  measured.Add(1, 9);
  measured.Add(2, 11);
  measured.Add(3, 4);  // compressed from here on
  measured.Add(4, 6);
  EXPECT_EQ(measured.warmup_steps(), 2);
  EXPECT_DOUBLE_EQ(measured.warmup_mean_ms(), 10);
  EXPECT_EQ(measured.steps(), 2);
  EXPECT_DOUBLE_EQ(measured.mean_ms(), 5);
  EXPECT_EQ(PredictedStepLine(plan, measured),
            "auto-parallel: predicted step 1.000 ms (compute 1.000 + exposed communication 0.000 + bubble 0.000; "
            "host terms: none), measured 5.000 ms (mean of 2 iterations after the warm-up of 3): measured / "
            "predicted 5.00x; the first 3 iterations dense: predicted 4.000 ms (+3.000 dense communication), "
            "measured 10.000 ms (mean of 2 after the first): measured / predicted 2.50x\n");

  // Without the warm-up the same steps cost nothing more and every iteration is steady.
  for (proto::BoxingStepDef& each : *plan.mutable_boxings(0)->mutable_steps()) {
    each.mutable_compression()->set_dense_warmup_iterations(0);
  }
  plan.mutable_buckets(0)->mutable_compression()->set_dense_warmup_iterations(0);
  EXPECT_EQ(DenseWarmupIterations(plan), 0);
  EXPECT_EQ(DenseWarmupExtraSeconds(plan), 0);
}

TEST(PredictedStepTest, NothingWithoutADecisionOrAMeasuredStep) {
  MeasuredStep measured;
  measured.Add(1, 5);
  EXPECT_EQ(PredictedStepLine(proto::Plan(), measured), "");
  EXPECT_EQ(PredictedStepLine(PlanPredicting(1e-3, 0, 0), MeasuredStep()), "");
}

}  // namespace
}  // namespace oneflow::actors
