#include "tools/cli/predicted_step_time.h"

#include <algorithm>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/actor_compute_seconds.h"
#include "compiler/cluster_compute_rates.h"
#include "compiler/compiler.h"
#include "compiler/passes/bucket_cap.h"
#include "oneflow_core/placement.h"
#include "sbp/collective_cost.h"
#include "sbp/compute_cost.h"
#include "sbp/link_model.h"

namespace oneflow::cli {
namespace {

// A compressed bucket as the runtime runs it (CompressedBucketAllReduce,
// CompressedBucketReduceScatter, their two-level forms): every member's encodings, wire
// bytes and decodes, as its own step was priced (BoxingStepDef.seconds:
// sbp/boxing/step_compression.h), but the calls made once for the bucket: one latency
// per call (per phase an AllToAll or AllGather; two-level, one on each level) instead of
// one per member and call.
double CompressedBucketSeconds(const proto::Plan& plan, const proto::GradientBucketDef& bucket,
                               const LinkModel& links, bool crosses_nodes, bool scatter) {
  const bool two_level = bucket.compression().cross_node_kind() != proto::Compression::NONE;
  const double call_latency = two_level      ? links.intra_node_latency + links.inter_node_latency
                              : crosses_nodes ? links.inter_node_latency
                                              : links.intra_node_latency;
  const double calls_latency = (scatter ? 1 : 2) * call_latency;
  double seconds = calls_latency;
  for (const proto::BucketMemberDef& member : bucket.members()) {
    const proto::BoxingStepDef& step =
        plan.boxings(static_cast<int>(member.boxing_id())).steps(static_cast<int>(member.boxing_step()));
    seconds += std::max(0.0, step.seconds() - calls_latency);
  }
  return seconds;
}

// One collective's modelled seconds in the steady iterations and in the dense warm-up
// (--compression_warmup; the same for a collective without a warm-up).
struct CollectivePrice {
  double steady = 0;
  double warmup = 0;
};

struct CollectivePrices {
  absl::flat_hash_map<int64_t, CollectivePrice> by_id;
  // The largest Compression.dense_warmup_iterations of a compressed step or bucket.
  int64_t dense_warmup_iterations = 0;
};

// The modelled seconds of every collective: the boxing steps' own, and each gradient
// bucket's all-reduce (one collective per communicator group, consecutive ids).
absl::StatusOr<CollectivePrices> CollectiveSeconds(const proto::Plan& plan) {
  CollectivePrices prices;
  auto& seconds = prices.by_id;
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      if (step.collective_id() < 0 || step.has_bucket_id()) continue;
      const int64_t warmup = step.compression().kind() == proto::Compression::NONE
                                 ? 0
                                 : step.compression().dense_warmup_iterations();
      prices.dense_warmup_iterations = std::max(prices.dense_warmup_iterations, warmup);
      seconds[step.collective_id()] = {step.seconds(), warmup > 0 ? step.dense_seconds() : step.seconds()};
    }
  }
  const LinkModel links = LinkModelOf(plan.cluster());
  if (absl::Status valid = CheckLinkModel(links); !valid.ok()) return valid;
  for (const proto::GradientBucketDef& bucket : plan.buckets()) {
    absl::StatusOr<Placement> placement = Placement::FromProto(bucket.placement());
    if (!placement.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradient bucket ", bucket.id(), ": ", placement.status().message()));
    }
    const int64_t axis = bucket.hierarchy_axis();
    if (axis < 0 || axis >= placement->hierarchy().rank()) {
      return absl::InvalidArgumentError(absl::StrCat("gradient bucket ", bucket.id(), ": hierarchy axis ", axis,
                                                     " is outside ", placement->hierarchy().ToString()));
    }
    const int64_t members = placement->hierarchy().dim(axis);
    const bool scatter = bucket.collective_id() >= 0 && bucket.collective_id() < plan.collectives_size() &&
                         plan.collectives(static_cast<int>(bucket.collective_id())).kind() == proto::REDUCE_SCATTER;
    const double dense = DenseBucketSeconds(links, *placement, axis, scatter, bucket.size_bytes());
    CollectivePrice price{dense, dense};
    if (bucket.compression().kind() != proto::Compression::NONE) {
      price.steady = CompressedBucketSeconds(plan, bucket, links, AxisCrossesNodes(*placement, axis), scatter);
      const int64_t warmup = bucket.compression().dense_warmup_iterations();
      prices.dense_warmup_iterations = std::max(prices.dense_warmup_iterations, warmup);
      // In the warm-up the bucket runs as the dense one it replaces.
      price.warmup = warmup > 0 ? dense : price.steady;
    }
    for (int64_t group = 0; group < placement->num_devices() / members; ++group) {
      seconds[bucket.collective_id() + group] = price;
    }
  }
  return prices;
}

// The index of the slowest of `devices` (the first of equals).
int Slowest(const std::vector<DeviceStepTime>& devices) {
  int slowest = 0;
  for (int d = 1; d < static_cast<int>(devices.size()); ++d) {
    if (devices[d].seconds() > devices[slowest].seconds()) slowest = d;
  }
  return slowest;
}

}  // namespace

absl::StatusOr<StepTimePrediction> PredictStepTime(const proto::Plan& plan) {
  const ComputeRates rates = ClusterComputeRates(plan.cluster());
  absl::StatusOr<CollectivePrices> prices = CollectiveSeconds(plan);
  if (!prices.ok()) return prices.status();
  const absl::flat_hash_map<int64_t, CollectivePrice>& collectives = prices->by_id;
  const int64_t micro_batches = plan.job().micro_batches() > 1 ? plan.job().micro_batches() : 1;
  StepTimePrediction prediction;
  for (const proto::DevicePlan& device : plan.devices()) {
    const RegistersById registers = RegistersOf(device);
    DeviceStepTime time;
    double warmup_communication_seconds = 0;
    for (const proto::ActorDef& actor : device.actors()) {
      const double repeats = micro_batches > 1 && !actor.per_iteration() ? micro_batches : 1;
      if (actor.collective_id() >= 0) {
        auto it = collectives.find(actor.collective_id());
        if (it != collectives.end()) {
          time.communication_seconds += repeats * it->second.steady;
          warmup_communication_seconds += repeats * it->second.warmup;
        }
      }
      if (actor.thread() != proto::THREAD_COMPUTE) continue;
      const ActorComputeSeconds kernels = PriceActorKernels(actor, registers, rates);
      time.gemm_seconds += repeats * kernels.gemm_seconds;
      time.memory_bound_seconds += repeats * kernels.memory_bound_seconds;
    }
    prediction.devices.push_back(time);
    if (prices->dense_warmup_iterations > 0) {
      DeviceStepTime warmup = time;
      warmup.communication_seconds = warmup_communication_seconds;
      prediction.warmup_devices.push_back(warmup);
    }
  }
  prediction.slowest = Slowest(prediction.devices);
  if (prices->dense_warmup_iterations > 0) {
    prediction.dense_warmup_iterations = prices->dense_warmup_iterations;
    prediction.warmup_slowest = Slowest(prediction.warmup_devices);
  }
  return prediction;
}

std::string StepTimeText(const proto::Plan& plan, const StepTimePrediction& prediction) {
  if (prediction.devices.empty()) return "predicted step time: - (no devices)";
  const DeviceStepTime& slowest = prediction.devices[prediction.slowest];
  const proto::DeviceId& id = plan.devices(prediction.slowest).device();
  auto ms = [](double seconds) { return absl::StrFormat("%.3g", seconds * 1e3); };
  std::string text = absl::StrCat(
      "predicted step time: ", ms(slowest.seconds()), " ms (device ", id.node(), ":", id.device(), ": compute ",
      ms(slowest.compute_seconds()), " ms = GEMM ", ms(slowest.gemm_seconds), " + memory-bound ",
      ms(slowest.memory_bound_seconds), ", communication ", ms(slowest.communication_seconds), " ms, not overlapped)");
  if (prediction.dense_warmup_iterations > 0 && !prediction.warmup_devices.empty()) {
    const DeviceStepTime& warmup = prediction.warmup_devices[prediction.warmup_slowest];
    const proto::DeviceId& warmup_id = plan.devices(prediction.warmup_slowest).device();
    absl::StrAppend(&text, "\npredicted step time of the first ", prediction.dense_warmup_iterations,
                    " iterations (dense warm-up, --compression_warmup): ", ms(warmup.seconds()), " ms (device ",
                    warmup_id.node(), ":", warmup_id.device(), ": communication ", ms(warmup.communication_seconds),
                    " ms)");
  }
  return text;
}

}  // namespace oneflow::cli
