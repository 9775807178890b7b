// How plan values are spelled for people, shared by the text, JSON and DOT renderers of
// `oneflow inspect` so that all three say the same thing the same way.
//
// Every function here is total: a value that does not convert (an unset enum, an SBP
// with no kind) is spelled with a visible placeholder instead of failing, because the
// renderers run after CheckPlanForInspection has already refused plans that would need
// one. Spellings follow oneflow_core: SBPs "S(0)" / "[S(0), B]", placements
// "cpu{0:0-1}", dtypes "f32", shapes "[64, 32]".
#ifndef PLAN_PLAN_FORMAT_H_
#define PLAN_PLAN_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/map.h"
#include "proto/plan.pb.h"

namespace oneflow {

// Bytes for people, exact count in brackets past 1 KiB: "512 B", "16.00 KiB (16384 B)",
// "1.50 MiB (1572864 B)". Binary units (KiB = 1024 B) up to TiB.
std::string FormatBytes(int64_t bytes);
// The same without the exact count, for graph labels: "512 B", "16.00 KiB".
std::string FormatBytesShort(int64_t bytes);

// Link bandwidths are stored in bytes per second and shown in GB/s (10^9 B/s, the unit
// link datasheets use): 1.25e10 -> 12.5.
double ToGigabytesPerSecond(double bytes_per_second);
// "12.5 GB/s", up to 6 significant digits.
std::string FormatBandwidth(double bytes_per_second);

// "S(0)", "[S(0), B]"; "-" for an NdSbp with no entries (an unset field).
std::string SbpText(const proto::NdSbp& nd_sbp);
// "cpu{0:0-1}", "cuda{0:0-3, 1:0-3}[2, 4]"; "-" for a placement with no devices.
std::string PlacementText(const proto::Placement& placement);
// "cpu", "cuda".
std::string DeviceTypeText(proto::DeviceType type);
// "0:1" (node:device).
std::string DeviceIdText(const proto::DeviceId& device);
// "f32"; "?" for DTYPE_INVALID or a value this build does not know.
std::string DTypeText(proto::DataType dtype);
// "[64, 32] f32", the shape and dtype of a tensor or register.
std::string ShapeAndTypeText(const google::protobuf::RepeatedField<int64_t>& shape,
                             proto::DataType dtype);

// Enum values in lower case without their prefix: "data_source", "all_reduce",
// "fp8_e4m3", "rows". A number this build does not know is spelled "unknown(7)".
std::string ActorKindText(proto::ActorKind kind);
std::string ThreadKindText(proto::ThreadKind kind);
std::string CollectiveKindText(proto::CollectiveKind kind);
std::string StepKindText(proto::BoxingStepKind kind);
std::string CompressionKindText(proto::Compression::Kind kind);
std::string SparsityKindText(proto::Sparsity::Kind kind);

// Map entries sorted by key: proto maps have no order, and output must be stable.
std::vector<std::pair<std::string, const proto::NdSbp*>> SortedSbps(
    const google::protobuf::Map<std::string, proto::NdSbp>& map);
std::vector<std::pair<std::string, std::string>> SortedStrings(
    const google::protobuf::Map<std::string, std::string>& map);

// An SBP signature by argument name, inputs then outputs, each sorted by name:
// "a: S(0), b: B -> out: S(0)". An empty side is spelled "-".
std::string SignatureText(const proto::SbpSignature& signature);

// What `oneflow inspect` reports per device, computed once for every format.
struct DeviceFigures {
  // Actor counts per kind, in ActorKind order, kinds with no actor left out.
  std::vector<std::pair<std::string, int64_t>> actors_by_kind;
  int64_t num_actors = 0;
  int64_t num_registers = 0;
  // Sum over registers of count * size_bytes: the memory the registers pin.
  int64_t register_bytes = 0;
  // Bytes of the persistent memory blocks (variables and optimizer state, kept across
  // iterations): what ZeRO divides (docs/zero.md).
  int64_t persistent_bytes = 0;
  // peak_bytes / lower_bound_bytes; absent when the lower bound is not positive.
  std::optional<double> peak_to_lower_bound;
};
DeviceFigures ComputeDeviceFigures(const proto::DevicePlan& device);

// Sum of bytes_per_iter over the plan's boxings.
int64_t TotalBoxingBytesPerIteration(const proto::Plan& plan);

}  // namespace oneflow

#endif  // PLAN_PLAN_FORMAT_H_
