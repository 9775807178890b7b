#include "actors/behaviors/bucket_behavior.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/flight_recorder.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

// One member: its input register and where its bytes lie in the bucket.
struct Member {
  int64_t input = 0;
  int64_t offset = 0;
  int64_t bytes = 0;
};

}  // namespace

absl::StatusOr<ActFunction> BindBucket(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout) {
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
  std::vector<Member> members;
  for (int k = 0; k < bucket.members_size(); ++k) {
    const proto::RegisterDef& view = device.registers(static_cast<int>(kernel.outputs().at(absl::StrCat("out_", k))));
    members.push_back(Member{kernel.inputs().at(absl::StrCat("in_", k)), view.alias_offset_bytes(), view.size_bytes()});
  }
  // The compiler buckets dense all-reduces only; the verifier refuses anything else.
  if (bucket.compression().kind() != proto::Compression::NONE) {
    return absl::FailedPreconditionError(
        absl::StrCat("gradient bucket ", bucket.id(), " is compressed; buckets reduce dense"));
  }
  OF_ASSIGN_OR_RETURN(Communicator * communicator,
                      communicators->ForCollective(actor.collective_id(), device.device()));
  // Sequence numbers: the device's collectives in static order, iteration after iteration.
  const auto& order = device.collective_order();
  const int64_t order_length = order.size();
  const int64_t position = std::find(order.begin(), order.end(), actor.collective_id()) - order.begin();
  const std::string name = actor.name();
  const int64_t collective_id = actor.collective_id();
  return ActFunction([=](int64_t iteration, const ActContext& context) -> absl::Status {
    char* base = static_cast<char*>(context.RegisterSlot(whole, iteration));
    int64_t end = 0;
    for (const Member& member : members) {
      // The padding is zeroed so the reduced register holds no garbage sums.
      if (member.offset > end) std::memset(base + end, 0, static_cast<size_t>(member.offset - end));
      std::memcpy(base + member.offset, context.RegisterSlot(member.input, iteration),
                  static_cast<size_t>(member.bytes));
      end = member.offset + member.bytes;
    }
    if (whole_bytes > end) std::memset(base + end, 0, static_cast<size_t>(whole_bytes - end));
    CollectiveOptions options;
    options.timeout = collective_timeout;
    options.description = absl::StrCat("actor '", name, "' collective ", collective_id, " sequence ",
                                       iteration * order_length + position, " iteration ", iteration);
    // In place: the register holds the packed partial sums, then their reduction.
    float* data = reinterpret_cast<float*>(base);
    const int64_t count = whole_bytes / static_cast<int64_t>(sizeof(float));
    FlightRecorder::NoteCollectiveStart();
    return communicator->AllReduce(data, data, count, options);
  });
}

}  // namespace oneflow::actors
