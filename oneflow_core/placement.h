// Placement: a device type and a set of devices across nodes, with a hierarchy shape
// for N-D parallelism.
//
// Devices are kept in rank order; rank r sits at the row-major coordinate r of the
// hierarchy. Text form, accepted by Parse and produced by ToString:
//   cpu{0:0-3}               4 CPU devices of node 0, 1-D hierarchy [4]
//   cuda{0:0-3, 1:0-3}[2, 4]  2 nodes x 4 GPUs as a 2-D hierarchy
//   cpu{0:0, 0:2}            devices 0 and 2 of node 0
// The hierarchy suffix is printed only for more than one axis.
#ifndef ONEFLOW_CORE_PLACEMENT_H_
#define ONEFLOW_CORE_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/shape.h"
#include "proto/sbp.pb.h"

namespace oneflow {

enum class DeviceType { kCpu, kCuda };

// "cpu" or "cuda".
absl::string_view DeviceTypeName(DeviceType type);
absl::StatusOr<DeviceType> ParseDeviceType(absl::string_view text);

// Device `device` of node `node`, both 0-based.
struct DeviceId {
  int64_t node = 0;
  int64_t device = 0;

  // "0:1" (node:device), the form used inside a placement's braces.
  std::string ToString() const;
  friend bool operator==(const DeviceId& a, const DeviceId& b) {
    return a.node == b.node && a.device == b.device;
  }
  friend bool operator!=(const DeviceId& a, const DeviceId& b) { return !(a == b); }
  friend bool operator<(const DeviceId& a, const DeviceId& b) {
    return a.node != b.node ? a.node < b.node : a.device < b.device;
  }
};

class Placement {
 public:
  // An empty placement (no devices), only as a placeholder to assign to.
  Placement() = default;

  // Validates and builds a placement. `hierarchy` empty means 1-D ([devices.size()]).
  // Errors: no devices, a negative id, a repeated device, a hierarchy dimension < 1, or
  // a hierarchy whose product differs from the number of devices.
  static absl::StatusOr<Placement> Create(DeviceType type, std::vector<DeviceId> devices,
                                          Shape hierarchy = {});

  // All devices of nodes [0, nodes) with `devices_per_node` each, node-major.
  static absl::StatusOr<Placement> Grid(DeviceType type, int64_t nodes,
                                        int64_t devices_per_node, Shape hierarchy = {});

  // Parses the text form described at the top of this file.
  static absl::StatusOr<Placement> Parse(absl::string_view text);
  static absl::StatusOr<Placement> FromProto(const proto::Placement& proto);

  DeviceType device_type() const { return device_type_; }
  const std::vector<DeviceId>& devices() const { return devices_; }
  const Shape& hierarchy() const { return hierarchy_; }
  int64_t num_devices() const { return static_cast<int64_t>(devices_.size()); }
  const DeviceId& device(int64_t rank) const { return devices_[rank]; }

  // The hierarchy coordinate of `rank` (row-major), e.g. rank 5 of [2, 4] is {1, 1}.
  std::vector<int64_t> Coordinate(int64_t rank) const;
  // The rank at a hierarchy coordinate; the inverse of Coordinate.
  int64_t RankOf(const std::vector<int64_t>& coordinate) const;
  // The rank of `device`, or -1 when the placement does not contain it.
  int64_t RankOf(const DeviceId& device) const;

  std::string ToString() const;
  proto::Placement ToProto() const;

  friend bool operator==(const Placement& a, const Placement& b) {
    return a.device_type_ == b.device_type_ && a.devices_ == b.devices_ &&
           a.hierarchy_ == b.hierarchy_;
  }
  friend bool operator!=(const Placement& a, const Placement& b) { return !(a == b); }

 private:
  Placement(DeviceType type, std::vector<DeviceId> devices, Shape hierarchy)
      : device_type_(type), devices_(std::move(devices)), hierarchy_(std::move(hierarchy)) {}

  DeviceType device_type_ = DeviceType::kCpu;
  std::vector<DeviceId> devices_;
  Shape hierarchy_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_PLACEMENT_H_
