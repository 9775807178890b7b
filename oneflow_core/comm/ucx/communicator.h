// The UCX backend: the ranks of a group are processes (one per node, or several on one
// machine) that talk through UCX's tag-matching API (ucp). UCX picks the transport per
// pair of ranks: shared memory (and cross-memory attach for large messages) between
// processes of one host, TCP between hosts. Ranks find each other through a
// KeyValueStore, the job's rendezvous store, as Gloo groups do: each rank publishes its
// UCX worker address there.
//
//   UcxGroupOptions options;
//   options.group_name = "dp/cross0";   // the same on every rank of the group, unique in the job
//   options.rank = node;  options.size = nodes;
//   options.store = rendezvous_store;   // not owned; must outlive the communicator
//   absl::StatusOr<std::unique_ptr<Communicator>> comm = NewUcxCommunicator(options);
//
// Why it exists: small messages. Over Gloo's TCP pairs every message wakes an I/O thread
// and then the waiting thread; here the waiting thread polls shared memory itself (a 4 KiB
// all-reduce between two processes was 5x to 11x faster than over Gloo on the build VM;
// docs/collectives.md has the tables). It runs the same schedules and call header as the Gloo backend
// (gloo/schedules.h, gloo/call_header.h), so results are bit-identical and messages read
// the same; only the transfers differ (exchange.h).
//
// Creating a communicator does no I/O; it connects on its first call (bounded by the
// smaller of `connect_timeout` and the call's timeout). Failures follow communicator.h
// (mesh.h says how they travel): a failing rank records why in the store; peers blocked in
// a call read the record within milliseconds; a peer process on this host that died
// without a record gives UNAVAILABLE "lost the connection to rank 2". Destroying a
// communicator that has not failed records a departure (gloo/departure.h): peers still
// finishing the calls it made complete them; a peer in a call it never made fails with
// ABORTED "... its communicator was destroyed after 3 collective calls, before call 4".
#ifndef ONEFLOW_CORE_COMM_UCX_COMMUNICATOR_H_
#define ONEFLOW_CORE_COMM_UCX_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneflow_core/comm/communicator.h"
#include "oneflow_core/comm/key_value_store.h"

namespace oneflow {

struct UcxGroupOptions {
  // Identifies the group: every store key the group uses starts with it, and messages
  // name it. The same on every rank; unique among the groups of a job.
  std::string group_name;
  // This rank in [0, size), and the number of ranks (1 ... 65535: a message's tag carries
  // its sender's rank in 16 bits).
  int64_t rank = 0;
  int64_t size = 1;
  // The rendezvous store. Not owned; must outlive the communicator. Unused when size is 1.
  KeyValueStore* store = nullptr;
  // The longest the first call waits for every rank to join. The call's timeout bounds it too.
  absl::Duration connect_timeout = absl::Seconds(60);
};

// A communicator for rank `options.rank` of the group. INVALID_ARGUMENT for an empty group
// name, a size outside [1, 65535], a rank outside [0, size), or a null store when size > 1.
absl::StatusOr<std::unique_ptr<Communicator>> NewUcxCommunicator(UcxGroupOptions options);

// OK when this process can use UCX (its library initializes); otherwise UNAVAILABLE with
// UCX's reason. For the launcher's check that every node has the transport it was asked for.
absl::Status UcxAvailable();

// The UCX settings this process's groups run with (ucx/settings.h): the backend's own
// choices and what the environment set instead, e.g. "RNDV_THRESH=inf". For run metrics.
std::string UcxSettingsInEffect();

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_COMMUNICATOR_H_
