// The actor engine: register-based flow control over the actors of one node's plan.
//
// Each device gets a compute thread and one communication thread per communication
// stream its collectives are on (CollectiveDef.stream; one when the plan has a single
// stream); each actor runs on the thread its ActorDef names, a communication actor on
// its collective's stream's thread. An actor acts on iteration i when
//   - every register it consumes holds iteration i (its producer announced it),
//   - every register it produces has a free slot: iteration i - count has been returned
//     by every consumer (count 1 is lock-step, 2 lets consecutive iterations overlap),
//   - its control predecessors acted on iteration i (in-place updates, memory reuse),
//   - its device has finished iteration i - register_count (the memory planner's rule:
//     registers sharing arena bytes are then never live in two iterations at once),
//   - for a collective: it is the next one of its stream in the device's static
//     collective order (DevicePlan.collective_order restricted to the stream). Streams
//     run apart: a collective never waits for one of another stream.
// With micro-batches (Job.micro_batches = M) "iteration i" above is the actor's own act
// count: M acts per iteration for per-micro-batch actors, one for per_iteration ones; the
// engine maps the counts on every register and control edge, gates the arena per
// micro-batch against the device's register_count, and repeats the collective order per
// micro-batch (docs/pipeline.md). Each device has a compute thread, its communication
// threads and one thread per transfer actor (THREAD_TRANSFER: send/recv between
// placements, outside the collective order; a receiving one is not gated).
// A compute thread runs whatever of its actors is ready; on a pipeline stage (a plan whose
// actors carry act kinds, ActorDef.pipeline_act) it runs them one act at a time, a ready
// forward act first, then the oldest micro-batch's, so the next stage gets its activation
// as early as the schedule lets it (docs/pipeline.md, "Forward first").
// After acting it tells consumers (register readable), producers (register returned)
// and control successors, all through the owning threads' message queues, so each
// actor's state is touched only by its own thread. After its last iteration an actor
// sends EndOfData to its consumers; an actor whose inputs all ended ends too; threads
// exit when their actors have ended.
//
// What an act does is not the engine's business: a BindFunction (below) gives each actor
// its ActFunction; the runtime binds the behaviors of actors/behaviors/ (runtime.cc),
// tests bind no-ops or recorders.
#ifndef ACTORS_ENGINE_H_
#define ACTORS_ENGINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actors/thread_priority.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// What an act function sees of the engine.
class ActContext {
 public:
  virtual ~ActContext() = default;
  // Address of the slot of plan register `register_id` (of the acting actor's device)
  // that holds iteration `iteration`.
  virtual void* RegisterSlot(int64_t register_id, int64_t iteration) const = 0;
};

// Performs one act of an actor: reads its consumed registers' slots for `iteration`,
// writes its produced registers' slots. An error stops the run.
using ActFunction = std::function<absl::Status(int64_t iteration, const ActContext& context)>;

// Where an actor sits, for the function that binds behaviors.
struct ActorBinding {
  const proto::Plan* plan = nullptr;
  int device_index = 0;  // Index into plan.devices().
  const proto::ActorDef* actor = nullptr;
  // The device's workspace block (MemoryBlock.workspace): scratch that compute kernels
  // declaring one (KernelDef.workspace_bytes) share, one act at a time on the device's
  // compute thread. Null and 0 when the plan has none.
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
};

using BindFunction = std::function<absl::StatusOr<ActFunction>(const ActorBinding& binding)>;

// One act, for traces: thread, actor, iteration, wall-clock interval.
struct ActRecord {
  int32_t thread = 0;
  int32_t device_index = 0;
  int64_t actor_id = 0;
  int64_t iteration = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct EngineOptions {
  // Runs the devices of this node only; < 0: every node's devices (a whole cluster
  // simulated in one process).
  int64_t node = 0;
  int64_t iterations = 1;
  // The iteration the run starts at (a run resumed from a checkpoint): act functions see
  // iteration first_iteration + i for the engine's i-th (so data, the learning-rate
  // schedule and the optimizer step continue), and a per-micro-batch actor act
  // first_iteration * micro_batches + n. Progress counts, traces and timeouts keep
  // counting from 0.
  int64_t first_iteration = 0;
  // A thread that makes no progress for this long fails the run with a message naming
  // every actor it holds that is still waiting and for what.
  std::chrono::milliseconds progress_timeout{30000};
  // Records every act (for --trace and the flow-control tests).
  bool record_acts = false;
  // Nice levels by which communication and transfer threads lead the compute threads
  // (actors/thread_priority.h); 0: every thread at the nice value of the thread that
  // calls RunEngine.
  int communication_priority_levels = kCommunicationPriorityLevels;
  // Progress reports, from the thread that made the progress: the device (plan.devices()
  // index) completed its `completed`-th collective, counted over all its streams (with
  // one stream its last completed collective sequence number is completed - 1), or its
  // `completed`-th iteration. Workers mirror
  // them into a status file their daemon reads even after a crash. Must be cheap.
  std::function<void(int device_index, int64_t completed)> on_collective_done;
  std::function<void(int device_index, int64_t completed)> on_iteration_done;
  // Called once with the first error, before the threads stop: the runtime aborts its
  // communicators so no thread stays blocked in a collective.
  std::function<void(const absl::Status& error)> on_failure;
  // Called once after every thread finished without an error, while the devices' memory
  // is still allocated (the runtime saves the last iteration's checkpoint from it); its
  // error is the run's.
  std::function<absl::Status()> on_finished;
};

struct EngineResult {
  std::vector<ActRecord> acts;  // Empty unless record_acts.
  // Peak bytes of memory the engine allocated per device (every memory block: persistent,
  // arena, per-iteration, kernel workspace, each rounded up to 64 B plus 64 B), in
  // plan.devices() order; devices of other nodes have 0.
  std::vector<int64_t> allocated_bytes;
};

// Runs `plan` for options.iterations iterations. The first error of any act, or a
// progress timeout, stops every thread and is returned, naming the device, the thread
// and the actor.
absl::StatusOr<EngineResult> RunEngine(const proto::Plan& plan, const BindFunction& bind,
                                       const EngineOptions& options);

}  // namespace oneflow::actors

#endif  // ACTORS_ENGINE_H_
