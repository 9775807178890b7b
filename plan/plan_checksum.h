// The plan checksum: a damaged plan file is refused before anything runs.
//
// Protobuf parses most damaged byte strings into some message, and a few flipped bits
// can leave a plan that passes every structural check yet means something else (a
// register id changed into another valid one). The checksum closes that gap for
// accidents: Plan.checksum is the CRC-32 of the plan's deterministic serialization with
// the checksum field unset. CRC-32 detects every burst of up to 32 flipped bits and all
// but 2^-32 of other damage. It is no defence against a hostile writer, who can reseal;
// the plan verifier's semantic checks are (plan/plan_verifier.h).
//
// The CRC is always taken over bytes: those a reader read (a plan file, a message
// received) as they are, without encoding the parsed plan again, and for a plan in memory
// those protobuf's deterministic serializer writes for it, streamed into the CRC. Either
// way the checksum field's own bytes are left out by walking the top-level fields, so
// sealing needs no copy of the plan with the field cleared.
#ifndef PLAN_PLAN_CHECKSUM_H_
#define PLAN_PLAN_CHECKSUM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/plan.pb.h"

namespace oneflow {

// The deterministic serialization of `plan` (maps in key order, so equal plans give
// equal bytes). INVALID_ARGUMENT when the plan is over protobuf's 2 GiB message limit.
absl::StatusOr<std::string> SerializePlanDeterministically(const proto::Plan& plan);

// The checksum `plan` should carry: CRC-32 of its deterministic serialization without the
// checksum field (streamed: no buffer the plan's size).
absl::StatusOr<uint32_t> PlanChecksum(const proto::Plan& plan);

// The checksum of the plan serialized as `bytes`: CRC-32 of those bytes with every
// top-level checksum field (tag byte and four bytes of value) left out. For the bytes
// SerializePlanDeterministically writes, equal to PlanChecksum of the plan.
// INVALID_ARGUMENT when the bytes end inside a field or hold a group.
absl::StatusOr<uint32_t> SerializedPlanChecksum(absl::string_view bytes);

// Sets plan->checksum to PlanChecksum(*plan).
absl::Status SealPlan(proto::Plan* plan);

// Seals `plan` like SealPlan and returns the deterministic serialization of the sealed
// plan: the bytes a plan file holds (WritePlanFile), equal to
// SerializePlanDeterministically(*plan) afterwards. One serialization, not two: the
// checksum is the CRC of these very bytes (their checksum field left out), patched into
// them once computed. For a plan that is written; SealPlan streams and keeps no copy.
absl::StatusOr<std::string> SealAndSerializePlan(proto::Plan* plan);

// OK when plan.checksum matches its contents; FAILED_PRECONDITION otherwise, e.g.
//   plan checksum 0x1234abcd does not match its contents (0x9f00e1c2): the plan was
//   damaged or edited after it was compiled
absl::Status VerifyPlanChecksum(const proto::Plan& plan);

// The same check for `plan` parsed from `bytes` (read from a file or received): the CRC
// of those bytes, so the plan is not serialized again. FAILED_PRECONDITION, with the
// message above, when they differ or the bytes are not whole fields.
absl::Status VerifySerializedPlanChecksum(const proto::Plan& plan, absl::string_view bytes);

}  // namespace oneflow

#endif  // PLAN_PLAN_CHECKSUM_H_
