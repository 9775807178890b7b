#include "tools/launcher/worker_status_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"

namespace oneflow::launcher {
namespace {

// The file is little-endian by contract; the launcher runs on little-endian hosts (x86,
// arm64), which this makes explicit rather than byte-swapping every word.
static_assert(ABSL_IS_LITTLE_ENDIAN, "the worker status file is little-endian");

int64_t LittleEndianWord(const char* bytes) {
  int64_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

}  // namespace

std::vector<int64_t> NodeDeviceIndices(const proto::Plan& plan, int64_t node) {
  std::vector<int64_t> indices;
  for (int i = 0; i < plan.devices_size(); ++i) {
    if (plan.devices(i).device().node() == node) indices.push_back(i);
  }
  return indices;
}

absl::StatusOr<std::unique_ptr<WorkerStatusFile>> WorkerStatusFile::Create(
    const std::string& path, const std::vector<int64_t>& device_indices) {
  const std::string where = absl::StrCat("status file '", path, "'");
  const size_t bytes = std::max<size_t>(1, device_indices.size()) * kStatusWordsPerDevice * sizeof(int64_t);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(where, ": cannot create: ", std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat(where, ": cannot size: ", std::strerror(error)));
  }
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);  // The mapping keeps the file.
  if (mapped == MAP_FAILED) return absl::UnavailableError(absl::StrCat(where, ": cannot map: ", std::strerror(error)));
  auto file = std::unique_ptr<WorkerStatusFile>(
      new WorkerStatusFile(static_cast<int64_t*>(mapped), bytes, static_cast<int>(device_indices.size())));
  for (size_t slot = 0; slot < device_indices.size(); ++slot) {
    file->Store(static_cast<int>(slot), 0, device_indices[slot]);
  }
  return file;
}

WorkerStatusFile::~WorkerStatusFile() { munmap(words_, bytes_); }

void WorkerStatusFile::Store(int slot, int word, int64_t value) {
  if (slot < 0 || slot >= slots_) return;  // Not a device of this node: nothing to record.
  __atomic_store_n(&words_[slot * kStatusWordsPerDevice + word], value, __ATOMIC_RELEASE);
}

void WorkerStatusFile::SetCompletedCollectives(int slot, int64_t count) { Store(slot, 1, count); }
void WorkerStatusFile::SetCompletedIterations(int slot, int64_t count) { Store(slot, 2, count); }

std::vector<proto::DeviceProgress> ReadWorkerStatusFile(const std::string& path, int64_t expected_devices) {
  std::vector<proto::DeviceProgress> progress;
  std::ifstream file(path, std::ios::binary);
  if (!file || expected_devices <= 0) return progress;
  const size_t record_bytes = kStatusWordsPerDevice * sizeof(int64_t);
  std::string bytes(static_cast<size_t>(expected_devices) * record_bytes, '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(file.gcount()) < bytes.size()) return progress;
  for (int64_t d = 0; d < expected_devices; ++d) {
    const char* record = bytes.data() + d * record_bytes;
    proto::DeviceProgress& device = progress.emplace_back();
    device.set_device(LittleEndianWord(record));
    device.set_completed_collectives(LittleEndianWord(record + 8));
    device.set_completed_iterations(LittleEndianWord(record + 16));
  }
  return progress;
}

}  // namespace oneflow::launcher
