#include "oneflow_core/comm/in_process/collectives.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
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

// All-reduce results of at least this many bytes per rank are written around the caches
// (ReduceStores::kStreaming). The n ranks then write n times this between them, most of
// the build VM's 32 MiB L3 or more: the lines would be evicted before the caller reads
// them, and cached stores would first read each one. Below it, the results are still in
// cache when the caller reads them. On the build VM, streaming doubled the bandwidth at
// 8 MiB and was within the noise of cached stores at 2-4 MiB (docs/collectives.md,
// "Throughput").
constexpr int64_t kStreamingBytes = int64_t{4} << 20;

// Reduces elements [begin, begin + length) of every rank's input into `output`.
void ReduceRange(const GroupState& state, const Post& mine, int64_t begin, int64_t length,
                 float* output) {
  if (length == 0) return;
  absl::InlinedVector<const float*, 8> inputs(state.size());
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

void RunPostedCollective(GroupState& state, int64_t rank) {
  switch (state.post(rank).call.kind) {
    case CollectiveKind::kAllReduce:
      return ReduceChunkIntoEveryOutput(state, rank);
    case CollectiveKind::kReduceScatter:
      return ReduceScatterChunk(state, rank);
    case CollectiveKind::kAllGather:
      return GatherContributions(state, rank);
    case CollectiveKind::kAllToAll:
      return ExchangeChunks(state, rank);
    case CollectiveKind::kBroadcast:
      return CopyFromRoot(state, rank);
  }
}

// Chunk r of the balanced split of `count` elements. Only rank r reads or writes chunk r
// of any buffer, so an in-place rank's input may be overwritten there once read (which
// ReduceFloatsToAll does element by element).
void ReduceChunkIntoEveryOutput(GroupState& state, int64_t rank) {
  const Post& mine = state.post(rank);
  const int64_t n = state.size();
  if (n == 1 && mine.input == mine.output) return;
  const Range chunk = BalancedPart(mine.call.count, n, rank);
  if (chunk.size() == 0) return;
  absl::InlinedVector<const float*, 8> inputs(n);
  absl::InlinedVector<float*, 8> outputs(n);
  for (int64_t peer = 0; peer < n; ++peer) {
    inputs[peer] = static_cast<const float*>(state.post(peer).input) + chunk.begin;
    outputs[peer] = static_cast<float*>(state.post(peer).output) + chunk.begin;
  }
  // Own output first: the streaming head is aligned to it (reduce.cc).
  std::swap(outputs[0], outputs[rank]);
  const int64_t bytes = mine.call.count * static_cast<int64_t>(sizeof(float));
  ReduceFloatsToAll(mine.call.reduce_op, inputs, outputs, chunk.size(),
                    bytes >= kStreamingBytes ? ReduceStores::kStreaming : ReduceStores::kCached);
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
