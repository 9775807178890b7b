// The worker's status file (the worker contract, docs/launcher.md): how far each device
// of the worker got, readable by the daemon after the worker is gone, SIGKILL included.
//
// Layout: for each device of the worker's node, in plan order (the order of
// plan.devices() restricted to the node), six little-endian int64 words:
//   [device index in plan.devices(), completed collectives, completed iterations,
//    entered collectives, id of the last collective entered (-1: none),
//    nanoseconds spent in collective acts]
// then one word, the worker's heartbeat: a counter a thread of the worker bumps every
// 100 ms while the file is open, so the daemon can tell a worker that is not running at
// all (SIGSTOP) from one waiting in a collective (DeviceProgress in proto/launcher.proto);
// then one word, since when (Unix ms) the worker's training has been waiting for a
// checkpoint (0: it is not; CheckpointOptions.on_training_wait);
// then the group records: one word, their number R, and R records of five words
//   [slot, group (plan/collective_groups.h), entered in the group, completed in the
//    group, id of the group's last collective entered (-1: none)]
// one per (device, group it is a member of): a group's calls get the same numbers on
// every member, the device-wide counts do not (several communication streams). A file
// without them (R absent or 0) gives no DeviceProgress.groups.
// The worker creates the file at its full size and updates the words in place through a
// MAP_SHARED mapping, so every store is in the page cache the moment it is made and
// survives the process: no write or flush the worker could die before.
#ifndef TOOLS_LAUNCHER_WORKER_STATUS_FILE_H_
#define TOOLS_LAUNCHER_WORKER_STATUS_FILE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/launcher.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher {

inline constexpr int kStatusWordsPerDevice = 6;

// Indices into plan.devices() of the devices on `node`, in plan order.
std::vector<int64_t> NodeDeviceIndices(const proto::Plan& plan, int64_t node);

// The worker's side. Counters are stored atomically (a reader never sees a torn word).
class WorkerStatusFile {
 public:
  // Creates (or truncates) `path` for `device_indices` (NodeDeviceIndices), all counters
  // 0. Errors name the file and the failing call. Starts the heartbeat thread (every
  // `heartbeat_ms`; 0: none).
  // `slot_groups[slot]`: the groups of the device in `slot` (CollectiveGroups.of_device),
  // one record each; empty: no group records.
  static absl::StatusOr<std::unique_ptr<WorkerStatusFile>> Create(const std::string& path,
                                                                  const std::vector<int64_t>& device_indices,
                                                                  int heartbeat_ms = 100,
                                                                  const std::vector<std::vector<int>>& slot_groups = {});
  ~WorkerStatusFile();
  WorkerStatusFile(const WorkerStatusFile&) = delete;
  WorkerStatusFile& operator=(const WorkerStatusFile&) = delete;

  // `slot` is the position in `device_indices` (the device's rank on its node).
  void SetCompletedCollectives(int slot, int64_t count);
  void SetCompletedIterations(int slot, int64_t count);
  // From the flight recorder: the collectives entered, the last one's id, and the time
  // spent in collective acts.
  void SetCollectiveActivity(int slot, int64_t entered, int64_t collective_id, int64_t collective_ns);
  // The same within one group of the device: nothing when Create was given no record for
  // (slot, group).
  void SetGroupActivity(int slot, int group, int64_t entered, int64_t completed, int64_t collective_id);
  // Since when (Unix ms) training waits for a checkpoint; 0: it does not.
  void SetCheckpointWait(int64_t since_unix_ms);

 private:
  WorkerStatusFile(int64_t* words, size_t bytes, int slots) : words_(words), bytes_(bytes), slots_(slots) {}
  void Store(int slot, int word, int64_t value);

  int64_t* words_;
  size_t bytes_;
  int slots_;
  size_t checkpoint_wait_word_ = 0;
  // (slot, group) -> the word its record starts at.
  std::map<std::pair<int, int>, size_t> group_record_;
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

// What the daemon reads while the worker runs: every device's progress and the
// heartbeat word; `present` false when the file is missing or short.
struct WorkerStatusSnapshot {
  bool present = false;
  std::vector<proto::DeviceProgress> progress;
  int64_t heartbeat = 0;
  int64_t checkpoint_wait_since_unix_ms = 0;  // 0: not waiting (or a file without the word)
};
WorkerStatusSnapshot ReadWorkerStatus(const std::string& path, int64_t expected_devices);

// The daemon's side: the progress of `expected_devices` devices. A missing file or one
// shorter than expected (the worker died before creating it) gives no progress: an empty
// list, not an error.
std::vector<proto::DeviceProgress> ReadWorkerStatusFile(const std::string& path, int64_t expected_devices);

// The daemon's correction of DeviceProgress.collective_ns for a worker stopped part of
// the time (SIGSTOP/SIGCONT, a debugger). A device stopped inside a collective act is not
// waiting for its peers, they wait for it; left in collective_ns, that time makes a rank
// stopped 90% of the time look like one waiting in collectives as much as the others
// (docs/diagnosis.md, "Slow ranks"). The daemon samples the worker's state at random
// intervals of ~20 ms; a sample that finds it stopped charges the time since the
// previous sample to the act each device is inside (entered > completed), and once that
// act completed (its whole time is in collective_ns then), the charge is subtracted.
// Time stopped outside collectives needs no correction: it already counts as compute.
// Not thread-safe; the owner locks.
class StoppedTimeAccount {
 public:
  // A sample that found the worker stopped, `elapsed_ns` after the previous sample, with
  // the status file's `progress` at that moment.
  void ChargeStopped(const std::vector<proto::DeviceProgress>& progress, int64_t elapsed_ns);
  // Subtracts from each device's collective_ns the charges of its completed acts.
  void Correct(std::vector<proto::DeviceProgress>* progress);
  // All the stopped time sampled so far (inside collectives or not).
  int64_t stopped_ns() const { return stopped_ns_; }

 private:
  struct Charge {
    int64_t sequence = -1;  // the act the pending charge belongs to
    int64_t pending_ns = 0;
    int64_t settled_ns = 0;  // charges of completed acts
  };
  static void Settle(Charge& charge, int64_t completed);

  std::map<int64_t, Charge> charges_;  // by plan device index
  int64_t stopped_ns_ = 0;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_WORKER_STATUS_FILE_H_
