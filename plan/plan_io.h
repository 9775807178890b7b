// Reading and writing plan files: a Plan message in the protobuf binary wire format,
// nothing before or after it.
//
// Writing is deterministic (the same plan gives the same bytes, whatever order its maps
// were filled in) and atomic (the bytes go to a temporary file in the same directory,
// which is renamed over `path` only once complete), so a reader never sees a half-written
// plan and a crashed compiler leaves the previous file intact.
//
// Reading refuses anything CheckPlanForInspection refuses (so what it returns can be
// walked by id without further checks), then anything the full plan verifier refuses
// (plan/plan_verifier.h: checksum, wait cycles, memory, runtime support), so no
// caller allocates or runs a damaged or crafted plan. Every error is INVALID_ARGUMENT (NOT_FOUND for a
// missing file, PERMISSION_DENIED for an unreadable one) with a one-line message that
// starts with the file name:
//   plan file 'a.plan': cannot open: No such file or directory
//   plan file 'a.plan': the file is empty
//   plan file 'a.plan': does not parse as a plan (truncated, damaged, or not a plan file)
//   plan file 'a.plan': format_version is 7, but this build reads only version 2
//   plan file 'a.plan': inconsistent plan: device 0 (0:0) actor 2 'mm' consumes register
//                       9, which device 0 does not define
//   plan file 'a.plan': refused by the plan verifier: plan checksum 0x1234abcd does not
//                       match its contents (0x9f00e1c2): the plan was damaged or edited
//                       after it was compiled
#ifndef PLAN_PLAN_IO_H_
#define PLAN_PLAN_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/plan.pb.h"

namespace oneflow {

// Reads, parses and checks the plan at `path` (see the errors above).
absl::StatusOr<proto::Plan> ReadPlanFile(const std::string& path);

// Writes `plan` to `path` deterministically and atomically, replacing any file there
// (the new file's mode is 0644). The plan is written as given, unchecked: the compiler
// may want to look at a plan its verifier refused. Errors name the file and the failing
// system call, e.g. "plan file 'out/a.plan': cannot create a temporary file in 'out':
// No such file or directory".
absl::Status WritePlanFile(const std::string& path, const proto::Plan& plan);

// Writes `bytes`, a plan's serialization (SealAndSerializePlan in plan_checksum.h, or the
// CompileOptions::sealed_plan of a compile), to `path` as WritePlanFile writes a plan's:
// atomically, replacing any file there, with the same errors. For a plan that is already
// serialized: WritePlanFile would serialize it again.
absl::Status WriteSerializedPlanFile(const std::string& path, absl::string_view bytes);

// The exact bytes WritePlanFile writes: the deterministic serialization of `plan`.
// INVALID_ARGUMENT when the plan is over protobuf's 2 GiB message limit.
absl::StatusOr<std::string> SerializePlan(const proto::Plan& plan);

}  // namespace oneflow

#endif  // PLAN_PLAN_IO_H_
