#include "actors/predicted_step.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"

namespace oneflow::actors {
namespace {

// A compressed step or bucket that runs dense in the warm-up.
bool DenseInWarmup(const proto::Compression& compression) {
  return compression.kind() != proto::Compression::NONE && compression.dense_warmup_iterations() > 0;
}

double StepExtraSeconds(const proto::BoxingStepDef& step) {
  return DenseInWarmup(step.compression()) ? std::max(0.0, step.dense_seconds() - step.seconds()) : 0.0;
}

}  // namespace

int64_t DenseWarmupIterations(const proto::Plan& plan) {
  int64_t iterations = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (DenseInWarmup(step.compression())) iterations = std::max(iterations, step.compression().dense_warmup_iterations());
    }
  }
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    if (DenseInWarmup(bucket.compression())) iterations = std::max(iterations, bucket.compression().dense_warmup_iterations());
  }
  return iterations;
}

double DenseWarmupExtraSeconds(const proto::Plan& plan) {
  if (DenseWarmupIterations(plan) == 0) return 0;
  // Collective id -> the seconds its warm-up adds: a step's own; a bucket's (ids
  // collective_id .. collective_id + groups - 1, one per communicator group) its members'.
  absl::flat_hash_map<int64_t, double> extra;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.collective_id() >= 0 && !step.has_bucket_id()) extra[step.collective_id()] = StepExtraSeconds(step);
    }
  }
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    if (!DenseInWarmup(bucket.compression())) continue;
    double seconds = 0;
    for (const proto::BucketMemberDef& member : bucket.members()) {
      if (member.boxing_id() < 0 || member.boxing_id() >= plan.boxings_size()) continue;
      const proto::BoxingDef& boxing = plan.boxings(static_cast<int>(member.boxing_id()));
      if (member.boxing_step() < 0 || member.boxing_step() >= boxing.steps_size()) continue;
      seconds += std::max(0.0, boxing.steps(static_cast<int>(member.boxing_step())).dense_seconds() -
                                   boxing.steps(static_cast<int>(member.boxing_step())).seconds());
    }
    // One collective per communicator group: the devices over the members of one group
    // (hierarchy empty: 1-D, one group).
    const proto::Placement& placement = bucket.placement();
    const int64_t axis = bucket.hierarchy_axis();
    const int64_t members = placement.hierarchy_size() == 0 ? placement.devices_size()
                            : axis >= 0 && axis < placement.hierarchy_size() ? placement.hierarchy(static_cast<int>(axis))
                                                                             : 0;
    const int64_t groups = members > 0 ? placement.devices_size() / members : 1;
    for (int64_t group = 0; group < std::max<int64_t>(groups, 1); ++group) {
      extra[bucket.collective_id() + group] = seconds;
    }
  }
  const int64_t micro_batches = plan.job().micro_batches() > 1 ? plan.job().micro_batches() : 1;
  double slowest = 0;
  for (const proto::DevicePlan& device : plan.devices()) {
    double seconds = 0;
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.collective_id() < 0) continue;
      auto it = extra.find(actor.collective_id());
      if (it == extra.end()) continue;
      seconds += (micro_batches > 1 && !actor.per_iteration() ? micro_batches : 1) * it->second;
    }
    slowest = std::max(slowest, seconds);
  }
  return slowest;
}

std::string PredictedStepLine(const proto::Plan& plan, const MeasuredStep& measured) {
  if (!plan.has_auto_parallel() || measured.steps() + measured.warmup_steps() == 0) return "";
  const proto::AutoParallelDecision& decision = plan.auto_parallel();
  const proto::AutoParallelPrediction& chosen = decision.chosen();
  const double predicted_ms =
      1e3 * (chosen.compute_seconds() + chosen.exposed_communication_seconds() + chosen.bubble_seconds());
  std::string terms = "none";
  if (decision.has_host_terms()) {
    const proto::AutoParallelHostTerms& host = decision.host_terms();
    terms = absl::StrFormat("act %.3g us, collective call %.3g us, %d host cores", 1e6 * host.act_seconds(),
                            1e6 * host.collective_call_seconds(), host.host_cores());
    if (host.host_core_share() > 0) absl::StrAppendFormat(&terms, ", core share %.3g", host.host_core_share());
    // A calibration's machine line: the nodes are processes on one machine.
    if (host.shared_machine_nodes() > 0) {
      // With a share, the machine line's measured costs of the devices' turns on its cores.
      terms = host.host_core_share() > 0
                  ? absl::StrFormat("%d nodes on one machine of %d cores: act %.3g us, collective call %.3g us, "
                                    "core share %.3g",
                                    host.shared_machine_nodes(), host.host_cores(), 1e6 * host.act_seconds(),
                                    1e6 * host.collective_call_seconds(), host.host_core_share())
                  : absl::StrFormat("%d nodes on one machine of %d cores, acts free", host.shared_machine_nodes(),
                                    host.host_cores());
    }
  }
  std::string line = absl::StrFormat(
      "auto-parallel: predicted step %.3f ms (compute %.3f + exposed communication %.3f + bubble %.3f; host terms: "
      "%s), ",
      predicted_ms, 1e3 * chosen.compute_seconds(), 1e3 * chosen.exposed_communication_seconds(),
      1e3 * chosen.bubble_seconds(), terms);
  const int64_t warmup = measured.dense_warmup_iterations();
  const std::string after = warmup > 0 ? absl::StrFormat("the warm-up of %d", warmup) : "the first";
  if (measured.steps() > 0) {
    const double measured_ms = measured.mean_ms();
    absl::StrAppendFormat(&line, "measured %.3f ms (mean of %d iterations after %s): measured / predicted %.2fx",
                          measured_ms, measured.steps(), after, predicted_ms > 0 ? measured_ms / predicted_ms : 0);
  } else {
    absl::StrAppendFormat(&line, "measured - (no iteration after %s)", after);
  }
  if (warmup > 0 && measured.warmup_steps() > 0) {
    const double extra_ms = 1e3 * DenseWarmupExtraSeconds(plan);
    const double warmup_predicted_ms = predicted_ms + extra_ms;
    const double warmup_measured_ms = measured.warmup_mean_ms();
    absl::StrAppendFormat(&line,
                          "; the first %d iterations dense: predicted %.3f ms (+%.3f dense communication), measured "
                          "%.3f ms (mean of %d after the first): measured / predicted %.2fx",
                          warmup, warmup_predicted_ms, extra_ms, warmup_measured_ms, measured.warmup_steps(),
                          warmup_predicted_ms > 0 ? warmup_measured_ms / warmup_predicted_ms : 0);
  }
  return line + "\n";
}

}  // namespace oneflow::actors
