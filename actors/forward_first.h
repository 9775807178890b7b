// Forward first: how a pipeline stage's compute thread picks among its ready acts
// (docs/pipeline.md, "Forward first").
//
// With several acts ready, the engine's plain pick (a stack of candidates, each actor run
// as long as it is ready) ran an actor ready for two micro-batches twice in a row and
// interleaved a forward op by op with a backward whose gradient arrived meanwhile: on a
// pipeline stage that delayed the activation the next stage waits for (traced on 2
// emulated hosts, gpt pp = 2, M = 8: the last stage idled 2.2 ms, then 0.5-0.7 ms a
// micro-batch). A stage's thread instead runs one act at a time, the ready actor least in
// (forward or not, micro-batch of its next act, actor index), which is 1F1B's order given
// the device's slots: after the backward that frees a slot, the next forward before the
// next backward, and the first stage's warm-up forwards one after another.
#ifndef ACTORS_FORWARD_FIRST_H_
#define ACTORS_FORWARD_FIRST_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow::actors {

// One actor as the marking sees it: its kind and whom its registers connect it to.
struct ForwardFirstActor {
  proto::PipelineAct pipeline_act = proto::PIPELINE_ACT_UNSET;
  bool per_iteration = false;
  // The producer (actor index) of each register it reads, -1 where unknown.
  std::vector<int> producers;
  // The actors (indices) reading the registers it writes.
  std::vector<int> consumers;
};

// Which actors a stage runs first: every FORWARD act, every per-iteration actor (a
// variable, the optimizer's update: the next iteration's forward waits for them; without
// them a forward waiting on its iteration's variable let the next micro-batch's forward
// run first), and every actor without an act kind that feeds one of these (a boxing, a
// transfer) or reads only what forward actors wrote. All false when no actor is FORWARD
// (a plan without pipeline act kinds keeps the plain pick).
std::vector<bool> ForwardActors(const std::vector<ForwardFirstActor>& actors);

// The ready-act pick of one thread: a min-queue of (0 for a forward actor else 1,
// micro-batch of its next act, actor index), the keys taken when an actor is queued.
class ForwardFirstQueue {
 public:
  using Key = std::tuple<int, int64_t, int>;

  void Push(const Key& key) { queued_.push(key); }

  // The queued actor least in its current key (`key_of`) for which `ready` holds, taken
  // out of the queue; an entry whose actor acted since it was queued goes back with its
  // current key, one not ready is dropped (a message queues it again). nullopt when none
  // is ready.
  std::optional<int> PopReady(const std::function<Key(int)>& key_of, const std::function<bool(int)>& ready);

 private:
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> queued_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_FORWARD_FIRST_H_
