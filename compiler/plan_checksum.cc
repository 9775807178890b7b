#include "compiler/plan_checksum.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "oneflow_core/status.h"

namespace oneflow {

absl::StatusOr<std::string> SerializePlanDeterministically(const proto::Plan& plan) {
  if (plan.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan is ", plan.ByteSizeLong(), " bytes, over protobuf's 2 GiB limit"));
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    // Maps otherwise serialize in hash order, and plans must be byte-identical.
    coded.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&coded) || coded.HadError()) {
      return absl::InternalError("protobuf failed to serialize the plan");
    }
  }  // The coded stream trims `bytes` to what was written when it goes out of scope.
  return bytes;
}

absl::StatusOr<uint32_t> PlanChecksum(const proto::Plan& plan) {
  // Serializing a copy without the field costs one more pass over the plan than
  // serializing in place would, but leaves the caller's plan untouched (it is const).
  proto::Plan unsealed = plan;
  unsealed.clear_checksum();
  OF_ASSIGN_OR_RETURN(const std::string bytes, SerializePlanDeterministically(unsealed));
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes lengths as uInt; feed large plans in pieces.
  constexpr size_t kPiece = size_t{1} << 30;
  for (size_t begin = 0; begin < bytes.size(); begin += kPiece) {
    const size_t length = std::min(kPiece, bytes.size() - begin);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + begin),
                static_cast<uInt>(length));
  }
  return static_cast<uint32_t>(crc);
}

absl::Status SealPlan(proto::Plan* plan) {
  OF_ASSIGN_OR_RETURN(const uint32_t checksum, PlanChecksum(*plan));
  plan->set_checksum(checksum);
  return absl::OkStatus();
}

absl::Status VerifyPlanChecksum(const proto::Plan& plan) {
  OF_ASSIGN_OR_RETURN(const uint32_t expected, PlanChecksum(plan));
  if (plan.checksum() == expected) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "plan checksum 0x%08x does not match its contents (0x%08x): the plan was damaged or "
      "edited after it was compiled",
      plan.checksum(), expected));
}

}  // namespace oneflow
