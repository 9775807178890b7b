#include "oneflow_core/comm/in_process/collectives.h"

#include <cstring>
#include <vector>

#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/reduce.h"

namespace oneflow {
namespace in_process {
namespace {

const char* Bytes(const void* pointer) { return static_cast<const char*>(pointer); }
char* Bytes(void* pointer) { return static_cast<char*>(pointer); }

// memcpy that skips empty and in-place copies (an in-place all-gather posts an input
// that already sits at its place in the output).
void CopyBytes(void* to, const void* from, int64_t bytes) {
  if (bytes > 0 && to != from) std::memcpy(to, from, bytes);
}

// Reduces elements [begin, begin + length) of every rank's input into `output`.
void ReduceRange(const GroupState& state, const Post& mine, int64_t begin, int64_t length,
                 float* output) {
  if (length == 0) return;
  std::vector<const float*> inputs(state.size());
  for (int64_t peer = 0; peer < state.size(); ++peer) {
    inputs[peer] = static_cast<const float*>(state.post(peer).input) + begin;
  }
  ReduceFloats(mine.call.reduce_op, inputs, output, length);
}

}  // namespace

absl::Status CheckPostsAgree(const GroupState& state, int64_t rank) {
  for (int64_t peer = 0; peer < state.size(); ++peer) {
    const absl::Status agree =
        CheckCallsAgree(rank, state.post(rank).call, peer, state.post(peer).call);
    if (!agree.ok()) return agree;
  }
  return absl::OkStatus();
}

// All-reduce phase (1): chunk r of the balanced split of `count` elements.
void ReduceOwnChunk(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  const Range chunk = BalancedPart(mine.call.count, state.size(), rank);
  ReduceRange(state, mine, chunk.begin, chunk.size(),
              static_cast<float*>(mine.output) + chunk.begin);
}

// All-reduce phase (2): chunk c is final in rank c's output once every rank passed the
// middle phase; copy the others' chunks next to one's own.
void GatherReducedChunks(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  for (int64_t owner = 0; owner < state.size(); ++owner) {
    if (owner == rank) continue;
    const Range chunk = BalancedPart(mine.call.count, state.size(), owner);
    CopyBytes(static_cast<float*>(mine.output) + chunk.begin,
              static_cast<const float*>(state.post(owner).output) + chunk.begin,
              chunk.size() * static_cast<int64_t>(sizeof(float)));
  }
}

void ReduceScatterChunk(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  const std::vector<int64_t> offsets = ExclusiveOffsets(mine.call.counts);
  ReduceRange(state, mine, offsets[rank], mine.call.counts[rank], static_cast<float*>(mine.output));
}

void GatherContributions(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  const std::vector<int64_t> offsets = ExclusiveOffsets(mine.call.counts);
  for (int64_t peer = 0; peer < state.size(); ++peer) {
    CopyBytes(Bytes(mine.output) + offsets[peer], state.post(peer).input, mine.call.counts[peer]);
  }
}

// counts is the n x n matrix; rank r's output gathers column r, and the chunk from rank
// s starts in s's input after s's chunks for ranks below r.
void ExchangeChunks(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  const int64_t n = state.size();
  int64_t received = 0;
  for (int64_t source = 0; source < n; ++source) {
    int64_t offset_in_source = 0;
    for (int64_t destination = 0; destination < rank; ++destination) {
      offset_in_source += mine.call.counts[source * n + destination];
    }
    const int64_t bytes = mine.call.counts[source * n + rank];
    CopyBytes(Bytes(mine.output) + received, Bytes(state.post(source).input) + offset_in_source,
              bytes);
    received += bytes;
  }
}

void CopyFromRoot(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  if (rank == mine.call.root) return;
  CopyBytes(mine.output, state.post(mine.call.root).output, mine.call.count);
}

}  // namespace in_process
}  // namespace oneflow
