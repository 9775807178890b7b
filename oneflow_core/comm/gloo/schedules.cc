#include "oneflow_core/comm/gloo/schedules.h"

#include <algorithm>
#include <cstring>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/balanced_splitter.h"
#include "oneflow_core/comm/collective_arguments.h"
#include "oneflow_core/comm/reduce.h"

namespace oneflow {
namespace gloo_backend {
namespace {

// Phase 0 of every collective call carries the call header.
constexpr int kScatterPhase = 1;
constexpr int kGatherPhase = 2;
constexpr int kDataPhase = 1;
// Point-to-point: header, then payload.
constexpr int kMessageHeaderPhase = 0;
constexpr int kMessagePayloadPhase = 1;

const char* Bytes(const void* pointer) { return static_cast<const char*>(pointer); }
char* Bytes(void* pointer) { return static_cast<char*>(pointer); }

// Segment s of a chunk of `count` elements: [s * kSegmentFloats, ...) clipped to count.
int64_t SegmentsOf(int64_t count) { return (count + kSegmentFloats - 1) / kSegmentFloats; }
int64_t SegmentLength(int64_t count, int64_t segment) {
  return std::min(kSegmentFloats, count - segment * kSegmentFloats);
}

// Reduce-scatter with chunk c = [offsets[c], offsets[c] + counts[c]) of every input:
// sends chunk c to rank c, receives chunk rank() from every peer into `scratch`, and
// reduces each segment in rank order into `output` once every peer's copy has arrived.
// `on_reduced(begin, length)` runs after each segment (all-reduce forwards it from there).
absl::Status ReduceOwnChunk(Exchange& exchange, const float* input,
                            absl::Span<const int64_t> offsets, absl::Span<const int64_t> counts,
                            float* output, ReduceOp op, std::vector<float>& scratch,
                            absl::FunctionRef<void(int64_t, int64_t)> on_reduced) {
  const int64_t rank = exchange.rank();
  const int64_t size = exchange.size();
  const int64_t mine = counts[rank];
  // Peer p's copy of this rank's chunk sits at scratch slot p (p < rank) or p - 1.
  if (static_cast<int64_t>(scratch.size()) < (size - 1) * mine) scratch.resize((size - 1) * mine);
  auto slot_of = [&](int64_t peer) {
    return scratch.data() + (peer < rank ? peer : peer - 1) * mine;
  };

  // Receives first, then sends segment by segment across peers, so every connection
  // carries the first segments first.
  std::vector<std::vector<Exchange::Op>> arrivals(SegmentsOf(mine));
  for (int64_t segment = 0; segment < SegmentsOf(mine); ++segment) {
    for (int64_t peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      arrivals[segment].push_back(exchange.Recv(peer, kScatterPhase,
                                                slot_of(peer) + segment * kSegmentFloats,
                                                SegmentLength(mine, segment) * sizeof(float)));
    }
  }
  int64_t most_segments = 0;
  for (int64_t count : counts) most_segments = std::max(most_segments, SegmentsOf(count));
  for (int64_t segment = 0; segment < most_segments; ++segment) {
    for (int64_t step = 1; step < size; ++step) {
      const int64_t peer = (rank + step) % size;  // spread the first sends over peers
      if (segment >= SegmentsOf(counts[peer])) continue;
      exchange.Send(peer, kScatterPhase, input + offsets[peer] + segment * kSegmentFloats,
                    SegmentLength(counts[peer], segment) * sizeof(float));
    }
  }

  std::vector<const float*> inputs(size);
  for (int64_t segment = 0; segment < SegmentsOf(mine); ++segment) {
    const absl::Status arrived = exchange.WaitAll(arrivals[segment]);
    if (!arrived.ok()) return arrived;
    const int64_t begin = segment * kSegmentFloats;
    for (int64_t peer = 0; peer < size; ++peer) {
      inputs[peer] = peer == rank ? input + offsets[rank] + begin : slot_of(peer) + begin;
    }
    ReduceFloats(op, inputs, output + begin, SegmentLength(mine, segment));
    on_reduced(begin, SegmentLength(mine, segment));
  }
  return exchange.status();
}

}  // namespace

namespace {

// Small all-reduces are latency-bound: every rank sends its whole input to every peer
// and reduces all n inputs itself, in rank order. One round of messages instead of the
// reduce-scatter's and the all-gather's two, for (n-1) T bytes sent instead of
// 2(n-1)/n T, which costs nothing at these sizes. Same bits as the large path (rank
// order), so the switch is invisible to callers.
absl::Status RunSmallAllReduce(Exchange& exchange, const float* input, float* output, int64_t count,
                               ReduceOp op, std::vector<float>& scratch) {
  const int64_t rank = exchange.rank();
  const int64_t size = exchange.size();
  if (static_cast<int64_t>(scratch.size()) < (size - 1) * count) scratch.resize((size - 1) * count);
  auto slot_of = [&](int64_t peer) { return scratch.data() + (peer < rank ? peer : peer - 1) * count; };
  std::vector<Exchange::Op> transfers;
  for (int64_t peer = 0; peer < size; ++peer) {
    if (peer != rank) transfers.push_back(exchange.Recv(peer, kDataPhase, slot_of(peer), count * sizeof(float)));
  }
  for (int64_t step = 1; step < size; ++step) {
    transfers.push_back(exchange.Send((rank + step) % size, kDataPhase, input, count * sizeof(float)));
  }
  // Sends included: in place, `input` is `output`, which is written only after every
  // peer has its copy.
  const absl::Status done = exchange.WaitAll(transfers);
  if (!done.ok()) return done;
  std::vector<const float*> inputs(size);
  for (int64_t peer = 0; peer < size; ++peer) inputs[peer] = peer == rank ? input : slot_of(peer);
  ReduceFloats(op, inputs, output, count);
  return exchange.Finish();
}

}  // namespace

absl::Status RunAllReduce(Exchange& exchange, const float* input, float* output, int64_t count,
                          ReduceOp op, std::vector<float>& scratch) {
  const int64_t rank = exchange.rank();
  const int64_t size = exchange.size();
  if (size > 1 && count > 0 && count * static_cast<int64_t>(sizeof(float)) <= kSmallAllReduceBytes) {
    return RunSmallAllReduce(exchange, input, output, count, op, scratch);
  }
  std::vector<int64_t> offsets(size);
  std::vector<int64_t> counts(size);
  for (int64_t chunk = 0; chunk < size; ++chunk) {
    const Range range = BalancedPart(count, size, chunk);
    offsets[chunk] = range.begin;
    counts[chunk] = range.size();
  }
  // The peers' reduced chunks land straight in `output`. In place, output chunk p is the
  // input chunk p this rank sends to p in the scatter phase; it is safe to overwrite a
  // segment once p's reduced segment arrives, because p reduces a segment only after it
  // received all of this rank's copy of it.
  for (int64_t peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    for (int64_t segment = 0; segment < SegmentsOf(counts[peer]); ++segment) {
      exchange.Recv(peer, kGatherPhase, output + offsets[peer] + segment * kSegmentFloats,
                    SegmentLength(counts[peer], segment) * sizeof(float));
    }
  }
  float* own = output + offsets[rank];
  const absl::Status reduced = ReduceOwnChunk(
      exchange, input, offsets, counts, own, op, scratch, [&](int64_t begin, int64_t length) {
        for (int64_t step = 1; step < size; ++step) {
          exchange.Send((rank + step) % size, kGatherPhase, own + begin, length * sizeof(float));
        }
      });
  if (!reduced.ok()) return reduced;
  return exchange.Finish();
}

absl::Status RunReduceScatter(Exchange& exchange, const float* input, float* output,
                              absl::Span<const int64_t> counts, ReduceOp op,
                              std::vector<float>& scratch) {
  const absl::Status reduced = ReduceOwnChunk(exchange, input, ExclusiveOffsets(counts), counts,
                                              output, op, scratch, [](int64_t, int64_t) {});
  if (!reduced.ok()) return reduced;
  return exchange.Finish();
}

absl::Status RunAllGather(Exchange& exchange, const void* input, void* output,
                          absl::Span<const int64_t> byte_counts) {
  const int64_t rank = exchange.rank();
  const std::vector<int64_t> offsets = ExclusiveOffsets(byte_counts);
  for (int64_t peer = 0; peer < exchange.size(); ++peer) {
    if (peer != rank)
      exchange.Recv(peer, kDataPhase, Bytes(output) + offsets[peer], byte_counts[peer]);
  }
  for (int64_t step = 1; step < exchange.size(); ++step) {
    exchange.Send((rank + step) % exchange.size(), kDataPhase, input, byte_counts[rank]);
  }
  // In place, the contribution already sits at its place in the output.
  char* own = Bytes(output) + offsets[rank];
  if (byte_counts[rank] > 0 && own != Bytes(input)) std::memcpy(own, input, byte_counts[rank]);
  return exchange.Finish();
}

absl::Status RunAllToAll(Exchange& exchange, const void* input, void* output,
                         absl::Span<const int64_t> byte_counts) {
  const int64_t rank = exchange.rank();
  const int64_t size = exchange.size();
  // This rank's row (what it sends) and column (what it receives), and their offsets.
  std::vector<int64_t> sent(size);
  std::vector<int64_t> received(size);
  for (int64_t peer = 0; peer < size; ++peer) {
    sent[peer] = byte_counts[rank * size + peer];
    received[peer] = byte_counts[peer * size + rank];
  }
  const std::vector<int64_t> send_offsets = ExclusiveOffsets(sent);
  const std::vector<int64_t> receive_offsets = ExclusiveOffsets(received);
  for (int64_t peer = 0; peer < size; ++peer) {
    if (peer != rank) {
      exchange.Recv(peer, kDataPhase, Bytes(output) + receive_offsets[peer], received[peer]);
    }
  }
  for (int64_t step = 1; step < size; ++step) {
    const int64_t peer = (rank + step) % size;
    exchange.Send(peer, kDataPhase, Bytes(input) + send_offsets[peer], sent[peer]);
  }
  if (sent[rank] > 0) {
    std::memcpy(Bytes(output) + receive_offsets[rank], Bytes(input) + send_offsets[rank],
                sent[rank]);
  }
  return exchange.Finish();
}

absl::Status RunBroadcast(Exchange& exchange, void* buffer, int64_t bytes, int64_t root) {
  const int64_t size = exchange.size();
  // Ranks renumbered so the root is 0. Virtual rank v receives from v minus its lowest
  // set bit, then sends to v + m for each power of two m below that bit (below the
  // group's size rounded up to a power of two, for the root), largest subtree first.
  const int64_t virtual_rank = (exchange.rank() - root + size) % size;
  auto actual = [&](int64_t v) { return (v + root) % size; };
  int64_t span = 1;
  while (span < size) span <<= 1;
  if (virtual_rank != 0) {
    span = virtual_rank & -virtual_rank;
    const absl::Status received =
        exchange.Wait(exchange.Recv(actual(virtual_rank - span), kDataPhase, buffer, bytes));
    if (!received.ok()) return received;
  }
  for (int64_t step = span >> 1; step > 0; step >>= 1) {
    if (virtual_rank + step < size)
      exchange.Send(actual(virtual_rank + step), kDataPhase, buffer, bytes);
  }
  return exchange.Finish();
}

namespace {

struct MessageHeader {
  uint64_t magic = 0x6f6e65666c6f7732;  // "oneflow2"
  int64_t bytes = 0;
};

}  // namespace

absl::Status RunSend(Exchange& exchange, const void* data, int64_t bytes, int64_t peer) {
  MessageHeader header;
  header.bytes = bytes;
  exchange.Send(peer, kMessageHeaderPhase, &header, sizeof(header));
  exchange.Send(peer, kMessagePayloadPhase, data, bytes);
  return exchange.Finish();
}

absl::Status RunRecv(Exchange& exchange, void* data, int64_t bytes, int64_t peer) {
  MessageHeader header;
  header.magic = 0;
  header.bytes = -1;
  const absl::Status arrived =
      exchange.Wait(exchange.Recv(peer, kMessageHeaderPhase, &header, sizeof(header)));
  if (!arrived.ok()) return arrived;
  if (header.magic != MessageHeader().magic || header.bytes != bytes) {
    // The sender's payload is never received: the group fails, and with it the send.
    return exchange.Fail(absl::InvalidArgumentError(absl::StrCat(
        "rank ", peer, " sends ", header.bytes, " bytes but ", bytes, " are expected")));
  }
  exchange.Recv(peer, kMessagePayloadPhase, data, bytes);
  return exchange.Finish();
}

}  // namespace gloo_backend
}  // namespace oneflow
