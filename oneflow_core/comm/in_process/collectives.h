// The data movement of each collective in an in-process group, run by one rank after
// every rank has arrived (group_state.h): each rank reads its peers' buffers straight
// through the pointers they posted. Nothing is copied through a shared staging buffer.
// Every collective but all-reduce writes only the rank's own output.
//
// Bytes, for a group of n ranks and T bytes per rank (the whole tensor):
//  - all-reduce: rank r reduces chunk r (T/n bytes, balanced) of all n inputs, in rank
//    order, and writes the result into chunk r of every rank's output: it reads T (of
//    which (n-1)/n T from peers) and writes T (of which (n-1)/n T into peers' outputs).
//    Every chunk is computed once, so every rank gets the same bits. One pass and no
//    barrier between reducing and distributing: the two-phase form (reduce one's chunk
//    into one's own output, barrier, copy the others' chunks from their owners) read
//    (n-1)/n T more per rank and waited once more, which cost half the bandwidth of a
//    64 MiB all-reduce on 2 ranks (docs/collectives.md, "Throughput").
//  - reduce-scatter: rank r reduces its chunk (the caller's counts) of all n inputs into
//    its output: (n-1)/n T from peers.
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

// Runs `rank`'s part of its posted collective: no waits inside. A peer's all-reduce
// writes into this rank's output until that peer is done with the call.
void RunPostedCollective(GroupState& state, int64_t rank);

// The pieces RunPostedCollective uses, one per kind.
void ReduceChunkIntoEveryOutput(GroupState& state, int64_t rank);  // all-reduce
void ReduceScatterChunk(GroupState& state, int64_t rank);
void GatherContributions(GroupState& state, int64_t rank);
void ExchangeChunks(GroupState& state, int64_t rank);
void CopyFromRoot(GroupState& state, int64_t rank);

}  // namespace in_process
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_IN_PROCESS_COLLECTIVES_H_
