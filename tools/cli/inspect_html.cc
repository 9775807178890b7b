// The HTML plan viewer: the data blob the page renders from, and the page around it.
//
// The blob is compact JSON written here rather than the --format=json document: that
// one is indented and repeats each device's collective order and views in full, 46 MB
// for a 48-block gpt on 64 devices. Here names are interned in one string table, the
// actors and registers of a device are flat arrays of numbers, and devices with the same
// arrays (every replica of an even data/tensor-parallel layout) share one copy, so that
// plan's page is a few MB. Register lifetimes are computed here, as memory planning
// computes them (compiler/passes/memory_planning_pass.cc), so the page's live-bytes
// curve peaks at the plan's lower bound.
#include "tools/cli/inspect_html.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/memory_layout.h"
#include "oneflow_core/status.h"
#include "tools/cli/inspect_compression.h"
#include "tools/cli/inspect_render.h"
#include "tools/cli/json_writer.h"
#include "tools/cli/pipeline_stages.h"
#include "plan/bucket_placement.h"
#include "plan/plan_check.h"
#include "plan/plan_format.h"

namespace oneflow::cli {
namespace {

// Strings by first use; the page looks them up by index.
class StringTable {
 public:
  int Id(const std::string& text) {
    auto [it, inserted] = ids_.emplace(text, static_cast<int>(strings_.size()));
    if (inserted) strings_.push_back(text);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  absl::flat_hash_map<std::string, int> ids_;
  std::vector<std::string> strings_;
};

// Compact JSON appended to a string; the caller places commas.
class Compact {
 public:
  Compact& Raw(absl::string_view text) {
    absl::StrAppend(&out_, text);
    return *this;
  }
  Compact& Key(absl::string_view key) {
    if (!out_.empty() && out_.back() != '{') out_ += ',';
    absl::StrAppend(&out_, JsonQuote(key), ":");
    return *this;
  }
  Compact& Str(absl::string_view text) { return Raw(JsonQuote(text)); }
  Compact& Int(int64_t value) { return Raw(absl::StrCat(value)); }
  Compact& Num(double value) {
    if (!(value == value) || value > 1e308 || value < -1e308) return Raw("null");
    return Raw(absl::StrCat(value));
  }
  Compact& Ints(const std::vector<int64_t>& values) {
    out_ += '[';
    absl::StrAppend(&out_, absl::StrJoin(values, ","));
    out_ += ']';
    return *this;
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

// Enum spellings the page indexes by the proto number (0..max).
template <typename Enum, typename F>
std::string EnumNames(int max, F text) {
  std::vector<std::string> names;
  for (int i = 0; i <= max; ++i) names.push_back(JsonQuote(text(static_cast<Enum>(i))));
  return absl::StrCat("[", absl::StrJoin(names, ","), "]");
}

std::string ClusterText(const proto::Cluster& cluster) {
  return absl::StrCat(cluster.num_nodes(), cluster.num_nodes() == 1 ? " node" : " nodes", " x ",
                      cluster.devices_per_node(), " devices per node, ", DeviceTypeText(cluster.device_type()),
                      "; links: intra-node ", FormatBandwidth(cluster.intra_node_bandwidth()), ", inter-node ",
                      FormatBandwidth(cluster.inter_node_bandwidth()));
}

std::string SparsityJson(const proto::Sparsity& sparsity, int64_t worst_bytes) {
  if (sparsity.kind() == proto::Sparsity::DENSE) return "null";
  Compact out;
  out.Raw("{");
  out.Key("kind").Str(SparsityKindText(sparsity.kind()));
  out.Key("rows_tensor").Str(sparsity.rows_tensor());
  out.Key("max_rows").Int(sparsity.max_rows());
  out.Key("rows").Int(sparsity.rows());
  out.Key("row_bytes").Int(sparsity.row_bytes());
  out.Key("expected_rows").Int(sparsity.expected_rows());
  out.Key("expected_bytes").Int(sparsity.expected_bytes_per_device());
  out.Key("worst_bytes").Int(worst_bytes);
  out.Raw("}");
  return out.str();
}

void WriteBoxing(const proto::Plan& plan, const PlanIndex& index, const CompressionFigures& figures, int b,
                 StringTable& strings, Compact& out) {
  const proto::BoxingDef& boxing = plan.boxings(b);
  const proto::TensorDef* tensor = index.FindTensor(boxing.tensor());
  out.Raw("{");
  out.Key("id").Int(boxing.id());
  out.Key("tensor").Int(strings.Id(boxing.tensor()));
  out.Key("shape").Str(tensor == nullptr ? "" : ShapeAndTypeText(tensor->shape(), tensor->dtype()));
  out.Key("producer").Int(strings.Id(boxing.producer_op()));
  out.Key("consumer").Int(strings.Id(boxing.consumer_op()));
  out.Key("src_sbp").Str(SbpText(boxing.src_sbp()));
  out.Key("dst_sbp").Str(SbpText(boxing.dst_sbp()));
  out.Key("src_placement").Str(PlacementText(boxing.src_placement()));
  out.Key("dst_placement").Str(PlacementText(boxing.dst_placement()));
  out.Key("bytes").Int(boxing.bytes_per_iter());
  out.Key("dense_bytes").Int(figures.DenseBoxingBytes(b));
  out.Key("compression").Str(boxing.compression().kind() == proto::Compression::NONE
                                 ? ""
                                 : CompressionKindText(boxing.compression().kind()));
  out.Key("sparsity")
      .Raw(SparsityJson(boxing.sparsity(), boxing.steps_size() == 1 ? boxing.steps(0).bytes_per_device() : 0));
  out.Key("reason").Str(boxing.reason());
  out.Key("steps").Raw("[");
  for (int s = 0; s < boxing.steps_size(); ++s) {
    const proto::BoxingStepDef& step = boxing.steps(s);
    if (s > 0) out.Raw(",");
    out.Raw("{");
    out.Key("kind").Str(StepKindText(step.kind()));
    out.Key("axis").Int(step.hierarchy_axis());
    out.Key("src_sbp").Str(SbpText(step.src_sbp()));
    out.Key("dst_sbp").Str(SbpText(step.dst_sbp()));
    out.Key("bytes").Int(step.bytes_per_device());
    out.Key("collective").Int(step.collective_id());
    out.Key("bucket").Int(step.has_bucket_id() ? step.bucket_id() : -1);
    const std::optional<int64_t> dense = figures.DenseStepBytes(b, s);
    out.Key("dense_bytes").Int(dense.value_or(step.bytes_per_device()));
    out.Key("codec").Str(IsCompressed(step) ? StepCodecText(step) : "");
    const std::optional<double> saved = SecondsSaved(step);
    out.Key("seconds_saved");
    saved.has_value() ? out.Num(*saved) : out.Raw("null");
    out.Key("decision").Str(step.reason());
    out.Key("sparsity").Raw(SparsityJson(step.sparsity(), step.bytes_per_device()));
    out.Raw("}");
  }
  out.Raw("]}");
}

// Positions (indices in the device's actor order) of the device's actors by id.
absl::flat_hash_map<int64_t, int64_t> Positions(const proto::DevicePlan& device) {
  absl::flat_hash_map<int64_t, int64_t> positions;
  for (int i = 0; i < device.actors_size(); ++i) positions.emplace(device.actors(i).id(), i);
  return positions;
}

// The inputs memory planning placed in their gradient bucket (plan/bucket_placement.h: a
// verified plan has them only at their members' views): input register index -> bucket
// register index.
absl::flat_hash_map<int, int> InputsPlacedInBuckets(const proto::DevicePlan& device) {
  absl::flat_hash_map<int, int> placed;
  for (const InputInBucket& in_bucket : InputsInBuckets(device)) {
    placed[static_cast<int>(in_bucket.input_register)] = static_cast<int>(in_bucket.bucket_register);
  }
  return placed;
}

// Register lifetimes as memory planning sees them: from the producer's position to the
// last position that reads the bytes; a register that owns bytes is read by the readers
// of every view of it too, and a bucket register is live from the first producer of an
// input placed in it. A persistent register lives the whole iteration. An actor of
// another device (none in a plan this build writes) has no position and is left out.
std::vector<std::pair<int64_t, int64_t>> Lifetimes(const proto::DevicePlan& device,
                                                   const absl::flat_hash_map<int64_t, int64_t>& positions,
                                                   const absl::flat_hash_map<int, int>& placed) {
  absl::flat_hash_map<int64_t, int> by_id;
  for (int r = 0; r < device.registers_size(); ++r) by_id.emplace(device.registers(r).id(), r);
  auto owner_of = [&](int r) {
    for (int hops = 0; hops <= device.registers_size() && device.registers(r).has_alias_of(); ++hops) {
      auto it = by_id.find(device.registers(r).alias_of());
      if (it == by_id.end()) break;
      r = it->second;
    }
    return r;
  };
  const int64_t end = std::max<int64_t>(0, device.actors_size() - 1);
  std::vector<std::pair<int64_t, int64_t>> lifetimes(device.registers_size());
  for (int r = 0; r < device.registers_size(); ++r) {
    const proto::RegisterDef& reg = device.registers(r);
    auto producer = positions.find(reg.producer_actor());
    const int64_t first = producer == positions.end() ? 0 : producer->second;
    lifetimes[r] = {first, first};
  }
  for (int r = 0; r < device.registers_size(); ++r) {
    const proto::RegisterDef& reg = device.registers(r);
    const int owner = owner_of(r);
    for (int64_t consumer : reg.consumer_actors()) {
      auto it = positions.find(consumer);
      if (it == positions.end()) continue;
      lifetimes[r].second = std::max(lifetimes[r].second, it->second);
      lifetimes[owner].second = std::max(lifetimes[owner].second, it->second);
    }
  }
  for (const auto& [input, bucket] : placed) {
    lifetimes[bucket].first = std::min(lifetimes[bucket].first, lifetimes[input].first);
  }
  for (int r = 0; r < device.registers_size(); ++r) {
    if (device.registers(r).persistent()) lifetimes[r] = {0, end};
  }
  return lifetimes;
}

// Actors: per actor [name, kind, thread, boxing id, boxing step, bucket id] (-1 unset).
std::string ActorsArray(const proto::DevicePlan& device, StringTable& strings) {
  std::vector<int64_t> flat;
  flat.reserve(device.actors_size() * 6);
  for (const proto::ActorDef& actor : device.actors()) {
    const bool boxing = actor.kind() == proto::ACTOR_BOXING && !actor.has_bucket_id();
    flat.push_back(strings.Id(actor.name()));
    flat.push_back(actor.kind());
    flat.push_back(actor.thread());
    flat.push_back(boxing ? actor.boxing_id() : -1);
    flat.push_back(boxing ? actor.boxing_step() : -1);
    flat.push_back(actor.has_bucket_id() ? actor.bucket_id() : -1);
  }
  Compact out;
  out.Ints(flat);
  return out.str();
}

// Registers: per register [id, tensor, first, last, size_bytes, count, memory_block,
// offset, flags (1 persistent, 2 view, 4 per-iteration, 8 placed in its bucket), alias_of
// or the bucket register's id (-1 unset)].
std::string RegistersArray(const proto::DevicePlan& device, StringTable& strings) {
  const absl::flat_hash_map<int, int> placed = InputsPlacedInBuckets(device);
  const std::vector<std::pair<int64_t, int64_t>> lifetimes = Lifetimes(device, Positions(device), placed);
  std::vector<int64_t> flat;
  flat.reserve(device.registers_size() * 10);
  for (int r = 0; r < device.registers_size(); ++r) {
    const proto::RegisterDef& reg = device.registers(r);
    flat.push_back(reg.id());
    flat.push_back(strings.Id(reg.tensor()));
    flat.push_back(lifetimes[r].first);
    flat.push_back(lifetimes[r].second);
    flat.push_back(reg.size_bytes());
    flat.push_back(reg.count());
    flat.push_back(reg.memory_block());
    flat.push_back(reg.offset());
    const auto bucket = placed.find(r);
    const bool in_bucket = bucket != placed.end();
    flat.push_back((reg.persistent() ? 1 : 0) | (reg.has_alias_of() ? 2 : 0) | (reg.per_iteration() ? 4 : 0) |
                   (in_bucket ? 8 : 0));
    flat.push_back(reg.has_alias_of() ? reg.alias_of() : in_bucket ? device.registers(bucket->second).id() : -1);
  }
  Compact out;
  out.Ints(flat);
  return out.str();
}

// '<', '>' and '&' occur only inside JSON strings here, so escaping them keeps the text
// the same JSON while no "</script>" or "<!--" can end or confuse the script element.
std::string SafeInScript(const std::string& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (char c : json) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string PlanViewerData(const proto::Plan& plan, const PlanIndex& index) {
  StringTable strings;
  const CompressionFigures figures(plan, index);
  Compact out;
  out.Raw("{");
  out.Key("schema").Int(1);
  out.Key("job").Str(plan.job().name());
  out.Key("format_version").Int(plan.format_version());
  out.Key("cluster").Str(ClusterText(plan.cluster()));
  out.Key("micro_batches").Int(MicroBatches(plan));
  out.Key("register_count").Int(plan.register_count());
  out.Key("alignment").Int(kRegisterAlignment);
  out.Key("boxing_bytes").Int(TotalBoxingBytesPerIteration(plan));
  out.Key("boxing_dense_bytes").Int(figures.DenseBoxingBytesInAll());
  out.Key("actor_kinds").Raw(EnumNames<proto::ActorKind>(proto::ActorKind_MAX, ActorKindText));
  out.Key("thread_kinds").Raw(EnumNames<proto::ThreadKind>(proto::ThreadKind_MAX, ThreadKindText));

  // Ops in op_sbps order: [name, type (-1 unknown), placement, signature, inputs, outputs],
  // inputs and outputs the tensor names of the job's op, sorted by argument name.
  out.Key("ops").Raw("[");
  for (int i = 0; i < plan.op_sbps_size(); ++i) {
    const proto::LogicalOpSbp& op = plan.op_sbps(i);
    const proto::OpDef* def = index.FindOp(op.op_name());
    std::vector<int64_t> inputs, outputs;
    if (def != nullptr) {
      for (const auto& [arg, tensor] : SortedStrings(def->inputs())) inputs.push_back(strings.Id(tensor));
      for (const auto& [arg, tensor] : SortedStrings(def->outputs())) outputs.push_back(strings.Id(tensor));
    }
    if (i > 0) out.Raw(",");
    out.Raw("[").Int(strings.Id(op.op_name())).Raw(",").Int(def == nullptr ? -1 : strings.Id(def->type()));
    out.Raw(",").Int(strings.Id(PlacementText(op.placement())));
    out.Raw(",").Str(SignatureText(op.signature())).Raw(",");
    out.Ints(inputs).Raw(",").Ints(outputs).Raw("]");
  }
  out.Raw("]");
  std::vector<int64_t> variables, data;
  for (const proto::VariableDef& variable : plan.job().variables()) variables.push_back(strings.Id(variable.tensor()));
  for (const proto::DataSourceDef& source : plan.job().data_sources()) {
    for (const std::string& tensor : source.outputs()) data.push_back(strings.Id(tensor));
  }
  out.Key("variables").Ints(variables);
  out.Key("data_outputs").Ints(data);

  out.Key("boxings").Raw("[");
  for (int b = 0; b < plan.boxings_size(); ++b) {
    if (b > 0) out.Raw(",");
    WriteBoxing(plan, index, figures, b, strings, out);
  }
  out.Raw("]");

  out.Key("buckets").Raw("[");
  for (int k = 0; k < plan.buckets_size(); ++k) {
    const proto::GradientBucketDef& bucket = plan.buckets(k);
    if (k > 0) out.Raw(",");
    out.Raw("{");
    out.Key("id").Int(bucket.id());
    out.Key("placement").Str(PlacementText(bucket.placement()));
    out.Key("bytes").Int(bucket.size_bytes());
    out.Key("collective").Int(bucket.collective_id());
    out.Key("members").Int(bucket.members_size());
    out.Raw("}");
  }
  out.Raw("]");

  // Collectives: groups as lists of device indices, and per collective
  // [id, kind, group, order, tensor, bytes_per_device] flat, in plan order.
  std::map<std::pair<int64_t, int64_t>, int> device_of;
  for (int d = 0; d < plan.devices_size(); ++d) {
    device_of[{plan.devices(d).device().node(), plan.devices(d).device().device()}] = d;
  }
  std::map<std::vector<int64_t>, int> groups;
  std::vector<const std::vector<int64_t>*> group_list;
  std::vector<int64_t> collectives;
  StringTable kinds;
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    std::vector<int64_t> members;
    for (const proto::DeviceId& id : collective.group()) {
      auto it = device_of.find({id.node(), id.device()});
      members.push_back(it == device_of.end() ? -1 : it->second);
    }
    auto [it, inserted] = groups.emplace(members, static_cast<int>(groups.size()));
    if (inserted) group_list.push_back(&it->first);
    collectives.insert(collectives.end(), {collective.id(), strings.Id(CollectiveKindText(collective.kind())),
                                           it->second, collective.order(), strings.Id(collective.tensor()),
                                           collective.bytes_per_device()});
  }
  out.Key("groups").Raw("[");
  for (size_t g = 0; g < group_list.size(); ++g) {
    if (g > 0) out.Raw(",");
    out.Ints(*group_list[g]);
  }
  out.Raw("]");
  out.Key("collectives").Ints(collectives);

  // Devices; their actor and register arrays are in `tables`, shared when equal.
  std::map<std::string, int> table_ids;
  std::vector<const std::string*> tables;
  auto table = [&](std::string text) {
    auto [it, inserted] = table_ids.emplace(std::move(text), static_cast<int>(tables.size()));
    if (inserted) tables.push_back(&it->first);
    return it->second;
  };
  out.Key("devices").Raw("[");
  for (int d = 0; d < plan.devices_size(); ++d) {
    const proto::DevicePlan& device = plan.devices(d);
    const DeviceFigures device_figures = ComputeDeviceFigures(device);
    if (d > 0) out.Raw(",");
    out.Raw("{");
    out.Key("id").Str(DeviceIdText(device.device()));
    out.Key("stage").Int(device.has_pipeline_stage() ? device.pipeline_stage() : -1);
    out.Key("register_count").Int(device.register_count() > 0 ? device.register_count() : plan.register_count());
    out.Key("num_actors").Int(device_figures.num_actors);
    out.Key("num_registers").Int(device_figures.num_registers);
    out.Key("actors_by_kind").Raw("[");
    for (size_t k = 0; k < device_figures.actors_by_kind.size(); ++k) {
      if (k > 0) out.Raw(",");
      out.Raw("[").Str(device_figures.actors_by_kind[k].first).Raw(",").Int(device_figures.actors_by_kind[k].second);
      out.Raw("]");
    }
    out.Raw("]");
    int64_t view_bytes = 0;
    for (const proto::RegisterDef& reg : device.registers()) {
      if (reg.has_alias_of()) view_bytes += reg.count() * reg.size_bytes();
    }
    out.Key("register_bytes").Int(device_figures.register_bytes - view_bytes);
    out.Key("persistent_bytes").Int(device_figures.persistent_bytes);
    out.Key("peak_bytes").Int(device.peak_bytes());
    out.Key("lower_bound_bytes").Int(device.lower_bound_bytes());
    out.Key("bytes_sent").Int(device.bytes_sent_per_iter());
    out.Key("bytes_received").Int(device.bytes_received_per_iter());
    out.Key("dense_bytes_sent").Int(figures.DenseBytesSent(d));
    out.Key("dense_bytes_received").Int(figures.DenseBytesReceived(d));
    out.Key("collective_order").Ints({device.collective_order().begin(), device.collective_order().end()});
    std::vector<int64_t> blocks;
    for (const proto::MemoryBlock& block : device.memory_blocks()) {
      blocks.insert(blocks.end(), {block.id(), block.size_bytes(), block.persistent() ? 1 : 0,
                                   block.slot_stride_bytes()});
    }
    out.Key("memory_blocks").Ints(blocks);
    // Actor ids are consecutive in a plan this build writes: the first and the stride
    // say them all; otherwise every id is listed.
    bool consecutive = true;
    for (int i = 0; i < device.actors_size(); ++i) {
      consecutive = consecutive && device.actors(i).id() == device.actors(0).id() + i;
    }
    out.Key("first_actor_id").Int(device.actors_size() > 0 && consecutive ? device.actors(0).id() : -1);
    std::vector<int64_t> ids;
    if (!consecutive) {
      for (const proto::ActorDef& actor : device.actors()) ids.push_back(actor.id());
    }
    out.Key("actor_ids").Ints(ids);
    out.Key("actors").Int(table(ActorsArray(device, strings)));
    out.Key("registers").Int(table(RegistersArray(device, strings)));
    out.Raw("}");
  }
  out.Raw("]");
  out.Key("tables").Raw("[");
  for (size_t t = 0; t < tables.size(); ++t) {
    if (t > 0) out.Raw(",");
    out.Raw(*tables[t]);
  }
  out.Raw("]");
  out.Key("strings").Raw("[");
  for (size_t s = 0; s < strings.strings().size(); ++s) {
    if (s > 0) out.Raw(",");
    out.Str(strings.strings()[s]);
  }
  out.Raw("]}");
  return SafeInScript(out.str());
}

std::string RenderHtml(const proto::Plan& plan, const PlanIndex& index) {
  return absl::StrCat(PlanViewerPageHead(), PlanViewerData(plan, index), PlanViewerPageTail());
}

absl::StatusOr<std::string> InspectPlanHtml(const proto::Plan& plan) {
  OF_RETURN_IF_ERROR(CheckPlanForInspection(plan));
  const PlanIndex index(plan);
  return RenderHtml(plan, index);
}

}  // namespace oneflow::cli
