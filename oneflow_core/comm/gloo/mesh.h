// One rank's connections to the other ranks of a Gloo group, and the group's failure as
// this rank knows it.
//
// Connecting (lazily, on the first call): the rank sets "<group>/join/<rank>" and waits
// for every rank's key, so a missing rank is named before any socket is opened; then
// Gloo's connectFullMesh opens one TCP connection per peer through the store adapter.
//
// Failing: the first failure wins. Fail() (1) records the failure in the store,
// "<group>/failure/<rank>" and "<group>/failed" = rank, (2) wakes this rank's blocked
// waits (UnboundBuffer::abortWait*), (3) closes the connections. A peer blocked on one of
// those connections gets a Gloo IoException; one blocked on another connection is woken
// by its *watcher*: a thread per rank that waits on a receive posted on every connection
// and never sent to, which Gloo fails when any connection breaks. Either way the peer
// finds the broken connection, reads that rank's record, and fails with it; so one
// failure spreads through the group in about one store read per hop.
//
// Leaving: destroying a connected, unfailed communicator is not a failure. The rank writes
// its Departure (departure.h: the calls and messages it completed) through the
// DepartureLedger, then closes its connections. A peer's watcher that sees connections
// break reads the departures first: when every broken connection belongs to a departed
// peer it watches the remaining connections again instead of failing the group. A transfer
// whose connection to a departed peer broke is judged by its record (GlooExchange): a send
// the peer consumed is complete, and a peer that left before the call fails the group
// naming what it had done ("its communicator was destroyed after 1 collective call, before
// call 2"). Before this, a leaving rank recorded a failure, and a peer still waiting in the
// same last call for a third rank failed the job: "the group was aborted by rank 2: its
// communicator was destroyed".
//
// Why not Gloo's own close: Pair::close() in this Gloo version (2022) neither wakes a
// local waiter nor fails its buffers, so closing alone would leave this rank's own call
// blocked until its timeout; abortWait* on every registered wait fills that gap.
#ifndef ONEFLOW_CORE_COMM_GLOO_MESH_H_
#define ONEFLOW_CORE_COMM_GLOO_MESH_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/unbound_buffer.h"
#include "oneflow_core/comm/gloo/communicator.h"
#include "oneflow_core/comm/gloo/departure.h"
#include "oneflow_core/comm/gloo/failure.h"

namespace oneflow {
namespace gloo_backend {

class Mesh {
 public:
  explicit Mesh(GlooGroupOptions options);
  // Closes the connections. When connected and not failed it first records this rank's
  // departure (NoteDeparture's counts), so peers still waiting judge their transfers with
  // it. Precondition: no call and no Abort is in progress.
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  // A destroyed mesh records a departure (mesh_communicator.h, departure.h).
  static constexpr bool kRecordsDeparture = true;
  // What this rank completed, written when the mesh is destroyed (MeshCommunicator's
  // destructor tells it). Precondition: no call is in progress.
  void NoteDeparture(uint64_t calls, std::vector<int64_t> sends, std::vector<int64_t> receives) {
    departure_ = Departure{calls, std::move(sends), std::move(receives)};
  }
  // Reads the departures that are new in the store.
  void ReadDepartures();
  // The departure of `peer` as last read; nullopt while it has not departed.
  std::optional<Departure> departed(int64_t peer) const;

  int64_t rank() const { return options_.rank; }
  int64_t size() const { return options_.size; }
  const std::string& group_name() const { return options_.group_name; }

  // Connects on the first call; then OK at once. Waits until `deadline` (the earlier of
  // the call's and connect_timeout's); `timeout` is that wait's length, for messages;
  // every error starts with `prefix`. A failure here fails the group.
  absl::Status Connect(absl::Time deadline, absl::Duration timeout, const std::string& prefix);
  // The Gloo context. Precondition: Connect returned OK.
  ::gloo::Context& context() { return *context_; }

  // Fails the group with `failure` unless it failed already (the first one wins).
  void Fail(Failure failure);
  // Fails the group because a connection broke: with the record of the first of
  // `peers` (the ones whose connections broke) that has one, waiting briefly for it to
  // appear (a rank may close before its record lands), else as a lost connection.
  void FailForBrokenConnection(const std::vector<int64_t>& peers, const std::string& detail);
  std::optional<Failure> failure() const;

  // A wait in progress on `buffer` that a failure must wake. Register returns false,
  // registering nothing, when the group has failed already.
  bool RegisterWait(::gloo::transport::UnboundBuffer* buffer, bool receiving);
  void UnregisterWait(::gloo::transport::UnboundBuffer* buffer);

 private:
  std::string Key(const std::string& what) const;
  std::string RecordKey(int64_t rank) const;
  // A non-OK status when connecting should stop: this rank failed, or another recorded a
  // failure (this rank then fails with it).
  absl::Status StopConnecting();
  absl::Status JoinGroup(absl::Time deadline, absl::Duration timeout, const std::string& prefix);
  absl::Status OpenConnections(absl::Time deadline, const std::string& prefix);
  // Returns the status a connecting call reports after the group failed.
  absl::Status StoppedWaiting(const std::string& prefix, const std::string& waiting_for) const;
  std::optional<Failure> ReadRecord(const std::vector<int64_t>& ranks, absl::Duration grace);
  void WriteRecord(const Failure& failure);
  void Watch();
  // Posts a new watcher receive on the connections of peers that have not departed and
  // makes it the one a failure wakes; false when there is none or the group failed or is
  // closing. A connection that breaks while posting sets `broke` to Gloo's error.
  bool WatchAgain(std::string* broke);
  std::vector<int64_t> BrokenPeers();

  const GlooGroupOptions options_;
  std::shared_ptr<::gloo::transport::Device> device_;
  std::shared_ptr<::gloo::rendezvous::Context> context_;
  // The watcher's receive (one byte per peer) and the buffer it probes peers with.
  std::vector<char> watch_bytes_;
  std::unique_ptr<::gloo::transport::UnboundBuffer> watch_;
  std::unique_ptr<::gloo::transport::UnboundBuffer> probe_;
  std::thread watcher_;

  // A std::mutex rather than absl::Mutex: ThreadSanitizer sees through it (Debian's absl
  // is not built with its annotations). Guards the four members below.
  mutable std::mutex mutex_;
  bool connected_ = false;
  std::optional<Failure> failure_;
  // Waits in progress: buffer -> receiving (else sending).
  std::unordered_map<::gloo::transport::UnboundBuffer*, bool> waits_;
  // Set by the destructor: the watcher must not fail the group of a leaving rank.
  bool closing_ = false;

  // This rank's counts for its departure record; set before destruction, single thread.
  Departure departure_;
  // Peers' departures, read by the watcher and by calls (GlooExchange); guarded by its own
  // mutex so store reads never hold mutex_.
  mutable std::mutex departures_mutex_;
  DepartureLedger departures_;
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_MESH_H_
