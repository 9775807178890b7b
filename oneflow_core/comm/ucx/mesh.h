// One rank's UCX worker and endpoints for a group, and the group's failure as this rank
// knows it (the UCX counterpart of gloo/mesh.h; the same Failure and records).
//
// Connecting (lazily, on the first call, on the calling thread): the rank publishes
// "<group>/ucx/process/<rank>" (host identity, process id, network namespace) and waits for
// every rank's; creates its worker from the context for where its peers are (context.h:
// any on this host or none), publishes "<group>/ucx/address/<rank>" (its worker address,
// hex), waits for every rank's address (a missing rank is named: "waited 1s for rank 3 to
// join the group"), and creates one endpoint per peer. UCX wires the endpoints up on their
// first message.
//
// Failing: the first failure wins. Fail() records it in the store, "<group>/failure/<rank>"
// and "<group>/failed" = rank, and sets a flag the waits of this rank's call poll, so it is
// thread-safe and never touches UCX (only the communication thread does). Peers learn of
// it by CheckPeers(), which a wait calls every 5-100 ms (peer_check.h) once it is done
// spinning (spin_policy.h): it reads "<group>/failed" and fails this rank with that
// rank's record; and, for peers on this host (same boot id and pid namespace), checks
// their processes are alive, so a peer that died without a record fails the group as a lost connection. Why
// not UCX's own peer-failure detection: it needs UCP_ERR_HANDLING_MODE_PEER, which this
// UCX (1.13) supports only without synchronous sends (Send's rendezvous, communicator.h)
// and with fewer transports. Without it UCX logs a peer's death that a transfer runs into
// (CMA reading a dead process, a TCP reset) at FATAL and would abort this process;
// context.cc turns those into failed requests, which fail the group as a lost connection.
//
// Leaving: destroying a connected, unfailed communicator is not a failure. The rank writes
// its Departure (departure.h: the calls and messages it completed) to
// "<group>/departed/<rank>" and adds 1 to "<group>/departures"; CheckPeers reads that
// counter beside "<group>/failed" and, when it grew, the new records. A wait then judges
// its transfer with a departed peer (UcxExchange::WaitFor): a send the peer consumed is
// complete, a receive the peer sent keeps waiting for its data, and a peer that left
// before the call fails the group naming it ("its communicator was destroyed after 1
// collective call, before call 2"). Before this, a leaving rank recorded a failure, and a
// peer still waiting in the same last call for a third rank (its rendezvous send's
// acknowledgement) failed the job: "the group was aborted by rank 2: its communicator was
// destroyed". A departed peer's process ending is expected, so the same-host liveness
// check skips it.
#ifndef ONEFLOW_CORE_COMM_UCX_MESH_H_
#define ONEFLOW_CORE_COMM_UCX_MESH_H_

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/gloo/failure.h"
#include "oneflow_core/comm/ucx/communicator.h"
#include "oneflow_core/comm/ucx/spin_policy.h"
#include "oneflow_core/comm/gloo/departure.h"

namespace oneflow {
namespace ucx_backend {

using gloo_backend::CallPosition;
using gloo_backend::Departure;
using gloo_backend::DepartureLedger;
using gloo_backend::DepartureVerdict;
using gloo_backend::Failure;

class Mesh {
 public:
  explicit Mesh(UcxGroupOptions options);
  // Records this rank's departure (NoteDeparture's counts) when connected and not failed,
  // then closes the endpoints and the worker. Precondition: no call is in progress.
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  int64_t rank() const { return options_.rank; }
  int64_t size() const { return options_.size; }
  const std::string& group_name() const { return options_.group_name; }

  // Connects on the first call; then OK at once. Waits until `deadline`; `timeout` is that
  // wait's length, for messages; every error starts with `prefix`. A failure here fails
  // the group.
  absl::Status Connect(absl::Time deadline, absl::Duration timeout, const std::string& prefix);
  // Preconditions: Connect returned OK; the caller is the communication thread.
  ucp_worker_h worker() const { return worker_; }
  ucp_ep_h endpoint(int64_t peer) const { return endpoints_[peer]; }
  // The worker's event file descriptor for ucp_worker_arm + poll; -1 when UCX gave none
  // (waits then sleep in short slices instead).
  int event_fd() const { return event_fd_; }
  // Where a call's arrival messages land (UcxExchange::Arrive); kept between calls.
  // Precondition: the caller is the communication thread.
  std::vector<float>& arrival_scratch() { return arrival_scratch_; }

  // Fails the group with `failure` unless it failed already. Any thread.
  void Fail(Failure failure);
  // Fails the group because the transfers with `peers` broke: with the record of the first
  // that has one (waiting briefly for it), else as a lost connection.
  void FailForBrokenConnection(const std::vector<int64_t>& peers, const std::string& detail);
  std::optional<Failure> failure() const;
  // A cheap check for the waits' loop.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Looks for a peer's failure record, for new departures, and for dead peer processes on
  // this host (not departed ones), failing the group when it finds a failure; when `now`
  // (the caller's clock) is past the time the last check set for the next one
  // (peer_check.h: 5-100 ms, in proportion to the check's own cost), else does nothing.
  // Precondition: the caller is the communication thread.
  void CheckPeers(absl::Time now);
  // Reads the departures now (CheckPeers does it on its schedule). Communication thread.
  void ReadDepartures();
  // The departure of `peer` as last read; nullptr while it has not departed. Communication
  // thread.
  const Departure* departed(int64_t peer) const {
    return departures_.departed(peer);
  }
  // What this rank completed, written when the mesh is destroyed (MeshCommunicator's
  // destructor tells it). Precondition: no call is in progress.
  void NoteDeparture(uint64_t calls, std::vector<int64_t> sends, std::vector<int64_t> receives) {
    departure_ = Departure{calls, std::move(sends), std::move(receives)};
  }
  static constexpr bool kRecordsDeparture = true;
  // Whether this communicator's waits spin (spin_policy.h). Communication thread.
  SpinPolicy& spin_policy() { return spin_policy_; }

 private:
  std::string Key(const std::string& what) const;
  std::string RecordKey(int64_t rank) const;
  absl::Status StopConnecting();
  // CheckPeers' reads and verdicts, unconditionally.
  void LookForFailedPeers();
  absl::Status StoppedWaiting(const std::string& prefix, const std::string& waiting_for) const;
  std::optional<Failure> ReadRecord(const std::vector<int64_t>& ranks, absl::Duration grace);
  void WriteRecord(const Failure& failure);
  absl::Status JoinGroup(absl::Time deadline, absl::Duration timeout, const std::string& prefix);
  // Waits for every rank's "<group>/ucx/<kind>/<rank>" key, naming the missing ranks.
  absl::Status AwaitPeers(const std::string& kind, absl::Time deadline, absl::Duration timeout,
                          const std::string& prefix);
  absl::Status CreateEndpoints(const std::string& prefix);
  void CloseEndpoints();

  const UcxGroupOptions options_;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::vector<float> arrival_scratch_;
  std::vector<ucp_ep_h> endpoints_;
  // Peers' process ids where they run on this host (same boot id and pid namespace);
  // 0 elsewhere and for this rank.
  std::vector<int64_t> local_pids_;
  absl::Time next_check_ = absl::InfinitePast();
  SpinPolicy spin_policy_;
  // This rank's counts for its departure record; peers' departures as read.
  Departure departure_;
  DepartureLedger departures_;

  std::atomic<bool> failed_{false};
  // Guards the members below.
  mutable std::mutex mutex_;
  bool connected_ = false;
  std::optional<Failure> failure_;
};

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_MESH_H_
