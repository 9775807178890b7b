// The plan verifier's checks of gradient buckets (Plan.buckets,
// compiler/passes/gradient_bucketing_pass.h): what the bucket actor packs and reduces is
// exactly what the members' steps would have reduced one by one.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/placement.h"
#include "plan/plan_verifier.h"
#include "plan/plan_verifier_internal.h"
#include "oneflow_core/run_tasks.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

using plan_verifier_internal::ActorText;
using plan_verifier_internal::DeviceText;
using plan_verifier_internal::Fail;

// The step kind a bucket's members have when the bucket issues `collective`: all_reduce
// buckets reduce in place, reduce_scatter ones (ZeRO-2) scatter rank-major chunks.
// STEP_INVALID for any other collective kind.
proto::BoxingStepKind MemberStepKind(proto::CollectiveKind collective) {
  switch (collective) {
    case proto::ALL_REDUCE:
      return proto::STEP_ALL_REDUCE;
    case proto::REDUCE_SCATTER:
      return proto::STEP_REDUCE_SCATTER;
    default:
      return proto::STEP_INVALID;
  }
}

// What members of one bucket share of their Compression: everything but the stochastic
// rounding seed, which is each tensor's own (the bucket's collective encodes each member
// with its own step's seed).
std::string WireFormat(proto::Compression compression) {
  compression.clear_rounding_seed();
  return compression.SerializeAsString();
}

// The bucket's definition against the boxing steps it names and its collective.
absl::Status VerifyBucketDef(const proto::Plan& plan, int k) {
  const proto::GradientBucketDef& bucket = plan.buckets(k);
  const std::string who = absl::StrCat("gradient bucket ", bucket.id());
  if (bucket.id() != k) return Fail(absl::StrCat(who, " is at index ", k, "; bucket ids are their index in the plan"));
  if (bucket.members_size() < 2) {
    return Fail(absl::StrCat(who, " has ", bucket.members_size(), " members; a bucket packs at least 2"));
  }
  if (plan.bucket_bytes_limit() <= 0 || bucket.size_bytes() > plan.bucket_bytes_limit()) {
    return Fail(absl::StrCat(who, " holds ", bucket.size_bytes(), " bytes, over the plan's bucket limit of ",
                             plan.bucket_bytes_limit(), " bytes"));
  }
  // Its group's own limit (a node-crossing group's link-rate cap), when recorded.
  if (bucket.limit_bytes() < 0 || bucket.limit_bytes() > plan.bucket_bytes_limit() ||
      (bucket.limit_bytes() > 0 && bucket.size_bytes() > bucket.limit_bytes())) {
    return Fail(absl::StrCat(who, " holds ", bucket.size_bytes(), " bytes with a group limit of ", bucket.limit_bytes(),
                             " bytes; the group limit must be at most the plan's ", plan.bucket_bytes_limit(),
                             " and hold the bucket"));
  }
  if (bucket.dtype() != proto::DTYPE_F32) {
    return Fail(absl::StrCat(who, " has dtype ", proto::DataType_Name(bucket.dtype()), "; buckets reduce f32"));
  }
  if (bucket.collective_id() < 0 || bucket.collective_id() >= plan.collectives_size() ||
      MemberStepKind(plan.collectives(static_cast<int>(bucket.collective_id())).kind()) == proto::STEP_INVALID ||
      plan.collectives(static_cast<int>(bucket.collective_id())).hierarchy_axis() != bucket.hierarchy_axis()) {
    return Fail(absl::StrCat(who, " names collective ", bucket.collective_id(),
                             ", which is not an all_reduce or reduce_scatter of the plan on hierarchy axis ",
                             bucket.hierarchy_axis()));
  }
  const proto::BoxingStepKind member_kind =
      MemberStepKind(plan.collectives(static_cast<int>(bucket.collective_id())).kind());
  // A codec on the wire, one level or two (CompressedBucketAllReduce,
  // CompressedBucketReduceScatter, bucket_two_level.h): every member travels in the
  // bucket's format (below). A cross-node codec needs an in-node one, as for a step.
  if (bucket.compression().cross_node_kind() != proto::Compression::NONE &&
      bucket.compression().kind() == proto::Compression::NONE) {
    return Fail(absl::StrCat(who, " has a cross-node codec without an in-node one; a two-level bucket compresses "
                             "both levels"));
  }
  const std::string compression = WireFormat(bucket.compression());
  for (const proto::BucketMemberDef& member : bucket.members()) {
    const std::string what = absl::StrCat(who, " member '", member.tensor(), "' (boxing ", member.boxing_id(),
                                          " step ", member.boxing_step(), ")");
    if (member.boxing_id() < 0 || member.boxing_id() >= plan.boxings_size() || member.boxing_step() < 0 ||
        member.boxing_step() >= plan.boxings(static_cast<int>(member.boxing_id())).steps_size()) {
      return Fail(absl::StrCat(what, " names a boxing step the plan lacks"));
    }
    const proto::BoxingDef& boxing = plan.boxings(static_cast<int>(member.boxing_id()));
    const proto::BoxingStepDef& step = boxing.steps(static_cast<int>(member.boxing_step()));
    if (boxing.tensor() != member.tensor()) {
      return Fail(absl::StrCat(what, " names tensor '", member.tensor(), "' but the boxing moves '",
                               boxing.tensor(), "'"));
    }
    if (step.kind() != member_kind || step.hierarchy_axis() != bucket.hierarchy_axis()) {
      return Fail(absl::StrCat(what, " is not a ", proto::BoxingStepKind_Name(member_kind), " on hierarchy axis ",
                               bucket.hierarchy_axis(), " like the bucket's collective"));
    }
    if (!step.has_bucket_id() || step.bucket_id() != bucket.id() || step.collective_id() != bucket.collective_id()) {
      return Fail(absl::StrCat(what, " does not name the bucket and its collective ", bucket.collective_id(),
                               " (it names bucket ", step.has_bucket_id() ? step.bucket_id() : -1, ", collective ",
                               step.collective_id(), ")"));
    }
    if (WireFormat(step.compression()) != compression) {
      return Fail(absl::StrCat(what, " travels in another format than the bucket; a bucket's members share one"));
    }
  }
  return absl::OkStatus();
}

// One device's reduce_scatter bucket actor: the register is one chunk per rank of the
// group, and each chunk lays the members out alike: member i's part at the next 64-byte
// aligned offset after member i - 1's largest part (BucketMemberDef.size_bytes), the
// chunk ending at the aligned end of the last. Member i's output is the view of its part
// in this device's chunk (its coordinate on the axis), its size at most the largest.
absl::Status VerifyScatterBucketActor(const proto::DevicePlan& device, const proto::GradientBucketDef& bucket,
                                      const proto::KernelDef& kernel, const proto::RegisterDef& whole,
                                      const std::string& who) {
  absl::StatusOr<Placement> placement = Placement::FromProto(bucket.placement());
  if (!placement.ok()) return Fail(absl::StrCat(who, ": ", placement.status().message()));
  const int64_t rank = placement->RankOf(DeviceId{device.device().node(), device.device().device()});
  const int64_t axis = bucket.hierarchy_axis();
  if (rank < 0 || axis < 0 || axis >= placement->hierarchy().rank()) {
    return Fail(absl::StrCat(who, " runs outside its bucket's placement ", placement->ToString(), " or axis ", axis));
  }
  const int64_t me = placement->Coordinate(rank)[axis];
  int64_t end = 0;
  for (int k = 0; k < bucket.members_size(); ++k) {
    const proto::RegisterDef& in = device.registers(static_cast<int>(kernel.inputs().at(absl::StrCat("in_", k))));
    const proto::RegisterDef& out = device.registers(static_cast<int>(kernel.outputs().at(absl::StrCat("out_", k))));
    end = (end + 63) / 64 * 64 + bucket.members(k).size_bytes();
    if (in.dtype() != bucket.dtype() || out.size_bytes() > bucket.members(k).size_bytes() ||
        out.size_bytes() > in.size_bytes()) {
      return Fail(absl::StrCat(who, " member ", k, " ('", bucket.members(k).tensor(), "'): its part of ",
                               out.size_bytes(), " bytes must fit the bucket's ", bucket.members(k).size_bytes(),
                               " and its f32 input register ", in.id(), " (", in.size_bytes(), " bytes)"));
    }
  }
  const int64_t chunk = (end + 63) / 64 * 64;
  const int64_t ranks = placement->hierarchy().dim(axis);
  if (whole.size_bytes() != ranks * chunk || whole.size_bytes() > bucket.size_bytes()) {
    return Fail(absl::StrCat(who, " has a bucket register of ", whole.size_bytes(), " bytes; its ", ranks,
                             " chunks of ", chunk, " bytes need ", ranks * chunk, " and the bucket allows ",
                             bucket.size_bytes()));
  }
  end = 0;
  for (int k = 0; k < bucket.members_size(); ++k) {
    const proto::RegisterDef& out = device.registers(static_cast<int>(kernel.outputs().at(absl::StrCat("out_", k))));
    const int64_t offset = me * chunk + (end + 63) / 64 * 64;
    end = (end + 63) / 64 * 64 + bucket.members(k).size_bytes();
    if (!out.has_alias_of() || out.alias_of() != whole.id() || out.alias_offset_bytes() != offset) {
      return Fail(absl::StrCat(who, " member ", k, " ('", bucket.members(k).tensor(), "'): its output register ",
                               out.id(), " must be a view of bucket register ", whole.id(), " at byte ", offset,
                               " (its part in chunk ", me, ")"));
    }
  }
  return absl::OkStatus();
}

// One device's bucket actor: member i's input is packed at the next 64-byte aligned
// offset after member i - 1, its output is the view of exactly those bytes, and the
// bucket register ends with the last member (reduce_scatter buckets: by chunks, above).
absl::Status VerifyBucketActor(const proto::Plan& plan, const proto::DevicePlan& device,
                               const proto::ActorDef& actor) {
  const std::string who = absl::StrCat("device ", DeviceText(device.device()), ": bucket actor ", ActorText(actor));
  if (actor.bucket_id() < 0 || actor.bucket_id() >= plan.buckets_size()) {
    return Fail(absl::StrCat(who, " runs bucket ", actor.bucket_id(), ", which the plan lacks"));
  }
  const proto::GradientBucketDef& bucket = plan.buckets(static_cast<int>(actor.bucket_id()));
  const bool scatter = bucket.collective_id() >= 0 && bucket.collective_id() < plan.collectives_size() &&
                       plan.collectives(static_cast<int>(bucket.collective_id())).kind() == proto::REDUCE_SCATTER;
  const std::string kernel_name = scatter ? "bucket_reduce_scatter" : "bucket_all_reduce";
  if (actor.kind() != proto::ACTOR_BOXING || actor.thread() != proto::THREAD_COMMUNICATION ||
      actor.boxing_id() != -1 || actor.kernels_size() != 1 || actor.kernels(0).name() != kernel_name) {
    return Fail(absl::StrCat(who, " must be a boxing actor on the communication thread with boxing_id -1 and one '",
                             kernel_name, "' kernel"));
  }
  if (actor.collective_id() < bucket.collective_id() || actor.collective_id() >= plan.collectives_size() ||
      plan.collectives(static_cast<int>(actor.collective_id())).tensor() !=
          plan.collectives(static_cast<int>(bucket.collective_id())).tensor()) {
    return Fail(absl::StrCat(who, " issues collective ", actor.collective_id(), ", which is not one of bucket ",
                             bucket.id(), "'s"));
  }
  const proto::KernelDef& kernel = actor.kernels(0);
  const int members = bucket.members_size();
  if (kernel.inputs_size() != members || kernel.outputs_size() != members + 1 || !kernel.outputs().count("bucket")) {
    return Fail(absl::StrCat(who, " must read in_0..in_", members - 1, " and write 'bucket' and out_0..out_",
                             members - 1, " (its bucket has ", members, " members)"));
  }
  const proto::RegisterDef& whole = device.registers(static_cast<int>(kernel.outputs().at("bucket")));
  if (whole.has_alias_of() || whole.dtype() != bucket.dtype()) {
    return Fail(absl::StrCat(who, " writes bucket register ", whole.id(), ", which must own its bytes and be f32"));
  }
  for (int k = 0; k < members; ++k) {
    const std::string in_name = absl::StrCat("in_", k), out_name = absl::StrCat("out_", k);
    if (!kernel.inputs().count(in_name) || !kernel.outputs().count(out_name)) {
      return Fail(absl::StrCat(who, " lacks argument '", !kernel.inputs().count(in_name) ? in_name : out_name, "'"));
    }
  }
  if (scatter) return VerifyScatterBucketActor(device, bucket, kernel, whole, who);
  int64_t end = 0;
  for (int k = 0; k < members; ++k) {
    const std::string in_name = absl::StrCat("in_", k), out_name = absl::StrCat("out_", k);
    const proto::RegisterDef& in = device.registers(static_cast<int>(kernel.inputs().at(in_name)));
    const proto::RegisterDef& out = device.registers(static_cast<int>(kernel.outputs().at(out_name)));
    const int64_t offset = (end + 63) / 64 * 64;
    if (!out.has_alias_of() || out.alias_of() != whole.id() || out.alias_offset_bytes() != offset ||
        out.size_bytes() != in.size_bytes() || in.dtype() != bucket.dtype()) {
      return Fail(absl::StrCat(who, " member ", k, " ('", bucket.members(k).tensor(), "'): its output register ",
                               out.id(), " must be a view of bucket register ", whole.id(), " at byte ", offset,
                               " of the size of its f32 input register ", in.id(), " (", in.size_bytes(), " bytes)"));
    }
    if (in.size_bytes() > bucket.members(k).size_bytes()) {
      return Fail(absl::StrCat(who, " member ", k, " ('", bucket.members(k).tensor(), "') holds ", in.size_bytes(),
                               " bytes, more than the bucket lists (", bucket.members(k).size_bytes(), ")"));
    }
    end = offset + in.size_bytes();
  }
  if (whole.size_bytes() != end || end > bucket.size_bytes()) {
    return Fail(absl::StrCat(who, " has a bucket register of ", whole.size_bytes(), " bytes; its members end at byte ",
                             end, " and the bucket allows ", bucket.size_bytes()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyBuckets(const proto::Plan& plan) {
  if (plan.bucket_bytes_limit() < 0) {
    return Fail(absl::StrCat("the plan's bucket limit is ", plan.bucket_bytes_limit(), " bytes; it must be >= 0"));
  }
  for (int k = 0; k < plan.buckets_size(); ++k) OF_RETURN_IF_ERROR(VerifyBucketDef(plan, k));
  // Every bucketed step is a member of the bucket it names (so none runs twice or never).
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    for (int s = 0; s < boxing.steps_size(); ++s) {
      const proto::BoxingStepDef& step = boxing.steps(s);
      if (!step.has_bucket_id()) continue;
      bool member = false;
      if (step.bucket_id() >= 0 && step.bucket_id() < plan.buckets_size()) {
        for (const proto::BucketMemberDef& m : plan.buckets(static_cast<int>(step.bucket_id())).members()) {
          member = member || (m.boxing_id() == boxing.id() && m.boxing_step() == s);
        }
      }
      if (!member) {
        return Fail(absl::StrCat("boxing ", boxing.id(), " of '", boxing.tensor(), "' step ", s, " names bucket ",
                                 step.bucket_id(), ", which does not list it"));
      }
    }
  }
  // Each device's bucket actors on their own, on threads; the first failing device in
  // device order is named.
  return RunChecksOnThreads(plan.devices_size(), [&plan](int d) -> absl::Status {
    const proto::DevicePlan& device = plan.devices(d);
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.has_bucket_id()) OF_RETURN_IF_ERROR(VerifyBucketActor(plan, device, actor));
    }
    return absl::OkStatus();
  });
}

}  // namespace oneflow
