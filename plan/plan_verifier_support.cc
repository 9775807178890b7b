// The verifier's check that the runtime can execute every boxing step of the plan: the
// step kind is known, its SBPs parse, its hierarchy axis exists, the change it makes is
// supported for the tensor's dtype, and its compression (one level or two) is one the
// runtime runs there. The predicate is the runtime's own
// (kernels/boxing/step_support.h), so the two can never disagree: a plan this accepts
// does not fail in iteration 0 with "not implemented".
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/plan_verifier.h"
#include "plan/plan_verifier_internal.h"
#include "kernels/boxing/step_proto.h"
#include "kernels/boxing/step_support.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using plan_verifier_internal::ActorText;
using plan_verifier_internal::DeviceText;
using plan_verifier_internal::Fail;

// "all_reduce", or "kind 12" for a kind this build does not know.
std::string StepKindText(proto::BoxingStepKind kind) {
  absl::StatusOr<BoxingKind> known = BoxingKindFromProto(kind);
  return known.ok() ? std::string(BoxingKindName(*known)) : absl::StrCat("kind ", static_cast<int>(kind));
}

std::string StepText(const proto::BoxingStepDef& step, const std::string& boxing, int s) {
  return absl::StrCat(boxing, " step ", s, " (", StepKindText(step.kind()), ")");
}

absl::StatusOr<NdSbp> StepSbp(const proto::NdSbp& sbp, const std::string& who, const char* which) {
  absl::StatusOr<NdSbp> parsed = NdSbp::FromProto(sbp);
  if (!parsed.ok()) return Fail(absl::StrCat(who, " ", which, ": ", parsed.status().message()));
  return parsed;
}

bool IsStochasticCodec(proto::Compression::Kind kind) {
  return kind == proto::Compression::INT4 || kind == proto::Compression::INT8;
}

bool IsTwoLevel(const proto::Compression& compression) {
  return compression.cross_node_kind() != proto::Compression::NONE;
}

// A step's compression: a codec this build knows with options it accepts, on an f32
// tensor (the compressed collectives decode into f32), on a step kind that has a
// compressed form (all_reduce, reduce_scatter, all_gather). The two-level form: both
// codecs known and valid, on an all_reduce or reduce_scatter (the kinds with a two-level
// compressed collective; kernels/boxing/boxing_step.h says why not all_gather). Where its
// group lies is checked against the collectives (VerifyTwoLevelGroup).
absl::Status VerifyCompression(const proto::Compression& compression, BoxingKind kind, DType dtype,
                               const std::string& who) {
  if (!proto::Compression::Kind_IsValid(compression.kind())) {
    return Fail(absl::StrCat(who, " is compressed with codec ", static_cast<int>(compression.kind()),
                             ", which this build does not know"));
  }
  if (!proto::Compression::Kind_IsValid(compression.cross_node_kind())) {
    return Fail(absl::StrCat(who, " is compressed across nodes with codec ",
                             static_cast<int>(compression.cross_node_kind()), ", which this build does not know"));
  }
  if (compression.error_feedback() &&
      (compression.kind() == proto::Compression::NONE ||
       (kind != BoxingKind::kAllReduce && kind != BoxingKind::kReduceScatter && kind != BoxingKind::kAllGather))) {
    return Fail(absl::StrCat(who, " has error feedback, which only compressed all_reduce, reduce_scatter and "
                             "all_gather steps have"));
  }
  if (compression.dense_warmup_iterations() < 0 ||
      (compression.dense_warmup_iterations() > 0 && compression.kind() == proto::Compression::NONE)) {
    return Fail(absl::StrCat(who, " has dense_warmup_iterations ", compression.dense_warmup_iterations(),
                             "; it must be >= 0, and 0 on a dense step (nothing to warm up before)"));
  }
  if (!proto::Compression::Rounding_IsValid(compression.rounding())) {
    return Fail(absl::StrCat(who, " has rounding ", static_cast<int>(compression.rounding()),
                             ", which this build does not know (NEAREST, STOCHASTIC)"));
  }
  if (compression.rounding() == proto::Compression::STOCHASTIC &&
      (!IsStochasticCodec(compression.kind()) ||
       (IsTwoLevel(compression) && !IsStochasticCodec(compression.cross_node_kind())))) {
    return Fail(absl::StrCat(who, " has rounding STOCHASTIC with codec ",
                             proto::Compression::Kind_Name(compression.kind()),
                             IsTwoLevel(compression)
                                 ? absl::StrCat(" / ", proto::Compression::Kind_Name(compression.cross_node_kind()),
                                                " across nodes")
                                 : "",
                             "; only INT4 and INT8 encoders round stochastically"));
  }
  if (compression.kind() == proto::Compression::NONE) {
    if (IsTwoLevel(compression)) {
      return Fail(absl::StrCat(who, " has cross-node codec ", proto::Compression::Kind_Name(compression.cross_node_kind()),
                               " but in-node codec NONE; a two-level step compresses both levels"));
    }
    return absl::OkStatus();
  }
  const std::string codec = proto::Compression::Kind_Name(compression.kind());
  if (!IsFloating(dtype)) {
    return Fail(absl::StrCat(who, " compresses a ", DTypeName(dtype), " tensor with ", codec,
                             "; only floating tensors compress"));
  }
  if (compression.block_size() < 1) {
    return Fail(absl::StrCat(who, " has compression group size ", compression.block_size(), "; it must be >= 1"));
  }
  if (kind != BoxingKind::kAllReduce && kind != BoxingKind::kReduceScatter && kind != BoxingKind::kAllGather) {
    return Fail(absl::StrCat(who, " is compressed with ", codec, ", but only all_reduce, reduce_scatter and "
                             "all_gather have compressed forms"));
  }
  if (dtype != DType::kF32) {
    return Fail(absl::StrCat(who, " compresses a ", DTypeName(dtype), " tensor; compressed collectives are "
                             "implemented for f32"));
  }
  absl::StatusOr<CodecOptions> options = CodecFromProto(compression);
  if (!options.ok()) return Fail(absl::StrCat(who, ": ", options.status().message()));
  if (!IsTwoLevel(compression)) return absl::OkStatus();
  const std::string cross_node = proto::Compression::Kind_Name(compression.cross_node_kind());
  if (kind != BoxingKind::kAllReduce && kind != BoxingKind::kReduceScatter) {
    return Fail(absl::StrCat(who, " is compressed in two levels (", codec, " in the node, ", cross_node,
                             " across nodes), but only all_reduce and reduce_scatter have a two-level form"));
  }
  if (compression.cross_node_block_size() < 1) {
    return Fail(absl::StrCat(who, " has cross-node compression group size ", compression.cross_node_block_size(),
                             "; it must be >= 1"));
  }
  absl::StatusOr<StepCompression> levels = StepCompressionFromProto(compression);
  if (!levels.ok()) return Fail(absl::StrCat(who, ": ", levels.status().message()));
  return absl::OkStatus();
}

// A two-level step's collective group must lie node by node, the same number (> 1) of
// members on each of several nodes: the layout the two-level collectives split into an
// in-node and a cross-node group (kernels/boxing/step_support.h, the runtime's check).
absl::Status VerifyTwoLevelGroup(const proto::Plan& plan, int64_t collective_id, const std::string& who) {
  if (collective_id < 0) {
    return Fail(absl::StrCat(who, " is compressed in two levels but runs on no collective"));
  }
  const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(collective_id));
  std::vector<int64_t> nodes;
  std::vector<std::string> members;
  for (const proto::DeviceId& member : collective.group()) {
    nodes.push_back(member.node());
    members.push_back(DeviceText(member));
  }
  absl::StatusOr<NodeLayout> layout = TwoLevelLayout(nodes);
  if (!layout.ok()) {
    return Fail(absl::StrCat(who, " is compressed in two levels, but the group of collective ", collective_id,
                             ", [", absl::StrJoin(members, ", "), "], cannot run them: ", layout.status().message()));
  }
  return absl::OkStatus();
}

// A row-sparse step (proto::Sparsity, compiler/sparse_boxing.h) is one the row-sparse
// collectives run: all_gather S(0) -> B, reduce_scatter P -> S(0) (f32) or all_reduce
// P -> B (f32), uncompressed, outside buckets, over a SPARSE_* collective, with integer
// ids the job defines.
absl::Status VerifySparsity(const proto::Plan& plan, const proto::BoxingStepDef& step, BoxingKind kind,
                            DType dtype, const absl::flat_hash_map<std::string, proto::DataType>& dtypes,
                            const std::string& who) {
  const proto::Sparsity& sparsity = step.sparsity();
  if (!proto::Sparsity::Kind_IsValid(sparsity.kind())) {
    return Fail(absl::StrCat(who, " has sparsity kind ", static_cast<int>(sparsity.kind()), ", which this build does not know"));
  }
  if (sparsity.kind() == proto::Sparsity::DENSE) return absl::OkStatus();
  const int64_t axis = step.hierarchy_axis();
  OF_ASSIGN_OR_RETURN(const NdSbp src, StepSbp(step.src_sbp(), who, "src_sbp"));
  OF_ASSIGN_OR_RETURN(const NdSbp dst, StepSbp(step.dst_sbp(), who, "dst_sbp"));
  if (axis < 0 || axis >= src.size() || axis >= dst.size()) {
    return Fail(absl::StrCat(who, " is row-sparse on hierarchy axis ", axis, ", which its SBPs lack"));
  }
  const Sbp& from = src.at(axis);
  const Sbp& to = dst.at(axis);
  const bool fits = (kind == BoxingKind::kAllGather && from.is_split() && from.axis() == 0 && to.is_broadcast()) ||
                    (kind == BoxingKind::kReduceScatter && to.is_split() && to.axis() == 0) ||
                    kind == BoxingKind::kAllReduce;
  if (!fits) {
    return Fail(absl::StrCat(who, " is row-sparse, but only all_gather S(0) -> B, reduce_scatter P -> S(0) and "
                             "all_reduce P -> B have row-sparse forms"));
  }
  if (kind != BoxingKind::kAllGather && dtype != DType::kF32) {
    return Fail(absl::StrCat(who, " reduces ", DTypeName(dtype), " rows sparsely; sparse reductions add f32"));
  }
  if (step.compression().kind() != proto::Compression::NONE) {
    return Fail(absl::StrCat(who, " is both row-sparse and compressed; a step is one or the other"));
  }
  if (step.has_bucket_id()) return Fail(absl::StrCat(who, " is row-sparse but a member of bucket ", step.bucket_id()));
  if (sparsity.rows() < 0 || sparsity.row_bytes() <= 0 || sparsity.max_rows() < 0 ||
      sparsity.max_rows() > sparsity.rows()) {
    return Fail(absl::StrCat(who, " is row-sparse with rows ", sparsity.rows(), ", row_bytes ", sparsity.row_bytes(),
                             ", max_rows ", sparsity.max_rows(), "; need rows >= 0, row_bytes > 0, 0 <= max_rows <= rows"));
  }
  auto ids = dtypes.find(sparsity.rows_tensor());
  if (ids == dtypes.end() || (ids->second != proto::DTYPE_I32 && ids->second != proto::DTYPE_I64)) {
    return Fail(absl::StrCat(who, " takes its rows from '", sparsity.rows_tensor(),
                             "', which is not an i32/i64 tensor of the job"));
  }
  const proto::CollectiveKind expected = kind == BoxingKind::kAllGather       ? proto::SPARSE_ALL_GATHER
                                         : kind == BoxingKind::kReduceScatter ? proto::SPARSE_REDUCE_SCATTER
                                                                              : proto::SPARSE_ALL_REDUCE;
  if (step.collective_id() < 0 || step.collective_id() >= plan.collectives_size() ||
      plan.collectives(static_cast<int>(step.collective_id())).kind() != expected) {
    return Fail(absl::StrCat(who, " is row-sparse but its collective ", step.collective_id(), " is not a ",
                             proto::CollectiveKind_Name(expected)));
  }
  return absl::OkStatus();
}

absl::Status VerifyStep(const proto::Plan& plan, const proto::BoxingStepDef& step, DType dtype,
                        const absl::flat_hash_map<std::string, proto::DataType>& dtypes, const std::string& who) {
  absl::StatusOr<BoxingKind> kind = BoxingKindFromProto(step.kind());
  if (!kind.ok()) return Fail(absl::StrCat(who, ": ", kind.status().message()));
  OF_RETURN_IF_ERROR(VerifyCompression(step.compression(), *kind, dtype, who));
  OF_RETURN_IF_ERROR(VerifySparsity(plan, step, *kind, dtype, dtypes, who));
  if (step.collective_id() < -1 || step.collective_id() >= plan.collectives_size()) {
    return Fail(absl::StrCat(who, " uses collective ", step.collective_id(), ", which the plan lacks"));
  }
  if (IsTwoLevel(step.compression())) OF_RETURN_IF_ERROR(VerifyTwoLevelGroup(plan, step.collective_id(), who));
  OF_ASSIGN_OR_RETURN(const NdSbp src, StepSbp(step.src_sbp(), who, "src_sbp"));
  OF_ASSIGN_OR_RETURN(const NdSbp dst, StepSbp(step.dst_sbp(), who, "dst_sbp"));
  if (*kind == BoxingKind::kSendRecv) {
    // Between placements a partial value is reduced before it travels (boxing_step.h).
    for (const Sbp& axis : src.sbps()) {
      if (axis.is_partial()) {
        return Fail(absl::StrCat(who, " sends ", src.ToString(), " between placements; a partial value "
                                 "must be reduced before send_recv"));
      }
    }
    // The hierarchies of the two placements may differ in rank; a missing source axis
    // holds the whole tensor (B).
    for (int64_t a = 0; a < dst.size(); ++a) {
      const Sbp from = a < src.size() ? src.at(a) : Sbp::Broadcast();
      const absl::Status supported = CheckStepSupported(*kind, dtype, from, dst.at(a));
      if (!supported.ok()) return Fail(absl::StrCat(who, ": ", supported.message()));
    }
    return absl::OkStatus();
  }
  if (src.size() != dst.size() || step.hierarchy_axis() < 0 || step.hierarchy_axis() >= src.size()) {
    return Fail(absl::StrCat(who, " changes hierarchy axis ", step.hierarchy_axis(), " of ", src.ToString(),
                             " -> ", dst.ToString(), ", which has no such axis"));
  }
  const absl::Status supported =
      CheckStepSupported(*kind, dtype, src.at(step.hierarchy_axis()), dst.at(step.hierarchy_axis()));
  if (!supported.ok()) return Fail(absl::StrCat(who, ": ", supported.message()));
  return absl::OkStatus();
}

// The serialized (src_sbp, dst_sbp) of steps or collectives, each message serialized
// once however many actors compare against it (keyed by the message's address: the plan
// does not change while it is verified).
class SerializedSbps {
 public:
  template <typename Message>
  const std::pair<std::string, std::string>& Of(const Message& message) {
    auto [it, inserted] = serialized_.try_emplace(&message);
    if (inserted) it->second = {message.src_sbp().SerializeAsString(), message.dst_sbp().SerializeAsString()};
    return it->second;
  }

 private:
  absl::flat_hash_map<const void*, std::pair<std::string, std::string>> serialized_;
};

}  // namespace

absl::Status VerifyRuntimeSupport(const proto::Plan& plan) {
  absl::flat_hash_map<std::string, proto::DataType> dtypes;
  for (const proto::TensorDef& tensor : plan.job().tensors()) dtypes[tensor.name()] = tensor.dtype();
  for (int b = 0; b < plan.boxings_size(); ++b) {
    const proto::BoxingDef& boxing = plan.boxings(b);
    const std::string who = absl::StrCat("boxing ", boxing.id(), " of '", boxing.tensor(), "' (",
                                         boxing.producer_op(), " -> ", boxing.consumer_op(), ")");
    if (boxing.id() != b) {
      return Fail(absl::StrCat(who, " is at index ", b, "; boxing ids are their index in the plan"));
    }
    auto it = dtypes.find(boxing.tensor());
    if (it == dtypes.end()) return Fail(absl::StrCat(who, " moves a tensor the job does not define"));
    absl::StatusOr<DType> dtype = FromProto(it->second);
    if (!dtype.ok()) return Fail(absl::StrCat(who, ": ", dtype.status().message()));
    for (int s = 0; s < boxing.steps_size(); ++s) {
      OF_RETURN_IF_ERROR(VerifyStep(plan, boxing.steps(s), *dtype, dtypes,
                                    StepText(boxing.steps(s), who, s)));
    }
  }
  // A boxing actor runs the step it names, over that step's collective. The SBPs are
  // compared by their serialization, each message's serialized once (an actor per
  // device runs each step).
  SerializedSbps step_sbps, collective_sbps;
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      // A bucket actor runs its bucket's steps (VerifyBuckets).
      if (actor.kind() != proto::ACTOR_BOXING || actor.has_bucket_id()) continue;
      // Built only for an error: a plan has hundreds of thousands of boxing actors.
      auto who = [&] { return absl::StrCat("device ", DeviceText(device.device()), ": ", ActorText(actor)); };
      if (actor.boxing_id() < 0 || actor.boxing_id() >= plan.boxings_size() || actor.boxing_step() < 0 ||
          actor.boxing_step() >= plan.boxings(static_cast<int>(actor.boxing_id())).steps_size()) {
        return Fail(absl::StrCat(who(), " runs step ", actor.boxing_step(), " of boxing ", actor.boxing_id(),
                                 ", which the plan lacks"));
      }
      const proto::BoxingStepDef& step =
          plan.boxings(static_cast<int>(actor.boxing_id())).steps(static_cast<int>(actor.boxing_step()));
      if (step.has_bucket_id()) {
        return Fail(absl::StrCat(who(), " runs boxing ", actor.boxing_id(), " step ", actor.boxing_step(),
                                 ", which bucket ", step.bucket_id(), " runs"));
      }
      // A step runs as one collective per group of its hierarchy axis (the step records
      // the first), so the actor's collective must be one that makes the step's change.
      const bool local = step.collective_id() < 0;
      bool matches = local == (actor.collective_id() < 0);
      if (matches && !local) {
        const proto::CollectiveDef& collective = plan.collectives(static_cast<int>(actor.collective_id()));
        matches = collective.hierarchy_axis() == step.hierarchy_axis() &&
                  collective_sbps.Of(collective) == step_sbps.Of(step);
      }
      if (!matches) {
        return Fail(absl::StrCat(who(), " issues collective ", actor.collective_id(), ", which does not carry its step (boxing ",
                                 actor.boxing_id(), " step ", actor.boxing_step(), ", ", StepKindText(step.kind()), " axis ",
                                 step.hierarchy_axis(), ")"));
      }
      // A row-sparse step's actor reads the ids of its device's rows.
      if (step.sparsity().kind() != proto::Sparsity::DENSE) {
        const auto& inputs = actor.kernels_size() > 0 ? actor.kernels(0).inputs()
                                                      : google::protobuf::Map<std::string, int64_t>();
        auto rows = inputs.find("rows");
        const bool ok = rows != inputs.end() && rows->second >= 0 && rows->second < device.registers_size() &&
                        (device.registers(static_cast<int>(rows->second)).dtype() == proto::DTYPE_I32 ||
                         device.registers(static_cast<int>(rows->second)).dtype() == proto::DTYPE_I64);
        if (!ok) {
          return Fail(absl::StrCat(who(), " runs row-sparse boxing ", actor.boxing_id(),
                                   " but reads no i32/i64 register of row ids as \"rows\""));
        }
      }
      // Every group of a two-level step runs it, not only the one the step records.
      if (!local && IsTwoLevel(step.compression())) {
        OF_RETURN_IF_ERROR(VerifyTwoLevelGroup(
            plan, actor.collective_id(),
            absl::StrCat(who(), " runs boxing ", actor.boxing_id(), " step ", actor.boxing_step(), ", which")));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDevicesRunHere(const proto::Plan& plan) {
  auto refuse = [&](const std::string& what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plan of job '", plan.job().name(), "' ", what,
        ", but this build runs CPU devices only (its CUDA kernels and NCCL communicator are not wired "
        "into the runtime yet); compile the job for a cpu cluster to run it here"));
  };
  for (const proto::LogicalOpSbp& op : plan.op_sbps()) {
    if (op.placement().device_type() == proto::DEVICE_CUDA) {
      return refuse(absl::StrCat("places op '", op.op_name(), "' on cuda devices"));
    }
  }
  if (plan.cluster().device_type() == proto::DEVICE_CUDA) return refuse("describes a cluster of cuda devices");
  return absl::OkStatus();
}

}  // namespace oneflow
