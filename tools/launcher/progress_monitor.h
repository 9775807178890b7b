// What `oneflow launch` concludes from the daemons' heartbeats (JobEvent.Heartbeat,
// docs/diagnosis.md): a rank that stopped progressing while others wait on it (a hang),
// and a rank the others consistently wait for (a slow rank).
//
// Each heartbeat gives, per device, the collectives it completed and entered (entered =
// completed + 1 while it is inside a collective), the last collective's id, and the time
// it spent in collective acts; and per node, how long the worker's own heartbeat word
// has not moved and whether the process is stopped.
//
//   hang: device W has been inside call s of one of its groups (s counts the device's
//         calls of that group, which every member numbers alike: DeviceProgress.groups)
//         for >= hang_seconds; a member M of that group has not entered s and has made
//         no progress for max(hang_seconds, 4 x its usual gap between progress) -- or its
//         worker is stopped or silent -- while W waits. The device with the fewest
//         completed collectives is looked at first: its missing members are not
//         themselves waiting in an earlier collective, so they are where the job stopped.
//         When every member entered s and a member's worker is stopped or silent, that
//         member is named. A member whose worker reports its training waiting for a
//         checkpoint (Heartbeat.worker_checkpoint_wait_ms: a slow write holds it) is not
//         stuck until that wait reaches max(60 s, hang_seconds): the checkpoint writer has
//         timeouts of its own. Heartbeats without group counts (a worker that predates them)
//         are judged by the device-wide counts instead, which number a call alike on
//         every member only with one communication stream and symmetric groups.
//   slow: over the last slow_window_seconds, every member of a group completed >= 4
//         collectives, and some members spent so much more of their time outside
//         collectives (computing, or stopped: the daemons leave the time a worker was
//         stopped inside a collective out of collective_ns) than the rest -- >=
//         slow_factor times as much, and by >= 30% of the time -- that the rest spent >=
//         half their time waiting in collectives; confirmed on slow_confirmations
//         evaluations a second apart (a window too short to judge neither confirms nor
//         breaks the streak).
#ifndef TOOLS_LAUNCHER_PROGRESS_MONITOR_H_
#define TOOLS_LAUNCHER_PROGRESS_MONITOR_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "plan/collective_groups.h"
#include "proto/launcher.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::launcher {

struct MonitorOptions {
  // 0: no hang detection.
  double hang_seconds = 5;
  // 0: no slow-rank detection.
  double slow_factor = 3;
  double slow_window_seconds = 5;
  int slow_confirmations = 3;
};

struct HangFinding {
  std::string text;              // One line for people, starting "hang: ".
  // The call's number within its group (DeviceProgress.groups), or the device-wide one
  // for heartbeats without group counts (`in_group` false).
  int64_t sequence = -1;
  bool in_group = false;
  int64_t collective = -1;
  std::vector<int64_t> suspects;  // plan device indices
  std::vector<int64_t> arrived;
};

class ProgressMonitor {
 public:
  // `plan` must outlive the monitor.
  ProgressMonitor(const proto::Plan& plan, MonitorOptions options);

  // A heartbeat of node `node`, received at `now` (the launch's clock).
  void Observe(int64_t node, const proto::JobEvent::Heartbeat& heartbeat, absl::Time now);

  // The hang at `now`, if any (the same one again on later calls).
  std::optional<HangFinding> CheckHang(absl::Time now) const;
  // Slow-rank warnings newly confirmed at `now` (each device is named once per run).
  // Evaluates at most once a second.
  std::vector<std::string> CheckSlow(absl::Time now);

 private:
  struct Sample {
    int64_t unix_ms = 0;
    int64_t completed = 0;
    int64_t collective_ns = 0;  // without time stopped inside collectives (the daemon's StoppedTimeAccount)
    bool stopped = false;       // the worker was stopped when the daemon sampled it
  };
  struct GroupState {
    int64_t entered = 0, completed = 0, collective = -1;
  };
  struct Device {
    bool seen = false;
    int64_t node = 0;
    int64_t completed = 0, entered = 0, collective = -1;
    std::map<int64_t, GroupState> groups;  // by CollectiveGroups index; empty: no group counts
    absl::Time changed = absl::InfinitePast();
    absl::Duration usual_gap = absl::ZeroDuration();  // EWMA of the gaps between changes
    int64_t changes = 0;
    std::deque<Sample> samples;
  };
  struct Node {
    int64_t silent_ms = 0;
    bool stopped = false;
    int64_t checkpoint_wait_ms = 0;
  };

  std::string DeviceName(int64_t device) const;
  std::string GroupName(int64_t collective) const;
  bool NodeUnresponsive(int64_t node) const;
  // How long the node's training has waited for a checkpoint (0: it does not).
  int64_t CheckpointWaitMs(int64_t node) const;
  std::optional<HangFinding> HangAt(int64_t waiter, absl::Time now) const;
  // The call a waiter is inside: collective `collective`, number `sequence` within
  // `group` (< 0: device-wide numbers).
  struct Call {
    int64_t collective = -1;
    int64_t sequence = -1;
    int64_t group = -1;
  };
  std::optional<HangFinding> HangIn(const Call& call, absl::Time now) const;
  // How many calls of `call`'s numbering device `d` entered (completed).
  int64_t EnteredOf(int64_t d, const Call& call) const;
  int64_t CompletedOf(int64_t d, const Call& call) const;

  const proto::Plan& plan_;
  const MonitorOptions options_;
  std::map<std::pair<int64_t, int64_t>, int64_t> index_of_;  // (node, device) -> plan index
  std::vector<std::vector<int64_t>> groups_;                  // distinct collective groups, members sorted
  const CollectiveGroups collective_groups_;                  // the groups DeviceProgress.groups index
  std::vector<Device> devices_;
  std::map<int64_t, Node> nodes_;
  absl::Time last_slow_check_ = absl::InfinitePast();
  std::map<int64_t, int> slow_streak_;
  std::set<int64_t> slow_named_;
};

}  // namespace oneflow::launcher

#endif  // TOOLS_LAUNCHER_PROGRESS_MONITOR_H_
