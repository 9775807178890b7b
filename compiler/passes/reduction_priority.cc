#include "compiler/passes/reduction_priority.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "compiler/kernel_seconds.h"
#include "compiler/passes/bucket_cap.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "sbp/compute_cost.h"
#include "sbp/link_model.h"

namespace oneflow {
namespace {

// A node-crossing collective of one group class on the modelled device, in program order.
struct StreamItem {
  double ready_seconds = 0;  // The device's compute before it, priced.
  double seconds = 0;        // Its collective, priced.
  ReductionUnit unit;        // What may move; neither for a step that keeps its place.
};

bool IsDenseBucket(const Compilation& compilation, const GradientBucket& bucket) {
  for (const auto& [b, s] : bucket.members) {
    const BoxingStep& step = compilation.boxings[b].plan.steps[s];
    if (step.compression.compressed() || step.cross_node_compression.compressed()) return false;
  }
  return true;
}

}  // namespace

double SharedCoresSlowdown(const proto::Cluster& cluster, double shared_machine_cores) {
  if (shared_machine_cores <= 0) return 1.0;
  const int64_t devices = cluster.num_nodes() * cluster.devices_per_node();
  return std::max(1.0, static_cast<double>(devices) / shared_machine_cores);
}

int64_t FirstReaderOf(const Compilation& compilation, const ReductionUnit& unit) {
  std::vector<int64_t> boxings;
  if (unit.bucket >= 0) {
    for (const auto& [b, s] : compilation.buckets[unit.bucket].members) boxings.push_back(b);
  } else {
    boxings.push_back(unit.boxing);
  }
  int64_t first = std::numeric_limits<int64_t>::max();
  for (int64_t b : boxings) {
    const LogicalTensor& tensor = compilation.graph.tensors[compilation.boxings[b].tensor];
    if (tensor.gradient_of < 0) continue;
    const LogicalTensor& variable = compilation.graph.tensors[tensor.gradient_of];
    if (!variable.consumers.empty()) first = std::min(first, variable.consumers.front());
  }
  return first;
}

absl::StatusOr<std::vector<std::vector<ReductionUnit>>> FirstNeededOrders(const Compilation& compilation) {
  std::vector<std::vector<ReductionUnit>> orders;
  // With micro-batches the compute before a bucket repeats per micro-batch and the
  // buckets run once per iteration: not modelled here, the order stays backward order.
  if (compilation.buckets.empty() || compilation.job.micro_batches() > 1) return orders;
  const LogicalGraph& graph = compilation.graph;
  const ComputeRates rates = WithDefaults(ComputeRates{compilation.options.cluster.gemm_flops_per_second(),
                                                       compilation.options.cluster.memory_bytes_per_second()});
  const double slowdown = SharedCoresSlowdown(compilation.options.cluster, compilation.options.shared_machine_cores);
  // The classes (placement, hierarchy axis) of node-crossing dense buckets; a class with
  // a compressed bucket is left alone.
  std::map<std::pair<int64_t, int64_t>, bool> classes;  // -> all dense
  for (const GradientBucket& bucket : compilation.buckets) {
    if (!AxisCrossesNodes(graph.placements[bucket.placement], bucket.hierarchy_axis)) continue;
    auto [it, inserted] = classes.emplace(std::make_pair(bucket.placement, bucket.hierarchy_axis), true);
    it->second = it->second && IsDenseBucket(compilation, bucket);
  }
  for (const auto& [key, dense] : classes) {
    if (!dense) continue;
    const auto [placement_index, axis] = key;
    const Placement& placement = graph.placements[placement_index];
    int device_index = -1;
    for (size_t d = 0; d < compilation.devices.size(); ++d) {
      if (compilation.devices[d].device == placement.device(0)) device_index = static_cast<int>(d);
    }
    if (device_index < 0 || device_index >= compilation.plan.devices_size()) {
      return absl::InternalError(absl::StrCat("reduction priority: the first device of placement ",
                                              placement.ToString(), " has no device plan"));
    }
    const proto::DevicePlan& device = compilation.plan.devices(device_index);
    // The steps of this class on the device that run on their own, by actor index: their
    // modelled seconds, and their boxing where they belong to an early run from step 0
    // (which may move with it).
    absl::flat_hash_map<int32_t, std::pair<double, int64_t>> steps;
    for (const Boxing& boxing : compilation.boxings) {
      if (graph.tensors[boxing.tensor].placement != placement_index) continue;
      if (boxing.id >= static_cast<int64_t>(compilation.boxing_step_actors.size())) continue;
      const int64_t early_end = EarlyStepsEnd(compilation, boxing.id, 0);
      for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
        const BoxingStep& step = boxing.plan.steps[s];
        if (step.hierarchy_axis != axis || !IsCollective(step.kind) || step.kind == BoxingKind::kSendRecv) continue;
        for (const auto& [d, a] : compilation.boxing_step_actors[boxing.id][s]) {
          if (d == device_index) steps[a] = {step.seconds, static_cast<int64_t>(s) < early_end ? boxing.id : -1};
        }
      }
    }
    const RegistersById registers = RegistersOf(device);
    std::vector<StreamItem> items;
    double compute_seconds = 0;
    for (int a = 0; a < device.actors_size(); ++a) {
      const proto::ActorDef& actor = device.actors(a);
      if (actor.has_bucket_id() && actor.bucket_id() >= 0 &&
          actor.bucket_id() < static_cast<int64_t>(compilation.buckets.size())) {
        const GradientBucket& bucket = compilation.buckets[actor.bucket_id()];
        if (bucket.placement == placement_index && bucket.hierarchy_axis == axis) {
          const double seconds =
              PriceBucketCollectiveOnSharedLink(compilation.links, placement, axis, bucket.kind, bucket.size_bytes)
                  .seconds();
          items.push_back({compute_seconds, seconds, ReductionUnit{.bucket = actor.bucket_id()}});
        }
        continue;
      }
      if (auto it = steps.find(a); it != steps.end()) {
        items.push_back({compute_seconds, it->second.first, ReductionUnit{.boxing = it->second.second}});
        continue;
      }
      if (actor.thread() == proto::THREAD_COMPUTE) {
        compute_seconds += slowdown * ActorKernelSeconds(actor, registers, rates).seconds();
      }
    }
    // First come, first served on the stream; then what has not started when the last
    // unit that may move is ready.
    auto movable = [](const StreamItem& item) { return item.unit.bucket >= 0 || item.unit.boxing >= 0; };
    double last_ready = -1;
    for (const StreamItem& item : items) {
      if (movable(item)) last_ready = std::max(last_ready, item.ready_seconds);
    }
    std::vector<ReductionUnit> waiting;
    double stream_free = 0;
    for (const StreamItem& item : items) {
      const double start = std::max(stream_free, item.ready_seconds);
      stream_free = start + item.seconds;
      if (movable(item) && start >= last_ready &&
          std::find(waiting.begin(), waiting.end(), item.unit) == waiting.end()) {
        waiting.push_back(item.unit);
      }
    }
    if (waiting.size() < 2) continue;
    std::stable_sort(waiting.begin(), waiting.end(), [&](const ReductionUnit& x, const ReductionUnit& y) {
      return FirstReaderOf(compilation, x) < FirstReaderOf(compilation, y);
    });
    orders.push_back(std::move(waiting));
  }
  return orders;
}

}  // namespace oneflow
