// The Exchange (exchange.h) of a Gloo group: sends and receives posted as Gloo unbound
// buffers on the call's slots. Exchange numbers are per connection; the mesh uses its own
// slots above 2^63.
//
// Every transfer gets its own buffer, so a wait knows its peer. A woken wait comes from
// Mesh::Fail (this rank's Abort, a peer's failure seen by the watcher); on expiry Gloo has
// closed every connection already; a broken connection fails the group with the peer's
// record or as a lost connection (Mesh::FailForBrokenConnection). A receive must get
// exactly the bytes posted: Gloo's reader aborts the process on a longer message. A
// connection that broke because its peer departed (mesh.h) is judged by the peer's record:
// a send it consumed completes, a peer that left before this call fails the group naming
// what it had done.
#ifndef ONEFLOW_CORE_COMM_GLOO_GLOO_EXCHANGE_H_
#define ONEFLOW_CORE_COMM_GLOO_GLOO_EXCHANGE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "gloo/transport/unbound_buffer.h"
#include "oneflow_core/comm/gloo/departure.h"
#include "oneflow_core/comm/gloo/exchange.h"
#include "oneflow_core/comm/gloo/mesh.h"

namespace oneflow {
namespace gloo_backend {

class GlooExchange final : public Exchange {
 public:
  // `timeout` is the call's, for messages; `deadline` ends every wait. Precondition for
  // posting: the mesh is connected.
  // A Gloo receive must get exactly the bytes it posted: the header goes alone (call_header.h).
  static constexpr bool kArrivalCarriesPayload = false;

  GlooExchange(Mesh* mesh, uint64_t slot, absl::Time deadline, absl::Duration timeout,
               std::string prefix);
  // Unregisters and frees the buffers; after that Gloo no longer touches the call's memory.
  ~GlooExchange() override;
  GlooExchange(const GlooExchange&) = delete;
  GlooExchange& operator=(const GlooExchange&) = delete;

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
    std::unique_ptr<::gloo::transport::UnboundBuffer> buffer;
    int64_t peer = 0;
    bool receiving = false;
    Verb waiting_for = Verb::kSend;
    bool done = false;
  };
  enum class Outcome { kDone, kWoken, kExpired, kBroken };

  Op Post(int64_t peer, int phase, void* data, int64_t bytes, bool receiving, Verb waiting_for);
  Outcome WaitFor(Transfer& transfer, std::chrono::milliseconds timeout, std::string* detail);
  // Whether `transfer`'s broken connection was a peer that departed: kDone for a send the
  // peer consumed (the transfer is then done), kWoken after failing the group for a peer
  // that left before this call, else kBroken (a lost connection).
  Outcome JudgeDeparture(Transfer& transfer);
  absl::Status Report(Transfer& transfer, Outcome outcome, const std::string& detail,
                      absl::Span<const Op> others);
  std::chrono::milliseconds Remaining() const;
  absl::Status Stopped(const std::string& waiting_for);

  Mesh* const mesh_;
  const uint64_t slot_;
  const CallPosition position_;  // decoded from slot_ (departure.h)
  const absl::Time deadline_;
  const absl::Duration timeout_;
  const std::string prefix_;
  std::vector<Transfer> transfers_;
  absl::Status status_;
};

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_GLOO_EXCHANGE_H_
