#include "actors/behaviors/boxing_behavior.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actors/behaviors/sparse_boxing_behavior.h"
#include "actors/flight_recorder.h"
#include "kernels/boxing/boxing_step.h"
#include "kernels/boxing/step_proto.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {

std::string ResidualKey(const std::string& tensor, int64_t step, absl::string_view kind, int64_t hierarchy_axis,
                        const std::string& placement, const DeviceId& device) {
  return absl::StrCat("boxing of '", tensor, "' step ", step, " (", kind, " on hierarchy axis ", hierarchy_axis,
                      " of ", placement, ") on device ", device.ToString());
}

absl::StatusOr<ActFunction> BindBoxing(const PlanIndex& index, const ActorBinding& binding,
                                       CommunicatorPool* communicators, absl::Duration collective_timeout,
                                       CompressionMeter* meter, SparseMeter* sparse_meter,
                                       const ResidualCheckpointing& residuals) {
  const proto::Plan& plan = index.plan();
  const proto::ActorDef& actor = *binding.actor;
  if (actor.boxing_id() < 0 || actor.boxing_id() >= plan.boxings_size()) {
    return absl::FailedPreconditionError(absl::StrCat("the plan has no boxing ", actor.boxing_id()));
  }
  const proto::BoxingDef& boxing = plan.boxings(static_cast<int>(actor.boxing_id()));
  const proto::BoxingStepDef& step = boxing.steps(static_cast<int>(actor.boxing_step()));
  OF_ASSIGN_OR_RETURN(const proto::TensorDef* tensor, index.Tensor(boxing.tensor()));
  const proto::DevicePlan& device = plan.devices(binding.device_index);
  // Steps after a send/recv run on the destination placement.
  bool after_send = false;
  for (int s = 0; s < actor.boxing_step(); ++s) after_send |= boxing.steps(s).kind() == proto::STEP_SEND_RECV;
  auto shared_placement = [](const proto::Placement& proto) -> absl::StatusOr<std::shared_ptr<Placement>> {
    OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(proto));
    return std::make_shared<Placement>(std::move(placement));
  };
  OF_ASSIGN_OR_RETURN(std::shared_ptr<Placement> src_placement, shared_placement(boxing.src_placement()));
  OF_ASSIGN_OR_RETURN(std::shared_ptr<Placement> dst_placement, shared_placement(boxing.dst_placement()));
  OF_ASSIGN_OR_RETURN(NdSbp src, NdSbp::FromProto(step.src_sbp()));
  OF_ASSIGN_OR_RETURN(NdSbp dst, NdSbp::FromProto(step.dst_sbp()));
  OF_ASSIGN_OR_RETURN(DType dtype, FromProto(tensor->dtype()));
  const Shape logical(std::vector<int64_t>(tensor->shape().begin(), tensor->shape().end()));
  Communicator* communicator = nullptr;
  if (actor.collective_id() >= 0) {
    OF_ASSIGN_OR_RETURN(communicator, communicators->ForCollective(actor.collective_id(), device.device()));
  }
  const proto::KernelDef& kernel = actor.kernels(0);
  const int64_t in = kernel.inputs().count("in") ? kernel.inputs().at("in") : -1;
  const int64_t out = kernel.outputs().count("out") ? kernel.outputs().at("out") : -1;
  const int64_t in_bytes = in >= 0 ? device.registers(static_cast<int>(in)).size_bytes() : 0;
  const int64_t out_bytes = out >= 0 ? device.registers(static_cast<int>(out)).size_bytes() : 0;
  // Sequence numbers: the device's collectives in static order, iteration after iteration.
  const auto& order = device.collective_order();
  const int64_t order_length = order.size();
  const int64_t position = std::find(order.begin(), order.end(), actor.collective_id()) - order.begin();
  const std::string name = actor.name();
  const int64_t collective_id = actor.collective_id();
  // Acts per iteration: with micro-batches a per-micro-batch boxing acts once per micro-batch.
  const int64_t acts_per_iteration = actor.per_iteration() ? 1 : std::max<int64_t>(1, plan.job().micro_batches());
  const bool micro_batched = plan.job().micro_batches() > 1;
  auto options_for = [=](int64_t act) {
    CollectiveOptions options;
    options.timeout = collective_timeout;
    const int64_t iteration = act / acts_per_iteration;
    // Without micro-batches the sequence number is the device's count of collectives
    // before this one; with them the order repeats per micro-batch, so it names its place.
    options.description = micro_batched
                              ? absl::StrCat("actor '", name, "' collective ", collective_id, " order position ",
                                             position, " iteration ", iteration, " micro-batch ",
                                             act % acts_per_iteration)
                              : absl::StrCat("actor '", name, "' collective ", collective_id, " sequence ",
                                             iteration * order_length + position, " iteration ", iteration);
    return options;
  };
  const DeviceId self{device.device().node(), device.device().device()};
  if (step.sparsity().kind() != proto::Sparsity::DENSE) {
    return BindSparseBoxing(index, binding, communicators, options_for, sparse_meter);
  }

  OF_ASSIGN_OR_RETURN(const BoxingKind kind, BoxingKindFromProto(step.kind()));
  if (kind == BoxingKind::kSendRecv) {
    return ActFunction([=](int64_t iteration, const ActContext& context) {
      SendRecvArgs args;
      args.logical = logical;
      args.dtype = dtype;
      args.src = src;
      args.src_placement = src_placement.get();
      args.dst = dst;
      args.dst_placement = dst_placement.get();
      args.device = self;
      args.communicator = communicator;
      args.input = in >= 0 ? context.RegisterSlot(in, iteration) : nullptr;
      args.input_bytes = in_bytes;
      args.output = out >= 0 ? context.RegisterSlot(out, iteration) : nullptr;
      args.output_bytes = out_bytes;
      args.options = options_for(iteration);
      return RunSendRecv(args);
    });
  }
  std::shared_ptr<Placement> placement = after_send ? dst_placement : src_placement;
  const int64_t rank = placement->RankOf(self);
  if (rank < 0 || in < 0 || out < 0) {
    return absl::FailedPreconditionError(absl::StrCat("boxing step ", BoxingKindName(kind), " of '", boxing.tensor(),
                                                      "' is not wired on this device"));
  }
  BoxingStepArgs args;
  args.logical = logical;
  args.dtype = dtype;
  args.kind = kind;
  args.src = src;
  args.dst = dst;
  args.hierarchy_axis = step.hierarchy_axis();
  args.placement = placement.get();
  args.rank = rank;
  args.communicator = communicator;
  args.input_bytes = in_bytes;
  args.output_bytes = out_bytes;
  absl::StatusOr<StepCompression> compression = StepCompressionFromProto(step.compression());
  if (!compression.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("boxing step ", BoxingKindName(kind), " of '", boxing.tensor(),
                                                      "': ", compression.status().message()));
  }
  args.compression = compression->codec;
  args.cross_node_compression = compression->cross_node;
  args.error_feedback = step.compression().error_feedback();
  if (compression->two_level() && actor.collective_id() >= 0) {
    // Its group's in-node and cross-node parts; Prepare checks they fit the placement.
    OF_ASSIGN_OR_RETURN(const CommunicatorPool::TwoLevel two_level,
                        communicators->TwoLevelForCollective(actor.collective_id(), device.device()));
    args.in_node_communicator = two_level.in_node;
    args.cross_node_communicator = two_level.cross_node;
  }
  // Validated for the whole group once, here; an act only moves bytes. The placement
  // lives as long as the act function that holds the step.
  OF_ASSIGN_OR_RETURN(PreparedBoxingStep prepared, PreparedBoxingStep::Prepare(args));
  // A compressed step hands each act's bytes and error to the meter (compression_meter.h):
  // traffic() under the (in-node) codec, cross_node_traffic() under the cross-node one.
  int part = -1, cross_node_part = -1;
  if (meter != nullptr && args.compression.codec != Codec::kNone) {
    const std::string edge = absl::StrCat("tensor '", boxing.tensor(), "' (", boxing.producer_op(), " -> ",
                                          boxing.consumer_op(), ") boxing ", actor.boxing_id(), " step ",
                                          actor.boxing_step(), " (", BoxingKindName(kind), " on hierarchy axis ",
                                          step.hierarchy_axis(), ")");
    part = meter->AddPart(actor.boxing_id(), actor.boxing_step(), edge, args.compression);
    if (args.cross_node_compression.codec != Codec::kNone) {
      cross_node_part = meter->AddPart(actor.boxing_id(), actor.boxing_step(), edge, args.cross_node_compression);
    }
  }
  // Error feedback: the residual, restored from the checkpoint resumed from and saved
  // with the next ones (ResidualCheckpointing).
  std::function<absl::Status(int64_t, const float*)> save_residual;
  if (!prepared.residual().empty()) {
    const std::string key = ResidualKey(boxing.tensor(), actor.boxing_step(), BoxingKindName(kind),
                                        step.hierarchy_axis(), placement->ToString(), self);
    if (residuals.restore) residuals.restore(key, prepared.residual());
    if (residuals.save) save_residual = residuals.save(binding.device_index, key, static_cast<int64_t>(prepared.residual().size()));
  }
  // A dense warm-up (Compression.dense_warmup_iterations): the same step without its
  // codecs (the plain collective over the same group; no residual: nothing is dropped)
  // carries the first iterations. Every member switches at the same iteration.
  const int64_t warmup_iterations = step.compression().dense_warmup_iterations();
  std::shared_ptr<PreparedBoxingStep> dense_warmup;
  if (warmup_iterations > 0 && args.compression.codec != Codec::kNone) {
    BoxingStepArgs dense_args = args;
    dense_args.compression = CodecOptions();
    dense_args.cross_node_compression = CodecOptions();
    dense_args.error_feedback = false;
    dense_args.in_node_communicator = nullptr;
    dense_args.cross_node_communicator = nullptr;
    OF_ASSIGN_OR_RETURN(PreparedBoxingStep dense, PreparedBoxingStep::Prepare(dense_args));
    dense_warmup = std::make_shared<PreparedBoxingStep>(std::move(dense));
  }
  const proto::Compression compression_def = step.compression();
  return ActFunction([=](int64_t iteration, const ActContext& context) mutable {
    (void)placement;  // Keeps the placement the prepared step points to alive.
    if (save_residual && iteration % acts_per_iteration == 0) {
      OF_RETURN_IF_ERROR(save_residual(iteration / acts_per_iteration, prepared.residual().data()));
    }
    if (dense_warmup != nullptr && iteration / acts_per_iteration < warmup_iterations) {
      FlightRecorder::NoteCollectiveStart();
      return dense_warmup->Run(context.RegisterSlot(in, iteration), context.RegisterSlot(out, iteration),
                               options_for(iteration));
    }
    const CompressedTraffic before = prepared.traffic(), cross_node_before = prepared.cross_node_traffic();
    FlightRecorder::NoteCollectiveStart();
    OF_RETURN_IF_ERROR(prepared.Run(context.RegisterSlot(in, iteration), context.RegisterSlot(out, iteration),
                                    options_for(iteration), StochasticRoundingSeed(compression_def, iteration)));
    if (part >= 0) meter->Record(part, iteration / acts_per_iteration, TrafficSince(prepared.traffic(), before));
    if (cross_node_part >= 0) {
      meter->Record(cross_node_part, iteration / acts_per_iteration,
                    TrafficSince(prepared.cross_node_traffic(), cross_node_before));
    }
    return absl::OkStatus();
  });
}

}  // namespace oneflow::actors
