#include "kernels/device_backend.h"

#include "absl/strings/str_cat.h"

namespace oneflow {

absl::Status CheckThreadsPerDevice(int64_t threads, absl::string_view what) {
  if (threads >= 1 && threads <= kMaxThreadsPerDevice) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, "=", threads, " is not a valid thread count: a CPU device runs its kernels on 1 to ",
      kMaxThreadsPerDevice, " threads (its compute thread plus helpers)"));
}

}  // namespace oneflow
