#include "plan/plan_format.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/shape.h"

namespace oneflow {
namespace {

struct ByteUnit {
  const char* name;
  int64_t size;
};

// Largest first, so the first unit not larger than the value is the one to use.
constexpr ByteUnit kByteUnits[] = {
    {"TiB", int64_t{1} << 40}, {"GiB", int64_t{1} << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}};

// The enum value's name without `prefix`, in lower case; "unknown(N)" for a number the
// descriptor does not have (a plan from a newer compiler).
std::string EnumText(const google::protobuf::EnumDescriptor* descriptor, int number,
                     absl::string_view prefix) {
  const google::protobuf::EnumValueDescriptor* value = descriptor->FindValueByNumber(number);
  if (value == nullptr) return absl::StrCat("unknown(", number, ")");
  absl::string_view name = value->name();
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

}  // namespace

std::string FormatBytesShort(int64_t bytes) {
  const int64_t magnitude = bytes < 0 ? -bytes : bytes;
  for (const ByteUnit& unit : kByteUnits) {
    if (magnitude >= unit.size) {
      return absl::StrFormat("%.2f %s", static_cast<double>(bytes) / unit.size, unit.name);
    }
  }
  return absl::StrCat(bytes, " B");
}

std::string FormatBytes(int64_t bytes) {
  const int64_t magnitude = bytes < 0 ? -bytes : bytes;
  if (magnitude < 1024) return absl::StrCat(bytes, " B");
  return absl::StrCat(FormatBytesShort(bytes), " (", bytes, " B)");
}

double ToGigabytesPerSecond(double bytes_per_second) { return bytes_per_second / 1e9; }

std::string FormatBandwidth(double bytes_per_second) {
  return absl::StrFormat("%g GB/s", ToGigabytesPerSecond(bytes_per_second));
}

std::string SbpText(const proto::NdSbp& nd_sbp) {
  if (nd_sbp.sbp_size() == 0) return "-";
  absl::StatusOr<NdSbp> parsed = NdSbp::FromProto(nd_sbp);
  return parsed.ok() ? parsed->ToString() : "<invalid sbp>";
}

std::string PlacementText(const proto::Placement& placement) {
  if (placement.devices_size() == 0) return "-";
  absl::StatusOr<Placement> parsed = Placement::FromProto(placement);
  return parsed.ok() ? parsed->ToString() : "<invalid placement>";
}

std::string DeviceTypeText(proto::DeviceType type) {
  return EnumText(proto::DeviceType_descriptor(), type, "DEVICE_");
}

std::string DeviceIdText(const proto::DeviceId& device) {
  return absl::StrCat(device.node(), ":", device.device());
}

std::string DTypeText(proto::DataType dtype) {
  absl::StatusOr<DType> parsed = FromProto(dtype);
  return parsed.ok() ? std::string(DTypeName(*parsed)) : "?";
}

std::string ShapeAndTypeText(const google::protobuf::RepeatedField<int64_t>& shape,
                             proto::DataType dtype) {
  return absl::StrCat(Shape(std::vector<int64_t>(shape.begin(), shape.end())).ToString(), " ",
                      DTypeText(dtype));
}

std::string ActorKindText(proto::ActorKind kind) {
  return EnumText(proto::ActorKind_descriptor(), kind, "ACTOR_");
}

std::string ThreadKindText(proto::ThreadKind kind) {
  return EnumText(proto::ThreadKind_descriptor(), kind, "THREAD_");
}

std::string CollectiveKindText(proto::CollectiveKind kind) {
  return EnumText(proto::CollectiveKind_descriptor(), kind, "");
}

std::string StepKindText(proto::BoxingStepKind kind) {
  return EnumText(proto::BoxingStepKind_descriptor(), kind, "STEP_");
}

std::string CompressionKindText(proto::Compression::Kind kind) {
  return EnumText(proto::Compression::Kind_descriptor(), kind, "");
}

std::string SparsityKindText(proto::Sparsity::Kind kind) {
  return EnumText(proto::Sparsity::Kind_descriptor(), kind, "");
}

std::vector<std::pair<std::string, const proto::NdSbp*>> SortedSbps(
    const google::protobuf::Map<std::string, proto::NdSbp>& map) {
  std::vector<std::pair<std::string, const proto::NdSbp*>> entries;
  for (const auto& [name, nd_sbp] : map) entries.emplace_back(name, &nd_sbp);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return entries;
}

std::vector<std::pair<std::string, std::string>> SortedStrings(
    const google::protobuf::Map<std::string, std::string>& map) {
  std::vector<std::pair<std::string, std::string>> entries(map.begin(), map.end());
  std::sort(entries.begin(), entries.end());
  return entries;
}

std::string SignatureText(const proto::SbpSignature& signature) {
  auto side = [](const google::protobuf::Map<std::string, proto::NdSbp>& map) {
    std::vector<std::string> parts;
    for (const auto& [name, nd_sbp] : SortedSbps(map)) {
      parts.push_back(absl::StrCat(name, ": ", SbpText(*nd_sbp)));
    }
    return parts.empty() ? std::string("-") : absl::StrJoin(parts, ", ");
  };
  return absl::StrCat(side(signature.inputs()), " -> ", side(signature.outputs()));
}

DeviceFigures ComputeDeviceFigures(const proto::DevicePlan& device) {
  DeviceFigures figures;
  // Count per enum number, then list in the enum's declaration order.
  std::vector<std::pair<int, int64_t>> counts;
  for (const proto::ActorDef& actor : device.actors()) {
    auto found = std::find_if(counts.begin(), counts.end(),
                              [&](const auto& entry) { return entry.first == actor.kind(); });
    if (found == counts.end()) {
      counts.emplace_back(actor.kind(), 1);
    } else {
      ++found->second;
    }
  }
  std::sort(counts.begin(), counts.end());
  for (const auto& [kind, count] : counts) {
    figures.actors_by_kind.emplace_back(ActorKindText(static_cast<proto::ActorKind>(kind)), count);
  }
  figures.num_actors = device.actors_size();
  figures.num_registers = device.registers_size();
  for (const proto::RegisterDef& reg : device.registers()) {
    figures.register_bytes += reg.count() * reg.size_bytes();
  }
  for (const proto::MemoryBlock& block : device.memory_blocks()) {
    if (block.persistent()) figures.persistent_bytes += block.size_bytes();
  }
  if (device.lower_bound_bytes() > 0) {
    figures.peak_to_lower_bound =
        static_cast<double>(device.peak_bytes()) / device.lower_bound_bytes();
  }
  return figures;
}

int64_t TotalBoxingBytesPerIteration(const proto::Plan& plan) {
  int64_t total = 0;
  for (const proto::BoxingDef& boxing : plan.boxings()) total += boxing.bytes_per_iter();
  return total;
}

}  // namespace oneflow
