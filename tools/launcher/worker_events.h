// The worker's events pipe (the worker contract, docs/launcher.md): the worker writes
// JobEvent messages to the file descriptor --events_fd, each preceded by its length as a
// varint (protobuf's "delimited" format); the daemon reads them and forwards them on the
// Submit stream.
//
// The worker writes `metrics` once per iteration, `log` if it likes, and at most one
// `failed` (with a reason) or `finished`, then exits 0 (finished) or 1 (failed). It
// leaves job_id and node_rank empty; the daemon fills them.
#ifndef TOOLS_LAUNCHER_WORKER_EVENTS_H_
#define TOOLS_LAUNCHER_WORKER_EVENTS_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/launcher.pb.h"

namespace oneflow::launcher {

// The worker's side: writes events to the pipe. Thread-safe (one write call per event,
// under a lock, so events of several threads never interleave).
class WorkerEventWriter {
 public:
  explicit WorkerEventWriter(int fd) : fd_(fd) {}
  // UNAVAILABLE when the daemon's end is gone (the worker should then stop).
  absl::Status Write(const proto::JobEvent& event);

 private:
  int fd_;
};

// The daemon's side: bytes in as they come off the pipe, whole events out.
class WorkerEventParser {
 public:
  // The largest event accepted; a longer length prefix means the worker wrote garbage.
  static constexpr size_t kMaxEventBytes = 16 << 20;

  void Append(absl::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }
  // The next complete event; nullopt when more bytes are needed; DATA_LOSS when the bytes
  // are not delimited JobEvents (the parser is then stuck: stop reading events).
  absl::StatusOr<std::optional<proto::JobEvent>> Next();
  // Bytes of an event begun but not finished (the worker died mid-write when > 0 at EOF).
  size_t pending_bytes() const { return buffer_.size() - consumed_; }

 private:
  std::string buffer_;
  size_t consumed_ = 0;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_WORKER_EVENTS_H_
