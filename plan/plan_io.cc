#include "plan/plan_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "plan/plan_checksum.h"
#include "plan/plan_verifier.h"
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

// Closes the descriptor on every path out of a function.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  // Closes now, reporting the error that close() may carry for buffered writes.
  int Close() {
    const int result = close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  FileDescriptor file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) return SystemError(path, "cannot open", errno);
  struct stat info;
  if (fstat(file.get(), &info) != 0) return SystemError(path, "cannot stat", errno);
  // open() succeeds on a directory; say so rather than "Is a directory" from read().
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(FilePrefix(path), ": is a directory"));
  }
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(file.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError(path, "cannot read", errno);
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

// Returns 0, or the errno of the write that failed.
int WriteAll(int fd, const std::string& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    written += static_cast<size_t>(n);
  }
  return 0;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
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
  if (plan.format_version() == kPlanFormatVersion) {
    if (absl::Status sealed = VerifyPlanChecksum(plan); !sealed.ok()) {
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
  // The one full verifier (checksum, deadlock freedom, memory, runtime support) before
  // any caller allocates or runs anything.
  if (absl::Status verified = VerifyPlan(plan); !verified.ok()) {
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
  const std::string directory = DirectoryOf(path);
  // In the same directory, so that rename() is atomic (one filesystem).
  std::string temporary = absl::StrCat(path, ".tmp.XXXXXX");
  FileDescriptor file(mkostemp(temporary.data(), O_CLOEXEC));
  if (file.get() < 0) {
    return SystemError(path, absl::StrCat("cannot create a temporary file in '", directory, "'"),
                       errno);
  }
  auto fail = [&](absl::string_view what, int error) {
    unlink(temporary.c_str());
    return SystemError(path, absl::StrCat(what, " '", temporary, "'"), error);
  };
  // mkstemp makes the file 0600; a plan is no secret and other users run it.
  if (fchmod(file.get(), 0644) != 0) return fail("cannot set the mode of", errno);
  if (const int error = WriteAll(file.get(), *bytes); error != 0) {
    return fail("cannot write", error);
  }
  // Flush to disk before the rename makes the file visible under its final name.
  if (fsync(file.get()) != 0) return fail("cannot flush", errno);
  if (file.Close() != 0) return fail("cannot close", errno);
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    return fail("cannot rename into place", errno);
  }
  // Make the rename itself durable; failing here leaves a complete file either way.
  FileDescriptor parent(open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.get() >= 0) fsync(parent.get());
  return absl::OkStatus();
}

}  // namespace oneflow
