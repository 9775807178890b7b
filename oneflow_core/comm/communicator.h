// The communicator interface: collectives among the ranks of one group, seen from one
// rank. Every backend implements it: in-process threads over shared memory
// (in_process/), UCX across processes (ucx/, the default), Gloo across processes
// (gloo/), and the two-level composition of two of them (hierarchical/); transport.h
// names them. Boxing kernels and communication actors use only this interface.
//
// Contract shared by every call:
//  - All ranks of the group make the same sequence of collective calls (same kind,
//    payload format, counts, root, reduction) in the same order; the graph compiler fixes
//    that order and the plan verifier checks it (docs/plan_format.md). Backends check each
//    call when its ranks meet (call_agreement.h; the hierarchical one in its members) and
//    fail it with INVALID_ARGUMENT on every rank when they disagree. Send/Recv pair up per
//    (sender, receiver) in call order.
//  - One thread issues the calls of one communicator (a device's communication thread);
//    the calls are blocking and return when this rank's output is complete and its input
//    may be reused. Calls on the communicators of different ranks run concurrently.
//  - Every call waits at most `options.timeout` for its peers. On expiry it returns
//    DEADLINE_EXCEEDED whose message starts with `options.description` and names the
//    ranks that had not arrived (or had not finished).
//  - A failed call aborts the group: peers blocked in the same call fail promptly rather
//    than wait out their own deadlines, and every later call fails with
//    FAILED_PRECONDITION naming the first error. A group is not reusable after an error;
//    the runtime creates a new one.
//  - Counts are per rank, so uneven splits (and zero-length ranks) are ordinary.
//  - Buffers of different calls, and input and output of one call, must not overlap
//    except where a call says so (in-place forms).
// docs/collectives.md describes the algorithms, the bytes each moves and how a backend
// plugs in.
#ifndef ONEFLOW_CORE_COMM_COMMUNICATOR_H_
#define ONEFLOW_CORE_COMM_COMMUNICATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "oneflow_core/sbp.h"

namespace oneflow {

// What every call takes besides its buffers.
struct CollectiveOptions {
  // The longest the call may wait for its peers, from the moment it is made.
  absl::Duration timeout = absl::Seconds(60);
  // Who is calling, for error messages: the actor, the collective id, the iteration, e.g.
  // "actor 'h1/boxing_3/all_reduce' collective 12 iteration 7". Every error this call
  // returns starts with it.
  std::string description;
  // The reduction of AllReduce and ReduceScatter, applied in rank order
  // (((x0 op x1) op x2) ...) so every backend that follows this order gives identical
  // bits. kSum is what boxing uses; kMax and kMin are there for P(max)/P(min).
  ReduceOp reduce_op = ReduceOp::kSum;
  // What the bytes encode; ranks must agree. 0 is the call's own type (f32 for AllReduce and
  // ReduceScatter, opaque bytes for the others); a layer that encodes its payload sets its
  // own tag (the compressed collectives: the codec and its parameters). Ranks that pass
  // different formats fail with INVALID_ARGUMENT on every rank before any payload moves
  // (call_agreement.h), instead of decoding bytes in a format they were not written in.
  uint32_t payload_format = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  // The number of ranks in the group, and this one's rank in [0, size()).
  virtual int64_t size() const = 0;
  virtual int64_t rank() const = 0;
  // For messages: "in-process group 'tp0' rank 1 of 4".
  virtual std::string Name() const = 0;

  // output[i] = reduce over ranks of input[i], for i in [0, count); every rank passes the
  // same `count`. `output == input` (in place) is allowed.
  virtual absl::Status AllReduce(const float* input, float* output, int64_t count,
                                 const CollectiveOptions& options) = 0;

  // `input` holds sum(counts) elements: size() consecutive chunks, chunk r of counts[r]
  // elements. `output` receives chunk rank() reduced over ranks (counts[rank()]
  // elements). Every rank passes the same `counts` (size() entries, each >= 0). In place
  // is allowed: output == input + (counts[0] + ... + counts[rank() - 1]).
  virtual absl::Status ReduceScatter(const float* input, float* output,
                                     absl::Span<const int64_t> counts,
                                     const CollectiveOptions& options) = 0;

  // Rank r contributes `byte_counts[r]` bytes from `input`; `output` receives every
  // rank's contribution in rank order (sum(byte_counts) bytes). Every rank passes the
  // same `byte_counts`. In place is allowed: input == output + (bytes of lower ranks).
  virtual absl::Status AllGather(const void* input, void* output,
                                 absl::Span<const int64_t> byte_counts,
                                 const CollectiveOptions& options) = 0;

  // `byte_counts` is a size() x size() row-major matrix, the same on every rank:
  // byte_counts[src * size() + dst] bytes go from rank src to rank dst. `input` holds
  // this rank's row: the chunks for dst = 0, 1, ... back to back; `output` receives this
  // rank's column: the chunks from src = 0, 1, ... back to back. Not in place.
  virtual absl::Status AllToAll(const void* input, void* output,
                                absl::Span<const int64_t> byte_counts,
                                const CollectiveOptions& options) = 0;

  // `bytes` bytes of `root`'s buffer are copied into every other rank's buffer.
  virtual absl::Status Broadcast(void* buffer, int64_t bytes, int64_t root,
                                 const CollectiveOptions& options) = 0;

  // Point to point. The k-th Send from a to b pairs with the k-th Recv on b from a, and
  // both must give the same `bytes`. A Send returns once the receiver has its copy
  // (rendezvous, no intermediate buffer), so two ranks that Send to each other first
  // wait for each other until the deadline: order them, or use AllToAll.
  virtual absl::Status Send(const void* data, int64_t bytes, int64_t peer,
                            const CollectiveOptions& options) = 0;
  virtual absl::Status Recv(void* data, int64_t bytes, int64_t peer,
                            const CollectiveOptions& options) = 0;

  // Makes every pending and later call of the whole group fail with `cause`'s code
  // (FAILED_PRECONDITION for later calls) and message. For shutdown and for a failure
  // elsewhere in the runtime that leaves peers waiting. Thread-safe; any thread may call
  // it. The first abort's cause wins; aborting an aborted group does nothing.
  virtual void Abort(const absl::Status& cause) = 0;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_COMMUNICATOR_H_
