#include "actors/forward_first.h"

namespace oneflow::actors {

std::vector<bool> ForwardActors(const std::vector<ForwardFirstActor>& actors) {
  std::vector<bool> forward(actors.size(), false);
  bool any = false;
  for (const ForwardFirstActor& actor : actors) any = any || actor.pipeline_act == proto::PIPELINE_ACT_FORWARD;
  if (!any) return forward;
  for (size_t a = 0; a < actors.size(); ++a) {
    forward[a] = actors[a].pipeline_act == proto::PIPELINE_ACT_FORWARD || actors[a].per_iteration;
  }
  // The actors without an act kind between them, to a fixed point (each round reaches one
  // actor further along a chain of them).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t a = actors.size(); a-- > 0;) {
      const ForwardFirstActor& actor = actors[a];
      if (forward[a] || actor.pipeline_act != proto::PIPELINE_ACT_UNSET) continue;
      bool feeds_forward = false;
      for (int consumer : actor.consumers) feeds_forward = feeds_forward || forward[consumer];
      bool fed_by_forward = !actor.producers.empty();
      for (int producer : actor.producers) fed_by_forward = fed_by_forward && producer >= 0 && forward[producer];
      if (feeds_forward || fed_by_forward) {
        forward[a] = true;
        changed = true;
      }
    }
  }
  return forward;
}

std::optional<int> ForwardFirstQueue::PopReady(const std::function<Key(int)>& key_of,
                                               const std::function<bool(int)>& ready) {
  while (!queued_.empty()) {
    const Key key = queued_.top();
    queued_.pop();
    const int actor = std::get<2>(key);
    const Key now = key_of(actor);
    if (key != now) {
      queued_.push(now);
      continue;
    }
    if (ready(actor)) return actor;
  }
  return std::nullopt;
}

}  // namespace oneflow::actors
