#include "tools/launcher/worker_status_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <fstream>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/files/file_descriptor.h"

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

namespace {

size_t RecordBytes() { return kStatusWordsPerDevice * sizeof(int64_t); }
// The heartbeat word follows the device records (at least one record's room).
size_t HeartbeatOffset(int64_t devices) { return std::max<size_t>(1, static_cast<size_t>(devices)) * RecordBytes(); }
// Then the checkpoint wait word, the number of group records, and the records.
constexpr int kGroupWords = 5;
constexpr int64_t kMostGroupRecords = 1 << 16;  // a bound for a reader of a damaged file
size_t CheckpointWaitOffset(int64_t devices) { return HeartbeatOffset(devices) + sizeof(int64_t); }
size_t GroupCountOffset(int64_t devices) { return CheckpointWaitOffset(devices) + sizeof(int64_t); }

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerStatusFile>> WorkerStatusFile::Create(
    const std::string& path, const std::vector<int64_t>& device_indices, int heartbeat_ms,
    const std::vector<std::vector<int>>& slot_groups) {
  const std::string where = absl::StrCat("status file '", path, "'");
  const int64_t devices = static_cast<int64_t>(device_indices.size());
  size_t group_records = 0;
  for (size_t slot = 0; slot < slot_groups.size() && slot < device_indices.size(); ++slot) {
    group_records += slot_groups[slot].size();
  }
  const size_t bytes = GroupCountOffset(devices) + (1 + kGroupWords * group_records) * sizeof(int64_t);
  FileDescriptor descriptor(open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!descriptor.valid()) return absl::UnavailableError(absl::StrCat(where, ": cannot create: ", std::strerror(errno)));
  if (ftruncate(descriptor.get(), static_cast<off_t>(bytes)) != 0) {
    return absl::UnavailableError(absl::StrCat(where, ": cannot size: ", std::strerror(errno)));
  }
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor.get(), 0);
  const int error = errno;
  descriptor.Reset();  // The mapping keeps the file.
  if (mapped == MAP_FAILED) return absl::UnavailableError(absl::StrCat(where, ": cannot map: ", std::strerror(error)));
  auto file = std::unique_ptr<WorkerStatusFile>(
      new WorkerStatusFile(static_cast<int64_t*>(mapped), bytes, static_cast<int>(device_indices.size())));
  for (size_t slot = 0; slot < device_indices.size(); ++slot) {
    file->Store(static_cast<int>(slot), 0, device_indices[slot]);
    file->Store(static_cast<int>(slot), 4, -1);
  }
  file->checkpoint_wait_word_ = CheckpointWaitOffset(devices) / sizeof(int64_t);
  size_t word = GroupCountOffset(devices) / sizeof(int64_t);
  __atomic_store_n(&file->words_[word++], static_cast<int64_t>(group_records), __ATOMIC_RELEASE);
  for (size_t slot = 0; slot < slot_groups.size() && slot < device_indices.size(); ++slot) {
    for (const int group : slot_groups[slot]) {
      file->group_record_[{static_cast<int>(slot), group}] = word;
      const int64_t record[kGroupWords] = {static_cast<int64_t>(slot), group, 0, 0, -1};
      for (const int64_t value : record) __atomic_store_n(&file->words_[word++], value, __ATOMIC_RELEASE);
    }
  }
  if (heartbeat_ms > 0) {
    WorkerStatusFile* self = file.get();
    int64_t* beat = file->words_ + HeartbeatOffset(static_cast<int64_t>(device_indices.size())) / sizeof(int64_t);
    file->heartbeat_ = std::thread([self, beat, heartbeat_ms] {
      for (int64_t n = 1; !self->stop_.load(std::memory_order_relaxed); ++n) {
        __atomic_store_n(beat, n, __ATOMIC_RELEASE);
        std::this_thread::sleep_for(std::chrono::milliseconds(heartbeat_ms));
      }
    });
    // Named so its CPU time can be found (bench/diagnosis measures it).
    pthread_setname_np(file->heartbeat_.native_handle(), "of-heartbeat");
  }
  return file;
}

WorkerStatusFile::~WorkerStatusFile() {
  stop_.store(true);
  if (heartbeat_.joinable()) heartbeat_.join();
  munmap(words_, bytes_);
}

void WorkerStatusFile::Store(int slot, int word, int64_t value) {
  if (slot < 0 || slot >= slots_) return;  // Not a device of this node: nothing to record.
  __atomic_store_n(&words_[slot * kStatusWordsPerDevice + word], value, __ATOMIC_RELEASE);
}

void WorkerStatusFile::SetCompletedCollectives(int slot, int64_t count) { Store(slot, 1, count); }
void WorkerStatusFile::SetCompletedIterations(int slot, int64_t count) { Store(slot, 2, count); }
void WorkerStatusFile::SetCollectiveActivity(int slot, int64_t entered, int64_t collective_id,
                                             int64_t collective_ns) {
  Store(slot, 4, collective_id);
  Store(slot, 5, collective_ns);
  Store(slot, 3, entered);
}

void WorkerStatusFile::SetGroupActivity(int slot, int group, int64_t entered, int64_t completed,
                                        int64_t collective_id) {
  const auto found = group_record_.find({slot, group});
  if (found == group_record_.end()) return;
  int64_t* record = words_ + found->second;
  __atomic_store_n(&record[4], collective_id, __ATOMIC_RELEASE);
  __atomic_store_n(&record[3], completed, __ATOMIC_RELEASE);
  __atomic_store_n(&record[2], entered, __ATOMIC_RELEASE);
}

void WorkerStatusFile::SetCheckpointWait(int64_t since_unix_ms) {
  __atomic_store_n(&words_[checkpoint_wait_word_], since_unix_ms, __ATOMIC_RELEASE);
}

WorkerStatusSnapshot ReadWorkerStatus(const std::string& path, int64_t expected_devices) {
  WorkerStatusSnapshot snapshot;
  std::ifstream file(path, std::ios::binary);
  if (!file || expected_devices <= 0) return snapshot;
  const size_t record_bytes = RecordBytes();
  std::string bytes(HeartbeatOffset(expected_devices) + sizeof(int64_t), '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(file.gcount()) < bytes.size()) return snapshot;
  snapshot.present = true;
  for (int64_t d = 0; d < expected_devices; ++d) {
    const char* record = bytes.data() + d * record_bytes;
    proto::DeviceProgress& device = snapshot.progress.emplace_back();
    device.set_device(LittleEndianWord(record));
    device.set_completed_collectives(LittleEndianWord(record + 8));
    device.set_completed_iterations(LittleEndianWord(record + 16));
    device.set_entered_collectives(LittleEndianWord(record + 24));
    device.set_collective(LittleEndianWord(record + 32));
    device.set_collective_ns(LittleEndianWord(record + 40));
  }
  snapshot.heartbeat = LittleEndianWord(bytes.data() + HeartbeatOffset(expected_devices));
  // The checkpoint wait and the group records, when the file has them (a worker that
  // predates them wrote neither).
  char count_word[sizeof(int64_t)];
  if (!file.read(count_word, sizeof(count_word))) return snapshot;
  snapshot.checkpoint_wait_since_unix_ms = LittleEndianWord(count_word);
  if (!file.read(count_word, sizeof(count_word))) return snapshot;
  const int64_t records = LittleEndianWord(count_word);
  if (records <= 0 || records > kMostGroupRecords) return snapshot;
  std::string group_bytes(static_cast<size_t>(records) * kGroupWords * sizeof(int64_t), '\0');
  file.read(group_bytes.data(), static_cast<std::streamsize>(group_bytes.size()));
  if (static_cast<size_t>(file.gcount()) < group_bytes.size()) return snapshot;
  for (int64_t r = 0; r < records; ++r) {
    const char* record = group_bytes.data() + r * kGroupWords * sizeof(int64_t);
    const int64_t slot = LittleEndianWord(record);
    if (slot < 0 || slot >= expected_devices) continue;
    proto::GroupProgress* group = snapshot.progress[static_cast<size_t>(slot)].add_groups();
    group->set_group(LittleEndianWord(record + 8));
    group->set_entered(LittleEndianWord(record + 16));
    group->set_completed(LittleEndianWord(record + 24));
    group->set_collective(LittleEndianWord(record + 32));
  }
  return snapshot;
}

std::vector<proto::DeviceProgress> ReadWorkerStatusFile(const std::string& path, int64_t expected_devices) {
  return ReadWorkerStatus(path, expected_devices).progress;
}

void StoppedTimeAccount::Settle(Charge& charge, int64_t completed) {
  if (charge.pending_ns > 0 && completed > charge.sequence) {
    charge.settled_ns += charge.pending_ns;
    charge.pending_ns = 0;
  }
}

void StoppedTimeAccount::ChargeStopped(const std::vector<proto::DeviceProgress>& progress, int64_t elapsed_ns) {
  stopped_ns_ += elapsed_ns;
  for (const proto::DeviceProgress& device : progress) {
    Charge& charge = charges_[device.device()];
    Settle(charge, device.completed_collectives());
    if (device.entered_collectives() <= device.completed_collectives()) continue;  // computing
    charge.sequence = device.completed_collectives();
    charge.pending_ns += elapsed_ns;
  }
}

void StoppedTimeAccount::Correct(std::vector<proto::DeviceProgress>* progress) {
  for (proto::DeviceProgress& device : *progress) {
    const auto found = charges_.find(device.device());
    if (found == charges_.end()) continue;
    Settle(found->second, device.completed_collectives());
    device.set_collective_ns(std::max<int64_t>(0, device.collective_ns() - found->second.settled_ns));
  }
}

}  // namespace oneflow::launcher
