#include "actors/behaviors/bucket_behavior.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/flight_recorder.h"
#include "kernels/boxing/slice_boxes.h"
#include "kernels/boxing/step_proto.h"
#include "kernels/compression/bucket_reduce_scatter.h"
#include "kernels/compression/bucket_two_level.h"
#include "kernels/compression/compressed_collectives.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow::actors {
namespace {

// One member: its input register and where its bytes lie in the bucket.
struct Member {
  int64_t input = 0;
  int64_t offset = 0;
  int64_t bytes = 0;
  // Reduce-scatter buckets: the member's slice on this device (its input) and the part
  // of it that goes to each rank of the group, in rank order; `offset` is then where
  // the part lies in every rank's chunk.
  TensorSlice source;
  std::vector<TensorSlice> parts;
};

// A reduce-scatter member's slices, as the member's own step would cut them
// (kernels/boxing/collective_steps.cc: chunk g = rank g's destination slice).
absl::Status FillParts(const PlanIndex& index, const proto::BucketMemberDef& member_def, const Placement& placement,
                       int64_t axis, int64_t rank, Member* member) {
  const proto::Plan& plan = index.plan();
  const proto::BoxingStepDef& step =
      plan.boxings(static_cast<int>(member_def.boxing_id())).steps(static_cast<int>(member_def.boxing_step()));
  OF_ASSIGN_OR_RETURN(const proto::TensorDef* tensor, index.Tensor(member_def.tensor()));
  const Shape logical(std::vector<int64_t>(tensor->shape().begin(), tensor->shape().end()));
  OF_ASSIGN_OR_RETURN(NdSbp src, NdSbp::FromProto(step.src_sbp()));
  OF_ASSIGN_OR_RETURN(NdSbp dst, NdSbp::FromProto(step.dst_sbp()));
  OF_ASSIGN_OR_RETURN(member->source, DeviceSlice(logical, src, placement, rank));
  std::vector<int64_t> coordinate = placement.Coordinate(rank);
  for (int64_t g = 0; g < placement.hierarchy().dim(axis); ++g) {
    coordinate[axis] = g;
    OF_ASSIGN_OR_RETURN(TensorSlice part, DeviceSlice(logical, dst, placement, placement.RankOf(coordinate)));
    if (!Contains(member->source, part)) {
      return absl::FailedPreconditionError(absl::StrCat("bucket member '", member_def.tensor(), "': rank ", g,
                                                        "'s part is not inside this device's slice"));
    }
    member->parts.push_back(std::move(part));
  }
  return absl::OkStatus();
}

// The codec of a compressed bucket and what each act needs beside the register: per
// member its floats (an all-reduce's count, or a reduce-scatter's part per rank), its
// step's rounding key and its residual.
struct CompressedBucket {
  Communicator* communicator = nullptr;
  // A two-level bucket: its group's in-node and cross-node communicators and codecs.
  bool two_level = false;
  Communicator* in_node = nullptr;
  Communicator* cross_node = nullptr;
  TwoLevelCodecs codecs;  // codecs.in_node is the one-level codec too
  bool scatter = false;
  int64_t chunk = 0;  // reduce-scatter buckets: floats per rank's chunk
  // One-level all-reduce buckets: `members`; one-level reduce-scatter buckets:
  // `scatter_members`; two-level buckets: `two_level_members`. Residual spans point into
  // `residuals`.
  std::vector<CompressedBucketMember> members;
  std::vector<CompressedScatterBucketMember> scatter_members;
  std::vector<TwoLevelBucketMember> two_level_members;
  std::vector<proto::Compression> member_compression;  // for each act's rounding seed
  std::vector<std::vector<float>> residuals;           // error feedback; empty: off
  std::vector<std::function<absl::Status(int64_t, const float*)>> save_residual;
  CompressionMeter* meter = nullptr;
  // Per member, its edge's meter parts (-1: none): the (in-node) codec's and, two-level,
  // the cross-node codec's; and this act's traffic.
  std::vector<int> parts, cross_node_parts;
  std::vector<TwoLevelTraffic> traffic;

  absl::Status Reduce(int64_t iteration, float* data, const CollectiveOptions& options) {
    for (size_t m = 0; m < member_compression.size(); ++m) {
      if (save_residual[m]) OF_RETURN_IF_ERROR(save_residual[m](iteration, residuals[m].data()));
      // The seeds its own step would use (PreparedBoxingStep::Run).
      const uint64_t seed = StochasticRoundingSeed(member_compression[m], iteration);
      traffic[m] = TwoLevelTraffic();
      if (two_level) {
        two_level_members[m].in_node_seed = seed;
        two_level_members[m].cross_node_seed = MixSeed(seed, -1);
        two_level_members[m].gather_seed = seed;
        two_level_members[m].traffic = &traffic[m];
      } else if (scatter) {
        scatter_members[m].seed = seed;
        scatter_members[m].traffic = &traffic[m].in_node;
      } else {
        members[m].seed = seed;
        members[m].traffic = &traffic[m].in_node;
      }
    }
    FlightRecorder::NoteCollectiveStart();
    if (two_level && scatter) {
      OF_RETURN_IF_ERROR(TwoLevelCompressedBucketReduceScatter(*in_node, *cross_node, codecs, data, chunk,
                                                               two_level_members, options)
                             .status());
    } else if (two_level) {
      OF_RETURN_IF_ERROR(
          TwoLevelCompressedBucketAllReduce(*in_node, *cross_node, codecs, data, two_level_members, options).status());
    } else if (scatter) {
      OF_RETURN_IF_ERROR(
          CompressedBucketReduceScatter(*communicator, codecs.in_node, data, chunk, scatter_members, options)
              .status());
    } else {
      OF_RETURN_IF_ERROR(
          CompressedBucketAllReduce(*communicator, codecs.in_node, data, data, members, options).status());
    }
    for (size_t m = 0; m < member_compression.size(); ++m) {
      if (parts[m] >= 0) meter->Record(parts[m], iteration, traffic[m].in_node);
      if (cross_node_parts[m] >= 0) meter->Record(cross_node_parts[m], iteration, traffic[m].cross_node);
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::shared_ptr<CompressedBucket>> BindCompressedBucket(
    const PlanIndex& index, const proto::GradientBucketDef& bucket, const Placement& placement, const DeviceId& self,
    const std::vector<Member>& members, bool scatter, int64_t chunk_bytes, Communicator& communicator,
    const CommunicatorPool::TwoLevel& two_level, int device_index, CompressionMeter* meter,
    const ResidualCheckpointing& residuals) {
  const proto::Plan& plan = index.plan();
  auto result = std::make_shared<CompressedBucket>();
  result->communicator = &communicator;
  result->scatter = scatter;
  result->chunk = chunk_bytes / static_cast<int64_t>(sizeof(float));
  const absl::string_view kind = scatter ? "reduce_scatter" : "all_reduce";
  absl::StatusOr<StepCompression> compression = StepCompressionFromProto(bucket.compression());
  if (!compression.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("gradient bucket ", bucket.id(), ": ", compression.status().message()));
  }
  // As a two-level step's (collective_steps.cc): the gather phase in the in-node codec.
  result->codecs.in_node = compression->codec;
  result->codecs.cross_node = compression->cross_node;
  result->codecs.gather = compression->codec;
  result->two_level = compression->two_level();
  if (result->two_level) {
    if (two_level.in_node == nullptr || two_level.cross_node == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "gradient bucket ", bucket.id(), " is two-level compressed but has no in-node and cross-node communicators"));
    }
    result->in_node = two_level.in_node;
    result->cross_node = two_level.cross_node;
  }
  const Communicator* in_node = result->in_node;
  const Communicator* cross_node = result->cross_node;
  const bool error_feedback = bucket.compression().error_feedback();
  result->residuals.resize(members.size());
  result->save_residual.resize(members.size());
  for (size_t m = 0; m < members.size(); ++m) {
    const proto::BucketMemberDef& member_def = bucket.members(static_cast<int>(m));
    const proto::BoxingStepDef& step =
        plan.boxings(static_cast<int>(member_def.boxing_id())).steps(static_cast<int>(member_def.boxing_step()));
    const int64_t count = members[m].bytes / static_cast<int64_t>(sizeof(float));
    // A reduce-scatter member's part for each rank (its own step's counts).
    std::vector<int64_t> counts;
    for (const TensorSlice& part : members[m].parts) counts.push_back(part.NumElements());
    result->member_compression.push_back(step.compression());
    if (error_feedback) {
      // The member's own step's residual, under its own key: checkpoints of plans with
      // and without buckets hold the same residuals.
      int64_t elements = 0;
      if (result->two_level) {
        elements = scatter ? TwoLevelReduceScatterResidualElements(counts, in_node->size(), in_node->rank())
                           : TwoLevelAllReduceResidualElements(count, cross_node->size(), in_node->size(),
                                                               cross_node->rank(), in_node->rank());
      } else {
        elements = scatter ? ReduceScatterResidualElements(counts)
                           : AllReduceResidualElements(count, communicator.size(), communicator.rank());
      }
      std::vector<float>& residual = result->residuals[m];
      residual.assign(elements, 0.0f);
      const std::string key = ResidualKey(member_def.tensor(), member_def.boxing_step(), kind,
                                          bucket.hierarchy_axis(), placement.ToString(), self);
      if (residuals.restore) residuals.restore(key, absl::MakeSpan(residual));
      if (residuals.save) result->save_residual[m] = residuals.save(device_index, key, static_cast<int64_t>(residual.size()));
    }
    const int64_t offset = members[m].offset / static_cast<int64_t>(sizeof(float));
    const absl::Span<float> residual = absl::MakeSpan(result->residuals[m]);
    if (result->two_level) {
      TwoLevelBucketMember member;
      member.offset = offset;
      member.count = count;
      member.counts = std::move(counts);
      member.residual = residual;
      result->two_level_members.push_back(std::move(member));
    } else if (scatter) {
      result->scatter_members.push_back({offset, std::move(counts), 0, residual});
    } else {
      result->members.push_back({offset, count, 0, residual});
    }
  }
  // Each member is metered as its own step would be (the same edge, bytes and error per
  // codec), its warning naming the bucket too.
  result->traffic.resize(members.size());
  result->parts.assign(members.size(), -1);
  result->cross_node_parts.assign(members.size(), -1);
  result->meter = meter;
  for (size_t m = 0; meter != nullptr && m < members.size(); ++m) {
    const proto::BucketMemberDef& member_def = bucket.members(static_cast<int>(m));
    const proto::BoxingDef& boxing = plan.boxings(static_cast<int>(member_def.boxing_id()));
    const std::string edge =
        absl::StrCat("tensor '", boxing.tensor(), "' (", boxing.producer_op(), " -> ", boxing.consumer_op(),
                     ") boxing ", member_def.boxing_id(), " step ", member_def.boxing_step(), " (", kind,
                     " on hierarchy axis ", bucket.hierarchy_axis(), ", in gradient bucket ", bucket.id(), ")");
    result->parts[m] = meter->AddPart(member_def.boxing_id(), member_def.boxing_step(), edge, result->codecs.in_node);
    if (result->two_level) {
      result->cross_node_parts[m] =
          meter->AddPart(member_def.boxing_id(), member_def.boxing_step(), edge, result->codecs.cross_node);
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<ActFunction> BindBucket(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout,
                                       CompressionMeter* meter, const ResidualCheckpointing& residuals) {
  const proto::Plan& plan = index.plan();
  const proto::ActorDef& actor = *binding.actor;
  // The plan verifier checked the bucket, its actor's arguments and its views.
  if (actor.bucket_id() < 0 || actor.bucket_id() >= plan.buckets_size() || actor.kernels_size() != 1 ||
      actor.collective_id() < 0) {
    return absl::FailedPreconditionError(absl::StrCat("the plan has no bucket ", actor.bucket_id(),
                                                      " with a collective for this actor"));
  }
  const proto::GradientBucketDef& bucket = plan.buckets(static_cast<int>(actor.bucket_id()));
  const proto::DevicePlan& device = plan.devices(binding.device_index);
  const proto::KernelDef& kernel = actor.kernels(0);
  const int64_t whole = kernel.outputs().at("bucket");
  const int64_t whole_bytes = device.registers(static_cast<int>(whole)).size_bytes();
  const bool scatter = plan.collectives(static_cast<int>(actor.collective_id())).kind() == proto::REDUCE_SCATTER;
  // A reduce-scatter bucket: this device's place in its group, and the chunk layout.
  int64_t group_size = 1, me = 0, chunk_bytes = whole_bytes;
  OF_ASSIGN_OR_RETURN(const Placement placement, Placement::FromProto(bucket.placement()));
  const int64_t rank = placement.RankOf(DeviceId{device.device().node(), device.device().device()});
  if (scatter) {
    const int64_t axis = bucket.hierarchy_axis();
    if (rank < 0 || axis < 0 || axis >= placement.hierarchy().rank() ||
        whole_bytes % (placement.hierarchy().dim(axis) * static_cast<int64_t>(sizeof(float))) != 0) {
      return absl::FailedPreconditionError(absl::StrCat("gradient bucket ", bucket.id(), " does not fit this device"));
    }
    group_size = placement.hierarchy().dim(axis);
    me = placement.Coordinate(rank)[axis];
    chunk_bytes = whole_bytes / group_size;
  }
  std::vector<Member> members;
  for (int k = 0; k < bucket.members_size(); ++k) {
    const proto::RegisterDef& view = device.registers(static_cast<int>(kernel.outputs().at(absl::StrCat("out_", k))));
    Member member{kernel.inputs().at(absl::StrCat("in_", k)), view.alias_offset_bytes(), view.size_bytes()};
    if (scatter) {
      // The view is the member's part in this device's chunk; every chunk has it there.
      member.offset -= me * chunk_bytes;
      OF_RETURN_IF_ERROR(FillParts(index, bucket.members(k), placement, bucket.hierarchy_axis(), rank, &member));
      const int64_t input_bytes = device.registers(static_cast<int>(member.input)).size_bytes();
      if (member.source.NumElements() * static_cast<int64_t>(sizeof(float)) != input_bytes) {
        return absl::FailedPreconditionError(absl::StrCat("gradient bucket ", bucket.id(), " member '",
                                                          bucket.members(k).tensor(), "': its input holds ",
                                                          input_bytes, " bytes, not its slice's"));
      }
    }
    members.push_back(std::move(member));
  }
  OF_ASSIGN_OR_RETURN(Communicator * communicator,
                      communicators->ForCollective(actor.collective_id(), device.device()));
  // A codec on the wire, one level or two (the two-level form over the group's in-node
  // and cross-node communicators).
  const bool compressed = bucket.compression().kind() != proto::Compression::NONE;
  std::shared_ptr<CompressedBucket> codec_bucket;
  if (compressed) {
    CommunicatorPool::TwoLevel two_level;
    if (bucket.compression().cross_node_kind() != proto::Compression::NONE) {
      OF_ASSIGN_OR_RETURN(two_level, communicators->TwoLevelForCollective(actor.collective_id(), device.device()));
    }
    const DeviceId self{device.device().node(), device.device().device()};
    OF_ASSIGN_OR_RETURN(codec_bucket,
                        BindCompressedBucket(index, bucket, placement, self, members, scatter, chunk_bytes,
                                             *communicator, two_level, binding.device_index, meter, residuals));
  }
  // Sequence numbers: the device's collectives in static order, iteration after iteration.
  const auto& order = device.collective_order();
  const int64_t order_length = order.size();
  const int64_t position = std::find(order.begin(), order.end(), actor.collective_id()) - order.begin();
  const std::string name = actor.name();
  const int64_t collective_id = actor.collective_id();
  const int64_t warmup_iterations = bucket.compression().dense_warmup_iterations();
  return ActFunction([=](int64_t iteration, const ActContext& context) -> absl::Status {
    char* base = static_cast<char*>(context.RegisterSlot(whole, iteration));
    // Chunk by chunk (one for an all-reduce), the members' bytes at their offsets; the
    // padding is zeroed so the reduced register holds no garbage sums.
    for (int64_t g = 0; g < group_size; ++g) {
      char* chunk = base + g * chunk_bytes;
      int64_t end = 0;
      for (const Member& member : members) {
        const void* input = context.RegisterSlot(member.input, iteration);
        if (member.offset > end) std::memset(chunk + end, 0, static_cast<size_t>(member.offset - end));
        int64_t bytes = member.bytes;
        if (scatter) {
          bytes = member.parts[g].NumElements() * static_cast<int64_t>(sizeof(float));
          PackBox(member.source, input, member.parts[g], sizeof(float), chunk + member.offset);
        } else if (input != chunk + member.offset) {
          // A member's input that memory planning placed at its own bytes in the bucket
          // (gradients as bucket views) is already there: its producer wrote it in place.
          std::memcpy(chunk + member.offset, input, static_cast<size_t>(bytes));
        }
        end = member.offset + bytes;
      }
      if (chunk_bytes > end) std::memset(chunk + end, 0, static_cast<size_t>(chunk_bytes - end));
    }
    CollectiveOptions options;
    options.timeout = collective_timeout;
    options.description = absl::StrCat("actor '", name, "' collective ", collective_id, " sequence ",
                                       iteration * order_length + position, " iteration ", iteration);
    float* data = reinterpret_cast<float*>(base);
    // A compressed bucket runs dense for its dense warm-up (Compression.
    // dense_warmup_iterations), as each member's own step would.
    if (codec_bucket != nullptr && iteration >= warmup_iterations) return codec_bucket->Reduce(iteration, data, options);
    if (codec_bucket != nullptr) {
      for (size_t m = 0; m < codec_bucket->member_compression.size(); ++m) {
        if (codec_bucket->save_residual[m]) {
          OF_RETURN_IF_ERROR(codec_bucket->save_residual[m](iteration, codec_bucket->residuals[m].data()));
        }
      }
    }
    FlightRecorder::NoteCollectiveStart();
    if (scatter) {
      // In place: this rank's chunk of the packed partial sums receives its reduction.
      const std::vector<int64_t> counts(group_size, chunk_bytes / static_cast<int64_t>(sizeof(float)));
      return communicator->ReduceScatter(data, data + me * counts[0], counts, options);
    }
    // In place: the register holds the packed partial sums, then their reduction.
    return communicator->AllReduce(data, data, whole_bytes / static_cast<int64_t>(sizeof(float)), options);
  });
}

}  // namespace oneflow::actors
