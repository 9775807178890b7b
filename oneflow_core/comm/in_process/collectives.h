// The data movement of each collective in an in-process group, run by one rank after
// every rank has arrived (group_state.h): each rank reads its peers' buffers straight
// through the pointers they posted and writes only its own output. Nothing is copied
// through a shared staging buffer.
//
// Bytes, for a group of n ranks and T bytes per rank (the whole tensor); "reads" are
// from peers' memory, every byte read is written once into the rank's own output:
//  - all-reduce: (1) reduce-scatter: rank r reduces chunk r (T/n bytes, balanced) of all
//    n inputs into its output: reads T, of which (n-1)/n T from peers; (2) after a
//    barrier, all-gather: copies the n-1 other reduced chunks from their owners' outputs:
//    reads (n-1)/n T. Per rank 2(n-1)/n T from peers, the ring's bus traffic, with
//    every rank's reduction running in parallel and no extra copy.
//  - reduce-scatter: phase (1) alone, with the caller's chunk sizes: (n-1)/n T from peers.
//  - all-gather: rank r copies each peer's contribution into its output: (n-1)/n T.
//  - all-to-all: rank r copies, from each peer, the chunk addressed to r: (n-1)/n^2 T for
//    an even matrix.
//  - broadcast: every non-root rank copies the root's buffer: T each; the root moves 0.
// The reductions add in rank order (comm/reduce.h), so results are bit-identical to a
// sequential sum and the same on every rank.
#ifndef ONEFLOW_CORE_COMM_IN_PROCESS_COLLECTIVES_H_
#define ONEFLOW_CORE_COMM_IN_PROCESS_COLLECTIVES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "oneflow_core/comm/in_process/group_state.h"

namespace oneflow {
namespace in_process {

// OK when every rank posted the same call as `rank` did (CheckCallsAgree, call_agreement.h).
// Otherwise its INVALID_ARGUMENT for the first rank that differs. Every rank compares the
// same posts, so all reach the same verdict.
absl::Status CheckPostsAgree(const GroupState& state, int64_t rank);

// Runs `rank`'s part of its posted collective. Only all-reduce waits inside, between its
// two phases, for every rank to have reduced its chunk: `wait_middle()` marks this rank's
// chunk done, performs that wait and returns its error (then phase 2 is skipped).
template <typename WaitMiddle>
absl::Status RunPostedCollective(GroupState& state, int64_t rank, WaitMiddle&& wait_middle);

// The pieces RunPostedCollective uses, one per kind.
void ReduceOwnChunk(GroupState& state, int64_t rank);       // all-reduce phase (1)
void GatherReducedChunks(GroupState& state, int64_t rank);  // all-reduce phase (2)
void ReduceScatterChunk(GroupState& state, int64_t rank);
void GatherContributions(GroupState& state, int64_t rank);
void ExchangeChunks(GroupState& state, int64_t rank);
void CopyFromRoot(GroupState& state, int64_t rank);

template <typename WaitMiddle>
absl::Status RunPostedCollective(GroupState& state, int64_t rank, WaitMiddle&& wait_middle) {
  switch (state.post(rank).call.kind) {
    case CollectiveKind::kAllReduce: {
      ReduceOwnChunk(state, rank);
      const absl::Status middle = wait_middle();
      if (!middle.ok()) return middle;
      GatherReducedChunks(state, rank);
      return absl::OkStatus();
    }
    case CollectiveKind::kReduceScatter:
      ReduceScatterChunk(state, rank);
      return absl::OkStatus();
    case CollectiveKind::kAllGather:
      GatherContributions(state, rank);
      return absl::OkStatus();
    case CollectiveKind::kAllToAll:
      ExchangeChunks(state, rank);
      return absl::OkStatus();
    case CollectiveKind::kBroadcast:
      CopyFromRoot(state, rank);
      return absl::OkStatus();
  }
  return absl::InternalError("unknown collective kind");
}

}  // namespace in_process
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_IN_PROCESS_COLLECTIVES_H_
