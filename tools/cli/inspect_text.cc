// The text format of `oneflow inspect`: what a person reads. Sections, in order:
// header, cluster, ops, recompute (when the plan recomputes), boxings, gradient buckets (when there are any), communication
// streams (when there are several), pipeline stages (when the ops have more than one
// placement, or a trace is given), devices.
// docs/inspect.md shows a sample.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "tools/cli/inspect_compression.h"
#include "tools/cli/inspect_auto_parallel.h"
#include "tools/cli/inspect_render.h"
#include "tools/cli/pipeline_stages.h"
#include "tools/cli/predicted_step_time.h"
#include "tools/cli/text_wrap.h"
#include "examples/common/cp_traffic.h"
#include "plan/plan_format.h"
#include "oneflow_core/dtype.h"

namespace oneflow::cli {
namespace {

std::string Plural(int64_t count, absl::string_view singular, absl::string_view plural) {
  return absl::StrCat(count, " ", count == 1 ? singular : plural);
}

// "w_grad [32, 16] f32", or just the name when plan.job does not describe the tensor.
std::string TensorText(const PlanIndex& index, const std::string& name) {
  const proto::TensorDef* tensor = index.FindTensor(name);
  if (tensor == nullptr) return name;
  return absl::StrCat(name, " ", ShapeAndTypeText(tensor->shape(), tensor->dtype()));
}

// Left-aligned columns; the last column is not padded, so lines carry no trailing blanks.
// `max_widths[c]` (0: none) caps column c's width: one long cell (a gradient op's
// 70-character name) would otherwise push every row past kMaxTextLineWidth. A cell
// longer than its column ends its line, and the row goes on in the next line under the
// next column.
void AppendTable(const std::vector<std::vector<std::string>>& rows, absl::string_view indent, std::string* out,
                 const std::vector<size_t>& max_widths = {}) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) {
      const size_t cap = c < max_widths.size() && max_widths[c] > 0 ? max_widths[c] : row[c].size();
      if (row[c].size() <= cap) widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line(indent);
    for (size_t c = 0; c < row.size(); ++c) {
      if (c + 1 == row.size()) {
        absl::StrAppend(&line, row[c]);
      } else if (row[c].size() <= widths[c]) {
        absl::StrAppend(&line, row[c], std::string(widths[c] - row[c].size() + 2, ' '));
      } else {
        absl::StrAppend(out, line, row[c], "\n");
        size_t next_column = indent.size();
        for (size_t k = 0; k <= c; ++k) next_column += widths[k] + 2;
        line = std::string(next_column, ' ');
      }
    }
    absl::StrAppend(out, line, "\n");
  }
}

void AppendCluster(const proto::Plan& plan, std::string* out) {
  const proto::Cluster& cluster = plan.cluster();
  absl::StrAppend(out, "cluster: ", Plural(cluster.num_nodes(), "node", "nodes"), " x ",
                  Plural(cluster.devices_per_node(), "device", "devices"), " per node, ",
                  DeviceTypeText(cluster.device_type()), "\n");
  absl::StrAppend(out, "links: intra-node ", FormatBandwidth(cluster.intra_node_bandwidth()),
                  ", inter-node ", FormatBandwidth(cluster.inter_node_bandwidth()));
  if (cluster.intra_node_latency() > 0 || cluster.inter_node_latency() > 0) {
    absl::StrAppendFormat(out, "; latency intra-node %.3g us, inter-node %.3g us", cluster.intra_node_latency() * 1e6,
                          cluster.inter_node_latency() * 1e6);
  }
  if (cluster.has_inter_node_transfer_latency()) {
    absl::StrAppendFormat(out, "; pipeline transfer between nodes %.3g us",
                          cluster.inter_node_transfer_latency() * 1e6);
  }
  absl::StrAppend(out, "\n");
  const absl::StatusOr<StepTimePrediction> prediction = PredictStepTime(plan);
  absl::StrAppend(out, prediction.ok() ? StepTimeText(plan, *prediction)
                                       : absl::StrCat("predicted step time: - (", prediction.status().message(), ")"),
                  "\n");
}

// The precision pass's mark on a product (compiler/passes/precision_pass.h): "bf16", or
// empty for fp32.
std::string ComputeDtype(const proto::OpDef& def) {
  auto compute = def.attrs().find("compute_dtype");
  return compute == def.attrs().end() || compute->second.s() == "f32" ? "" : compute->second.s();
}

// The op's type, with the epilogue a fused_matmul_bias applies after its bias
// (compiler/passes/epilogue_fusion_pass.h) and a product's compute precision:
// "fused_matmul_bias+relu", "matmul[bf16]".
std::string OpTypeText(const proto::OpDef& def) {
  std::string text = def.type();
  auto relu = def.attrs().find("relu");
  if (def.type() == "fused_matmul_bias" && relu != def.attrs().end() && relu->second.b()) text += "+relu";
  const std::string compute = ComputeDtype(def);
  if (!compute.empty()) absl::StrAppend(&text, "[", compute, "]");
  return text;
}

// bf16 mixed precision, when the plan has it: how many products compute in bf16, the
// tensors by dtype, and the activations kept for backward in bf16 (the narrowing casts of
// compiler/passes/activation_storage_pass.h) with the bytes that saves against keeping
// them in f32 (logical sizes, whole tensors, one micro-batch).
void AppendPrecision(const proto::Plan& plan, std::string* out) {
  int64_t products = 0, bf16 = 0;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() != "matmul" && op.type() != "fused_matmul_bias") continue;
    ++products;
    bf16 += ComputeDtype(op) == "bf16";
  }
  if (bf16 == 0) return;
  std::map<std::string, int64_t> tensors_by_dtype;
  std::map<std::string, const proto::TensorDef*> tensors;
  for (const proto::TensorDef& tensor : plan.job().tensors()) {
    const absl::StatusOr<DType> dtype = FromProto(tensor.dtype());
    ++tensors_by_dtype[dtype.ok() ? std::string(DTypeName(*dtype)) : "?"];
    tensors[tensor.name()] = &tensor;
  }
  int64_t stored = 0, stored_bytes = 0, saved_bytes = 0;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() != "cast" || op.outputs().empty()) continue;
    const auto tensor = tensors.find(op.outputs().begin()->second);
    if (tensor == tensors.end() || tensor->second->dtype() != proto::DTYPE_BF16) continue;
    int64_t elements = 1;
    for (int64_t dim : tensor->second->shape()) elements *= dim;
    ++stored;
    stored_bytes += elements * SizeOf(DType::kBF16);
    saved_bytes += elements * (SizeOf(DType::kF32) - SizeOf(DType::kBF16));
  }
  std::vector<std::string> counts;
  for (const auto& [dtype, count] : tensors_by_dtype) counts.push_back(absl::StrCat(count, " ", dtype));
  absl::StrAppend(out, "\nprecision (--precision=bf16): ", bf16, " of ", products,
                  " matrix products on bf16 operands with fp32 accumulation; tensors: ", absl::StrJoin(counts, ", "),
                  "; activations kept for backward in bf16: ", stored, ", ", stored_bytes, " B (", saved_bytes,
                  " B saved against f32; master weights, gradients and optimizer state stay f32)\n");
}

// AdamW's frozen variance (AdamWOptimizer.variance_frozen_from, which the optimizer pass
// copies onto the adamw ops), when the plan's adamw ops carry it: read from the ops, what
// the kernels run, by step (a plan edited by hand may hold several).
void AppendFrozenVariance(const proto::Plan& plan, std::string* out) {
  int64_t adamw_ops = 0;
  std::map<int64_t, int64_t> ops_by_step;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() != "adamw_update" && op.type() != "adamw_step") continue;
    ++adamw_ops;
    const auto attr = op.attrs().find("variance_frozen_from");
    if (attr != op.attrs().end() && attr->second.i() != 0) ++ops_by_step[attr->second.i()];
  }
  if (ops_by_step.empty()) return;
  std::vector<std::string> steps;
  for (const auto& [step, ops] : ops_by_step) {
    steps.push_back(absl::StrCat("from step ", step, " on ", ops, " of ", adamw_ops, " adamw ops"));
  }
  absl::StrAppend(out, "\noptimizer (--adamw_freeze_variance_from): AdamW's second moment frozen ",
                  absl::StrJoin(steps, ", "), " (1-bit Adam's frozen variance)\n");
}

// "none", "selective", "full" as --recompute spells them (RECOMPUTE_FULL -> full).
std::string RecomputeModeName(proto::RecomputeMode mode) {
  std::string name = proto::RecomputeMode_Name(mode);
  return absl::AsciiStrToLower(absl::StripPrefix(name, "RECOMPUTE_"));
}

// Activation recomputation per block (Job.recompute_blocks), when the plan recomputes.
// What --sbp_search changed (compiler/passes/sbp_search_pass.h).
void AppendSbpSearch(const proto::Plan& plan, std::string* out) {
  if (!plan.has_sbp_search()) return;
  const proto::SbpSearchRecord& search = plan.sbp_search();
  absl::StrAppendFormat(out,
                        "\nsbp search: %d ops moved off the greedy choice in %d rounds; modelled boxing + "
                        "kernel seconds summed over the ops %.4g ms greedy -> %.4g ms searched\n",
                        search.moved_ops(), search.rounds(), search.greedy_seconds() * 1e3,
                        search.searched_seconds() * 1e3);
  if (search.composed_blocks() > 0) {
    absl::StrAppendFormat(out,
                          "  identical blocks searched once: %d class(es), %d block(s) took the moves of their "
                          "class's searched block\n",
                          search.block_classes(), search.composed_blocks());
  }
}

void AppendRecompute(const proto::Plan& plan, std::string* out) {
  const proto::Job& job = plan.job();
  if (job.recompute() == proto::RECOMPUTE_UNSET || job.recompute() == proto::RECOMPUTE_NONE) {
    bool any = false;
    for (const proto::RecomputeBlockDef& block : job.recompute_blocks()) any |= block.recomputed_ops() > 0;
    if (!any) return;
  }
  int64_t kept = 0, without = 0;
  double flops = 0;
  for (const proto::RecomputeBlockDef& block : job.recompute_blocks()) {
    kept += block.activation_bytes_kept();
    without += block.activation_bytes_without();
    flops += block.recompute_flops();
  }
  absl::StrAppendFormat(out,
                        "\nrecompute (--recompute=%s): activations kept for backward %s of %s without "
                        "recomputation, %.4g FLOPs re-run per micro-batch (logical sizes)\n",
                        RecomputeModeName(job.recompute()), FormatBytes(kept), FormatBytes(without), flops);
  std::vector<std::vector<std::string>> rows;
  for (const proto::RecomputeBlockDef& block : job.recompute_blocks()) {
    rows.push_back({block.block(), RecomputeModeName(block.mode()),
                    absl::StrCat("kept ", FormatBytes(block.activation_bytes_kept()), " of ",
                                 FormatBytes(block.activation_bytes_without())),
                    absl::StrCat(block.recomputed_ops(), " ops re-run"),
                    absl::StrFormat("%.4g FLOPs", block.recompute_flops())});
  }
  AppendTable(rows, "  ", out);
}

// Context-parallel attention per block (examples/common/cp_traffic.h), when there is any:
// the scheme and what its collectives move in one micro-batch's forward pass.
void AppendContextParallel(const proto::Plan& plan, std::string* out) {
  const std::vector<examples::CpLayerTraffic> layers = examples::CpAttentionTraffic(plan);
  if (layers.empty()) return;
  absl::StrAppend(out, "\ncontext-parallel attention (forward, per micro-batch)\n");
  std::vector<std::vector<std::string>> rows;
  for (const examples::CpLayerTraffic& layer : layers) {
    std::vector<std::string> row = {layer.block, layer.attention, absl::StrCat(layer.collectives, " collectives"),
                                    absl::StrCat(FormatBytes(layer.bytes_per_device), " per device")};
    // Ring: the tiles each cp rank computes (the causal mask's hidden ones skipped).
    if (!layer.ring_tiles_per_rank.empty()) {
      row.push_back(absl::StrCat(layer.ring_zigzag ? "zig-zag" : "contiguous", " tiles per rank ",
                                 absl::StrJoin(layer.ring_tiles_per_rank, " "), " of ",
                                 layer.ring_tiles_per_rank_total));
    }
    rows.push_back(std::move(row));
  }
  AppendTable(rows, "  ", out);
}

void AppendOps(const proto::Plan& plan, const PlanIndex& index, std::string* out) {
  absl::StrAppend(out, "\nops (", plan.op_sbps_size(), ")\n");
  std::vector<std::vector<std::string>> rows;
  for (const proto::LogicalOpSbp& op : plan.op_sbps()) {
    const proto::OpDef* def = index.FindOp(op.op_name());
    rows.push_back({op.op_name(), def == nullptr ? "?" : OpTypeText(*def), SignatureText(op.signature()),
                    absl::StrCat("on ", PlacementText(op.placement()))});
  }
  // Names and signatures past the caps go on lines of their own (AppendTable).
  AppendTable(rows, "  ", out, {/*name=*/40, /*type=*/0, /*signature=*/80});
}

std::string PlacementChange(const proto::BoxingDef& boxing) {
  const std::string src = PlacementText(boxing.src_placement());
  const std::string dst = PlacementText(boxing.dst_placement());
  return src == dst ? absl::StrCat("on ", src) : absl::StrCat("from ", src, " to ", dst);
}

// "4.00 KiB (4096 B) dense -> 1.02 KiB (1040 B) on the wire per device".
std::string DenseVersusWire(std::optional<int64_t> dense, int64_t wire) {
  return absl::StrCat(dense.has_value() ? FormatBytes(*dense) : std::string("? B"), " dense -> ", FormatBytes(wire),
                      " on the wire");
}

// Where the collective stands in the order of the node-crossing reductions left when
// backward ends ("tail order: 1 of the 11 ...", compiler/passes/reduction_tail_order.h),
// or "" when it keeps backward's order.
std::string TailOrderText(const proto::CollectiveDef* collective) {
  if (collective == nullptr) return "";
  const size_t at = collective->reason().find("tail order: ");
  return at == std::string::npos ? "" : collective->reason().substr(at);
}

void AppendBoxing(const proto::BoxingDef& boxing, int b, const PlanIndex& index, const CompressionFigures& figures,
                  std::string* out) {
  absl::StrAppend(out, "  boxing ", boxing.id(), ": ", TensorText(index, boxing.tensor()), ", ",
                  boxing.producer_op(), " -> ", boxing.consumer_op(), ", ",
                  SbpText(boxing.src_sbp()), " -> ", SbpText(boxing.dst_sbp()), " ",
                  PlacementChange(boxing), "\n");
  for (int s = 0; s < boxing.steps_size(); ++s) {
    const proto::BoxingStepDef& step = boxing.steps(s);
    absl::StrAppend(out, "    step ", s, ": ", StepKindText(step.kind()), " on axis ", step.hierarchy_axis(),
                    ", ", SbpText(step.src_sbp()), " -> ", SbpText(step.dst_sbp()), ", ",
                    FormatBytes(step.bytes_per_device()), " per device, ",
                    step.collective_id() == -1 ? std::string("local")
                                               : absl::StrCat("collective ", step.collective_id()),
                    step.has_bucket_id() ? absl::StrCat(", in gradient bucket ", step.bucket_id()) : std::string(),
                    // Plans written before BoxingStepDef.seconds (and hand-written ones) have none.
                    step.collective_id() != -1 && !step.has_bucket_id() && step.seconds() > 0
                        ? absl::StrFormat(", modelled %.3g ms", step.seconds() * 1e3)
                        : std::string(),
                    "\n");
    if (!IsCompressed(step) && !step.reason().empty()) {
      absl::StrAppend(out, "      decision: ", step.reason(), "\n");
    }
    if (const std::string order = step.has_bucket_id() || step.collective_id() < 0
                                      ? std::string()
                                      : TailOrderText(index.FindCollective(step.collective_id()));
        !order.empty()) {
      absl::StrAppend(out, "      issued: ", order, "\n");
    }
    if (IsCompressed(step)) {
      const std::optional<double> saved = SecondsSaved(step);
      absl::StrAppend(out, "      compressed: ", StepCodecText(step), "; ",
                      DenseVersusWire(figures.DenseStepBytes(b, s), step.bytes_per_device()), " per device",
                      saved.has_value() ? absl::StrFormat("; saves %.6g ms", *saved * 1e3) : std::string(), "\n");
      absl::StrAppend(out, "      decision: ", step.reason().empty() ? "-" : step.reason(), "\n");
    }
  }
  absl::StrAppend(out, "    bytes per iteration: ", FormatBytes(boxing.bytes_per_iter()),
                  figures.DenseBoxingBytes(b) == boxing.bytes_per_iter()
                      ? std::string()
                      : absl::StrCat(" (", FormatBytes(figures.DenseBoxingBytes(b)), " dense)"),
                  "\n");
  if (boxing.compression().kind() != proto::Compression::NONE) {
    absl::StrAppend(out, "    compression: ", CompressionKindText(boxing.compression().kind()),
                    ", block size ", boxing.compression().block_size(), "\n");
  }
  if (boxing.sparsity().kind() != proto::Sparsity::DENSE) {
    const proto::Sparsity& sparsity = boxing.sparsity();
    absl::StrAppend(out, "    sparsity: ", SparsityKindText(sparsity.kind()), ", at most ", sparsity.max_rows(),
                    " rows per device\n");
    if (!sparsity.rows_tensor().empty() && boxing.steps_size() == 1) {
      // Per device: the worst case is the dense step (the runtime falls back to it).
      absl::StrAppend(out, "      rows listed by '", sparsity.rows_tensor(), "': ", sparsity.expected_rows(), " of ",
                      sparsity.rows(), " rows of ", FormatBytes(sparsity.row_bytes()),
                      " expected; per device expected ", FormatBytes(sparsity.expected_bytes_per_device()),
                      ", worst case ", FormatBytes(boxing.steps(0).bytes_per_device()), " (the dense bytes it replaces)\n");
    }
  }
  absl::StrAppend(out, "    reason: ", boxing.reason().empty() ? "-" : boxing.reason(), "\n");
}

// One gradient bucket (Plan.buckets): its collective and its members in packing order,
// which is the order backward produces them.
void AppendBucket(const proto::GradientBucketDef& bucket, const PlanIndex& index, std::string* out) {
  const proto::CollectiveDef* collective = index.FindCollective(bucket.collective_id());
  absl::StrAppend(out, "  bucket ", bucket.id(), ": ", BucketKindText(bucket, index), " on axis ",
                  bucket.hierarchy_axis(), " of ", PlacementText(bucket.placement()), ", ",
                  Plural(bucket.members_size(), "member", "members"), ", ",
                  FormatBytes(bucket.size_bytes()), " per device, ",
                  collective == nullptr ? std::string("no collective") : absl::StrCat("collective ", collective->id()),
                  bucket.compression().kind() != proto::Compression::NONE
                      ? absl::StrCat(", ", CompressionKindText(bucket.compression().kind()))
                      : std::string(),
                  "\n");
  // A node-crossing group's limit (compiler/passes/bucket_cap.h): the link-rate cap or
  // the given --bucket_mb, and why.
  if (bucket.limit_bytes() > 0) {
    absl::StrAppend(out, "    limit ", FormatBytes(bucket.limit_bytes()), ": ", bucket.limit_reason(), "\n");
  }
  if (const std::string order = TailOrderText(collective); !order.empty()) {
    absl::StrAppend(out, "    issued: ", order, "\n");
  }
  std::vector<std::vector<std::string>> rows;
  for (int k = 0; k < bucket.members_size(); ++k) {
    const proto::BucketMemberDef& member = bucket.members(k);
    rows.push_back({absl::StrCat(k, ":"), TensorText(index, member.tensor()), FormatBytes(member.size_bytes()),
                    absl::StrCat("boxing ", member.boxing_id(), " step ", member.boxing_step())});
  }
  AppendTable(rows, "    ", out, {/*index=*/0, /*tensor=*/72});
}

// "0 all_reduce(w_grad), 3 all_gather(h)", or "none"; only stream `stream`'s when >= 0.
std::string CollectiveOrderText(const proto::DevicePlan& device, const PlanIndex& index, int64_t stream = -1) {
  std::vector<std::string> parts;
  for (int64_t id : device.collective_order()) {
    const proto::CollectiveDef* collective = index.FindCollective(id);
    if (stream >= 0 && collective->stream() != stream) continue;
    parts.push_back(absl::StrCat(id, " ", CollectiveKindText(collective->kind()), "(",
                                 collective->tensor(), ")"));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

void AppendDevice(const proto::Plan& plan, const PlanIndex& index, const CompressionFigures& compression, int d,
                  std::string* out) {
  const proto::DevicePlan& device = plan.devices(d);
  const DeviceFigures figures = ComputeDeviceFigures(device);
  std::vector<std::string> kinds;
  for (const auto& [kind, count] : figures.actors_by_kind) {
    kinds.push_back(absl::StrCat(kind, " ", count));
  }
  absl::StrAppend(out, "  ", DeviceTitle(plan, d), "\n");
  absl::StrAppend(out, "    actors: ", figures.num_actors,
                  kinds.empty() ? "" : absl::StrCat(" (", absl::StrJoin(kinds, ", "), ")"), "\n");
  // A view (RegisterDef.alias_of) pins no bytes of its own: the total leaves it out.
  std::vector<std::string> views;
  int64_t view_bytes = 0;
  for (const proto::RegisterDef& reg : device.registers()) {
    if (!reg.has_alias_of()) continue;
    view_bytes += reg.count() * reg.size_bytes();
    const proto::RegisterDef* source = index.FindRegister(d, reg.alias_of());
    views.push_back(absl::StrCat("r", reg.id(), " '", reg.tensor(), "' of r", reg.alias_of(), " '",
                                 source == nullptr ? "?" : source->tensor(), "'"));
  }
  absl::StrAppend(out, "    registers: ", figures.num_registers,
                  views.empty() ? "" : absl::StrCat(" (", Plural(static_cast<int64_t>(views.size()), "view", "views"), ")"),
                  ", ", FormatBytes(figures.register_bytes - view_bytes), "\n");
  if (!views.empty()) absl::StrAppend(out, "    views: ", absl::StrJoin(views, ", "), "\n");
  absl::StrAppend(out, "    memory: peak ", FormatBytes(device.peak_bytes()), ", lower bound ",
                  FormatBytes(device.lower_bound_bytes()), ", ratio ",
                  figures.peak_to_lower_bound.has_value()
                      ? absl::StrFormat("%.2f", *figures.peak_to_lower_bound)
                      : std::string("n/a"),
                  "\n");
  absl::StrAppend(out, "    persistent: ", FormatBytes(figures.persistent_bytes),
                  " (variables and optimizer state)\n");
  absl::StrAppend(out, "    traffic per iteration: sent ",
                  FormatBytes(device.bytes_sent_per_iter()), ", received ",
                  FormatBytes(device.bytes_received_per_iter()), "\n");
  if (compression.DenseBytesSent(d) != device.bytes_sent_per_iter() ||
      compression.DenseBytesReceived(d) != device.bytes_received_per_iter()) {
    absl::StrAppend(out, "    traffic per iteration dense: sent ", FormatBytes(compression.DenseBytesSent(d)),
                    ", received ", FormatBytes(compression.DenseBytesReceived(d)), "\n");
  }
  // One line per communication stream the device uses when it uses several (its
  // streams' threads issue them apart); otherwise the one order.
  std::vector<int64_t> streams;
  for (int64_t id : device.collective_order()) streams.push_back(index.FindCollective(id)->stream());
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  if (streams.size() <= 1) {
    absl::StrAppend(out, "    collective order: ", CollectiveOrderText(device, index), "\n");
    return;
  }
  for (int64_t stream : streams) {
    absl::StrAppend(out, "    collective order, stream ", stream, ": ", CollectiveOrderText(device, index, stream),
                    "\n");
  }
}

// The communication streams (CollectiveDef.stream), when there are several: what each
// carries and how many collectives; each device issues each stream's on a thread of its own.
void AppendStreams(const proto::Plan& plan, std::string* out) {
  std::vector<int64_t> collectives(plan.streams_size(), 0);
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    if (collective.kind() != proto::SEND_RECV) ++collectives[collective.stream()];
  }
  absl::StrAppend(out, "\ncommunication streams (", plan.streams_size(),
                  "), one thread per stream on each device that uses it\n");
  for (const proto::CommunicationStreamDef& stream : plan.streams()) {
    absl::StrAppend(out, "  stream ", stream.id(), ": ", Plural(collectives[stream.id()], "collective", "collectives"),
                    ", ", stream.name(), "\n");
  }
}

// Pipeline stages (pipeline_stages.h): per stage its devices, ops and memory, and the
// 1F1B bubble modelled beside the one a trace measured.
void AppendPipeline(const proto::Plan& plan, const std::vector<PipelineStage>& stages,
                    const std::optional<TraceBubble>& measured, std::string* out) {
  const int64_t s = static_cast<int64_t>(stages.size()), m = MicroBatches(plan);
  const double modelled =
      ModelledBubble(s, m, plan.job().pipeline_schedule(), std::max<int64_t>(1, plan.job().virtual_stages()));
  absl::StrAppend(out, "\npipeline stages (", s, "), ", Plural(m, "micro-batch", "micro-batches"),
                  " per iteration; 1F1B bubble (S - 1) / (M + S - 1) = ", s - 1, " / ", m + s - 1, " = ",
                  absl::StrFormat("%.3f", ModelledBubble(s, m)), "\n");
  if (s > 1) {
    // The schedules side by side (--pp_schedule), the plan's marked.
    const proto::PipelineSchedule chosen = plan.job().pipeline_schedule();
    const int64_t v = std::max<int64_t>(2, plan.job().virtual_stages());
    auto entry = [&](proto::PipelineSchedule schedule, const std::string& name) {
      return absl::StrCat(name, " ", absl::StrFormat("%.3f", ModelledBubble(s, m, schedule, v)),
                          schedule == chosen ? " (this plan)" : "");
    };
    absl::StrAppend(out, "  modelled bubble per schedule: ", entry(proto::PIPELINE_SCHEDULE_1F1B, "1f1b"), ", ",
                    entry(proto::PIPELINE_SCHEDULE_INTERLEAVED, absl::StrCat("interleaved V=", v)), ", ",
                    entry(proto::PIPELINE_SCHEDULE_ZB_H1, "zb"), "\n");
  }
  std::vector<double> idle;
  if (measured.has_value()) {
    const actors::MeasuredBubble& bubble = measured->bubble;
    for (const actors::DeviceIdle& device : bubble.devices) idle.push_back(device.idle_fraction);
    absl::StrAppend(out, "  measured from trace '", measured->trace, "': iterations ", bubble.first_iteration, "..",
                    bubble.last_iteration, " (",
                    bubble.first_iteration == 1 ? std::string("iteration 0 is")
                                                : absl::StrCat("iterations 0..", bubble.first_iteration - 1, " are"),
                    " warm-up), ", absl::StrFormat("%.3f", (bubble.window_end_ns - bubble.window_start_ns) / 1e6),
                    " ms wall time\n");
  }
  for (size_t k = 0; k < stages.size(); ++k) {
    const PipelineStage& stage = stages[k];
    std::vector<std::string> devices;
    for (int d : stage.devices) devices.push_back(DeviceIdText(plan.devices(d).device()));
    absl::StrAppend(out, "  stage ", k, ": ", stage.placement, "\n");
    absl::StrAppend(out, "    devices: ", devices.empty() ? std::string("none") : absl::StrJoin(devices, ", "), "\n");
    absl::StrAppend(out, "    ops: ", stage.num_ops, "\n");
    // The cut as compiled (--stage_blocks, given or chosen by --auto_parallel); a plan cut
    // by block count records none.
    if (plan.recipe().stage_blocks_size() == static_cast<int>(stages.size())) {
      absl::StrAppend(out, "    blocks: ", plan.recipe().stage_blocks(static_cast<int>(k)), " (--stage_blocks=",
                      absl::StrJoin(plan.recipe().stage_blocks(), ","), ")\n");
    }
    absl::StrAppend(out, "    memory per device: peak ", FormatBytes(stage.peak_bytes), ", persistent ",
                    FormatBytes(stage.persistent_bytes), "\n");
    std::string bubble = absl::StrFormat("modelled %.3f", modelled);
    if (measured.has_value()) {
      absl::StrAppend(&bubble, absl::StrFormat(", measured %.3f", StageMeasuredBubble(stage, idle)));
      if (stage.devices.size() > 1) {
        std::vector<std::string> parts;
        for (int d : stage.devices) {
          parts.push_back(absl::StrFormat("%s %.3f", DeviceIdText(plan.devices(d).device()), idle[d]));
        }
        absl::StrAppend(&bubble, " (mean of ", absl::StrJoin(parts, ", "), ")");
      }
    }
    absl::StrAppend(out, "    bubble: ", bubble, "\n");
  }
}

}  // namespace

std::string RenderText(const proto::Plan& plan, const PlanIndex& index, std::optional<int> device,
                       const std::optional<TraceBubble>& measured) {
  std::string out;
  absl::StrAppend(&out, "plan '", plan.job().name(), "' (format version ", plan.format_version(),
                  ")\n");
  if (MicroBatches(plan) > 1) absl::StrAppend(&out, "micro-batches: ", MicroBatches(plan), " per iteration\n");
  AppendCluster(plan, &out);
  AppendOps(plan, index, &out);
  AppendSbpSearch(plan, &out);
  AppendRecompute(plan, &out);
  AppendContextParallel(plan, &out);
  AppendAutoParallelText(plan, &out);
  AppendPrecision(plan, &out);
  AppendFrozenVariance(plan, &out);

  const CompressionFigures figures(plan, index);
  const int64_t total = TotalBoxingBytesPerIteration(plan);
  absl::StrAppend(&out, "\nboxings (", plan.boxings_size(), "), ", FormatBytes(total), " per iteration in all",
                  figures.DenseBoxingBytesInAll() == total
                      ? std::string()
                      : absl::StrCat(" (", FormatBytes(figures.DenseBoxingBytesInAll()), " dense)"),
                  "\n");
  for (int b = 0; b < plan.boxings_size(); ++b) AppendBoxing(plan.boxings(b), b, index, figures, &out);
  if (plan.buckets_size() > 0) {
    absl::StrAppend(&out, "\ngradient buckets (", plan.buckets_size(), "), at most ",
                    FormatBytes(plan.bucket_bytes_limit()), " each; members in the order their values are produced (the loss's reduction for the sink, then "
                    "gradients as backward produces them)\n");
    for (const proto::GradientBucketDef& bucket : plan.buckets()) AppendBucket(bucket, index, &out);
  }
  if (plan.streams_size() > 1) AppendStreams(plan, &out);
  const std::vector<PipelineStage> stages = PipelineStages(plan);
  if (stages.size() > 1 || measured.has_value()) AppendPipeline(plan, stages, measured, &out);

  if (device.has_value()) {
    absl::StrAppend(&out, "\ndevices (1 of ", plan.devices_size(), ")\n");
    AppendDevice(plan, index, figures, *device, &out);
  } else {
    absl::StrAppend(&out, "\ndevices (", plan.devices_size(), ")\n");
    for (int d = 0; d < plan.devices_size(); ++d) AppendDevice(plan, index, figures, d, &out);
  }
  // Long lists (views, collective orders) and cost-model decisions continue on indented
  // lines: no line is longer than kMaxTextLineWidth.
  return WrapLongLines(out);
}

}  // namespace oneflow::cli
