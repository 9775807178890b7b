#include "plan/plan_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/files/atomic_write.h"
#include "oneflow_core/files/file_descriptor.h"
#include "oneflow_core/status.h"
#include "plan/plan_check.h"

namespace oneflow {
namespace {

std::string FilePrefix(const std::string& path) { return absl::StrCat("plan file '", path, "'"); }

// An error for a failed system call, with errno's text; ENOENT and EACCES keep their
// canonical meaning so that callers can tell "no such plan" from "not allowed to read".
absl::Status SystemError(const std::string& path, absl::string_view what, int error) {
  const std::string message = absl::StrCat(FilePrefix(path), ": ", what, ": ", strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::InvalidArgumentError(message);
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  FileDescriptor file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) return SystemError(path, "cannot open", errno);
  struct stat info;
  if (fstat(file.get(), &info) != 0) return SystemError(path, "cannot stat", errno);
  // open() succeeds on a directory; say so rather than "Is a directory" from read().
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(FilePrefix(path), ": is a directory"));
  }
  // Read straight into a string of the file's size (plans run to 100s of MB); a file that
  // grows meanwhile is read to its end all the same.
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t size = 0;
  while (true) {
    if (size == bytes.size()) bytes.resize(bytes.size() + (1 << 16));
    const ssize_t n = read(file.get(), bytes.data() + size, bytes.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError(path, "cannot read", errno);
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace

absl::StatusOr<proto::Plan> ReadPlanFile(const std::string& path) {
  OF_ASSIGN_OR_RETURN(const std::string bytes, ReadWholeFile(path));
  // An empty message is a valid (empty) Plan; a clearer word for the usual cause.
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(FilePrefix(path), ": the file is empty"));
  }
  proto::Plan plan;
  if (!plan.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        FilePrefix(path), ": does not parse as a plan (truncated, damaged, or not a plan file)"));
  }
  // Damage first: a flipped bit in an id would otherwise be reported as an inconsistency
  // when the truth is that the file is damaged.
  // The CRC is of the bytes just read: the plan is not serialized again to check it.
  if (plan.format_version() == kPlanFormatVersion) {
    if (absl::Status sealed = VerifySerializedPlanChecksum(plan, bytes); !sealed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(FilePrefix(path), ": refused by the plan verifier: ", sealed.message()));
    }
  }
  const absl::Status version_and_ids = CheckPlanForInspection(plan);
  if (!version_and_ids.ok()) {
    // The version message stands alone; anything else is an inconsistency inside.
    const bool version_problem = plan.format_version() != kPlanFormatVersion;
    return absl::InvalidArgumentError(
        absl::StrCat(FilePrefix(path), ": ",
                     version_problem ? "" : "inconsistent plan: ", version_and_ids.message()));
  }
  // The rest of the one full verifier (deadlock freedom, memory, runtime support; the
  // checksum was checked above) before any caller allocates or runs anything.
  if (absl::Status verified = VerifyPlanContents(plan); !verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(FilePrefix(path), ": refused by the plan verifier: ", verified.message()));
  }
  return plan;
}

absl::StatusOr<std::string> SerializePlan(const proto::Plan& plan) {
  return SerializePlanDeterministically(plan);
}

absl::Status WritePlanFile(const std::string& path, const proto::Plan& plan) {
  absl::StatusOr<std::string> bytes = SerializePlan(plan);
  if (!bytes.ok()) return WithContext(bytes.status(), FilePrefix(path));
  return WriteSerializedPlanFile(path, *bytes);
}

absl::Status WriteSerializedPlanFile(const std::string& path, absl::string_view bytes) {
  return WriteFileAtomically(path, bytes, WriteFileOptions{FilePrefix(path)});
}

}  // namespace oneflow
