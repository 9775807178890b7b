#include "tools/cli/pipeline_stages.h"

#include <algorithm>
#include <map>
#include <utility>

#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

using DeviceKey = std::pair<int64_t, int64_t>;  // (node, device)

std::vector<DeviceKey> DeviceSet(const proto::Placement& placement) {
  std::vector<DeviceKey> set;
  for (const proto::DeviceId& id : placement.devices()) set.push_back({id.node(), id.device()});
  std::sort(set.begin(), set.end());
  return set;
}

// The op that produces Job.loss, or "" when the job has none.
std::string LossOp(const proto::Job& job) {
  if (job.loss().empty()) return "";
  for (const proto::OpDef& op : job.ops()) {
    for (const auto& [argument, name] : op.outputs()) {
      if (name == job.loss()) return op.name();
    }
  }
  return "";
}

}  // namespace

std::vector<PipelineStage> PipelineStages(const proto::Plan& plan) {
  std::map<DeviceKey, int> device_index;
  for (int d = 0; d < plan.devices_size(); ++d) {
    device_index[{plan.devices(d).device().node(), plan.devices(d).device().device()}] = d;
  }
  std::map<std::vector<DeviceKey>, int> stage_of;
  std::vector<PipelineStage> stages;
  int loss_stage = -1;
  const std::string loss_op = LossOp(plan.job());
  for (const proto::LogicalOpSbp& op : plan.op_sbps()) {
    if (op.placement().devices_size() == 0) continue;
    auto [it, added] = stage_of.emplace(DeviceSet(op.placement()), static_cast<int>(stages.size()));
    if (added) {
      PipelineStage stage;
      stage.placement = PlacementText(op.placement());
      for (const proto::DeviceId& id : op.placement().devices()) {
        auto found = device_index.find({id.node(), id.device()});
        if (found == device_index.end()) continue;  // A device the plan has no program for.
        stage.devices.push_back(found->second);
        const proto::DevicePlan& device = plan.devices(found->second);
        stage.peak_bytes = std::max(stage.peak_bytes, device.peak_bytes());
        stage.persistent_bytes = std::max(stage.persistent_bytes, ComputeDeviceFigures(device).persistent_bytes);
      }
      stages.push_back(std::move(stage));
    }
    ++stages[it->second].num_ops;
    if (!loss_op.empty() && op.op_name() == loss_op) {
      loss_stage = it->second;
    }
  }
  if (loss_stage >= 0) std::rotate(stages.begin() + loss_stage, stages.begin() + loss_stage + 1, stages.end());
  return stages;
}

int64_t MicroBatches(const proto::Plan& plan) { return std::max<int64_t>(1, plan.job().micro_batches()); }

double ModelledBubble(int64_t stages, int64_t micro_batches) {
  if (stages <= 1) return 0;
  return static_cast<double>(stages - 1) / static_cast<double>(std::max<int64_t>(micro_batches, 1) + stages - 1);
}

double ModelledBubble(int64_t stages, int64_t micro_batches, proto::PipelineSchedule schedule,
                      int64_t virtual_stages) {
  const int64_t k = schedule == proto::PIPELINE_SCHEDULE_INTERLEAVED ? std::max<int64_t>(1, virtual_stages)
                    : schedule == proto::PIPELINE_SCHEDULE_ZB_H1     ? 3
                                                                     : 1;
  return ModelledBubble(stages, k * std::max<int64_t>(micro_batches, 1));
}

double StageMeasuredBubble(const PipelineStage& stage, const std::vector<double>& device_idle) {
  double sum = 0;
  int count = 0;
  for (int d : stage.devices) {
    if (d < static_cast<int>(device_idle.size())) {
      sum += device_idle[d];
      ++count;
    }
  }
  return count == 0 ? 0 : sum / count;
}

}  // namespace oneflow::cli
