// Every per-axis step kind, run by each device on its own thread over in-process
// communicators, against sbp/boxing_simulator on the same distributed tensor.
//
// The cases are generated: for each placement ([2], [3], [4], [2, 2], [2, 3], and [1, 2],
// [3, 1] for identity), each uneven shape, each hierarchy axis, each SBP change the kind
// makes, and each SBP of the other axis (B, P, S(i)). The simulator decides whether the
// step is valid there (it fails, or its result does not hold the logical tensor); a
// valid step must give exactly the simulator's buffers on every device (so the same sums
// in the same order, zeros where the simulator has zeros) and hold the logical tensor; an
// invalid one must fail with INVALID_ARGUMENT on every device, without hanging. Every
// case runs in f32 and in i32 (reductions included): i32 must be valid exactly where f32
// is, and no case may end any other way.
#include "kernels/boxing/boxing_step.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "kernels/boxing/step_testing.h"
#include "oneflow_core/comm/in_process/rank_threads.h"
#include "oneflow_core/tensor_slice.h"
#include "sbp/boxing_simulator.h"

namespace oneflow {
namespace {

struct Case {
  Shape shape;
  BoxingStep step;
};

std::string CaseName(const Case& test, const Placement& placement) {
  return absl::StrCat(BoxingStepToString(test.step), " of ", test.shape.ToString(), " on ",
                      placement.ToString());
}

// The SBP changes on the step's axis that `kind` makes, for a tensor of `rank` axes.
std::vector<std::pair<Sbp, Sbp>> Changes(BoxingKind kind, int64_t rank) {
  const Sbp b = Sbp::Broadcast();
  const Sbp p = Sbp::Partial();
  std::vector<std::pair<Sbp, Sbp>> changes;
  for (int64_t i = 0; i < rank; ++i) {
    const Sbp s = Sbp::Split(i);
    if (kind == BoxingKind::kReduceScatter) changes.push_back({p, s});
    if (kind == BoxingKind::kAllGather) changes.push_back({s, b});
    if (kind == BoxingKind::kLocalSlice) changes.push_back({b, s});
    if (kind == BoxingKind::kSplitToPartial) changes.push_back({s, p});
    for (int64_t j = 0; j < rank; ++j) {
      if (kind == BoxingKind::kAllToAll && i != j) changes.push_back({s, Sbp::Split(j)});
    }
  }
  if (kind == BoxingKind::kAllReduce) changes.push_back({p, b});
  if (kind == BoxingKind::kLocalPartial) changes.push_back({b, p});
  if (kind == BoxingKind::kIdentity) {
    changes = {{p, b}, {b, p}};
    if (rank > 0) {
      changes.push_back({Sbp::Split(0), b});
      changes.push_back({b, Sbp::Split(rank - 1)});
      changes.push_back({p, Sbp::Split(0)});
    }
  }
  return changes;
}

std::vector<Case> CasesFor(const Placement& placement, const Shape& shape) {
  const std::vector<BoxingKind> kinds = {BoxingKind::kAllReduce,      BoxingKind::kReduceScatter,
                                         BoxingKind::kAllGather,      BoxingKind::kAllToAll,
                                         BoxingKind::kLocalSlice,     BoxingKind::kLocalPartial,
                                         BoxingKind::kSplitToPartial, BoxingKind::kIdentity};
  std::vector<Sbp> others = {Sbp::Broadcast(), Sbp::Partial()};
  for (int64_t i = 0; i < shape.rank(); ++i) others.push_back(Sbp::Split(i));
  const int64_t axes = placement.hierarchy().rank();
  std::vector<Case> cases;
  for (int64_t axis = 0; axis < axes; ++axis) {
    for (BoxingKind kind : kinds) {
      if ((kind == BoxingKind::kIdentity) != (placement.hierarchy().dim(axis) == 1)) continue;
      for (const auto& [from, to] : Changes(kind, shape.rank())) {
        for (const Sbp& other : axes == 1 ? std::vector<Sbp>{Sbp::Broadcast()} : others) {
          std::vector<Sbp> src(axes, other);
          std::vector<Sbp> dst(axes, other);
          src[axis] = from;
          dst[axis] = to;
          BoxingStep step;
          step.kind = kind;
          step.hierarchy_axis = axis;
          step.src = NdSbp(src);
          step.dst = NdSbp(dst);
          cases.push_back({shape, step});
        }
      }
    }
  }
  return cases;
}

bool HasPartial(const NdSbp& nd_sbp) {
  for (const Sbp& sbp : nd_sbp.sbps()) {
    if (sbp.is_partial()) return true;
  }
  return false;
}

// What one case did on every device: the simulator and the runtime agree that the step
// is valid (same buffers, the logical tensor held) or invalid (INVALID_ARGUMENT on every
// device); kWrong is anything else, a test failure.
enum class Outcome { kValid, kInvalid, kWrong };

struct CaseResult {
  Outcome outcome;
  // kInvalid: rank 0's error; kWrong: what went wrong, naming the case.
  std::string reason;
};

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kValid:
      return "valid";
    case Outcome::kInvalid:
      return "invalid";
    case Outcome::kWrong:
      return "wrong";
  }
  return "?";
}

// Runs the case on every device with `dtype` (f32 or i32). The simulator's partial parts
// are not integers, so an i32 run takes them rounded: they no longer add up to the
// logical values, so the result is checked against the simulator run on the same rounded
// input, and whether it holds the logical tensor only where the source has no P. Validity
// does not depend on the values: it is the f32 simulation's.
CaseResult RunCase(const Case& test, const Placement& placement, DType dtype) {
  const std::string name = absl::StrCat(CaseName(test, placement), " ", DTypeName(dtype));
  auto wrong = [&](const auto&... what) {
    return CaseResult{Outcome::kWrong, absl::StrCat(name, ": ", what...)};
  };
  const std::vector<float> values = LogicalValues(test.shape, 5);
  const absl::StatusOr<SimulatedTensor> before =
      Distribute(test.shape, values, test.step.src, placement, /*seed=*/11);
  if (!before.ok()) return wrong("Distribute: ", before.status().ToString());
  SimulatedTensor simulated = *before;
  const bool valid = SimulateStep(test.shape, test.step, placement, placement, &simulated).ok() &&
                     CheckHoldsLogical(test.shape, values, simulated, placement, 1e-3f).ok();
  SimulatedTensor input = *before;
  if (dtype == DType::kI32) {
    for (std::vector<float>& buffer : input.buffers) {
      for (float& value : buffer) value = std::nearbyint(value);
    }
  }
  SimulatedTensor expected = input;
  if (valid) {
    const absl::Status status =
        SimulateStep(test.shape, test.step, placement, placement, &expected);
    if (!status.ok()) return wrong("the simulator fails on the rounded input: ", status.ToString());
  }

  const int64_t devices = placement.num_devices();
  const int64_t element_size = SizeOf(dtype);
  std::vector<std::vector<char>> inputs(devices);
  std::vector<std::vector<char>> outputs(devices);
  for (int64_t rank = 0; rank < devices; ++rank) {
    const std::vector<float>& buffer = input.buffers[rank];
    inputs[rank].resize(buffer.size() * element_size);
    for (size_t i = 0; i < buffer.size(); ++i) {
      if (dtype == DType::kF32) {
        reinterpret_cast<float*>(inputs[rank].data())[i] = buffer[i];
      } else {
        reinterpret_cast<int32_t*>(inputs[rank].data())[i] = static_cast<int32_t>(buffer[i]);
      }
    }
    const TensorSlice slice = *DeviceSlice(test.shape, test.step.dst, placement, rank);
    outputs[rank].assign(slice.NumElements() * element_size, static_cast<char>(0x7f));
  }
  const AxisCommunicators communicators(placement, test.step.hierarchy_axis);
  std::vector<absl::Status> statuses(devices);
  RunOnRankThreads(devices, [&](int64_t rank) {
    BoxingStepArgs args;
    args.logical = test.shape;
    args.dtype = dtype;
    args.kind = test.step.kind;
    args.src = test.step.src;
    args.dst = test.step.dst;
    args.hierarchy_axis = test.step.hierarchy_axis;
    args.placement = &placement;
    args.rank = rank;
    args.communicator = communicators.For(rank);
    args.input = inputs[rank].data();
    args.input_bytes = static_cast<int64_t>(inputs[rank].size());
    args.output = outputs[rank].data();
    args.output_bytes = static_cast<int64_t>(outputs[rank].size());
    args.options.timeout = absl::Seconds(20);
    args.options.description = absl::StrCat(name, " rank ", rank);
    statuses[rank] = RunBoxingStep(args);
  });

  if (!valid) {
    for (int64_t rank = 0; rank < devices; ++rank) {
      if (statuses[rank].code() != absl::StatusCode::kInvalidArgument) {
        return wrong("the simulator rejects the step; rank ", rank, " returned ",
                     statuses[rank].ToString());
      }
    }
    return {Outcome::kInvalid, std::string(statuses[0].message())};
  }
  SimulatedTensor produced{test.step.dst, {}};
  for (int64_t rank = 0; rank < devices; ++rank) {
    if (!statuses[rank].ok()) return wrong("rank ", rank, ": ", statuses[rank].ToString());
    std::vector<float> got(outputs[rank].size() / element_size);
    for (size_t i = 0; i < got.size(); ++i) {
      got[i] = dtype == DType::kF32
                   ? reinterpret_cast<const float*>(outputs[rank].data())[i]
                   : static_cast<float>(reinterpret_cast<const int32_t*>(outputs[rank].data())[i]);
    }
    if (got != expected.buffers[rank]) {
      return wrong("rank ", rank, ": the buffer differs from the simulator's");
    }
    produced.buffers.push_back(std::move(got));
  }
  if (dtype == DType::kF32 || !HasPartial(test.step.src)) {
    // The devices hold the logical tensor (P: summed over the group).
    const absl::Status holds = CheckHoldsLogical(test.shape, values, produced, placement, 1e-3f);
    if (!holds.ok()) return wrong(holds.ToString());
  }
  return {Outcome::kValid, ""};
}

class BoxingStepTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoxingStepTest, EveryKindMatchesTheSimulator) {
  const Placement placement = *Placement::Parse(GetParam());
  // Uneven everywhere: 5 and 7 rows/columns over 2, 3 and 4 devices, a rank-3 tensor whose
  // middle axis splits (pieces not contiguous), fewer rows than devices (empty slices),
  // and a scalar. Every case runs in f32 and in i32: every kind supports both.
  std::map<std::string, int64_t> tally;  // "<kind> <dtype> valid|invalid|wrong" -> cases
  std::vector<std::string> wrong;
  std::set<std::string> invalid_reasons;  // what follows the step's name
  for (const Shape& shape : {Shape{5, 7}, Shape{3, 5, 4}, Shape{2, 9}, Shape{}}) {
    for (const Case& test : CasesFor(placement, shape)) {
      for (DType dtype : {DType::kF32, DType::kI32}) {
        const CaseResult result = RunCase(test, placement, dtype);
        ++tally[absl::StrCat(BoxingKindName(test.step.kind), " ", DTypeName(dtype), " ",
                             OutcomeName(result.outcome))];
        if (result.outcome == Outcome::kWrong) wrong.push_back(result.reason);
        if (result.outcome == Outcome::kInvalid) {
          const size_t rank = result.reason.find(", rank ");
          const size_t colon = result.reason.find(": ", rank);
          invalid_reasons.insert(result.reason.substr(colon == std::string::npos ? 0 : colon + 2));
        }
      }
    }
  }
  std::string summary;
  for (const auto& [key, count] : tally) absl::StrAppend(&summary, key, ": ", count, "; ");
  std::cout << placement.ToString() << ": " << summary << "\n";
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " cases went wrong, e.g.\n"
                             << absl::StrJoin(wrong.begin(),
                                              wrong.begin() + std::min<size_t>(wrong.size(), 5),
                                              "\n");
  // An invalid case is one whose group cannot hold what a member needs, nothing else.
  for (const std::string& reason : invalid_reasons) {
    EXPECT_TRUE(absl::EndsWith(reason, "; the step is not valid at this place of the N-D SBP"))
        << reason;
  }
  bool has_unit_axis = false;
  for (int64_t dim : placement.hierarchy().dims()) has_unit_axis = has_unit_axis || dim == 1;
  std::vector<std::string> kinds = {"all_reduce",      "reduce_scatter", "all_gather",
                                    "all_to_all",      "local_slice",    "local_partial",
                                    "split_to_partial"};
  if (has_unit_axis) kinds.push_back("identity");
  for (const std::string& kind : kinds) {
    // Every kind that applies here ran valid cases, and i32 (reductions included) is
    // valid exactly where f32 is.
    EXPECT_GT(tally[absl::StrCat(kind, " f32 valid")], 0) << kind;
    EXPECT_EQ(tally[absl::StrCat(kind, " i32 valid")], tally[absl::StrCat(kind, " f32 valid")])
        << kind;
    EXPECT_EQ(tally[absl::StrCat(kind, " i32 invalid")], tally[absl::StrCat(kind, " f32 invalid")])
        << kind;
  }
}

INSTANTIATE_TEST_SUITE_P(Placements, BoxingStepTest,
                         ::testing::Values("cpu{0:0-1}", "cpu{0:0-2}", "cpu{0:0-3}",
                                           "cpu{0:0-1, 1:0-1}[2, 2]", "cpu{0:0-2, 1:0-2}[2, 3]",
                                           "cpu{0:0-1}[1, 2]", "cpu{0:0-2}[3, 1]"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param) {
                             if (std::isalnum(static_cast<unsigned char>(c))) name += c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace oneflow
