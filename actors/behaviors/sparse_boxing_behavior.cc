#include "actors/behaviors/sparse_boxing_behavior.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/flight_recorder.h"
#include "kernels/boxing/sparse_rows.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow::actors {
namespace {

enum class SparseKind { kAllGather, kReduceScatter, kAllReduce };

// The ids of a device's register as rows of the group's slice: ids inside
// [begin, begin + rows) shifted to start at 0, negative ids (none) and ids of other
// groups' rows dropped; an id outside the logical tensor is INVALID_ARGUMENT.
absl::StatusOr<RowSet> LocalRows(const void* ids, DType dtype, int64_t count, int64_t begin, int64_t rows,
                                 int64_t logical_rows, std::vector<int64_t>* scratch) {
  scratch->clear();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = dtype == DType::kI32 ? static_cast<const int32_t*>(ids)[i] : static_cast<const int64_t*>(ids)[i];
    if (id < 0) continue;
    if (id >= logical_rows) {
      return absl::InvalidArgumentError(absl::StrCat("row id ", id, " at index ", i, " is out of range; valid: 0..",
                                                     logical_rows - 1, " (negative ids mean none)"));
    }
    if (id >= begin && id < begin + rows) scratch->push_back(id - begin);
  }
  return RowSet::FromRows(*scratch, rows);
}

}  // namespace

absl::StatusOr<ActFunction> BindSparseBoxing(const PlanIndex& index, const ActorBinding& binding,
                                             CommunicatorPool* communicators,
                                             std::function<CollectiveOptions(int64_t act)> options_for,
                                             SparseMeter* meter) {
  const proto::Plan& plan = index.plan();
  const proto::ActorDef& actor = *binding.actor;
  const proto::BoxingDef& boxing = plan.boxings(static_cast<int>(actor.boxing_id()));
  const proto::BoxingStepDef& step = boxing.steps(static_cast<int>(actor.boxing_step()));
  const proto::DevicePlan& device = plan.devices(binding.device_index);
  const std::string who = absl::StrCat("row-sparse boxing ", actor.boxing_id(), " of '", boxing.tensor(), "'");
  SparseKind kind;
  switch (step.kind()) {
    case proto::STEP_ALL_GATHER:
      kind = SparseKind::kAllGather;
      break;
    case proto::STEP_REDUCE_SCATTER:
      kind = SparseKind::kReduceScatter;
      break;
    case proto::STEP_ALL_REDUCE:
      kind = SparseKind::kAllReduce;
      break;
    default:
      return absl::FailedPreconditionError(absl::StrCat(who, ": step kind ", proto::BoxingStepKind_Name(step.kind()),
                                                        " has no row-sparse form"));
  }
  const proto::KernelDef& kernel = actor.kernels(0);
  auto input_of = [&](const char* name) -> int64_t {
    auto it = kernel.inputs().find(name);
    return it == kernel.inputs().end() ? -1 : it->second;
  };
  const int64_t in = input_of("in");
  const int64_t rows_register = input_of("rows");
  const int64_t out = kernel.outputs().count("out") ? kernel.outputs().at("out") : -1;
  if (in < 0 || out < 0 || rows_register < 0) {
    return absl::FailedPreconditionError(absl::StrCat(who, " is not wired on this device (needs in, rows and out)"));
  }
  OF_ASSIGN_OR_RETURN(const proto::TensorDef* tensor, index.Tensor(boxing.tensor()));
  OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(tensor->dtype()));
  const Shape logical(std::vector<int64_t>(tensor->shape().begin(), tensor->shape().end()));
  OF_ASSIGN_OR_RETURN(Placement placement, Placement::FromProto(boxing.src_placement()));
  const DeviceId self{device.device().node(), device.device().device()};
  const int64_t rank = placement.RankOf(self);
  if (rank < 0) return absl::FailedPreconditionError(absl::StrCat(who, ": this device is not in its placement"));
  // The group's slice: the B (all-gather, all-reduce) or P (reduce-scatter) side.
  OF_ASSIGN_OR_RETURN(NdSbp whole_sbp,
                      NdSbp::FromProto(kind == SparseKind::kReduceScatter ? step.src_sbp() : step.dst_sbp()));
  OF_ASSIGN_OR_RETURN(TensorSlice whole, DeviceSlice(logical, whole_sbp, placement, rank));
  const Shape whole_shape = whole.shape();
  RowSparseArgs args;
  args.rows = whole_shape.dim(0);
  args.row_bytes = args.rows > 0 ? whole_shape.NumElements() / args.rows * SizeOf(dtype) : 0;
  if (args.row_bytes == 0) args.row_bytes = step.sparsity().row_bytes();
  args.dtype = dtype;
  OF_ASSIGN_OR_RETURN(args.communicator, communicators->ForCollective(actor.collective_id(), device.device()));
  const int64_t begin = whole.range(0).begin;
  const proto::RegisterDef& ids = device.registers(static_cast<int>(rows_register));
  OF_ASSIGN_OR_RETURN(const DType ids_dtype, FromProto(ids.dtype()));
  if (ids_dtype != DType::kI32 && ids_dtype != DType::kI64) {
    return absl::FailedPreconditionError(absl::StrCat(who, ": its rows register holds ", DTypeName(ids_dtype),
                                                      ", not i32/i64 ids"));
  }
  const int64_t id_count = ids.size_bytes() / SizeOf(ids_dtype);
  const int64_t logical_rows = logical.dim(0);
  const int64_t acts_per_iteration = actor.per_iteration() ? 1 : std::max<int64_t>(1, plan.job().micro_batches());
  auto traffic = std::make_shared<RowSparseTraffic>();
  auto scratch = std::make_shared<std::vector<int64_t>>();
  return ActFunction([=](int64_t act, const ActContext& context) -> absl::Status {
    const CollectiveOptions options = options_for(act);
    absl::StatusOr<RowSet> rows = LocalRows(context.RegisterSlot(rows_register, act), ids_dtype, id_count, begin,
                                            args.rows, logical_rows, scratch.get());
    if (!rows.ok()) {
      // The peers are waiting in this collective: fail them promptly too.
      const absl::Status error(rows.status().code(),
                               absl::StrCat(options.description, ": ", who, ": ", rows.status().message()));
      args.communicator->Abort(error);
      return error;
    }
    const RowSparseTraffic before = *traffic;
    FlightRecorder::NoteCollectiveStart();
    const void* input = context.RegisterSlot(in, act);
    void* output = context.RegisterSlot(out, act);
    switch (kind) {
      case SparseKind::kAllGather:
        OF_RETURN_IF_ERROR(SparseAllGatherRows(args, *rows, input, output, options, traffic.get()));
        break;
      case SparseKind::kReduceScatter:
        OF_RETURN_IF_ERROR(SparseReduceScatterRows(args, *rows, static_cast<const float*>(input),
                                                   static_cast<float*>(output), options, traffic.get()));
        break;
      case SparseKind::kAllReduce:
        OF_RETURN_IF_ERROR(SparseAllReduceRows(args, *rows, static_cast<const float*>(input),
                                               static_cast<float*>(output), options, traffic.get()));
        break;
    }
    if (meter != nullptr) meter->Record(act / acts_per_iteration, SparseTrafficSince(*traffic, before));
    return absl::OkStatus();
  });
}

}  // namespace oneflow::actors
