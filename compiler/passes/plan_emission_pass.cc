#include "compiler/passes/plan_emission_pass.h"

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/passes/gradient_bucketing_pass.h"
#include "plan/plan_checksum.h"
#include "sbp/link_model.h"
#include "plan/plan_verifier.h"
#include "kernels/boxing/step_proto.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

std::string ProducerName(const Compilation& compilation, const LogicalTensor& tensor) {
  switch (tensor.kind) {
    case LogicalTensor::Kind::kInput:
      return absl::StrCat("data_source/", compilation.job.data_sources(tensor.producer).name());
    case LogicalTensor::Kind::kVariable:
      return tensor.name;
    case LogicalTensor::Kind::kOpOutput:
      return compilation.graph.ops[tensor.producer].name;
  }
  return "";
}

proto::Compression::Kind CompressionToProto(CompressionKind kind) {
  switch (kind) {
    case CompressionKind::kNone:
      return proto::Compression::NONE;
    case CompressionKind::kFp8E4M3:
      return proto::Compression::FP8_E4M3;
    case CompressionKind::kFp8E5M2:
      return proto::Compression::FP8_E5M2;
    case CompressionKind::kInt4:
      return proto::Compression::INT4;
    case CompressionKind::kInt8:
      return proto::Compression::INT8;
    case CompressionKind::kBf16:
      return proto::Compression::BF16;
  }
  return proto::Compression::NONE;
}

bool HasStochasticEncoder(const CompressionChoice& choice) {
  return !choice.compressed() || choice.kind == CompressionKind::kInt4 || choice.kind == CompressionKind::kInt8;
}

// The key of a step's stochastic rounding (Compression.rounding_seed): the options' seed,
// the logical tensor's name (FNV-1a) and the step's index in its boxing; nothing of the
// device layout but what the boxing's steps are.
uint64_t RoundingSeed(uint64_t seed, const std::string& tensor, int64_t step_index) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (const char c : tensor) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return MixSeed(MixSeed(seed, static_cast<int64_t>(hash)), step_index);
}

// How a compressed step rounds: options.codec_rounding where every level's codec has a
// stochastic encoder (int4, int8), nearest elsewhere.
struct Rounding {
  proto::Compression::Rounding mode = proto::Compression::NEAREST;
  uint64_t seed = 0;
};

Rounding RoundingFor(const CompileOptions& options, const std::string& tensor, int64_t step_index) {
  return {options.codec_rounding, RoundingSeed(options.codec_rounding_seed, tensor, step_index)};
}

// The step's modelled seconds and the cost model's decision (when a codec applied); a
// compressed step's codec (both levels for a two-level one) and rounding. With
// CompileOptions.error_feedback, a compressed reduction or gather of a variable's gradient
// gets error feedback; every compressed step gets CompileOptions.compression_warmup_iterations.
// With `fitted_int4_scale` (a gradient's step under CompileOptions.fit_int4_gradient_scale)
// its int4 encoders rounding to nearest choose their scales by error.
void EmitCompression(const BoxingStep& step, bool gradient, bool fitted_int4_scale, const Rounding& rounding,
                     int64_t dense_warmup_iterations, proto::BoxingStepDef* def) {
  def->set_seconds(step.seconds);
  def->set_dense_seconds(step.dense_seconds);
  def->set_reason(step.compression_reason);  // the decision, whichever side won
  if (!step.compression.compressed()) return;
  proto::Compression* compression = def->mutable_compression();
  // Every stage that quantizes a gradient keeps its own residual: the reductions' senders
  // and the owner of each shard a gradient's all-gather encodes (compressed_collectives.h).
  if (gradient && (step.kind == BoxingKind::kAllReduce || step.kind == BoxingKind::kReduceScatter ||
                   step.kind == BoxingKind::kAllGather)) {
    compression->set_error_feedback(true);
  }
  compression->set_kind(CompressionToProto(step.compression.kind));
  compression->set_block_size(step.compression.group_size);
  compression->set_hadamard(step.compression.hadamard);
  if (step.cross_node_compression.compressed()) {
    compression->set_cross_node_kind(CompressionToProto(step.cross_node_compression.kind));
    compression->set_cross_node_block_size(step.cross_node_compression.group_size);
    compression->set_cross_node_hadamard(step.cross_node_compression.hadamard);
  }
  if (rounding.mode == proto::Compression::STOCHASTIC && HasStochasticEncoder(step.compression) &&
      HasStochasticEncoder(step.cross_node_compression)) {
    compression->set_rounding(proto::Compression::STOCHASTIC);
    compression->set_rounding_seed(rounding.seed);
  } else if (fitted_int4_scale && (step.compression.kind == CompressionKind::kInt4 ||
                                   step.cross_node_compression.kind == CompressionKind::kInt4)) {
    compression->set_fitted_int4_scale(true);
  }
  compression->set_dense_warmup_iterations(dense_warmup_iterations);
  def->set_dense_bytes_per_device(step.dense_bytes_per_device);
  def->set_seconds_saved(step.dense_seconds - step.seconds);
}

void EmitSparsity(const Compilation& compilation, const SparseBoxing& sparse, proto::Sparsity* def) {
  def->set_kind(sparse.kind);
  def->set_max_rows(sparse.max_rows);
  def->set_rows_tensor(compilation.graph.tensors[sparse.rows_tensor].name);
  def->set_rows(sparse.rows);
  def->set_row_bytes(sparse.row_bytes);
  def->set_expected_rows(sparse.expected_rows);
  def->set_expected_bytes_per_device(sparse.expected_bytes_per_device);
}

void EmitBoxings(Compilation* compilation) {
  const LogicalGraph& graph = compilation->graph;
  proto::Plan& plan = compilation->plan;
  for (const Boxing& boxing : compilation->boxings) {
    const LogicalTensor& tensor = graph.tensors[boxing.tensor];
    proto::BoxingDef* def = plan.add_boxings();
    def->set_id(boxing.id);
    def->set_tensor(tensor.name);
    def->set_producer_op(ProducerName(*compilation, tensor));
    def->set_consumer_op(boxing.first_consumer >= 0 ? graph.ops[boxing.first_consumer].name
                                                    : "loss_sink");
    *def->mutable_src_sbp() = tensor.sbp.ToProto();
    *def->mutable_dst_sbp() = boxing.dst_sbp.ToProto();
    *def->mutable_src_placement() = graph.placements[tensor.placement].ToProto();
    *def->mutable_dst_placement() = graph.placements[boxing.dst_placement].ToProto();
    int64_t bytes_per_iter = 0;
    int64_t placement = tensor.placement;
    for (size_t s = 0; s < boxing.plan.steps.size(); ++s) {
      const BoxingStep& step = boxing.plan.steps[s];
      proto::BoxingStepDef* step_def = def->add_steps();
      step_def->set_kind(BoxingKindToProto(step.kind));
      step_def->set_hierarchy_axis(step.hierarchy_axis);
      *step_def->mutable_src_sbp() = step.src.ToProto();
      *step_def->mutable_dst_sbp() = step.dst.ToProto();
      step_def->set_bytes_per_device(step.bytes_per_device);
      step_def->set_collective_id(compilation->boxing_step_collective[boxing.id][s]);
      if (const int64_t bucket = BucketOf(*compilation, boxing.id, static_cast<int64_t>(s)); bucket >= 0) {
        step_def->set_bucket_id(bucket);
        step_def->set_collective_id(compilation->bucket_collective[bucket]);
      }
      EmitCompression(step, compilation->options.error_feedback && tensor.is_gradient,
                      compilation->options.fit_int4_gradient_scale && tensor.is_gradient,
                      RoundingFor(compilation->options, tensor.name, static_cast<int64_t>(s)),
                      compilation->options.compression_warmup_iterations, step_def);
      if (boxing.sparse.has_value()) EmitSparsity(*compilation, *boxing.sparse, step_def->mutable_sparsity());
      if (step.kind == BoxingKind::kSendRecv) placement = boxing.dst_placement;
      bytes_per_iter += step.bytes_per_device * graph.placements[placement].num_devices();
    }
    def->set_bytes_per_iter(bytes_per_iter);
    def->set_reason(boxing.reason);
    if (boxing.sparse.has_value()) EmitSparsity(*compilation, *boxing.sparse, def->mutable_sparsity());
  }
}

// The gradient buckets (gradient_bucketing_pass.h) and the limit they were packed to.
void EmitBuckets(Compilation* compilation) {
  const LogicalGraph& graph = compilation->graph;
  proto::Plan& plan = compilation->plan;
  plan.clear_buckets();
  plan.set_bucket_bytes_limit(BucketBytesLimit(compilation->options.bucket_mb));
  for (const GradientBucket& bucket : compilation->buckets) {
    proto::GradientBucketDef* def = plan.add_buckets();
    def->set_id(bucket.id);
    for (size_t k = 0; k < bucket.members.size(); ++k) {
      const auto& [b, s] = bucket.members[k];
      proto::BucketMemberDef* member = def->add_members();
      member->set_boxing_id(b);
      member->set_boxing_step(s);
      member->set_tensor(graph.tensors[compilation->boxings[b].tensor].name);
      member->set_size_bytes(bucket.member_bytes[k]);
    }
    *def->mutable_placement() = graph.placements[bucket.placement].ToProto();
    def->set_hierarchy_axis(bucket.hierarchy_axis);
    def->set_dtype(ToProto(DType::kF32));
    const auto& [b, s] = bucket.members.front();
    proto::BoxingStepDef first;
    const LogicalTensor& first_tensor = graph.tensors[compilation->boxings[b].tensor];
    EmitCompression(compilation->boxings[b].plan.steps[s], compilation->options.error_feedback && first_tensor.is_gradient,
                    compilation->options.fit_int4_gradient_scale && first_tensor.is_gradient,
                    RoundingFor(compilation->options, first_tensor.name, s),
                    compilation->options.compression_warmup_iterations, &first);
    if (first.has_compression()) *def->mutable_compression() = first.compression();
    def->set_size_bytes(bucket.size_bytes);
    def->set_collective_id(compilation->bucket_collective[bucket.id]);
    // Where the group crosses nodes (where the link-rate cap is considered) or was capped
    // for the node-crossing step after it; other groups' limit is the plan's, and their
    // plans stay as they were.
    if (AxisCrossesNodes(graph.placements[bucket.placement], bucket.hierarchy_axis) ||
        bucket.limit_bytes != plan.bucket_bytes_limit()) {
      def->set_limit_bytes(bucket.limit_bytes);
      def->set_limit_reason(bucket.limit_reason);
    }
  }
}

// Each member of a collective's group sends and receives the step's bytes per device
// (the ring algorithms of the cost model are symmetric); a send/recv's sources only
// send and its destinations only receive.
void CountWireBytes(proto::Plan* plan) {
  std::map<std::pair<int64_t, int64_t>, proto::DevicePlan*> devices;
  for (proto::DevicePlan& device : *plan->mutable_devices()) {
    device.set_bytes_sent_per_iter(0);
    device.set_bytes_received_per_iter(0);
    devices[{device.device().node(), device.device().device()}] = &device;
  }
  for (const proto::CollectiveDef& collective : plan->collectives()) {
    const int64_t bytes = collective.bytes_per_device();
    for (const proto::DeviceId& member : collective.group()) {
      proto::DevicePlan* device = devices.at({member.node(), member.device()});
      bool sends = true, receives = true;
      if (collective.kind() == proto::SEND_RECV) {
        sends = receives = false;
        for (const proto::ActorDef& actor : device->actors()) {
          if (actor.collective_id() != collective.id()) continue;
          sends |= actor.consumed_registers_size() > 0;
          receives |= actor.produced_registers_size() > 0;
        }
      }
      if (sends) device->set_bytes_sent_per_iter(device->bytes_sent_per_iter() + bytes);
      if (receives) device->set_bytes_received_per_iter(device->bytes_received_per_iter() + bytes);
    }
  }
}

}  // namespace

absl::StatusOr<bool> PlanEmissionPass::Run(Compilation* compilation) {
  const LogicalGraph& graph = compilation->graph;
  proto::Plan& plan = compilation->plan;
  plan.set_format_version(kPlanFormatVersion);
  *plan.mutable_cluster() = compilation->options.cluster;
  *plan.mutable_job() = compilation->job;
  plan.clear_op_sbps();
  for (const LogicalOp& op : graph.ops) {
    proto::LogicalOpSbp* entry = plan.add_op_sbps();
    entry->set_op_name(op.name);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      (*entry->mutable_signature()->mutable_inputs())[op.definition->inputs[k]] = op.input_sbps[k].ToProto();
    }
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      (*entry->mutable_signature()->mutable_outputs())[op.definition->outputs[k]] =
          op.output_sbps[k].ToProto();
    }
    *entry->mutable_placement() = graph.placements[op.placement].ToProto();
  }
  plan.clear_tensor_layouts();
  for (const LogicalTensor& tensor : graph.tensors) {
    if (tensor.kind == LogicalTensor::Kind::kOpOutput) continue;
    proto::TensorLayout* layout = plan.add_tensor_layouts();
    layout->set_tensor(tensor.name);
    *layout->mutable_sbp() = tensor.sbp.ToProto();
    *layout->mutable_placement() = graph.placements[tensor.placement].ToProto();
  }
  plan.clear_boxings();
  EmitBoxings(compilation);
  EmitBuckets(compilation);
  CountWireBytes(&plan);
  // This pass changes no device's actors, registers or memory, nor the collectives:
  // what the verification after memory planning checked of them still holds.
  OF_RETURN_IF_ERROR(VerifyPlanContents(plan, compilation->verified_plan_checks));
  if (compilation->options.recipe.has_value()) *plan.mutable_recipe() = *compilation->options.recipe;
  if (const LogicalGraph::SbpSearchRecord& search = compilation->graph.sbp_search; search.ran) {
    proto::SbpSearchRecord& record = *plan.mutable_sbp_search();
    record.set_greedy_seconds(search.greedy_seconds);
    record.set_searched_seconds(search.searched_seconds);
    record.set_moved_ops(search.moved_ops);
    record.set_rounds(search.rounds);
    record.set_block_classes(search.block_classes);
    record.set_composed_blocks(search.composed_blocks);
  }
  // Sealed last: any later change to the plan makes every reader refuse it. A caller that
  // writes the plan gets the bytes the checksum was computed over.
  if (compilation->options.sealed_plan != nullptr) {
    OF_ASSIGN_OR_RETURN(*compilation->options.sealed_plan, SealAndSerializePlan(&plan));
  } else {
    OF_RETURN_IF_ERROR(SealPlan(&plan));
  }
  return true;
}

}  // namespace oneflow
