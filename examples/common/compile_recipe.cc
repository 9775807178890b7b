#include "examples/common/compile_recipe.h"

#include <memory>

#include "oneflow_core/dsl/graph.h"
#include "oneflow_core/status.h"
#include "plan/plan_checksum.h"

namespace oneflow::examples {

ParallelFlags FlagsOfLayout(const ParallelLayout& layout) {
  ParallelFlags flags;
  flags.nodes = layout.cluster().num_nodes();
  flags.devices_per_node = layout.cluster().devices_per_node();
  flags.dp = layout.dp();
  flags.tp = layout.tp();
  flags.cp = layout.cp();
  flags.cp_attention = CpAttentionName(layout.cp_attention());
  flags.cp_ring_split = layout.cp_ring_zigzag() ? "zigzag" : "contiguous";
  flags.zero = layout.zero();
  flags.pp = layout.pp();
  flags.virtual_stages = layout.virtual_stages();
  flags.stage_blocks = layout.stage_blocks();
  flags.micro_batches = layout.micro_batches();
  flags.intra_node_bandwidth = layout.cluster().intra_node_bandwidth();
  flags.inter_node_bandwidth = layout.cluster().inter_node_bandwidth();
  return flags;
}

absl::StatusOr<proto::CompileRecipe> MakeRecipe(const proto::Job& job, const ParallelLayout& layout,
                                                const CompileSettings& settings, bool auto_parallel) {
  proto::CompileRecipe recipe;
  // Printed from the Job, not copied from a file: the example and `oneflow compile` of its
  // printed text hold the same Job, so they record the same text.
  OF_ASSIGN_OR_RETURN(const std::unique_ptr<Graph> graph, Graph::FromJob(job));
  recipe.set_graph_text(graph->ToText(Graph::Locations::kPrint));
  const ParallelFlags flags = FlagsOfLayout(layout);
  recipe.set_nodes(flags.nodes);
  recipe.set_devices_per_node(flags.devices_per_node);
  recipe.set_dp(flags.dp);
  recipe.set_tp(flags.tp);
  recipe.set_cp(flags.cp);
  recipe.set_cp_attention(flags.cp_attention);
  recipe.set_cp_ring_split(flags.cp_ring_split);
  recipe.set_pp(flags.pp);
  recipe.set_virtual_stages(flags.virtual_stages);
  for (int64_t blocks : flags.stage_blocks) recipe.add_stage_blocks(blocks);
  recipe.set_micro_batches(flags.micro_batches);
  recipe.set_zero(flags.zero);
  recipe.set_auto_parallel(auto_parallel);
  recipe.set_threads_per_device(settings.threads_per_device);
  recipe.set_bucket_mb(settings.bucket_mb);
  recipe.set_bucket_mb_given(settings.bucket_mb_given);
  recipe.set_sparse_boxing(settings.sparse_boxing);
  recipe.set_fuse_epilogues(settings.fuse_epilogues);
  recipe.set_sbp_search(settings.sbp_search);
  if (settings.collective_call_seconds.has_value()) {
    recipe.set_sbp_search_call_seconds(*settings.collective_call_seconds);
  }
  // Absent in plans from before the flag, whose ZeRO-3 re-gathered: written only when off.
  if (!settings.zero3_regather) recipe.set_zero3_regather(false);
  recipe.set_communication_streams(settings.communication_streams);
  recipe.set_reduction_tail(settings.reduction_tail);
  recipe.set_recompute(settings.recompute);
  recipe.set_pp_schedule(settings.pp_schedule);
  recipe.set_device_memory(settings.device_memory);
  recipe.set_precision(settings.precision);
  recipe.set_compression(settings.compression.compression);
  recipe.set_codec_bytes_per_second(settings.compression.codec_bytes_per_second);
  recipe.set_codec_calibration(settings.compression.codec_calibration);
  recipe.set_codec_rounding(settings.compression.codec_rounding);
  recipe.set_gradient_wire(settings.compression.gradient_wire);
  recipe.set_compression_warmup(settings.compression.compression_warmup);
  recipe.set_error_feedback(settings.compression.error_feedback);
  recipe.set_forced_cross_node_only(!settings.compression.compress_in_node);
  // Only "fitted" is written: a plan compiled with the default keeps its bytes.
  if (settings.compression.int4_gradient_scale != CompressionFlags().int4_gradient_scale) {
    recipe.set_int4_gradient_scale(settings.compression.int4_gradient_scale);
  }
  // Only a bound other than the default is written: a plan compiled with the default
  // keeps the bytes it had before the field.
  if (settings.compression.codec_accuracy_bound != CompressionFlags().codec_accuracy_bound) {
    recipe.set_codec_accuracy_bound(settings.compression.codec_accuracy_bound);
  }
  recipe.set_intra_node_bandwidth(settings.links.intra_node_bandwidth);
  recipe.set_inter_node_bandwidth(settings.links.inter_node_bandwidth);
  recipe.set_intra_node_latency(settings.links.intra_node_latency);
  recipe.set_inter_node_latency(settings.links.inter_node_latency);
  recipe.set_intra_node_bandwidth_given(settings.links.intra_node_bandwidth_given);
  recipe.set_inter_node_bandwidth_given(settings.links.inter_node_bandwidth_given);
  recipe.set_intra_node_latency_given(settings.links.intra_node_latency_given);
  recipe.set_inter_node_latency_given(settings.links.inter_node_latency_given);
  return recipe;
}

absl::Status AttachRecipe(const proto::CompileRecipe& recipe, proto::Plan* plan) {
  *plan->mutable_recipe() = recipe;
  return SealPlan(plan);
}

ParallelFlags LayoutFlagsFromRecipe(const proto::CompileRecipe& recipe) {
  ParallelFlags flags;
  flags.nodes = recipe.nodes();
  flags.devices_per_node = recipe.devices_per_node();
  flags.dp = recipe.dp();
  flags.tp = recipe.tp();
  flags.cp = recipe.cp();
  flags.cp_attention = recipe.cp_attention();
  // Recipes written before the flag existed hold "": their plans split contiguously.
  flags.cp_ring_split = recipe.cp_ring_split().empty() ? "contiguous" : recipe.cp_ring_split();
  flags.zero = recipe.zero();
  flags.pp = recipe.pp();
  flags.virtual_stages = recipe.virtual_stages();
  flags.stage_blocks.assign(recipe.stage_blocks().begin(), recipe.stage_blocks().end());
  flags.micro_batches = recipe.micro_batches();
  flags.intra_node_bandwidth = recipe.intra_node_bandwidth();
  flags.inter_node_bandwidth = recipe.inter_node_bandwidth();
  return flags;
}

CompileSettings SettingsFromRecipe(const proto::CompileRecipe& recipe) {
  CompileSettings settings;
  settings.threads_per_device = recipe.threads_per_device();
  settings.bucket_mb = recipe.bucket_mb();
  settings.bucket_mb_given = recipe.bucket_mb_given();
  settings.sparse_boxing = recipe.sparse_boxing();
  settings.fuse_epilogues = recipe.fuse_epilogues();
  settings.sbp_search = recipe.sbp_search();
  if (recipe.has_sbp_search_call_seconds()) settings.collective_call_seconds = recipe.sbp_search_call_seconds();
  settings.zero3_regather = !recipe.has_zero3_regather() || recipe.zero3_regather();
  settings.communication_streams = recipe.communication_streams();
  settings.reduction_tail = recipe.reduction_tail().empty() ? "backward" : recipe.reduction_tail();
  settings.recompute = recipe.recompute();
  settings.pp_schedule = recipe.pp_schedule();
  settings.device_memory = recipe.device_memory();
  settings.precision = recipe.precision();
  settings.compression.compression = recipe.compression();
  settings.compression.codec_bytes_per_second = recipe.codec_bytes_per_second();
  settings.compression.codec_calibration = recipe.codec_calibration();
  if (!recipe.codec_rounding().empty()) settings.compression.codec_rounding = recipe.codec_rounding();
  if (!recipe.gradient_wire().empty()) settings.compression.gradient_wire = recipe.gradient_wire();
  settings.compression.compression_warmup = recipe.compression_warmup();
  settings.compression.error_feedback = recipe.error_feedback();
  settings.compression.compress_in_node = !recipe.forced_cross_node_only();
  if (!recipe.int4_gradient_scale().empty()) settings.compression.int4_gradient_scale = recipe.int4_gradient_scale();
  // Empty: the default, or a recipe from before the field (its plan was compiled with it).
  if (!recipe.codec_accuracy_bound().empty()) settings.compression.codec_accuracy_bound = recipe.codec_accuracy_bound();
  settings.links.intra_node_bandwidth = recipe.intra_node_bandwidth();
  settings.links.inter_node_bandwidth = recipe.inter_node_bandwidth();
  settings.links.intra_node_latency = recipe.intra_node_latency();
  settings.links.inter_node_latency = recipe.inter_node_latency();
  settings.links.intra_node_bandwidth_given = recipe.intra_node_bandwidth_given();
  settings.links.inter_node_bandwidth_given = recipe.inter_node_bandwidth_given();
  settings.links.intra_node_latency_given = recipe.intra_node_latency_given();
  settings.links.inter_node_latency_given = recipe.inter_node_latency_given();
  return settings;
}

}  // namespace oneflow::examples
