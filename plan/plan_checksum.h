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
// The device plans (nearly all of a plan's bytes) are written for the CRC by the
// checksum's own encoder, byte for byte as protobuf's deterministic serializer writes
// them, in one walk instead of protobuf's two (sizes, then bytes) and without sorting
// each kernel's argument maps on the heap; what it does not write (kernel attributes,
// unknown fields, a schema it was not written for) goes through protobuf.
#ifndef PLAN_PLAN_CHECKSUM_H_
#define PLAN_PLAN_CHECKSUM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace oneflow {

// The deterministic serialization of `plan` (maps in key order, so equal plans give
// equal bytes). INVALID_ARGUMENT when the plan is over protobuf's 2 GiB message limit.
absl::StatusOr<std::string> SerializePlanDeterministically(const proto::Plan& plan);

// The checksum `plan` should carry: CRC-32 of its serialization without the checksum.
absl::StatusOr<uint32_t> PlanChecksum(const proto::Plan& plan);

// Sets plan->checksum to PlanChecksum(*plan).
absl::Status SealPlan(proto::Plan* plan);

// OK when plan.checksum matches its contents; FAILED_PRECONDITION otherwise, e.g.
//   plan checksum 0x1234abcd does not match its contents (0x9f00e1c2): the plan was
//   damaged or edited after it was compiled
absl::Status VerifyPlanChecksum(const proto::Plan& plan);

}  // namespace oneflow

#endif  // PLAN_PLAN_CHECKSUM_H_
