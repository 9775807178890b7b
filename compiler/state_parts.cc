#include "compiler/state_parts.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace oneflow {
namespace {

bool NoPlanChecks(const PlanChecks& checks) { return !checks.collective_order && !checks.memory; }

constexpr absl::string_view kNames[kStatePartCount] = {
    "job",
    "graph",
    "gradients",
    "boxing_cache",
    "boxings",
    "buckets",
    "devices",
    "boxing_step_actors",
    "device_register_count",
    "pipeline_schedule",
    "boxing_step_collective",
    "bucket_collective",
    "plan",
};

// FNV-1a over 64-bit words and bytes: order-sensitive, cheap enough to run over every
// node of a 64-device program after each pass.
class Hasher {
 public:
  void Add(uint64_t value) {
    hash_ ^= value;
    hash_ *= 0x100000001b3ULL;
    hash_ ^= hash_ >> 29;
  }
  void Add(int64_t value) { Add(static_cast<uint64_t>(value)); }
  void Add(int32_t value) { Add(static_cast<uint64_t>(static_cast<int64_t>(value))); }
  void Add(bool value) { Add(uint64_t{value ? 1u : 0u}); }
  void Add(double value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    Add(bits);
  }
  void Add(absl::string_view text) {
    Add(static_cast<uint64_t>(text.size()));
    for (unsigned char c : text) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ULL;
    }
  }
  template <typename T>
  void AddInts(const std::vector<T>& values) {
    Add(static_cast<uint64_t>(values.size()));
    for (const T& value : values) Add(static_cast<int64_t>(value));
  }
  void Add(const Shape& shape) {
    Add(static_cast<uint64_t>(shape.rank()));
    for (int64_t d = 0; d < shape.rank(); ++d) Add(shape.dim(d));
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

void AddGraph(const LogicalGraph& graph, Hasher* h) {
  h->Add(static_cast<uint64_t>(graph.placements.size()));
  for (const Placement& placement : graph.placements) h->Add(placement.ToString());
  h->Add(static_cast<uint64_t>(graph.tensors.size()));
  for (const LogicalTensor& t : graph.tensors) {
    h->Add(t.name);
    h->Add(static_cast<int64_t>(t.kind));
    h->Add(t.type.ToString());
    h->Add(t.placement);
    h->Add(t.hint.has_value() ? t.hint->ToString() : "-");
    h->Add(t.compression_hint.has_value() ? static_cast<int64_t>(*t.compression_hint) : -1);
    h->Add(t.is_gradient);
    h->Add(t.gradient_of);
    h->Add(t.sparse_rows);
    h->Add(t.sbp_chosen);
    if (t.sbp_chosen) h->Add(t.sbp.ToString());
    h->Add(t.producer);
    h->Add(t.producer_output);
    h->AddInts(t.consumers);
  }
  h->Add(static_cast<uint64_t>(graph.ops.size()));
  for (const LogicalOp& op : graph.ops) {
    h->Add(op.name);
    h->Add(op.type);
    h->Add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(op.definition)));
    h->Add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(op.def)));
    h->AddInts(op.inputs);
    h->AddInts(op.outputs);
    h->Add(op.placement);
    for (const std::vector<NdSbp>* sbps : {&op.input_sbps, &op.output_sbps}) {
      h->Add(static_cast<uint64_t>(sbps->size()));
      for (const NdSbp& sbp : *sbps) h->Add(sbp.ToString());
    }
    h->AddInts(op.input_boxings);
  }
  h->Add(static_cast<uint64_t>(graph.tensor_index.size()));
  h->Add(graph.loss);
  h->Add(graph.sbp_search.ran);
  h->Add(graph.sbp_search.greedy_seconds);
  h->Add(graph.sbp_search.searched_seconds);
  h->Add(graph.sbp_search.moved_ops);
  h->Add(graph.sbp_search.rounds);
}

void AddBoxings(const std::vector<Boxing>& boxings, Hasher* h) {
  h->Add(static_cast<uint64_t>(boxings.size()));
  for (const Boxing& b : boxings) {
    h->Add(b.id);
    h->Add(b.tensor);
    h->Add(b.dst_sbp.ToString());
    h->Add(b.dst_placement);
    h->Add(static_cast<uint64_t>(b.plan.steps.size()));
    for (const BoxingStep& step : b.plan.steps) {
      h->Add(BoxingStepToString(step));
      h->Add(step.seconds);
      h->Add(step.dense_bytes_per_device);
      h->Add(step.dense_seconds);
      h->Add(step.reason);
      h->Add(step.compression_reason);
    }
    h->Add(b.plan.bytes_per_device);
    h->Add(b.plan.seconds);
    h->Add(b.first_consumer);
    h->Add(static_cast<int64_t>(b.role));
    h->Add(b.reason);
    h->Add(b.sparse.has_value());
    if (b.sparse.has_value()) {
      const SparseBoxing& s = *b.sparse;
      for (int64_t v : {static_cast<int64_t>(s.kind), s.rows_tensor, s.rows_reader_op, s.rows_reader_input,
                        s.rows, s.row_bytes, s.max_rows, s.expected_rows, s.expected_bytes_per_device}) {
        h->Add(v);
      }
    }
  }
}

void AddBuckets(const Compilation& c, Hasher* h) {
  h->Add(static_cast<uint64_t>(c.buckets.size()));
  for (const GradientBucket& bucket : c.buckets) {
    h->Add(bucket.id);
    h->Add(static_cast<uint64_t>(bucket.members.size()));
    for (const auto& [boxing, step] : bucket.members) {
      h->Add(boxing);
      h->Add(step);
    }
    h->Add(bucket.placement);
    h->Add(bucket.hierarchy_axis);
    h->Add(bucket.after_op);
    h->Add(bucket.level);
    h->Add(bucket.size_bytes);
    h->AddInts(bucket.member_bytes);
    h->Add(static_cast<int64_t>(bucket.kind));
    h->Add(bucket.chunk_bytes);
    h->AddInts(bucket.part_offsets);
  }
  h->Add(static_cast<uint64_t>(c.boxing_step_bucket.size()));
  for (const std::vector<int64_t>& steps : c.boxing_step_bucket) h->AddInts(steps);
}

void AddDevices(const std::vector<DeviceProgram>& devices, Hasher* h) {
  h->Add(static_cast<uint64_t>(devices.size()));
  for (const DeviceProgram& program : devices) {
    h->Add(program.device.node);
    h->Add(program.device.device);
    h->Add(static_cast<uint64_t>(program.nodes.size()));
    for (const PhysicalNode& node : program.nodes) {
      h->Add(static_cast<int64_t>(node.kind));
      h->Add(node.index);
      h->Add(node.step);
      h->Add(static_cast<uint64_t>(node.output_shapes.size()));
      for (const Shape& shape : node.output_shapes) h->Add(shape);
    }
  }
}

void AddProto(const google::protobuf::Message& message, Hasher* h) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  h->Add(absl::string_view(bytes));
}

}  // namespace

absl::string_view StatePartName(StatePart part) { return kNames[static_cast<int>(part)]; }

std::string StateParts::ToString() const {
  std::vector<absl::string_view> names;
  for (int i = 0; i < kStatePartCount; ++i) {
    if (Contains(static_cast<StatePart>(i))) names.push_back(kNames[i]);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

bool PartIsEmpty(const Compilation& c, StatePart part) {
  switch (part) {
    case StatePart::kJob:
      return c.job.ByteSizeLong() == 0;
    case StatePart::kGraph:
      return c.graph.placements.empty() && c.graph.tensors.empty() && c.graph.ops.empty() &&
             c.graph.tensor_index.empty() && c.graph.loss == -1;
    case StatePart::kGradients:
      return c.gradients.empty();
    case StatePart::kBoxingCache:
      return c.boxing_cache == nullptr;
    case StatePart::kBoxings:
      return c.boxings.empty();
    case StatePart::kBuckets:
      return c.buckets.empty() && c.boxing_step_bucket.empty();
    case StatePart::kDevices:
      return c.devices.empty();
    case StatePart::kBoxingStepActors:
      return c.boxing_step_actors.empty();
    case StatePart::kDeviceRegisterCount:
      return c.device_register_count.empty();
    case StatePart::kPipelineSchedule:
      return c.pipeline_schedule.device_stage.empty() && c.pipeline_schedule.op_act.empty() &&
             c.pipeline_schedule.schedule == proto::PIPELINE_SCHEDULE_1F1B && c.pipeline_schedule.virtual_stages == 1;
    case StatePart::kBoxingStepCollective:
      return c.boxing_step_collective.empty();
    case StatePart::kBucketCollective:
      return c.bucket_collective.empty();
    case StatePart::kPlan:
      return c.plan.ByteSizeLong() == 0 && NoPlanChecks(c.verified_plan_checks);
  }
  return true;
}

uint64_t PartFingerprint(const Compilation& c, StatePart part) {
  Hasher h;
  h.Add(static_cast<int64_t>(part));
  switch (part) {
    case StatePart::kJob:
      AddProto(c.job, &h);
      break;
    case StatePart::kGraph:
      AddGraph(c.graph, &h);
      break;
    case StatePart::kGradients:
      h.Add(static_cast<uint64_t>(c.gradients.size()));
      for (const auto& [variable, gradient] : c.gradients) {
        h.Add(variable);
        h.Add(gradient);
      }
      break;
    case StatePart::kBoxingCache:
      // A cache: memoizing lookups in it changes nothing it means; only replacing it does.
      h.Add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(c.boxing_cache.get())));
      break;
    case StatePart::kBoxings:
      AddBoxings(c.boxings, &h);
      break;
    case StatePart::kBuckets:
      AddBuckets(c, &h);
      break;
    case StatePart::kDevices:
      AddDevices(c.devices, &h);
      break;
    case StatePart::kBoxingStepActors:
      h.Add(static_cast<uint64_t>(c.boxing_step_actors.size()));
      for (const auto& steps : c.boxing_step_actors) {
        h.Add(static_cast<uint64_t>(steps.size()));
        for (const auto& actors : steps) {
          h.Add(static_cast<uint64_t>(actors.size()));
          for (const auto& [device, actor] : actors) {
            h.Add(device);
            h.Add(actor);
          }
        }
      }
      break;
    case StatePart::kDeviceRegisterCount:
      h.AddInts(c.device_register_count);
      break;
    case StatePart::kPipelineSchedule: {
      h.AddInts(c.pipeline_schedule.device_stage);
      std::vector<int64_t> acts(c.pipeline_schedule.op_act.begin(), c.pipeline_schedule.op_act.end());
      acts.push_back(c.pipeline_schedule.schedule);
      acts.push_back(c.pipeline_schedule.virtual_stages);
      h.AddInts(acts);
      break;
    }
    case StatePart::kBoxingStepCollective:
      h.Add(static_cast<uint64_t>(c.boxing_step_collective.size()));
      for (const std::vector<int64_t>& steps : c.boxing_step_collective) h.AddInts(steps);
      break;
    case StatePart::kBucketCollective:
      h.AddInts(c.bucket_collective);
      break;
    case StatePart::kPlan:
      AddProto(c.plan, &h);
      h.Add(c.verified_plan_checks.collective_order);
      h.Add(c.verified_plan_checks.memory);
      break;
  }
  return h.value();
}

namespace {

// Swaps `part` between two Compilations.
void SwapPart(Compilation* a, Compilation* b, StatePart part) {
  switch (part) {
    case StatePart::kJob:
      a->job.Swap(&b->job);
      break;
    case StatePart::kGraph:
      std::swap(a->graph, b->graph);
      break;
    case StatePart::kGradients:
      std::swap(a->gradients, b->gradients);
      break;
    case StatePart::kBoxingCache:
      std::swap(a->boxing_cache, b->boxing_cache);
      break;
    case StatePart::kBoxings:
      std::swap(a->boxings, b->boxings);
      break;
    case StatePart::kBuckets:
      std::swap(a->buckets, b->buckets);
      std::swap(a->boxing_step_bucket, b->boxing_step_bucket);
      break;
    case StatePart::kDevices:
      std::swap(a->devices, b->devices);
      break;
    case StatePart::kBoxingStepActors:
      std::swap(a->boxing_step_actors, b->boxing_step_actors);
      break;
    case StatePart::kDeviceRegisterCount:
      std::swap(a->device_register_count, b->device_register_count);
      break;
    case StatePart::kPipelineSchedule:
      std::swap(a->pipeline_schedule, b->pipeline_schedule);
      break;
    case StatePart::kBoxingStepCollective:
      std::swap(a->boxing_step_collective, b->boxing_step_collective);
      break;
    case StatePart::kBucketCollective:
      std::swap(a->bucket_collective, b->bucket_collective);
      break;
    case StatePart::kPlan:
      a->plan.Swap(&b->plan);
      std::swap(a->verified_plan_checks, b->verified_plan_checks);
      break;
  }
}

}  // namespace

void StashedParts::Take(Compilation* compilation, StateParts parts) {
  parts_ = parts;
  for (int i = 0; i < kStatePartCount; ++i) {
    const StatePart part = static_cast<StatePart>(i);
    if (parts_.Contains(part)) SwapPart(compilation, &held_, part);
  }
}

bool StashedParts::WrittenWhileStashed(const Compilation& compilation, StatePart* part) const {
  for (int i = 0; i < kStatePartCount; ++i) {
    const StatePart p = static_cast<StatePart>(i);
    if (parts_.Contains(p) && !PartIsEmpty(compilation, p)) {
      *part = p;
      return true;
    }
  }
  return false;
}

void StashedParts::Restore(Compilation* compilation) {
  for (int i = 0; i < kStatePartCount; ++i) {
    const StatePart part = static_cast<StatePart>(i);
    if (parts_.Contains(part)) SwapPart(compilation, &held_, part);
  }
  parts_ = StateParts();
}

}  // namespace oneflow
