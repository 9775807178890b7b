// Why a group of processes stopped working, as one rank tells it, and the record a failing
// rank leaves in the rendezvous store so its peers can tell the same story. Shared by the
// Gloo mesh (mesh.h) and the UCX mesh (ucx/mesh.h): both fail a group the same way and so
// read the same on every transport.
#ifndef ONEFLOW_CORE_COMM_GLOO_FAILURE_H_
#define ONEFLOW_CORE_COMM_GLOO_FAILURE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "oneflow_core/comm/gloo/exchange.h"

namespace oneflow {
namespace gloo_backend {

struct Failure {
  enum class Source {
    kThisRank,        // a call or Abort on this rank failed; `message` is its status message
    kPeer,            // rank `rank` failed first and recorded `message`
    kLostConnection,  // the connection to rank `rank` (-1: not known) broke without a record
  };
  Source source = Source::kThisRank;
  int64_t rank = -1;
  absl::StatusCode code = absl::StatusCode::kUnknown;
  std::string message;

  // For a call that was waiting when it happened: "the group was aborted: M",
  // "the group was aborted by rank 2: M", "lost the connection to rank 2: M".
  std::string WhileWaiting() const;
  // For a later call: "the group was aborted earlier: M", "... earlier by rank 2: M",
  // "... earlier: lost the connection to rank 2: M".
  std::string Earlier() const;
};

// The first failure any group of this process took (both meshes' Fail call
// NoteProcessFailure), for the worker's report: a failure that came from a peer (kPeer,
// kLostConnection) marks the worker's failure as caused by a peer, so a launch names the
// node that failed first rather than a survivor that noticed (launch_client.cc).
void NoteProcessFailure(const Failure& failure);
std::optional<Failure> FirstProcessFailure();

// A record is "<source>\n<rank>\n<code>\n<message>", the failure as a third rank tells it.
std::string EncodeFailureRecord(const Failure& failure);
std::optional<Failure> DecodeFailureRecord(const std::string& text);

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_FAILURE_H_
