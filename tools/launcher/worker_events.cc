#include "tools/launcher/worker_events.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace oneflow::launcher {

absl::Status WorkerEventWriter::Write(const proto::JobEvent& event) {
  // The bytes of protobuf's SerializeDelimitedToFileDescriptor, but written here: that
  // function flushes in a destructor and so never reports a failed write, and a worker
  // must learn that its daemon is gone.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteVarint32(static_cast<uint32_t>(event.ByteSizeLong()));
    event.SerializeWithCachedSizes(&coded);
  }
  // One lock for all writers of the process: a worker has one events pipe.
  static std::mutex* const mutex = new std::mutex;
  std::lock_guard<std::mutex> lock(*mutex);
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t result = write(fd_, bytes.data() + written, bytes.size() - written);
    if (result < 0 && errno == EINTR) continue;
    if (result <= 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot write an event to --events_fd=", fd_, ": ", std::strerror(errno)));
    }
    written += static_cast<size_t>(result);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<proto::JobEvent>> WorkerEventParser::Next() {
  const auto* data = reinterpret_cast<const uint8_t*>(buffer_.data() + consumed_);
  const int available = static_cast<int>(std::min(pending_bytes(), size_t{1} << 30));
  google::protobuf::io::CodedInputStream input(data, available);
  uint32_t length = 0;
  // A varint is at most 5 bytes: fewer available and unterminated means "more to come".
  if (!input.ReadVarint32(&length)) {
    if (available < 5) return std::nullopt;
    return absl::DataLossError("the events pipe holds a malformed length prefix");
  }
  if (length > kMaxEventBytes) {
    return absl::DataLossError(
        absl::StrCat("the events pipe announces a ", length, "-byte event (limit ", kMaxEventBytes, ")"));
  }
  const int header = input.CurrentPosition();
  if (static_cast<size_t>(available - header) < length) return std::nullopt;
  proto::JobEvent event;
  if (!event.ParseFromArray(data + header, static_cast<int>(length))) {
    return absl::DataLossError(absl::StrCat("an event on the events pipe (", length, " bytes) does not parse"));
  }
  consumed_ += header + length;
  // Drop consumed bytes now and then, not per event (a copy per event would be quadratic).
  if (consumed_ > (1 << 16) && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return std::optional<proto::JobEvent>(std::move(event));
}

}  // namespace oneflow::launcher
