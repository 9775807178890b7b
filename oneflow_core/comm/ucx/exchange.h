// The Exchange (gloo/exchange.h) of a UCX group: each transfer is one tagged UCX message
// on the group's worker. The tag is (sender rank << 48) | slot + phase, with the
// point-to-point bit moved from 2^62 to 2^47, so a receive matches one sender's message
// of one call; a collective's send completes when its buffer may be reused, a
// point-to-point send (ucp_tag_send_sync_nbx) once the receiver matched it, as
// communicator.h asks.
//
// A wait drives the worker itself (ucp_worker_progress) and polls: it spins for the first
// kSpinWait, yields the core until kYieldWait, then sleeps kSleepSlice between polls, so a
// message that arrives while the thread spins is seen within a microsecond and a long wait
// costs little CPU. From its first millisecond on it also calls Mesh::CheckPeers.
#ifndef ONEFLOW_CORE_COMM_UCX_EXCHANGE_H_
#define ONEFLOW_CORE_COMM_UCX_EXCHANGE_H_

#include <ucp/api/ucp.h>

#include <cstdint>
#include <deque>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "oneflow_core/comm/gloo/exchange.h"
#include "oneflow_core/comm/ucx/mesh.h"

namespace oneflow {
namespace ucx_backend {

using gloo_backend::Exchange;

constexpr absl::Duration kSpinWait = absl::Microseconds(50);
constexpr absl::Duration kYieldWait = absl::Milliseconds(2);
constexpr absl::Duration kSleepSlice = absl::Microseconds(50);

class UcxExchange final : public Exchange {
 public:
  // `timeout` is the call's, for messages; `deadline` ends every wait. Precondition for
  // posting: the mesh is connected.
  UcxExchange(Mesh* mesh, uint64_t slot, absl::Time deadline, absl::Duration timeout,
              std::string prefix);
  // Cancels the receives still pending and releases every request: after that UCX no
  // longer writes into the call's memory.
  ~UcxExchange() override;
  UcxExchange(const UcxExchange&) = delete;
  UcxExchange& operator=(const UcxExchange&) = delete;

  int64_t rank() const override { return mesh_->rank(); }
  int64_t size() const override { return mesh_->size(); }
  const std::string& prefix() const override { return prefix_; }
  const absl::Status& status() const override { return status_; }

  Op Send(int64_t peer, int phase, const void* data, int64_t bytes,
          Verb waiting_for = Verb::kReceive) override;
  Op Recv(int64_t peer, int phase, void* data, int64_t bytes,
          Verb waiting_for = Verb::kSend) override;
  absl::Status Wait(Op op) override;
  absl::Status WaitAll(absl::Span<const Op> ops) override;
  absl::Status Finish() override;
  absl::Status Fail(const absl::Status& status) override;

 private:
  struct Transfer {
    void* request = nullptr;  // null once complete
    int64_t peer = 0;
    int64_t bytes = 0;
    bool receiving = false;
    Verb waiting_for = Verb::kSend;
    bool done = false;
    ucp_tag_recv_info_t info = {};  // a receive's sender tag and length
  };
  enum class Outcome { kDone, kWoken, kExpired, kBroken };

  uint64_t Tag(int64_t sender, int phase) const;
  Op Post(int64_t peer, int phase, void* data, int64_t bytes, bool receiving, Verb waiting_for);
  // True when UCX has ended `transfer`: `outcome` is then kDone or kBroken (with `detail`).
  bool Test(Transfer& transfer, Outcome* outcome, std::string* detail);
  Outcome WaitFor(Transfer& transfer, std::string* detail);
  absl::Status Report(Transfer& transfer, Outcome outcome, const std::string& detail,
                      absl::Span<const Op> others);
  absl::Status Stopped(const std::string& waiting_for);

  Mesh* const mesh_;
  const uint64_t slot_;
  const absl::Time deadline_;
  const absl::Duration timeout_;
  const std::string prefix_;
  std::deque<Transfer> transfers_;  // a deque: UCX writes into `info` of pending receives
  absl::Status status_;
};

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_EXCHANGE_H_
