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
#include "oneflow_core/comm/gloo/failure.h"

namespace oneflow {
namespace gloo_backend {

class Mesh {
 public:
  explicit Mesh(GlooGroupOptions options);
  // Closes the connections. When connected and not failed it first records "its
  // communicator was destroyed", so peers still waiting learn why. Precondition: no call
  // and no Abort is in progress.
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  // A destroyed Gloo mesh records a failure ("its communicator was destroyed"), not a
  // departure (mesh_communicator.h).
  static constexpr bool kRecordsDeparture = false;

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
  // is not built with its annotations). Guards the three members below.
  mutable std::mutex mutex_;
  bool connected_ = false;
  std::optional<Failure> failure_;
  // Waits in progress: buffer -> receiving (else sending).
  std::unordered_map<::gloo::transport::UnboundBuffer*, bool> waits_;
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_MESH_H_
