// The data movement of each call on a Gloo group, after the ranks have arrived and agreed
// on the call (call_header.h): which rank sends which bytes to which, over the Exchange's
// slots (phase 0 is the header's). Each schedule posts everything it can up front and then
// waits, so transfers to different peers run concurrently on their own connections.
//
// Bytes each rank sends, for n ranks and T bytes per rank (the whole tensor):
//  - reduce-scatter: chunk c of its input to rank c, directly: (n-1)/n T. Rank r then
//    reduces chunk r of all n inputs itself, in rank order (comm/reduce.h), so the result
//    is bit-identical to the in-process backend and to a sequential loop.
//  - all-reduce: the reduce-scatter above on a balanced split, then each reduced chunk to
//    every peer: 2(n-1)/n T, as a ring, in one step of latency each instead of n-1.
//    Both phases go in segments of kSegmentFloats, so a rank reduces segment s while
//    segment s+1 arrives and forwards s while it reduces s+1. Up to kSmallAllReduceBytes
//    per rank: the whole input to every peer, (n-1) T, in one step of latency.
//  - all-gather: its contribution to every peer: (n-1)/n T for even contributions.
//  - all-to-all: the chunk addressed to each peer: (n-1)/n^2 T for an even matrix.
//  - broadcast: a binomial tree rooted at `root`: every rank but the root receives T once;
//    a rank sends T to each of its children (the root to ceil(log2 n) of them).
//  - send/recv: a 16-byte header with the byte count, checked before the payload moves.
// Why not Gloo's own collectives (gloo/allreduce.h, allgatherv.h, ...): their ring
// all-reduce adds in ring order, not rank order; and they ignore the result of
// waitRecv/waitSend, so an abort that wakes their waits would let them run on as if the
// data had arrived. These schedules check every wait.
#ifndef ONEFLOW_CORE_COMM_GLOO_SCHEDULES_H_
#define ONEFLOW_CORE_COMM_GLOO_SCHEDULES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "oneflow_core/comm/gloo/exchange.h"
#include "oneflow_core/sbp.h"

namespace oneflow {
namespace gloo_backend {

// 1 MiB of floats: large enough to amortize a message's overhead, small enough that
// reducing one segment overlaps receiving the next.
constexpr int64_t kSegmentFloats = 256 * 1024;

// All-reduces of at most this many bytes per rank go in one round: every rank sends its
// input to every peer and reduces all of them (RunAllReduce).
constexpr int64_t kSmallAllReduceBytes = 64 * 1024;

// `scratch` holds the peers' chunks while they are reduced; it grows as needed and is
// kept between calls.
absl::Status RunAllReduce(Exchange& exchange, const float* input, float* output, int64_t count,
                          ReduceOp op, std::vector<float>& scratch);
absl::Status RunReduceScatter(Exchange& exchange, const float* input, float* output,
                              absl::Span<const int64_t> counts, ReduceOp op,
                              std::vector<float>& scratch);
absl::Status RunAllGather(Exchange& exchange, const void* input, void* output,
                          absl::Span<const int64_t> byte_counts);
absl::Status RunAllToAll(Exchange& exchange, const void* input, void* output,
                         absl::Span<const int64_t> byte_counts);
absl::Status RunBroadcast(Exchange& exchange, void* buffer, int64_t bytes, int64_t root);
absl::Status RunSend(Exchange& exchange, const void* data, int64_t bytes, int64_t peer);
absl::Status RunRecv(Exchange& exchange, void* data, int64_t bytes, int64_t peer);

}  // namespace gloo_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_GLOO_SCHEDULES_H_
