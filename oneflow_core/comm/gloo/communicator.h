// The Gloo backend: the ranks of a group are processes (one per node, or several on one
// machine) that talk over TCP through Gloo's transport. They find each other through a
// KeyValueStore, the job's rendezvous store (the launcher's Rendezvous service across
// machines; the in-memory store when the ranks are threads of one process, as in tests).
//
//   GlooGroupOptions options;
//   options.group_name = "dp/cross0";   // the same on every rank of the group, unique in the job
//   options.rank = node;  options.size = nodes;
//   options.store = rendezvous_store;   // not owned; must outlive the communicator
//   options.host = "10.0.0.7";          // this node's address the peers can reach
//   absl::StatusOr<std::unique_ptr<Communicator>> comm = NewGlooCommunicator(options);
//   // on the communication thread:
//   absl::Status status = (*comm)->AllReduce(gradient, gradient, count, collective_options);
//
// Creating a communicator does no I/O. It connects lazily, on its first call: the rank
// announces itself in the store, waits for every rank to do the same (bounded by the
// smaller of `connect_timeout` and the call's timeout), then opens one TCP connection per
// peer. So one thread may create the communicators of several ranks that live in one
// process, and their communication threads then connect concurrently.
//
// It keeps every rule of communicator.h. Across processes, "a failed call aborts the
// group" works like this: a rank that fails (a timeout, a bad argument, Abort, a lost
// peer) records why in the store under the group's name and closes its connections; a
// peer blocked in a call sees its connection close, reads the record, and fails with the
// same code and story ("the group was aborted by rank 2: ..."). A peer that vanished
// without a record (its process died) gives UNAVAILABLE "lost the connection to rank 2".
// Destroying a communicator after its calls is a departure, not a failure (gloo/mesh.h):
// a peer still finishing the same call goes on, and a peer that makes a call the leaver
// never made fails with ABORTED "... its communicator was destroyed after N collective
// calls, before call N+1"; so destroy it only when the group is done or has failed. docs/collectives.md has the algorithms and their bytes.
#ifndef ONEFLOW_CORE_COMM_GLOO_COMMUNICATOR_H_
#define ONEFLOW_CORE_COMM_GLOO_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {

struct GlooGroupOptions {
  // Identifies the group: every store key the group uses starts with it, and messages
  // name it. The same on every rank of the group; unique among the groups of a job (a
  // group re-created after a failure needs a new name, since the old keys remain).
  std::string group_name;
  // This rank in [0, size), and the number of ranks (>= 1).
  int64_t rank = 0;
  int64_t size = 1;
  // The rendezvous store. Not owned; must outlive the communicator. Unused when size is 1.
  KeyValueStore* store = nullptr;
  // The address this rank's connections bind to and advertise to its peers: an address
  // of this machine they can reach. Empty means 127.0.0.1 (all ranks on one machine).
  std::string host = "127.0.0.1";
  // The longest the first call waits for every rank to join and connect. The call's own
  // timeout bounds it too.
  absl::Duration connect_timeout = absl::Seconds(60);
};

// A communicator for rank `options.rank` of the group. INVALID_ARGUMENT for an empty
// group name, size < 1, a rank outside [0, size), or a null store when size > 1.
absl::StatusOr<std::unique_ptr<Communicator>> NewGlooCommunicator(GlooGroupOptions options);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_COMMUNICATOR_H_
