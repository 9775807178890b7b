// RunBoxingStep: validation of a per-axis step for the whole group, and the local kinds.
// The collective kinds are in collective_steps.cc.
#include "kernels/boxing/boxing_step.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/boxing/group_step.h"
#include "kernels/boxing/slice_boxes.h"
#include "kernels/boxing/step_support.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace boxing_internal {

absl::Status GroupStep::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", message));
}

CollectiveOptions StepOptions(const GroupStep& step, const BoxingStepArgs& args) {
  CollectiveOptions options = args.options;
  options.reduce_op = step.reduce_op;
  return options;
}

}  // namespace boxing_internal

namespace {

using boxing_internal::GroupStep;

bool IsCollectiveKind(BoxingKind kind) {
  return kind == BoxingKind::kAllReduce || kind == BoxingKind::kReduceScatter ||
         kind == BoxingKind::kAllGather || kind == BoxingKind::kAllToAll;
}

// Whether from -> to on the step's axis is the change `kind` makes; if not, what it makes.
std::string ChangeMismatch(BoxingKind kind, const Sbp& from, const Sbp& to, int64_t extent) {
  bool ok = false;
  const char* expected = "";
  switch (kind) {
    case BoxingKind::kAllReduce:
      ok = from.is_partial() && to.is_broadcast(), expected = "P -> B";
      break;
    case BoxingKind::kReduceScatter:
      ok = from.is_partial() && to.is_split(), expected = "P -> S(i)";
      break;
    case BoxingKind::kAllGather:
      ok = from.is_split() && to.is_broadcast(), expected = "S(i) -> B";
      break;
    case BoxingKind::kAllToAll:
      ok = from.is_split() && to.is_split() && from.axis() != to.axis(),
      expected = "S(i) -> S(j) with i != j";
      break;
    case BoxingKind::kLocalSlice:
      ok = from.is_broadcast() && to.is_split(), expected = "B -> S(i)";
      break;
    case BoxingKind::kLocalPartial:
      ok = from.is_broadcast() && to.is_partial(), expected = "B -> P";
      break;
    case BoxingKind::kSplitToPartial:
      ok = from.is_split() && to.is_partial(), expected = "S(i) -> P";
      break;
    case BoxingKind::kIdentity:
      ok = extent == 1, expected = "any change on a hierarchy axis of one device";
      break;
    case BoxingKind::kSendRecv:
      break;
  }
  if (ok) return "";
  return absl::StrCat(BoxingKindName(kind), " makes ", expected, ", not ", from.ToString(), " -> ",
                      to.ToString());
}

// Every member's slices must allow the step; checked for the whole group so that all
// members agree and none issues a collective the others refuse.
absl::Status CheckGroupCanRun(const GroupStep& step, const std::vector<int64_t>& member_ranks) {
  auto member = [&](int64_t g) {
    return absl::StrCat("rank ", member_ranks[g], " (coordinate ", g, " on hierarchy axis ",
                        step.axis, ")");
  };
  const char* invalid_here = "; the step is not valid at this place of the N-D SBP";
  const int64_t n = step.size();
  for (int64_t h = 0; h < n; ++h) {
    switch (step.kind) {
      case BoxingKind::kIdentity:
      case BoxingKind::kLocalSlice:
      case BoxingKind::kLocalPartial:
        if (!Contains(step.src[h], step.dst[h])) {
          return step.Error(absl::StrCat(member(h), " must keep ", step.dst[h].ToString(),
                                         " but holds ", step.src[h].ToString(), invalid_here));
        }
        break;
      case BoxingKind::kAllReduce:
      case BoxingKind::kReduceScatter:
        for (int64_t g = 0; g < n; ++g) {
          if (!Contains(step.src[g], step.dst[h])) {
            return step.Error(absl::StrCat(member(h), " needs the sum of ", step.dst[h].ToString(),
                                           " but ", member(g), " holds ", step.src[g].ToString(),
                                           invalid_here));
          }
        }
        break;
      case BoxingKind::kAllGather:
      case BoxingKind::kAllToAll:
      case BoxingKind::kSplitToPartial: {
        // The members' source slices are disjoint (they differ on a split axis), so the
        // group holds a destination slice exactly when the pieces add up to it.
        int64_t held = 0;
        for (int64_t g = 0; g < n; ++g) held += Intersect(step.src[g], step.dst[h]).NumElements();
        if (held != step.dst[h].NumElements()) {
          return step.Error(absl::StrCat(member(h), " needs ", step.dst[h].ToString(), " (",
                                         step.dst[h].NumElements(), " elements), its group holds ",
                                         held, " of them", invalid_here));
        }
        break;
      }
      case BoxingKind::kSendRecv:
        break;
    }
  }
  return absl::OkStatus();
}

// Sets step->src and step->dst to the slices of the members of the group that holds
// `coordinate` (the devices that differ from it only on the step's axis), in order of
// their coordinate on the axis; returns their ranks in the placement.
absl::StatusOr<std::vector<int64_t>> FillGroupSlices(const BoxingStepArgs& args,
                                                     std::vector<int64_t> coordinate,
                                                     GroupStep* step) {
  const Placement& placement = *args.placement;
  std::vector<int64_t> ranks;
  step->src.clear();
  step->dst.clear();
  for (int64_t g = 0; g < placement.hierarchy().dim(step->axis); ++g) {
    coordinate[step->axis] = g;
    ranks.push_back(placement.RankOf(coordinate));
    OF_ASSIGN_OR_RETURN(TensorSlice src, DeviceSlice(args.logical, args.src, placement, ranks[g]));
    OF_ASSIGN_OR_RETURN(TensorSlice dst, DeviceSlice(args.logical, args.dst, placement, ranks[g]));
    step->src.push_back(std::move(src));
    step->dst.push_back(std::move(dst));
  }
  return ranks;
}

absl::StatusOr<GroupStep> Validate(const BoxingStepArgs& args) {
  if (args.placement == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("boxing step ", BoxingKindName(args.kind), ": no placement"));
  }
  const Placement& placement = *args.placement;
  GroupStep step;
  step.axis = args.hierarchy_axis;
  step.name =
      absl::StrCat("boxing step ", BoxingKindName(args.kind), " axis ", args.hierarchy_axis, " of ",
                   DTypeName(args.dtype), " ", args.logical.ToString(), ": ", args.src.ToString(),
                   " -> ", args.dst.ToString(), " on ", placement.ToString(), ", rank ", args.rank);
  step.kind = args.kind;
  if (step.kind == BoxingKind::kSendRecv) {
    return step.Error("send_recv moves data between placements; run it with RunSendRecv");
  }
  if (args.rank < 0 || args.rank >= placement.num_devices()) {
    return step.Error(absl::StrCat("rank ", args.rank, " is outside the placement's ",
                                   placement.num_devices(), " devices"));
  }
  const Shape& hierarchy = placement.hierarchy();
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(args.logical, args.src, hierarchy),
                                 absl::StrCat(step.name, ": source")));
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(args.logical, args.dst, hierarchy),
                                 absl::StrCat(step.name, ": destination")));
  if (step.axis < 0 || step.axis >= hierarchy.rank()) {
    return step.Error(absl::StrCat("hierarchy axis ", step.axis, " is outside the hierarchy ",
                                   hierarchy.ToString()));
  }
  for (int64_t other = 0; other < hierarchy.rank(); ++other) {
    if (other != step.axis && args.src.at(other) != args.dst.at(other)) {
      return step.Error(absl::StrCat("the SBP changes on hierarchy axis ", other,
                                     " too; a step changes only its own axis"));
    }
  }
  const Sbp& from = args.src.at(step.axis);
  const Sbp& to = args.dst.at(step.axis);
  const std::string mismatch = ChangeMismatch(step.kind, from, to, hierarchy.dim(step.axis));
  if (!mismatch.empty()) return step.Error(mismatch);
  if (from.is_partial()) step.reduce_op = from.reduce_op();
  // The plan verifier asks the same question, so a verified plan does not fail here.
  OF_RETURN_IF_ERROR(WithContext(CheckStepSupported(step.kind, args.dtype, from, to), step.name));
  step.element_size = SizeOf(args.dtype);

  std::vector<int64_t> coordinate = placement.Coordinate(args.rank);
  step.me = coordinate[step.axis];
  OF_RETURN_IF_ERROR(FillGroupSlices(args, coordinate, &step).status());

  const int64_t input_bytes = step.src[step.me].NumElements() * step.element_size;
  const int64_t output_bytes = step.dst[step.me].NumElements() * step.element_size;
  if (args.input_bytes != input_bytes || args.output_bytes != output_bytes) {
    return step.Error(
        absl::StrCat("the buffers hold ", args.input_bytes, " and ", args.output_bytes,
                     " bytes; the slices ", step.src[step.me].ToString(), " and ",
                     step.dst[step.me].ToString(), " need ", input_bytes, " and ", output_bytes));
  }
  // A two-level step runs over its in-node and cross-node communicators instead
  // (CheckCompression checks them).
  if (IsCollectiveKind(step.kind) && !args.two_level()) {
    if (args.communicator == nullptr) return step.Error("a collective step needs a communicator");
    if (args.communicator->size() != step.size() || args.communicator->rank() != step.me) {
      return step.Error(absl::StrCat("the communicator is ", args.communicator->Name(),
                                     "; this device's group along hierarchy axis ", step.axis,
                                     " has ", step.size(), " devices and it is number ", step.me));
    }
  }
  // Every group of the placement, not only this device's: with uneven splits a step can
  // be valid in some groups and not in others, and all devices must agree that it fails.
  // Every device checks the groups in the same order, so all report the same error.
  GroupStep group = step;
  for (int64_t leader = 0; leader < placement.num_devices(); ++leader) {
    const std::vector<int64_t> leader_coordinate = placement.Coordinate(leader);
    if (leader_coordinate[step.axis] != 0) continue;
    OF_ASSIGN_OR_RETURN(const std::vector<int64_t> ranks,
                        FillGroupSlices(args, leader_coordinate, &group));
    OF_RETURN_IF_ERROR(CheckGroupCanRun(group, ranks));
  }
  return step;
}

}  // namespace

absl::StatusOr<PreparedBoxingStep> PreparedBoxingStep::Prepare(const BoxingStepArgs& args) {
  OF_ASSIGN_OR_RETURN(GroupStep step, Validate(args));
  OF_RETURN_IF_ERROR(boxing_internal::CheckCompression(step, args));
  OF_ASSIGN_OR_RETURN(const int64_t residual_elements, boxing_internal::ResidualElements(step, args));
  step.residual.assign(residual_elements, 0.0f);
  PreparedBoxingStep prepared;
  prepared.step_ = std::make_shared<GroupStep>(std::move(step));
  prepared.args_ = args;
  prepared.args_.input = nullptr;
  prepared.args_.output = nullptr;
  return prepared;
}

absl::Status PreparedBoxingStep::Run(const void* input, void* output, CollectiveOptions options,
                                     uint64_t rounding_seed) {
  const GroupStep& step = *step_;
  BoxingStepArgs& args = args_;
  args.compression.seed = rounding_seed;
  // A stream of its own for the cross-node level: the in-node and the cross-node ranks
  // are both small numbers, and the same seed would give two stages the same draws.
  args.cross_node_compression.seed = MixSeed(rounding_seed, -1);
  OF_RETURN_IF_ERROR(WithContext(CheckBuffer("input", input, args.input_bytes), step.name));
  OF_RETURN_IF_ERROR(WithContext(CheckBuffer("output", output, args.output_bytes), step.name));
  args.input = input;
  args.output = output;
  args.options = std::move(options);
  const TensorSlice& src = step.src[step.me];
  const TensorSlice& dst = step.dst[step.me];
  switch (step.kind) {
    case BoxingKind::kIdentity:
    case BoxingKind::kLocalSlice:  // keep the part of one's slice that dst assigns
      PackBox(src, args.input, dst, step.element_size, args.output);
      return absl::OkStatus();
    case BoxingKind::kLocalPartial:  // coordinate 0 holds the value, the others zeros
      if (step.me == 0) {
        PackBox(src, args.input, dst, step.element_size, args.output);
      } else if (args.output_bytes > 0) {
        std::memset(args.output, 0, args.output_bytes);
      }
      return absl::OkStatus();
    case BoxingKind::kSplitToPartial: {  // one's slice in place, zeros elsewhere
      if (args.output_bytes > 0) std::memset(args.output, 0, args.output_bytes);
      const TensorSlice box = Intersect(src, dst);
      if (box.NumElements() > 0) {
        CopyBox(src, args.input, box, dst, step.element_size, args.output);
      }
      return absl::OkStatus();
    }
    case BoxingKind::kAllReduce:
      return boxing_internal::RunAllReduce(step, args);
    case BoxingKind::kReduceScatter:
      return boxing_internal::RunReduceScatter(step, args);
    case BoxingKind::kAllGather:
      return boxing_internal::RunAllGather(step, args);
    case BoxingKind::kAllToAll:
      return boxing_internal::RunAllToAll(step, args);
    case BoxingKind::kSendRecv:
      break;
  }
  return absl::InternalError(absl::StrCat(step.name, ": unhandled kind"));
}

const CompressedTraffic& PreparedBoxingStep::traffic() const { return step_->traffic; }

const CompressedTraffic& PreparedBoxingStep::cross_node_traffic() const { return step_->cross_node_traffic; }

absl::Span<float> PreparedBoxingStep::residual() const { return absl::MakeSpan(step_->residual); }

absl::Status RunBoxingStep(const BoxingStepArgs& args) {
  OF_ASSIGN_OR_RETURN(PreparedBoxingStep prepared, PreparedBoxingStep::Prepare(args));
  return prepared.Run(args.input, args.output, args.options, args.compression.seed);
}

}  // namespace oneflow
