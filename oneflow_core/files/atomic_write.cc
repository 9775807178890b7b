#include "oneflow_core/files/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "oneflow_core/files/file_descriptor.h"

namespace oneflow {
namespace {

absl::Status SystemError(const WriteFileOptions& options, const std::string& path, absl::string_view step,
                         int error) {
  const std::string message = absl::StrCat(options.name.empty() ? absl::StrCat("file '", path, "'") : options.name,
                                           ": ", step, ": ", strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Returns 0, or the errno of the write that failed.
int WriteAll(int fd, absl::string_view bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    written += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const WriteFileOptions& options) {
  const std::string directory = DirectoryOf(path);
  // In the same directory, so that rename() is atomic (one filesystem).
  std::string temporary = absl::StrCat(path, ".tmp.XXXXXX");
  FileDescriptor file(mkostemp(temporary.data(), O_CLOEXEC));
  if (!file.valid()) {
    return SystemError(options, path, absl::StrCat("cannot create a temporary file in '", directory, "'"), errno);
  }
  auto fail = [&](absl::string_view step, int error) {
    file.Close();
    unlink(temporary.c_str());
    return SystemError(options, path, absl::StrCat(step, " '", temporary, "'"), error);
  };
  if (fchmod(file.get(), options.mode) != 0) return fail("cannot set the mode of", errno);
  if (const int error = WriteAll(file.get(), bytes); error != 0) return fail("cannot write", error);
  // On disk before the rename makes the file visible under its final name.
  if (fsync(file.get()) != 0) return fail("cannot flush", errno);
  if (file.Close() != 0) return fail("cannot close", errno);
  if (rename(temporary.c_str(), path.c_str()) != 0) return fail("cannot rename into place", errno);
  // The rename itself durable: without this a crash can bring back the old file (or none).
  FileDescriptor parent(open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent.valid()) return SystemError(options, path, absl::StrCat("cannot open its directory '", directory, "'"), errno);
  if (fsync(parent.get()) != 0) {
    return SystemError(options, path, absl::StrCat("cannot flush its directory '", directory, "'"), errno);
  }
  return absl::OkStatus();
}

}  // namespace oneflow
