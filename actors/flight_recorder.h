// The flight recorder: every local device's last collectives, kept in a fixed ring so a
// hung or failed run can say what each rank was doing (`oneflow diagnose`,
// docs/diagnosis.md).
//
// One entry per act of a collective actor (those in the device's collective order;
// transfers between placements are outside it and not recorded): two sequence numbers
//   sequence:       among all the device's acts, the order they began in on this device;
//   group_sequence: among the device's acts of the same group (device list), which every
//                   member of the group numbers alike for the same call. The device-wide
//                   number does not: with several communication streams the streams'
//                   acts interleave differently on each member, and members with other
//                   groups of their own (pipeline stages) count those too,
// its collective id, iteration, and three times on the steady clock
//   enqueue: the engine called the act (its inputs were there and its turn had come),
//   start:   the act began its collective step (after its own setup: a bucket packs
//            its members first), stamped by NoteCollectiveStart(),
//   end:     the act returned, ok or failed.
// The collective's static facts (kind, group, members, bytes) come from the plan once,
// so recording allocates nothing and takes only its device's lock, uncontended unless
// the device has several communication streams (one collective thread each, taking turns
// at the ring); a dump from another thread (the error path, a SIGUSR1 watcher) reads the
// entries through atomics without it, skipping an entry that is being overwritten while
// it reads.
//
//   FlightRecorder recorder(plan, /*node=*/0);
//   options.flight_recorder = &recorder;      // TrainOptions: wraps collective acts
//   ... on failure: recorder.WriteDump("flight-node0.json", error.message());
#ifndef ACTORS_FLIGHT_RECORDER_H_
#define ACTORS_FLIGHT_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "actors/engine.h"
#include "plan/collective_groups.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

class FlightRecorder {
 public:
  static constexpr int64_t kDefaultCapacity = 256;

  // Records the collectives of the devices of `node` (< 0: every node) of `plan`, which
  // must outlive the recorder; the last `capacity` (>= 1) entries per device are kept.
  FlightRecorder(const proto::Plan& plan, int64_t node, int64_t capacity = kDefaultCapacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // `act` itself unless `binding` is a collective actor of a recorded device; then `act`
  // between Begin and End.
  ActFunction Wrap(const ActorBinding& binding, ActFunction act);

  // Records the start of device `device_index`'s next collective act (its sequence
  // number is the number of acts recorded on the device before, its group_sequence the
  // number of the device's acts of the collective's group before) and returns that
  // sequence number; End closes it. The device's collective threads (one per
  // communication stream) call these.
  int64_t Begin(int device_index, int64_t collective_id, int64_t iteration);
  void End(int device_index, bool ok);
  // Closes entry `sequence` (what Begin returned) of the device: with several
  // communication streams a device's acts overlap, so each closes its own (End closes
  // the last begun). Nothing when the entry was overwritten meanwhile.
  void Close(int device_index, int64_t sequence, bool ok);

  // Told after every Begin and End, on the device's collective thread. The worker copies
  // it into its status file, from which the daemons' heartbeats tell `oneflow launch` who
  // waits for whom (docs/diagnosis.md). Set before the run; unset: nothing is called.
  struct Progress {
    int device_index = 0;
    int64_t entered = 0;         // the device's collectives entered so far, all groups
    int64_t collective_id = -1;  // the last one entered
    int64_t collective_ns = 0;   // spent in collective acts (completed ones)
    // The group (plan/collective_groups.h) of the act begun or ended, the device's acts
    // of it entered and completed so far (a group's acts are issued by one stream, one at
    // a time: entered - completed is 0 or 1) and the group's last collective entered.
    // -1: the act's collective is not in the plan.
    int group = -1;
    int64_t group_entered = 0;
    int64_t group_completed = 0;
    int64_t group_collective = -1;
  };
  using ProgressSink = std::function<void(const Progress& progress)>;
  void SetProgressSink(ProgressSink sink) { sink_ = std::move(sink); }

  // Stamps the start time of the entry the calling thread is in (between Begin and End);
  // nothing outside one. Called by the boxing behaviors just before their collective.
  static void NoteCollectiveStart();

  // The dump (proto/flight_recorder.proto as JSON): `reason` says why it was taken.
  std::string DumpJson(absl::string_view reason, absl::string_view job = "") const;
  // Writes DumpJson to `path` through a temporary file and a rename, so a reader never
  // sees half a dump.
  absl::Status WriteDump(const std::string& path, absl::string_view reason, absl::string_view job = "") const;

 private:
  struct Entry;
  struct Ring;
  // Under the ring's mutex.
  Progress ProgressOf(const Ring& ring, int group) const;
  const proto::Plan& plan_;
  const int64_t node_;
  const int64_t capacity_;
  std::vector<int> ring_of_;  // plan device index -> index in rings_, or -1
  const CollectiveGroups groups_;
  std::vector<std::unique_ptr<Ring>> rings_;
  ProgressSink sink_;
  // Steady and wall clock read together once: an entry keeps steady times only.
  int64_t anchor_steady_ns_ = 0;
  int64_t anchor_unix_ns_ = 0;
};

}  // namespace oneflow::actors

#endif  // ACTORS_FLIGHT_RECORDER_H_
