// Writing a file so that readers see either the old contents or the new, never a part:
// plan files, calibration files, traces, flight-recorder dumps and the file rendezvous
// store all write through here.
//
// The bytes go to a temporary file in the same directory (`<path>.tmp.XXXXXX`, made by
// mkostemp: unique per call, so concurrent writers of one path never share one), which is
// fsynced, closed and renamed over `path`; then the directory is fsynced so the rename
// itself survives a crash. On any failure the temporary file is removed and `path` is
// left as it was.
#ifndef ONEFLOW_CORE_FILES_ATOMIC_WRITE_H_
#define ONEFLOW_CORE_FILES_ATOMIC_WRITE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace oneflow {

struct WriteFileOptions {
  // How errors name the file, e.g. "plan file 'out/a.plan'"; empty: "file '<path>'".
  std::string name;
  // The new file's permission bits (mkostemp makes the temporary file 0600).
  mode_t mode = 0644;
};

// Writes `bytes` to `path` atomically and durably (see above), replacing any file there.
// Errors name the file, the step and errno's text, e.g.
//   plan file 'out/a.plan': cannot create a temporary file in 'out': No such file or directory
// with NOT_FOUND for ENOENT, PERMISSION_DENIED for EACCES/EPERM and UNAVAILABLE for any
// other failure (a full disk, an I/O error: the caller may retry elsewhere).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const WriteFileOptions& options = {});

}  // namespace oneflow

#endif  // ONEFLOW_CORE_FILES_ATOMIC_WRITE_H_
