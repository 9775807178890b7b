// sbp_layout: shows how one logical tensor is laid out over a placement under an N-D
// SBP, and checks the project's main seam: a variable initialized per device from the
// logical-index RNG holds exactly the values of the same variable built on one device.
//
//   sbp_layout --shape='[6, 5]' --placement='cpu{0:0-1, 1:0-1}[2, 2]' --sbp='[S(0), S(1)]'
//
// For each device it prints the hierarchy coordinate, the slice of the logical tensor,
// the physical shape and bytes, and (with --print_values) the values it generated.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/random.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"
#include "oneflow_core/status.h"
#include "oneflow_core/tensor_slice.h"

ABSL_FLAG(std::string, shape, "[6, 5]", "Logical shape of the tensor, e.g. [6, 5].");
ABSL_FLAG(std::string, placement, "cpu{0:0-1, 1:0-1}[2, 2]",
          "Devices and hierarchy, e.g. cpu{0:0-3} or cpu{0:0-1, 1:0-1}[2, 2].");
ABSL_FLAG(std::string, sbp, "[S(0), S(1)]", "One SBP per hierarchy axis, e.g. [S(0), B].");
ABSL_FLAG(uint64_t, seed, 7, "Seed of the normal initializer.");
ABSL_FLAG(bool, print_values, true, "Print each device's generated values.");

namespace oneflow {
namespace {

std::string FormatValues(const std::vector<float>& values, const Shape& shape) {
  const int64_t row = shape.rank() == 0 ? 1 : shape.dim(shape.rank() - 1);
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (row > 0 && i % row == 0) absl::StrAppend(&text, "\n      ");
    absl::StrAppend(&text, absl::StrFormat("%7.3f", values[i]));
  }
  return text;
}

absl::Status Run() {
  OF_ASSIGN_OR_RETURN(const Shape logical, Shape::Parse(absl::GetFlag(FLAGS_shape)));
  OF_ASSIGN_OR_RETURN(const Placement placement,
                      Placement::Parse(absl::GetFlag(FLAGS_placement)));
  OF_ASSIGN_OR_RETURN(const NdSbp nd_sbp, NdSbp::Parse(absl::GetFlag(FLAGS_sbp)));
  OF_RETURN_IF_ERROR(WithContext(CheckNdSbpFits(logical, nd_sbp, placement.hierarchy()),
                                 absl::StrCat("--sbp='", absl::GetFlag(FLAGS_sbp), "'")));
  const LogicalRandom random(absl::GetFlag(FLAGS_seed));

  std::printf("tensor %s f32 on %s as %s\n", logical.ToString().c_str(),
              placement.ToString().c_str(), nd_sbp.ToString().c_str());
  // The single-device reference: the whole logical tensor.
  std::vector<float> whole(logical.NumElements());
  FillNormal(logical, TensorSlice::Whole(logical), random, 0.0f, 1.0f, whole.data());

  std::vector<int64_t> holders(logical.NumElements(), 0);
  int64_t mismatches = 0;
  for (int64_t rank = 0; rank < placement.num_devices(); ++rank) {
    OF_ASSIGN_OR_RETURN(const TensorSlice slice, DeviceSlice(logical, nd_sbp, placement, rank));
    std::vector<float> local(slice.NumElements());
    FillNormal(logical, slice, random, 0.0f, 1.0f, local.data());
    ForEachContiguousRun(logical, slice, [&](int64_t at, int64_t offset, int64_t length) {
      for (int64_t i = 0; i < length; ++i) {
        ++holders[offset + i];
        mismatches += local[at + i] != whole[offset + i];
      }
    });
    std::printf("  rank %lld  device %s  coordinate (%s)  slice %s  shape %s  %lld bytes%s\n",
                static_cast<long long>(rank), placement.device(rank).ToString().c_str(),
                absl::StrJoin(placement.Coordinate(rank), ", ").c_str(),
                slice.ToString().c_str(), slice.shape().ToString().c_str(),
                static_cast<long long>(slice.NumElements() * sizeof(float)),
                absl::GetFlag(FLAGS_print_values) ? FormatValues(local, slice.shape()).c_str()
                                                  : "");
  }
  int64_t min_holders = holders.empty() ? 0 : holders[0];
  int64_t max_holders = min_holders;
  for (int64_t h : holders) {
    min_holders = std::min(min_holders, h);
    max_holders = std::max(max_holders, h);
  }
  std::printf("check: every logical element is held by %lld..%lld devices; %lld of %lld values "
              "differ from the single-device tensor\n",
              static_cast<long long>(min_holders), static_cast<long long>(max_holders),
              static_cast<long long>(mismatches), static_cast<long long>(logical.NumElements()));
  if (mismatches != 0) {
    return absl::InternalError("device values differ from the single-device reference");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Shows a tensor's per-device slices under an N-D SBP.");
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "sbp_layout: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
