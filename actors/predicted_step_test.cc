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
}

TEST(PredictedStepTest, NothingWithoutADecisionOrAMeasuredStep) {
  MeasuredStep measured;
  measured.Add(1, 5);
  EXPECT_EQ(PredictedStepLine(proto::Plan(), measured), "");
  EXPECT_EQ(PredictedStepLine(PlanPredicting(1e-3, 0, 0), MeasuredStep()), "");
}

}  // namespace
}  // namespace oneflow::actors
