// What a rank had done when its communicator was destroyed cleanly (connected, no failure),
// as its peers read it from the store, shared by both transports over a mesh (gloo/mesh.h,
// ucx/mesh.h): how many collective calls it made and how many
// point-to-point messages it exchanged with each peer, every one of them completed.
//
// Why it exists: a rank leaves as soon as its own last call returns, and a peer may still
// be waiting in that same call, e.g. for UCX to confirm that the leaver received its send
// (a rendezvous or synchronous send completes on the receiver's acknowledgement, which
// can be lost when the leaver closes its endpoints, or simply come later than the
// leaver's record), or for a third rank while Gloo's watcher sees the leaver's connection
// close. Such a peer must finish its call, not fail it: the leaver's counts say
// whether it consumed everything the waiting call sends it. A rank that leaves before a
// call its peers make (fewer calls, fewer messages) still fails them, naming it.
#ifndef ONEFLOW_CORE_COMM_GLOO_DEPARTURE_H_
#define ONEFLOW_CORE_COMM_GLOO_DEPARTURE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "oneflow_core/comm/gloo/exchange.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {
namespace gloo_backend {

struct Departure {
  uint64_t calls = 0;              // collective calls, all completed
  std::vector<int64_t> sends;      // per peer: point-to-point messages sent to it
  std::vector<int64_t> receives;   // per peer: point-to-point messages received from it
};

// "<calls>\n<sends, comma-separated>\n<receives, comma-separated>".
std::string EncodeDeparture(const Departure& departure);
// nullopt for text that is not a departure of a group of `size` ranks.
std::optional<Departure> DecodeDeparture(const std::string& text, int64_t size);

// Where a transfer of a call stands with a peer that departed.
enum class DepartureVerdict {
  kConsumed,    // a send the peer received before it left: complete for the application
  kInFlight,    // a receive the peer sent before it left: its data is on the way
  kLeftBefore,  // the peer left before taking part in this call or message
};

// The call a transfer belongs to: collective call `index` (1, 2, ...), or the `index`-th
// point-to-point message between this rank and the peer in the transfer's direction.
struct CallPosition {
  bool point_to_point = false;
  uint64_t index = 0;
};

// The position of a call numbered as MeshCommunicator numbers its exchanges' slots: a
// collective call's slots are (call << 8), the k-th point-to-point message's
// (kPointToPointSlots | k << 8) (exchange.h); phases count from there.
CallPosition PositionOfSlot(uint64_t slot);

// The verdict on a transfer of `position` that `me` sends to (`sending`) or receives from
// `peer`, which departed as `departure`; `why` (for kLeftBefore) says what the peer had
// done: "its communicator was destroyed after 1 collective call, before call 2".
DepartureVerdict Judge(const Departure& departure, const CallPosition& position, bool sending,
                       int64_t me, std::string* why);

// The departures of a group as one rank reads them from the store. A departing rank writes
// its record to "<group>/departed/<rank>", then adds 1 to "<group>/departures"; a reader
// reads that counter and, only when it grew, the new records (a store read per check).
// Not thread-safe: a mesh that reads from two threads guards it.
class DepartureLedger {
 public:
  // For rank `rank` of `size`; `group_prefix` is "<group>/".
  DepartureLedger(int64_t rank, int64_t size, std::string group_prefix);

  // Writes this rank's departure, the record before the counter (so a peer that sees the
  // counter grow finds the record). Best effort: without them, a peer still waiting fails
  // by its deadline or as a lost connection.
  void Write(KeyValueStore& store, const Departure& departure) const;
  // Reads the departures that are new since the last read.
  void Read(KeyValueStore& store);
  // The departure of `peer` as last read; nullptr while it has not departed.
  const Departure* departed(int64_t peer) const {
    return departed_[peer].has_value() ? &*departed_[peer] : nullptr;
  }

 private:
  const int64_t rank_;
  const std::string group_prefix_;
  std::vector<std::optional<Departure>> departed_;
  int64_t departures_read_ = 0;  // how many records the counter covered when last read
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_DEPARTURE_H_
