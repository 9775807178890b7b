// The JSON format of `oneflow inspect`: the text format's content as one object.
//
// Keys are a contract (docs/inspect.md lists them): always present, always in this
// order, named after the plan.proto field they come from where there is one. A value
// the plan does not have is null, never a missing key. Byte counts are exact integers.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/cli/inspect_compression.h"
#include "tools/cli/inspect_auto_parallel.h"
#include "tools/cli/inspect_render.h"
#include "tools/cli/json_writer.h"
#include "tools/cli/pipeline_stages.h"
#include "tools/cli/predicted_step_time.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

void WriteCluster(const proto::Cluster& cluster, JsonWriter& json) {
  json.BeginObject();
  json.Key("num_nodes");
  json.Int(cluster.num_nodes());
  json.Key("devices_per_node");
  json.Int(cluster.devices_per_node());
  json.Key("device_type");
  json.String(DeviceTypeText(cluster.device_type()));
  json.Key("intra_node_gb_per_s");
  json.Double(ToGigabytesPerSecond(cluster.intra_node_bandwidth()));
  json.Key("inter_node_gb_per_s");
  json.Double(ToGigabytesPerSecond(cluster.inter_node_bandwidth()));
  json.EndObject();
}

std::string DeviceName(const proto::Plan& plan, int d) {
  const proto::DeviceId& id = plan.devices(d).device();
  return absl::StrCat(id.node(), ":", id.device());
}

// The text's "predicted step time" line (predicted_step_time.h): the slowest device's
// step, and with --compression_warmup the step of the dense warm-up iterations (null
// without one). null when the plan cannot be priced or has no devices.
void WritePredictedStep(const proto::Plan& plan, JsonWriter& json) {
  const absl::StatusOr<StepTimePrediction> prediction = PredictStepTime(plan);
  if (!prediction.ok() || prediction->devices.empty()) {
    json.Null();
    return;
  }
  const DeviceStepTime& slowest = prediction->devices[prediction->slowest];
  json.BeginObject();
  json.Key("seconds");
  json.Double(slowest.seconds());
  json.Key("slowest_device");
  json.String(DeviceName(plan, prediction->slowest));
  json.Key("compute_seconds");
  json.Double(slowest.compute_seconds());
  json.Key("communication_seconds");
  json.Double(slowest.communication_seconds);
  json.Key("dense_warmup_iterations");
  json.Int(prediction->dense_warmup_iterations);
  const bool warmup = prediction->dense_warmup_iterations > 0 && !prediction->warmup_devices.empty();
  json.Key("dense_warmup_seconds");
  if (warmup) {
    json.Double(prediction->warmup_seconds());
  } else {
    json.Null();
  }
  json.Key("dense_warmup_slowest_device");
  if (warmup) {
    json.String(DeviceName(plan, prediction->warmup_slowest));
  } else {
    json.Null();
  }
  json.EndObject();
}

void WriteSbpMap(const google::protobuf::Map<std::string, proto::NdSbp>& map, JsonWriter& json) {
  json.BeginObject();
  for (const auto& [name, nd_sbp] : SortedSbps(map)) {
    json.Key(name);
    json.String(SbpText(*nd_sbp));
  }
  json.EndObject();
}

void WriteOp(const proto::LogicalOpSbp& op, const PlanIndex& index, JsonWriter& json) {
  json.BeginObject();
  json.Key("name");
  json.String(op.op_name());
  json.Key("type");
  const proto::OpDef* def = index.FindOp(op.op_name());
  def == nullptr ? json.Null() : json.String(def->type());
  json.Key("inputs");
  WriteSbpMap(op.signature().inputs(), json);
  json.Key("outputs");
  WriteSbpMap(op.signature().outputs(), json);
  json.Key("placement");
  json.String(PlacementText(op.placement()));
  json.EndObject();
}

void WriteStep(const proto::BoxingStepDef& step, std::optional<int64_t> dense_bytes, JsonWriter& json) {
  json.BeginObject();
  json.Key("kind");
  json.String(StepKindText(step.kind()));
  json.Key("hierarchy_axis");
  json.Int(step.hierarchy_axis());
  json.Key("src_sbp");
  json.String(SbpText(step.src_sbp()));
  json.Key("dst_sbp");
  json.String(SbpText(step.dst_sbp()));
  json.Key("bytes_per_device");
  json.Int(step.bytes_per_device());
  json.Key("collective_id");
  step.collective_id() == -1 ? json.Null() : json.Int(step.collective_id());
  // Only bucketed steps carry the key, so plans without buckets print as before.
  if (step.has_bucket_id()) {
    json.Key("bucket_id");
    json.Int(step.bucket_id());
  }
  // Only compressed steps carry the key, so dense plans print as before.
  if (IsCompressed(step)) {
    const proto::Compression& compression = step.compression();
    json.Key("compression");
    json.BeginObject();
    json.Key("codec");
    json.String(CodecText(compression.kind()));
    json.Key("group_size");
    json.Int(compression.block_size());
    json.Key("hadamard");
    json.Bool(compression.hadamard());
    json.Key("cross_node_codec");
    IsTwoLevel(step) ? json.String(CodecText(compression.cross_node_kind())) : json.Null();
    json.Key("cross_node_group_size");
    IsTwoLevel(step) ? json.Int(compression.cross_node_block_size()) : json.Null();
    json.Key("cross_node_hadamard");
    IsTwoLevel(step) ? json.Bool(compression.cross_node_hadamard()) : json.Null();
    json.Key("rounding");
    json.String(RoundingText(compression.rounding()));
    json.Key("fitted_int4_scale");
    json.Bool(compression.fitted_int4_scale());
    json.Key("dense_bytes_per_device");
    dense_bytes.has_value() ? json.Int(*dense_bytes) : json.Null();
    json.Key("wire_bytes_per_device");
    json.Int(step.bytes_per_device());
    json.Key("seconds_saved");
    const std::optional<double> saved = SecondsSaved(step);
    saved.has_value() ? json.Double(*saved) : json.Null();
    json.Key("reason");
    json.String(step.reason());
    json.EndObject();
  }
  json.EndObject();
}

void WriteBoxing(const proto::BoxingDef& boxing, int b, const PlanIndex& index, const CompressionFigures& figures,
                 JsonWriter& json) {
  json.BeginObject();
  json.Key("id");
  json.Int(boxing.id());
  json.Key("tensor");
  json.String(boxing.tensor());
  const proto::TensorDef* tensor = index.FindTensor(boxing.tensor());
  json.Key("tensor_shape");
  if (tensor == nullptr) {
    json.Null();
  } else {
    json.BeginArray();
    for (int64_t dim : tensor->shape()) json.Int(dim);
    json.EndArray();
  }
  json.Key("tensor_dtype");
  tensor == nullptr ? json.Null() : json.String(DTypeText(tensor->dtype()));
  json.Key("producer_op");
  json.String(boxing.producer_op());
  json.Key("consumer_op");
  json.String(boxing.consumer_op());
  json.Key("src_sbp");
  json.String(SbpText(boxing.src_sbp()));
  json.Key("dst_sbp");
  json.String(SbpText(boxing.dst_sbp()));
  json.Key("src_placement");
  json.String(PlacementText(boxing.src_placement()));
  json.Key("dst_placement");
  json.String(PlacementText(boxing.dst_placement()));
  json.Key("steps");
  json.BeginArray();
  for (int s = 0; s < boxing.steps_size(); ++s) WriteStep(boxing.steps(s), figures.DenseStepBytes(b, s), json);
  json.EndArray();
  json.Key("bytes_per_iter");
  json.Int(boxing.bytes_per_iter());
  json.Key("dense_bytes_per_iter");
  json.Int(figures.DenseBoxingBytes(b));
  json.Key("compression");
  json.BeginObject();
  json.Key("kind");
  json.String(CompressionKindText(boxing.compression().kind()));
  json.Key("block_size");
  json.Int(boxing.compression().block_size());
  json.EndObject();
  json.Key("sparsity");
  json.BeginObject();
  json.Key("kind");
  json.String(SparsityKindText(boxing.sparsity().kind()));
  json.Key("max_rows");
  json.Int(boxing.sparsity().max_rows());
  if (boxing.sparsity().kind() != proto::Sparsity::DENSE) {
    json.Key("rows_tensor");
    json.String(boxing.sparsity().rows_tensor());
    json.Key("rows");
    json.Int(boxing.sparsity().rows());
    json.Key("row_bytes");
    json.Int(boxing.sparsity().row_bytes());
    json.Key("expected_rows");
    json.Int(boxing.sparsity().expected_rows());
    json.Key("expected_bytes_per_device");
    json.Int(boxing.sparsity().expected_bytes_per_device());
    json.Key("worst_bytes_per_device");
    json.Int(boxing.steps_size() == 1 ? boxing.steps(0).bytes_per_device() : 0);
  }
  json.EndObject();
  json.Key("reason");
  json.String(boxing.reason());
  json.EndObject();
}

void WriteDevice(const proto::Plan& plan, const PlanIndex& index, const CompressionFigures& compression, int d,
                 JsonWriter& json) {
  const proto::DevicePlan& device = plan.devices(d);
  const DeviceFigures figures = ComputeDeviceFigures(device);
  json.BeginObject();
  json.Key("index");
  json.Int(d);
  json.Key("device");
  json.String(DeviceIdText(device.device()));
  json.Key("num_actors");
  json.Int(figures.num_actors);
  json.Key("actors_by_kind");
  json.BeginObject();
  for (const auto& [kind, count] : figures.actors_by_kind) {
    json.Key(kind);
    json.Int(count);
  }
  json.EndObject();
  json.Key("num_registers");
  json.Int(figures.num_registers);
  // Views (RegisterDef.alias_of) pin no bytes of their own: register_bytes leaves them out.
  int64_t view_bytes = 0;
  json.Key("views");
  json.BeginArray();
  for (const proto::RegisterDef& reg : device.registers()) {
    if (!reg.has_alias_of()) continue;
    view_bytes += reg.count() * reg.size_bytes();
    json.BeginObject();
    json.Key("register");
    json.Int(reg.id());
    json.Key("tensor");
    json.String(reg.tensor());
    json.Key("alias_of");
    json.Int(reg.alias_of());
    json.EndObject();
  }
  json.EndArray();
  json.Key("register_bytes");
  json.Int(figures.register_bytes - view_bytes);
  json.Key("persistent_bytes");
  json.Int(figures.persistent_bytes);
  json.Key("peak_bytes");
  json.Int(device.peak_bytes());
  json.Key("lower_bound_bytes");
  json.Int(device.lower_bound_bytes());
  json.Key("peak_to_lower_bound");
  figures.peak_to_lower_bound.has_value() ? json.Double(*figures.peak_to_lower_bound) : json.Null();
  json.Key("bytes_sent_per_iter");
  json.Int(device.bytes_sent_per_iter());
  json.Key("bytes_received_per_iter");
  json.Int(device.bytes_received_per_iter());
  json.Key("dense_bytes_sent_per_iter");
  json.Int(compression.DenseBytesSent(d));
  json.Key("dense_bytes_received_per_iter");
  json.Int(compression.DenseBytesReceived(d));
  json.Key("collective_order");
  json.BeginArray();
  for (int64_t id : device.collective_order()) {
    const proto::CollectiveDef* collective = index.FindCollective(id);
    json.BeginObject();
    json.Key("id");
    json.Int(id);
    json.Key("kind");
    json.String(CollectiveKindText(collective->kind()));
    json.Key("tensor");
    json.String(collective->tensor());
    json.Key("order");
    json.Int(collective->order());
    json.Key("stream");
    json.Int(collective->stream());
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

// A gradient bucket (Plan.buckets) with its members in packing (= backward) order.
void WriteBucket(const proto::GradientBucketDef& bucket, const PlanIndex& index, JsonWriter& json) {
  json.BeginObject();
  json.Key("id");
  json.Int(bucket.id());
  json.Key("kind");
  json.String(BucketKindText(bucket, index));
  json.Key("hierarchy_axis");
  json.Int(bucket.hierarchy_axis());
  json.Key("placement");
  json.String(PlacementText(bucket.placement()));
  json.Key("bytes_per_device");
  json.Int(bucket.size_bytes());
  json.Key("collective_id");
  json.Int(bucket.collective_id());
  // The group's own limit and why (a node-crossing group's; bucket_cap.h), when recorded.
  if (bucket.limit_bytes() > 0) {
    json.Key("limit_bytes");
    json.Int(bucket.limit_bytes());
    json.Key("limit_reason");
    json.String(bucket.limit_reason());
  }
  json.Key("codec");
  bucket.compression().kind() == proto::Compression::NONE ? json.Null()
                                                           : json.String(CodecText(bucket.compression().kind()));
  json.Key("members");
  json.BeginArray();
  for (const proto::BucketMemberDef& member : bucket.members()) {
    json.BeginObject();
    json.Key("tensor");
    json.String(member.tensor());
    json.Key("bytes");
    json.Int(member.size_bytes());
    json.Key("boxing_id");
    json.Int(member.boxing_id());
    json.Key("boxing_step");
    json.Int(member.boxing_step());
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

// The pipeline stages (pipeline_stages.h), with the measured bubble when a trace is given.
void WritePipeline(const proto::Plan& plan, const std::vector<PipelineStage>& stages,
                   const std::optional<TraceBubble>& measured, JsonWriter& json) {
  const int64_t m = MicroBatches(plan);
  const int64_t s = static_cast<int64_t>(stages.size());
  const double modelled =
      ModelledBubble(s, m, plan.job().pipeline_schedule(), std::max<int64_t>(1, plan.job().virtual_stages()));
  std::vector<double> idle;
  json.BeginObject();
  json.Key("num_stages");
  json.Int(static_cast<int64_t>(stages.size()));
  json.Key("micro_batches");
  json.Int(m);
  json.Key("modelled_bubble");
  json.Double(modelled);
  {
    // Every schedule's (--pp_schedule), interleaved with the plan's chunks or 2.
    const int64_t v = std::max<int64_t>(2, plan.job().virtual_stages());
    json.Key("schedule");
    json.String(plan.job().pipeline_schedule() == proto::PIPELINE_SCHEDULE_INTERLEAVED ? "interleaved"
                : plan.job().pipeline_schedule() == proto::PIPELINE_SCHEDULE_ZB_H1    ? "zb"
                                                                                       : "1f1b");
    json.Key("modelled_bubble_per_schedule");
    json.BeginObject();
    json.Key("1f1b");
    json.Double(ModelledBubble(s, m, proto::PIPELINE_SCHEDULE_1F1B, 1));
    json.Key("interleaved");
    json.Double(ModelledBubble(s, m, proto::PIPELINE_SCHEDULE_INTERLEAVED, v));
    json.Key("interleaved_virtual_stages");
    json.Int(v);
    json.Key("zb");
    json.Double(ModelledBubble(s, m, proto::PIPELINE_SCHEDULE_ZB_H1, 1));
    json.EndObject();
  }
  json.Key("trace");
  if (measured.has_value()) {
    const actors::MeasuredBubble& bubble = measured->bubble;
    for (const actors::DeviceIdle& device : bubble.devices) idle.push_back(device.idle_fraction);
    json.BeginObject();
    json.Key("file");
    json.String(measured->trace);
    json.Key("first_iteration");
    json.Int(bubble.first_iteration);
    json.Key("last_iteration");
    json.Int(bubble.last_iteration);
    json.Key("window_ms");
    json.Double((bubble.window_end_ns - bubble.window_start_ns) / 1e6);
    json.EndObject();
  } else {
    json.Null();
  }
  json.Key("stages");
  json.BeginArray();
  for (size_t k = 0; k < stages.size(); ++k) {
    const PipelineStage& stage = stages[k];
    json.BeginObject();
    json.Key("index");
    json.Int(static_cast<int64_t>(k));
    json.Key("placement");
    json.String(stage.placement);
    json.Key("devices");
    json.BeginArray();
    for (int d : stage.devices) json.String(DeviceIdText(plan.devices(d).device()));
    json.EndArray();
    json.Key("num_ops");
    json.Int(stage.num_ops);
    // --stage_blocks' count for this stage; null for a plan cut by block count.
    json.Key("blocks");
    if (plan.recipe().stage_blocks_size() == static_cast<int>(stages.size())) {
      json.Int(plan.recipe().stage_blocks(static_cast<int>(k)));
    } else {
      json.Null();
    }
    json.Key("peak_bytes");
    json.Int(stage.peak_bytes);
    json.Key("persistent_bytes");
    json.Int(stage.persistent_bytes);
    json.Key("modelled_bubble");
    json.Double(modelled);
    json.Key("measured_bubble");
    measured.has_value() ? json.Double(StageMeasuredBubble(stage, idle)) : json.Null();
    json.Key("devices_measured_bubble");
    if (measured.has_value()) {
      json.BeginArray();
      for (int d : stage.devices) json.Double(idle[d]);
      json.EndArray();
    } else {
      json.Null();
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
}

}  // namespace

std::string RenderJson(const proto::Plan& plan, const PlanIndex& index, std::optional<int> device,
                       const std::optional<TraceBubble>& measured) {
  JsonWriter json;
  json.BeginObject();
  json.Key("format_version");
  json.Int(plan.format_version());
  json.Key("job");
  json.String(plan.job().name());
  json.Key("cluster");
  WriteCluster(plan.cluster(), json);
  json.Key("micro_batches");
  json.Int(MicroBatches(plan));
  json.Key("predicted_step");
  WritePredictedStep(plan, json);
  if (plan.has_sbp_search()) {
    // What --sbp_search did (compiler/passes/sbp_search_pass.h); absent without it.
    json.Key("sbp_search");
    json.BeginObject();
    json.Key("moved_ops");
    json.Int(plan.sbp_search().moved_ops());
    json.Key("rounds");
    json.Int(plan.sbp_search().rounds());
    json.Key("greedy_seconds");
    json.Double(plan.sbp_search().greedy_seconds());
    json.Key("searched_seconds");
    json.Double(plan.sbp_search().searched_seconds());
    // Identical blocks searched once (compiler/passes/identical_blocks.h): the classes and
    // the blocks that took their class's moves.
    json.Key("block_classes");
    json.Int(plan.sbp_search().block_classes());
    json.Key("composed_blocks");
    json.Int(plan.sbp_search().composed_blocks());
    json.EndObject();
  }
  json.Key("ops");
  json.BeginArray();
  for (const proto::LogicalOpSbp& op : plan.op_sbps()) WriteOp(op, index, json);
  json.EndArray();
  const CompressionFigures figures(plan, index);
  json.Key("boxing_bytes_per_iter");
  json.Int(TotalBoxingBytesPerIteration(plan));
  json.Key("boxing_dense_bytes_per_iter");
  json.Int(figures.DenseBoxingBytesInAll());
  json.Key("boxings");
  json.BeginArray();
  for (int b = 0; b < plan.boxings_size(); ++b) WriteBoxing(plan.boxings(b), b, index, figures, json);
  json.EndArray();
  json.Key("bucket_bytes_limit");
  json.Int(plan.bucket_bytes_limit());
  json.Key("buckets");
  json.BeginArray();
  for (const proto::GradientBucketDef& bucket : plan.buckets()) WriteBucket(bucket, index, json);
  json.EndArray();
  // Communication streams (Plan.streams): each device issues each stream's collectives
  // (devices[].collective_order[].stream) on a thread of its own.
  json.Key("streams");
  json.BeginArray();
  for (const proto::CommunicationStreamDef& stream : plan.streams()) {
    int64_t collectives = 0;
    for (const proto::CollectiveDef& collective : plan.collectives()) {
      collectives += collective.kind() != proto::SEND_RECV && collective.stream() == stream.id();
    }
    json.BeginObject();
    json.Key("id");
    json.Int(stream.id());
    json.Key("name");
    json.String(stream.name());
    json.Key("collectives");
    json.Int(collectives);
    json.EndObject();
  }
  json.EndArray();
  // null for a plan of one stage without a trace, as the text leaves the section out.
  const std::vector<PipelineStage> stages = PipelineStages(plan);
  json.Key("pipeline");
  if (stages.size() > 1 || measured.has_value()) {
    WritePipeline(plan, stages, measured, json);
  } else {
    json.Null();
  }
  WriteAutoParallelJson(plan, json);
  json.Key("num_devices");
  json.Int(plan.devices_size());
  json.Key("devices");
  json.BeginArray();
  for (int d = 0; d < plan.devices_size(); ++d) {
    if (!device.has_value() || *device == d) WriteDevice(plan, index, figures, d, json);
  }
  json.EndArray();
  json.EndObject();
  return json.Finish();
}

}  // namespace oneflow::cli
