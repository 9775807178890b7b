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
#include "sbp/compute_cost.h"
#include "sbp/link_model.h"

namespace oneflow {
namespace {

// A node-crossing collective of one group class on the modelled device, in program order.
struct StreamItem {
  double ready_seconds = 0;  // The device's compute before it, priced.
  double seconds = 0;        // Its collective, priced.
  int64_t bucket = -1;       // Its bucket, or -1 for a step on its own.
};

bool IsDenseBucket(const Compilation& compilation, const GradientBucket& bucket) {
  for (const auto& [b, s] : bucket.members) {
    const BoxingStep& step = compilation.boxings[b].plan.steps[s];
    if (step.compression.compressed() || step.cross_node_compression.compressed()) return false;
  }
  return true;
}

}  // namespace

int64_t FirstReaderOfBucket(const Compilation& compilation, const GradientBucket& bucket) {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const auto& [b, s] : bucket.members) {
    const LogicalTensor& tensor = compilation.graph.tensors[compilation.boxings[b].tensor];
    if (tensor.gradient_of < 0) continue;
    const LogicalTensor& variable = compilation.graph.tensors[tensor.gradient_of];
    if (!variable.consumers.empty()) first = std::min(first, variable.consumers.front());
  }
  return first;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> FirstNeededBucketOrders(const Compilation& compilation) {
  std::vector<std::vector<int64_t>> orders;
  // With micro-batches the compute before a bucket repeats per micro-batch and the
  // buckets run once per iteration: not modelled here, the order stays backward order.
  if (compilation.buckets.empty() || compilation.job.micro_batches() > 1) return orders;
  const LogicalGraph& graph = compilation.graph;
  const ComputeRates rates = WithDefaults(ComputeRates{compilation.options.cluster.gemm_flops_per_second(),
                                                       compilation.options.cluster.memory_bytes_per_second()});
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
    // The steps of this class on the device that run on their own, by actor index.
    absl::flat_hash_map<int32_t, double> step_seconds;
    for (const Boxing& boxing : compilation.boxings) {
      if (graph.tensors[boxing.tensor].placement != placement_index) continue;
      for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
        const BoxingStep& step = boxing.plan.steps[s];
        if (step.hierarchy_axis != axis || !IsCollective(step.kind) || step.kind == BoxingKind::kSendRecv) continue;
        if (boxing.id >= static_cast<int64_t>(compilation.boxing_step_actors.size())) continue;
        for (const auto& [d, a] : compilation.boxing_step_actors[boxing.id][s]) {
          if (d == device_index) step_seconds[a] = step.seconds;
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
              PriceBucketCollective(compilation.links, placement, axis, bucket.kind, bucket.size_bytes).seconds();
          items.push_back({compute_seconds, seconds, actor.bucket_id()});
        }
        continue;
      }
      if (auto it = step_seconds.find(a); it != step_seconds.end()) {
        items.push_back({compute_seconds, it->second, -1});
        continue;
      }
      if (actor.thread() == proto::THREAD_COMPUTE) {
        compute_seconds += ActorKernelSeconds(actor, registers, rates).seconds();
      }
    }
    // First come, first served on the stream; then what has not started when the last
    // bucket is ready.
    double last_ready = -1;
    for (const StreamItem& item : items) {
      if (item.bucket >= 0) last_ready = std::max(last_ready, item.ready_seconds);
    }
    std::vector<int64_t> waiting;
    double stream_free = 0;
    for (const StreamItem& item : items) {
      const double start = std::max(stream_free, item.ready_seconds);
      stream_free = start + item.seconds;
      if (item.bucket >= 0 && start >= last_ready) waiting.push_back(item.bucket);
    }
    if (waiting.size() < 2) continue;
    std::stable_sort(waiting.begin(), waiting.end(), [&](int64_t x, int64_t y) {
      return std::make_tuple(FirstReaderOfBucket(compilation, compilation.buckets[x]), x) <
             std::make_tuple(FirstReaderOfBucket(compilation, compilation.buckets[y]), y);
    });
    orders.push_back(std::move(waiting));
  }
  return orders;
}

}  // namespace oneflow
