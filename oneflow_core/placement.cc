#include "oneflow_core/placement.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "oneflow_core/status.h"

namespace oneflow {
namespace {

constexpr absl::string_view kPlacementForm =
    "expected e.g. cpu{0:0-3} or cuda{0:0-3, 1:0-3}[2, 4]";

absl::Status BadPlacement(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot parse placement '", text, "': ", why, "; ", kPlacementForm));
}

bool ParseNonNegative(absl::string_view text, int64_t* value) {
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(text), value) && *value >= 0;
}

}  // namespace

absl::string_view DeviceTypeName(DeviceType type) {
  return type == DeviceType::kCpu ? "cpu" : "cuda";
}

absl::StatusOr<DeviceType> ParseDeviceType(absl::string_view text) {
  if (text == "cpu") return DeviceType::kCpu;
  if (text == "cuda") return DeviceType::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device type '", text, "'; valid: cpu, cuda"));
}

std::string DeviceId::ToString() const { return absl::StrCat(node, ":", device); }

absl::StatusOr<Placement> Placement::Create(DeviceType type, std::vector<DeviceId> devices,
                                            Shape hierarchy) {
  if (devices.empty()) return absl::InvalidArgumentError("a placement needs at least one device");
  std::set<DeviceId> seen;
  for (const DeviceId& device : devices) {
    if (device.node < 0 || device.device < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device.ToString(), " has a negative node or device index"));
    }
    if (!seen.insert(device).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device.ToString(), " appears twice in the placement"));
    }
  }
  if (hierarchy.rank() == 0) hierarchy = Shape{static_cast<int64_t>(devices.size())};
  for (int64_t dim : hierarchy.dims()) {
    if (dim < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hierarchy ", hierarchy.ToString(), " has a dimension < 1; every axis needs a device"));
    }
  }
  if (hierarchy.NumElements() != static_cast<int64_t>(devices.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hierarchy ", hierarchy.ToString(), " has ", hierarchy.NumElements(),
        " positions but the placement has ", devices.size(),
        " devices; the product of the hierarchy must equal the number of devices"));
  }
  return Placement(type, std::move(devices), std::move(hierarchy));
}

absl::StatusOr<Placement> Placement::Grid(DeviceType type, int64_t nodes,
                                          int64_t devices_per_node, Shape hierarchy) {
  if (nodes < 1 || devices_per_node < 1) {
    return absl::InvalidArgumentError(absl::StrCat("a grid of ", nodes, " nodes x ",
                                                   devices_per_node,
                                                   " devices is empty; both must be >= 1"));
  }
  std::vector<DeviceId> devices;
  for (int64_t node = 0; node < nodes; ++node) {
    for (int64_t device = 0; device < devices_per_node; ++device) {
      devices.push_back(DeviceId{node, device});
    }
  }
  return Create(type, std::move(devices), std::move(hierarchy));
}

absl::StatusOr<Placement> Placement::Parse(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  const size_t open = rest.find('{');
  const size_t close = rest.find('}');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close < open) {
    return BadPlacement(text, "missing {devices}");
  }
  absl::StatusOr<DeviceType> type = ParseDeviceType(absl::StripAsciiWhitespace(rest.substr(0, open)));
  if (!type.ok()) return BadPlacement(text, type.status().message());

  std::vector<DeviceId> devices;
  for (absl::string_view entry : absl::StrSplit(rest.substr(open + 1, close - open - 1), ',')) {
    std::vector<absl::string_view> node_and_devices = absl::StrSplit(entry, ':');
    int64_t node = 0;
    if (node_and_devices.size() != 2 || !ParseNonNegative(node_and_devices[0], &node)) {
      return BadPlacement(text, absl::StrCat("'", absl::StripAsciiWhitespace(entry),
                                             "' is not node:device or node:first-last"));
    }
    std::vector<absl::string_view> bounds = absl::StrSplit(node_and_devices[1], '-');
    int64_t first = 0;
    int64_t last = 0;
    if (bounds.size() > 2 || !ParseNonNegative(bounds[0], &first) ||
        !ParseNonNegative(bounds.back(), &last) || last < first) {
      return BadPlacement(text, absl::StrCat("'", absl::StripAsciiWhitespace(entry),
                                             "' is not node:device or node:first-last"));
    }
    for (int64_t device = first; device <= last; ++device) devices.push_back({node, device});
  }

  Shape hierarchy;
  absl::string_view suffix = absl::StripAsciiWhitespace(rest.substr(close + 1));
  if (!suffix.empty()) {
    absl::StatusOr<Shape> parsed = Shape::Parse(suffix);
    if (!parsed.ok()) return BadPlacement(text, parsed.status().message());
    hierarchy = *std::move(parsed);
  }
  absl::StatusOr<Placement> placement = Create(*type, std::move(devices), std::move(hierarchy));
  if (!placement.ok()) {
    return WithContext(placement.status(), absl::StrCat("placement '", text, "'"));
  }
  return placement;
}

absl::StatusOr<Placement> Placement::FromProto(const proto::Placement& proto) {
  std::vector<DeviceId> devices;
  for (const proto::DeviceId& device : proto.devices()) {
    devices.push_back(DeviceId{device.node(), device.device()});
  }
  const DeviceType type =
      proto.device_type() == proto::DEVICE_CUDA ? DeviceType::kCuda : DeviceType::kCpu;
  return Create(type, std::move(devices),
                Shape(std::vector<int64_t>(proto.hierarchy().begin(), proto.hierarchy().end())));
}

std::vector<int64_t> Placement::Coordinate(int64_t rank) const {
  std::vector<int64_t> coordinate(hierarchy_.rank());
  for (int64_t axis = hierarchy_.rank() - 1; axis >= 0; --axis) {
    coordinate[axis] = rank % hierarchy_.dim(axis);
    rank /= hierarchy_.dim(axis);
  }
  return coordinate;
}

int64_t Placement::RankOf(const std::vector<int64_t>& coordinate) const {
  int64_t rank = 0;
  for (int64_t axis = 0; axis < hierarchy_.rank(); ++axis) {
    rank = rank * hierarchy_.dim(axis) + coordinate[axis];
  }
  return rank;
}

int64_t Placement::RankOf(const DeviceId& device) const {
  for (int64_t rank = 0; rank < num_devices(); ++rank) {
    if (devices_[rank] == device) return rank;
  }
  return -1;
}

std::string Placement::ToString() const {
  // Consecutive devices of one node print as a range: {0:0-3, 1:0-3}.
  std::vector<std::string> entries;
  for (size_t i = 0; i < devices_.size();) {
    size_t j = i;
    while (j + 1 < devices_.size() && devices_[j + 1].node == devices_[i].node &&
           devices_[j + 1].device == devices_[j].device + 1) {
      ++j;
    }
    entries.push_back(j == i ? devices_[i].ToString()
                             : absl::StrCat(devices_[i].ToString(), "-", devices_[j].device));
    i = j + 1;
  }
  std::string text =
      absl::StrCat(DeviceTypeName(device_type_), "{", absl::StrJoin(entries, ", "), "}");
  if (hierarchy_.rank() > 1) absl::StrAppend(&text, hierarchy_.ToString());
  return text;
}

proto::Placement Placement::ToProto() const {
  proto::Placement proto;
  proto.set_device_type(device_type_ == DeviceType::kCuda ? proto::DEVICE_CUDA
                                                          : proto::DEVICE_CPU);
  for (const DeviceId& device : devices_) {
    proto::DeviceId* out = proto.add_devices();
    out->set_node(device.node);
    out->set_device(device.device);
  }
  for (int64_t dim : hierarchy_.dims()) proto.add_hierarchy(dim);
  return proto;
}

}  // namespace oneflow
