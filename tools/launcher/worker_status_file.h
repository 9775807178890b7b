// The worker's status file (the worker contract, docs/launcher.md): how far each device
// of the worker got, readable by the daemon after the worker is gone, SIGKILL included.
//
// Layout: for each device of the worker's node, in plan order (the order of
// plan.devices() restricted to the node), three little-endian int64 words:
//   [device index in plan.devices(), completed collectives, completed iterations]
// The worker creates the file at its full size and updates the words in place through a
// MAP_SHARED mapping, so every store is in the page cache the moment it is made and
// survives the process: no write or flush the worker could die before.
#ifndef TOOLS_LAUNCHER_WORKER_STATUS_FILE_H_
#define TOOLS_LAUNCHER_WORKER_STATUS_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/launcher.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher {

inline constexpr int kStatusWordsPerDevice = 3;

// Indices into plan.devices() of the devices on `node`, in plan order.
std::vector<int64_t> NodeDeviceIndices(const proto::Plan& plan, int64_t node);

// The worker's side. Counters are stored atomically (a reader never sees a torn word).
class WorkerStatusFile {
 public:
  // Creates (or truncates) `path` for `device_indices` (NodeDeviceIndices), all counters
  // 0. Errors name the file and the failing call.
  static absl::StatusOr<std::unique_ptr<WorkerStatusFile>> Create(const std::string& path,
                                                                  const std::vector<int64_t>& device_indices);
  ~WorkerStatusFile();
  WorkerStatusFile(const WorkerStatusFile&) = delete;
  WorkerStatusFile& operator=(const WorkerStatusFile&) = delete;

  // `slot` is the position in `device_indices` (the device's rank on its node).
  void SetCompletedCollectives(int slot, int64_t count);
  void SetCompletedIterations(int slot, int64_t count);

 private:
  WorkerStatusFile(int64_t* words, size_t bytes, int slots) : words_(words), bytes_(bytes), slots_(slots) {}
  void Store(int slot, int word, int64_t value);

  int64_t* words_;
  size_t bytes_;
  int slots_;
};

// The daemon's side: the progress of `expected_devices` devices. A missing file or one
// shorter than expected (the worker died before creating it) gives no progress: an empty
// list, not an error.
std::vector<proto::DeviceProgress> ReadWorkerStatusFile(const std::string& path, int64_t expected_devices);

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_WORKER_STATUS_FILE_H_
