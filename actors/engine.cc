#include "actors/engine.h"

#include <algorithm>
#include <utility>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <pthread.h>

#include "actors/forward_first.h"
#include "actors/thread_priority.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actors/message_queue.h"
#include "kernels/backends.h"
#include "oneflow_core/comm/compute_activity.h"

namespace oneflow::actors {
namespace {

constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::max();

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct RegisterRuntime {
  const proto::RegisterDef* def = nullptr;
  int producer = -1;            // Actor index.
  std::vector<int> consumers;   // Actor indices, unique.
  char* base = nullptr;
  int64_t stride = 0;           // Slot stride; 0 for persistent registers.
  int64_t count = 1;
  int64_t rate = 1;             // Values per iteration: micro_batches, or 1 (per_iteration).
};

// An actor's static wiring plus the state its own thread keeps.
struct ActorRuntime {
  const proto::ActorDef* def = nullptr;
  int device = 0;
  int thread = 0;
  std::vector<int> consumed;      // Register indices, unique.
  std::vector<int> produced;      // Register indices.
  std::vector<int> predecessors;  // Actor indices.
  std::vector<int> successors;
  int64_t collective_position = -1;  // Index in the device's collective order.
  // Acts per iteration: micro_batches, or 1 for a per_iteration actor.
  int64_t rate = 1;
  // Per consumed / produced register: acts of this actor per value of the register (1,
  // or micro_batches for a per-micro-batch actor and a per-iteration register). Act n
  // reads or writes value n / ratio and returns or announces it after act n when
  // (n + 1) % ratio == 0.
  std::vector<int64_t> consume_ratio;
  std::vector<int64_t> produce_ratio;
  // Its positions in one iteration of the device's expanded collective sequence (one
  // per act of the iteration), for a collective actor.
  std::vector<int64_t> collective_slots;
  bool gated = true;  // Takes part in the device's arena gate (acts per micro-batch).
  // A weight-gradient act (BACKWARD_WEIGHT) of a zero-bubble plan (Job.pipeline_schedule
  // ZB_H1): its thread runs it only when nothing else is ready.
  bool fills_bubble = false;
  ActFunction act;

  enum class State { kWaiting, kDone };
  State state = State::kWaiting;
  int64_t next = 0;               // The iteration it acts on next.
  int64_t end = kNoEnd;           // Iterations in all, once known.
  int ends_pending = 0;           // Producers that have not announced their end.
  int64_t announced_end = kNoEnd;
  std::vector<int64_t> readable;                // Per consumed: iterations produced.
  std::vector<std::vector<int64_t>> returned;   // Per produced, per consumer.
  // Per produced register: the least `returned` over its consumers and how many
  // consumers sit at it, kept incrementally so a wide fan stays O(1) per message.
  std::vector<int64_t> released;
  std::vector<int> at_release;
  // (register index, consumer actor) -> (position in produced, position in consumers).
  absl::flat_hash_map<std::pair<int, int>, std::pair<int, int>> return_slot;
  std::vector<int64_t> predecessor_acted;
};

struct ThreadRuntime {
  int index = 0;
  MessageQueue queue;
  std::vector<int> actors;
  int device = 0;
  bool communication = false;
  // Communication and transfer threads: they wait on peers and run ahead of compute
  // threads (thread_priority.h).
  bool waits_on_peers = false;
  // A compute thread with forward acts picks them by Engine::ActForwardFirst, from its queue.
  bool forward_first = false;
  ForwardFirstQueue forward_queue;
  std::string name;
  // Its name for the operating system (ps -L, top -H, /proc/PID/task/TID/comm; at most 15
  // characters): "of-compute-<device>", "of-comm-<device>" or "of-transfer-<device>", the
  // device's index in the plan. bench/distributed/thread_cpu.py finds compute threads by it.
  std::string os_name;
  int64_t stream = 0;             // For a communication thread: the stream it issues.
  int64_t collective_cursor = 0;  // Position in its stream's collective sequence.
  int64_t device_done = 0;        // This thread's view of its device's finished micro-batches.
  int64_t register_count = 1;     // Its device's: how far past device_done it may act.
  // One iteration of its stream's collective sequence: the device's collective order
  // restricted to the stream, once per micro-batch, a per-iteration collective only in
  // the first copy, or in the last when it works on accumulated values
  // (ActorDef.after_micro_batches), at its place in the order. Without micro-batches it
  // is that order. Entry -> actor index.
  std::vector<int> collective_actor;
  std::vector<ActRecord> records;
};

struct DeviceRuntime {
  // Memory from the plan's device backend (kernels/device_backend.h), freed through it.
  std::vector<std::unique_ptr<char, std::function<void(char*)>>> blocks;
  int64_t allocated = 0;
  // The block marked MemoryBlock.workspace, if any (ActorBinding::workspace).
  char* workspace = nullptr;
  int64_t workspace_bytes = 0;
  int actor_count = 0;
  // Its compute thread, one communication thread per stream it uses (at least one),
  // then one per transfer actor.
  std::vector<int> threads;
  int compute_thread() const { return threads[0]; }
  // Stream id (CollectiveDef.stream) -> its communication thread.
  std::map<int64_t, int> stream_threads;
  // Collectives completed on all its streams, for EngineOptions::on_collective_done.
  std::atomic<int64_t> collectives_done{0};
  // Micro-batches (iterations without them) the device may have in flight: the plan's
  // register count, or the device's own (DevicePlan.register_count).
  int64_t register_count = 1;
  std::mutex mutex;
  std::map<int64_t, int> acted;  // iteration -> actors done with it
  int64_t done = 0;
};

class Engine : public ActContext {
 public:
  Engine(const proto::Plan& plan, const EngineOptions& options) : plan_(plan), options_(options) {}

  absl::Status Build(const BindFunction& bind);
  absl::StatusOr<EngineResult> Run();

  // `iteration` is the acting actor's act index; a per-micro-batch actor reading or
  // writing a per-iteration register means the value of its iteration.
  void* RegisterSlot(int64_t register_id, int64_t iteration) const override {
    const RegisterRuntime& reg = registers_[register_offset_[current_device_] + register_id];
    if (current_rate_ > reg.rate) iteration /= current_rate_ / reg.rate;
    return reg.base + (reg.stride == 0 ? 0 : (iteration % reg.count) * reg.stride);
  }

 private:
  void ThreadMain(int t);
  bool Ready(const ActorRuntime& actor, const ThreadRuntime& thread) const;
  // Acts predecessor `p` must have made before `actor` makes its next act: those
  // covering the same micro-batches (all of the iteration's for a per-iteration actor
  // after per-micro-batch ones; the iteration's one for the converse).
  static int64_t PredecessorNeeds(const ActorRuntime& actor, const ActorRuntime& p) {
    return ((actor.next + 1) * p.rate + actor.rate - 1) / actor.rate;
  }
  // Where in the device's collective sequence `actor`'s next act is.
  static int64_t CollectiveSequenceNumber(const ActorRuntime& actor, const ThreadRuntime& thread) {
    const int64_t length = static_cast<int64_t>(thread.collective_actor.size());
    return actor.next / actor.rate * length + actor.collective_slots[actor.next % actor.rate];
  }
  std::string WaitingFor(const ActorRuntime& actor, const ThreadRuntime& thread) const;
  void Act(int a, ThreadRuntime& thread);
  void Apply(const Message& message, ThreadRuntime& thread, std::vector<int>* candidates);
  // Marks the forward actors (forward_) and the compute threads that have any.
  void MarkForwardActors();
  // A forward_first thread's acts until none of `candidates` (nor what their acts make
  // ready) is ready: one act at a time, picked by a ForwardFirstQueue (forward_first.h),
  // the thread's messages applied after each. Actors `hold` takes (the bubble's W acts)
  // are left to it. False when an abort arrived.
  bool ActForwardFirst(ThreadRuntime& thread, std::vector<int>* candidates, std::deque<Message>* inbox,
                       const std::function<bool(int)>& hold);
  // Marks actor `a` done and tells its consumers how many values its registers hold.
  void EndOfData(int a);
  void Send(const Message& message) { threads_[actors_[message.to].thread].queue.Push(message); }
  void Fail(absl::Status status);
  std::string ActorText(int a) const {
    return absl::StrCat("actor ", actors_[a].def->id(), " '", actors_[a].def->name(), "'");
  }

  const proto::Plan& plan_;
  const EngineOptions& options_;
  int64_t register_count_ = 2;
  std::vector<RegisterRuntime> registers_;
  std::vector<int64_t> register_offset_;  // Per device: index of its register 0.
  std::vector<ActorRuntime> actors_;
  std::vector<bool> forward_;  // Per actor: run first on a pipeline stage (forward_first.h).
  std::deque<ThreadRuntime> threads_;  // Not movable (queues hold mutexes).
  std::vector<DeviceRuntime> devices_;
  // Set by the acting thread for RegisterSlot (thread_local: each thread acts alone).
  static thread_local int current_device_;
  static thread_local int64_t current_rate_;
  int64_t micro_batches_ = 1;
  std::atomic<bool> aborted_{false};
  std::mutex error_mutex_;
  absl::Status error_;
};

thread_local int Engine::current_device_ = 0;
thread_local int64_t Engine::current_rate_ = 1;

absl::Status Engine::Build(const BindFunction& bind) {
  register_count_ = std::max<int64_t>(1, plan_.register_count());
  absl::StatusOr<DeviceBackend*> found = BackendFor(PlanDeviceType(plan_));
  if (!found.ok()) return found.status();
  DeviceBackend* const backend = *found;
  micro_batches_ = std::max<int64_t>(1, plan_.job().micro_batches());
  devices_ = std::vector<DeviceRuntime>(plan_.devices_size());
  absl::flat_hash_map<int64_t, int> actor_index;
  for (int d = 0; d < plan_.devices_size(); ++d) {
    const proto::DevicePlan& device = plan_.devices(d);
    register_offset_.push_back(static_cast<int64_t>(registers_.size()));
    if (options_.node >= 0 && device.device().node() != options_.node) continue;
    DeviceRuntime& runtime = devices_[d];
    runtime.register_count = device.register_count() > 0 ? device.register_count() : register_count_;
    auto add_thread = [&](bool communication, const std::string& what) {
      runtime.threads.push_back(static_cast<int>(threads_.size()));
      threads_.emplace_back();
      threads_.back().index = static_cast<int>(threads_.size()) - 1;
      threads_.back().device = d;
      threads_.back().communication = communication;
      threads_.back().waits_on_peers = communication;
      threads_.back().register_count = runtime.register_count;
      threads_.back().name =
          absl::StrCat("device ", device.device().node(), ":", device.device().device(), " ", what, " thread");
      threads_.back().os_name =
          absl::StrCat("of-", communication ? "comm" : (what == "compute" ? "compute" : "transfer"), "-", d)
              .substr(0, 15);
      return threads_.back().index;
    };
    add_thread(false, "compute");
    // One communication thread per stream the device's collectives are on, so streams
    // do not wait for each other (one even without collectives, as before streams).
    std::vector<int64_t> streams;
    for (int64_t id : device.collective_order()) {
      if (id >= 0 && id < plan_.collectives_size()) streams.push_back(plan_.collectives(static_cast<int>(id)).stream());
    }
    std::sort(streams.begin(), streams.end());
    streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
    if (streams.empty()) streams.push_back(0);
    for (int64_t stream : streams) {
      const int t = add_thread(true, streams.size() == 1 ? std::string("communication")
                                                        : absl::StrCat("communication stream ", stream));
      threads_[t].stream = stream;
      runtime.stream_threads[stream] = t;
    }
    for (const proto::MemoryBlock& block : device.memory_blocks()) {
      const size_t bytes = static_cast<size_t>((block.size_bytes() + 63) / 64 * 64 + 64);
      absl::StatusOr<void*> memory = backend->Allocate(static_cast<int64_t>(bytes));
      if (!memory.ok()) {
        return absl::Status(memory.status().code(),
                            absl::StrCat("memory block ", block.id(), " of device ", device.device().node(), ":",
                                         device.device().device(), ": ", memory.status().message()));
      }
      runtime.blocks.emplace_back(static_cast<char*>(*memory), [backend](char* memory) { backend->Free(memory); });
      runtime.allocated += static_cast<int64_t>(bytes);
      if (block.workspace()) {
        runtime.workspace = runtime.blocks.back().get();
        runtime.workspace_bytes = block.size_bytes();
      }
    }
    for (const proto::ActorDef& def : device.actors()) {
      ActorRuntime actor;
      actor.def = &def;
      actor.device = d;
      if (def.thread() == proto::THREAD_TRANSFER) {
        actor.thread = add_thread(false, absl::StrCat("transfer '", def.name(), "'"));
        threads_[actor.thread].waits_on_peers = true;
      } else {
        actor.thread = runtime.compute_thread();
        if (def.thread() == proto::THREAD_COMMUNICATION) {
          // Its collective's stream; a communication actor without one on the first.
          auto it = def.collective_id() >= 0 && def.collective_id() < plan_.collectives_size()
                        ? runtime.stream_threads.find(plan_.collectives(static_cast<int>(def.collective_id())).stream())
                        : runtime.stream_threads.end();
          actor.thread = it != runtime.stream_threads.end() ? it->second : runtime.stream_threads.begin()->second;
        }
      }
      actor.rate = def.per_iteration() ? 1 : micro_batches_;
      // A receiving transfer writes registers that own their bytes (memory planning
      // keeps them out of the arena), so it may run ahead of the device's gate: a stage
      // accepts the next micro-batch's data while still working on earlier ones.
      const bool receiver = def.thread() == proto::THREAD_TRANSFER && def.consumed_registers_size() == 0;
      actor.gated = actor.rate == micro_batches_ && !receiver;
      actor.fills_bubble = def.pipeline_act() == proto::PIPELINE_ACT_BACKWARD_WEIGHT &&
                           plan_.job().pipeline_schedule() == proto::PIPELINE_SCHEDULE_ZB_H1;
      actor_index[def.id()] = static_cast<int>(actors_.size());
      threads_[actor.thread].actors.push_back(static_cast<int>(actors_.size()));
      absl::StatusOr<ActFunction> act =
          bind(ActorBinding{&plan_, d, &def, runtime.workspace, runtime.workspace_bytes});
      if (!act.ok()) {
        return absl::Status(act.status().code(), absl::StrCat("device ", d, " actor ", def.id(), " '",
                                                              def.name(), "': ", act.status().message()));
      }
      actor.act = std::move(*act);
      if (actor.gated) ++runtime.actor_count;
      actors_.push_back(std::move(actor));
    }
    for (const proto::RegisterDef& def : device.registers()) {
      RegisterRuntime reg;
      reg.def = &def;
      reg.count = std::max<int64_t>(1, def.count());
      reg.rate = def.per_iteration() ? 1 : micro_batches_;
      if (def.memory_block() < 0 || def.memory_block() >= static_cast<int64_t>(runtime.blocks.size())) {
        return absl::FailedPreconditionError(absl::StrCat("register ", def.id(), " of device ", d,
                                                          " is in a memory block the plan lacks"));
      }
      const proto::MemoryBlock& block = device.memory_blocks(static_cast<int>(def.memory_block()));
      reg.base = runtime.blocks[def.memory_block()].get() + def.offset();
      reg.stride = block.persistent() ? 0 : block.slot_stride_bytes();
      registers_.push_back(reg);
    }
  }
  // Wiring, now that every actor of the node has an index.
  for (int a = 0; a < static_cast<int>(actors_.size()); ++a) {
    ActorRuntime& actor = actors_[a];
    const int64_t base = register_offset_[actor.device];
    for (int64_t id : actor.def->consumed_registers()) {
      const int r = static_cast<int>(base + id);
      if (std::find(actor.consumed.begin(), actor.consumed.end(), r) == actor.consumed.end()) {
        actor.consumed.push_back(r);
        registers_[r].consumers.push_back(a);
      }
    }
    for (int64_t id : actor.def->produced_registers()) {
      actor.produced.push_back(static_cast<int>(base + id));
      registers_[base + id].producer = a;
    }
    for (int64_t id : actor.def->control_predecessors()) {
      auto it = actor_index.find(id);
      if (it == actor_index.end()) continue;
      actor.predecessors.push_back(it->second);
      actors_[it->second].successors.push_back(a);
    }
  }
  for (int a = 0; a < static_cast<int>(actors_.size()); ++a) {
    ActorRuntime& actor = actors_[a];
    auto ratio = [&](int r, const char* role) -> absl::StatusOr<int64_t> {
      if (actor.rate < registers_[r].rate) {
        return absl::FailedPreconditionError(absl::StrCat(
            ActorText(a), " acts once per iteration but ", role, " register ", registers_[r].def->id(), " ('",
            registers_[r].def->tensor(), "'), which holds one value per micro-batch"));
      }
      return actor.rate / registers_[r].rate;
    };
    for (int r : actor.consumed) {
      absl::StatusOr<int64_t> k = ratio(r, "reads");
      if (!k.ok()) return k.status();
      actor.consume_ratio.push_back(*k);
    }
    for (int r : actor.produced) {
      absl::StatusOr<int64_t> k = ratio(r, "writes");
      if (!k.ok()) return k.status();
      actor.produce_ratio.push_back(*k);
    }
  }
  for (ThreadRuntime& thread : threads_) {
    if (!thread.communication) continue;
    const proto::DevicePlan& device = plan_.devices(thread.device);
    // The thread's stream's collectives, in the device's order.
    std::vector<int64_t> order;
    for (int64_t id : device.collective_order()) {
      if (id >= 0 && id < plan_.collectives_size() && plan_.collectives(static_cast<int>(id)).stream() == thread.stream) {
        order.push_back(id);
      }
    }
    std::vector<int> by_position(order.size(), -1);
    for (int a : thread.actors) {
      auto it = std::find(order.begin(), order.end(), actors_[a].def->collective_id());
      if (actors_[a].def->collective_id() >= 0 && it != order.end()) {
        actors_[a].collective_position = it - order.begin();
        by_position[actors_[a].collective_position] = a;
      }
    }
    for (int64_t m = 0; m < micro_batches_; ++m) {
      for (int a : by_position) {
        if (a >= 0 && actors_[a].rate == 1 &&
            m != (actors_[a].def->after_micro_batches() ? micro_batches_ - 1 : 0)) {
          continue;
        }
        if (a >= 0) actors_[a].collective_slots.push_back(static_cast<int64_t>(thread.collective_actor.size()));
        thread.collective_actor.push_back(a);
      }
    }
  }
  for (ActorRuntime& actor : actors_) {
    actor.readable.assign(actor.consumed.size(), 0);
    for (size_t k = 0; k < actor.produced.size(); ++k) {
      const auto& consumers = registers_[actor.produced[k]].consumers;
      actor.returned.emplace_back(consumers.size(), 0);
      actor.released.push_back(consumers.empty() ? std::numeric_limits<int64_t>::max() / 2 : 0);
      actor.at_release.push_back(static_cast<int>(consumers.size()));
      for (size_t c = 0; c < consumers.size(); ++c) {
        actor.return_slot[{actor.produced[k], consumers[c]}] = {static_cast<int>(k), static_cast<int>(c)};
      }
    }
    actor.predecessor_acted.assign(actor.predecessors.size(), 0);
    actor.ends_pending = static_cast<int>(actor.consumed.size());
    if (actor.consumed.empty()) actor.end = options_.iterations * actor.rate;
  }
  MarkForwardActors();
  return absl::OkStatus();
}

void Engine::MarkForwardActors() {
  std::vector<ForwardFirstActor> graph(actors_.size());
  for (size_t a = 0; a < actors_.size(); ++a) {
    const ActorRuntime& actor = actors_[a];
    graph[a].pipeline_act = actor.def->pipeline_act();
    graph[a].per_iteration = actor.def->per_iteration();
    for (int r : actor.consumed) graph[a].producers.push_back(registers_[r].producer);
    for (int r : actor.produced) {
      graph[a].consumers.insert(graph[a].consumers.end(), registers_[r].consumers.begin(), registers_[r].consumers.end());
    }
  }
  forward_ = ForwardActors(graph);
  for (DeviceRuntime& device : devices_) {
    if (device.threads.empty()) continue;  // A device of another node.
    ThreadRuntime& thread = threads_[device.compute_thread()];
    for (int a : thread.actors) thread.forward_first = thread.forward_first || forward_[a];
  }
}

bool Engine::Ready(const ActorRuntime& actor, const ThreadRuntime& thread) const {
  const int64_t i = actor.next;
  if (actor.state == ActorRuntime::State::kDone || i >= actor.end) return false;
  for (size_t k = 0; k < actor.readable.size(); ++k) {
    if (actor.readable[k] <= i / actor.consume_ratio[k]) return false;
  }
  for (size_t k = 0; k < actor.produced.size(); ++k) {
    if (i / actor.produce_ratio[k] - actor.released[k] >= registers_[actor.produced[k]].count) return false;
  }
  for (size_t k = 0; k < actor.predecessor_acted.size(); ++k) {
    if (actor.predecessor_acted[k] < PredecessorNeeds(actor, actors_[actor.predecessors[k]])) return false;
  }
  if (actor.gated && i >= thread.device_done + thread.register_count) return false;
  if (actor.collective_position >= 0) return thread.collective_cursor == CollectiveSequenceNumber(actor, thread);
  return true;
}

std::string Engine::WaitingFor(const ActorRuntime& actor, const ThreadRuntime& thread) const {
  const int64_t i = actor.next;
  for (size_t k = 0; k < actor.consumed.size(); ++k) {
    if (actor.readable[k] <= i / actor.consume_ratio[k]) {
      const RegisterRuntime& reg = registers_[actor.consumed[k]];
      return absl::StrCat("waits at iteration ", i, " for register ", reg.def->id(), " ('",
                          reg.def->tensor(), "') from ", ActorText(reg.producer), ", which has produced ",
                          actor.readable[k], " iterations");
    }
  }
  for (size_t k = 0; k < actor.produced.size(); ++k) {
    const RegisterRuntime& reg = registers_[actor.produced[k]];
    for (size_t c = 0; c < actor.returned[k].size(); ++c) {
      if (i / actor.produce_ratio[k] - actor.returned[k][c] >= reg.count) {
        return absl::StrCat("waits at iteration ", i, " for a free slot of register ", reg.def->id(),
                            " ('", reg.def->tensor(), "'): ", ActorText(reg.consumers[c]),
                            " has returned ", actor.returned[k][c], " iterations");
      }
    }
  }
  for (size_t k = 0; k < actor.predecessors.size(); ++k) {
    if (actor.predecessor_acted[k] < PredecessorNeeds(actor, actors_[actor.predecessors[k]])) {
      return absl::StrCat("waits at iteration ", i, " for control predecessor ", ActorText(actor.predecessors[k]));
    }
  }
  if (actor.gated && i >= thread.device_done + thread.register_count) {
    return absl::StrCat("waits at iteration ", i, " for its device to finish iteration ",
                        i - thread.register_count);
  }
  if (actor.collective_position >= 0) {
    return absl::StrCat("waits at iteration ", i, " for its turn in the collective order of stream ", thread.stream,
                        " (collective ", actor.def->collective_id(), ", position ", actor.collective_position,
                        "; the thread is at sequence number ", thread.collective_cursor, ")");
  }
  return absl::StrCat("is at iteration ", i);
}

void Engine::Act(int a, ThreadRuntime& thread) {
  ActorRuntime& actor = actors_[a];
  const int64_t i = actor.next;
  current_device_ = actor.device;
  current_rate_ = actor.rate;
  const int64_t start = options_.record_acts ? NowNs() : 0;
  // Compute threads' acts counted for the UCX waits (oneflow_core/comm/compute_activity.h).
  const ComputeActScope computing(/*counted=*/!thread.waits_on_peers);
  absl::Status status = actor.act(i + options_.first_iteration * actor.rate, *this);
  if (options_.record_acts) {
    thread.records.push_back(ActRecord{thread.index, actor.device, actor.def->id(), i, start, NowNs()});
  }
  if (!status.ok()) {
    const proto::DevicePlan& device_plan = plan_.devices(actor.device);
    const proto::DeviceId& device = device_plan.device();
    const std::string stage =
        device_plan.has_pipeline_stage() ? absl::StrCat(" (pipeline stage ", device_plan.pipeline_stage(), ")") : "";
    Fail(absl::Status(status.code(), absl::StrCat("device ", device.node(), ":", device.device(), stage, " ",
                                                  ActorText(a), " iteration ", i, ": ", status.message())));
    return;
  }
  for (size_t k = 0; k < actor.produced.size(); ++k) {
    const int64_t ratio = actor.produce_ratio[k];
    if ((i + 1) % ratio != 0) continue;  // An accumulator announces after the last micro-batch.
    const int r = actor.produced[k];
    for (int consumer : registers_[r].consumers) {
      Send(Message{MessageKind::kRegisterReadable, consumer, a, r, i / ratio});
    }
  }
  for (size_t k = 0; k < actor.consumed.size(); ++k) {
    const int64_t ratio = actor.consume_ratio[k];
    if ((i + 1) % ratio != 0) continue;  // Still read by the iteration's later micro-batches.
    const int r = actor.consumed[k];
    Send(Message{MessageKind::kRegisterReturned, registers_[r].producer, a, r, i / ratio});
  }
  for (int successor : actor.successors) Send(Message{MessageKind::kPredecessorActed, successor, a, -1, i});
  if (actor.collective_position >= 0) {
    ++thread.collective_cursor;
    const int64_t completed = ++devices_[actor.device].collectives_done;
    if (options_.on_collective_done) options_.on_collective_done(actor.device, completed);
  }
  actor.next = i + 1;
  // The device's iteration gate, in micro-batches: per-iteration actors own their
  // memory and stay out of it.
  DeviceRuntime& device = devices_[actor.device];
  int64_t done = -1;
  if (actor.gated) {
    std::lock_guard<std::mutex> lock(device.mutex);
    if (++device.acted[i] == device.actor_count) {
      while (!device.acted.empty() && device.acted.begin()->first == device.done &&
             device.acted.begin()->second == device.actor_count) {
        device.acted.erase(device.acted.begin());
        done = ++device.done;
      }
    }
  }
  if (done >= 0) {
    if (options_.on_iteration_done && done % micro_batches_ == 0) {
      options_.on_iteration_done(actor.device, done / micro_batches_);
    }
    for (int t : device.threads) threads_[t].queue.Push(Message{MessageKind::kDeviceIterationDone, -1, -1, -1, done});
  }
  if (actor.next >= actor.end) EndOfData(a);
}

void Engine::EndOfData(int a) {
  ActorRuntime& actor = actors_[a];
  actor.state = ActorRuntime::State::kDone;
  for (size_t k = 0; k < actor.produced.size(); ++k) {
    const int r = actor.produced[k];
    for (int consumer : registers_[r].consumers) {
      // In values of the register; the consumer converts to its acts.
      Send(Message{MessageKind::kEndOfData, consumer, a, r, actor.end / actor.produce_ratio[k]});
    }
  }
}

void Engine::Apply(const Message& message, ThreadRuntime& thread, std::vector<int>* candidates) {
  switch (message.kind) {
    case MessageKind::kDeviceIterationDone:
      thread.device_done = std::max(thread.device_done, message.iteration);
      for (int a : thread.actors) candidates->push_back(a);
      return;
    case MessageKind::kAbort:
      return;
    default:
      break;
  }
  ActorRuntime& actor = actors_[message.to];
  switch (message.kind) {
    case MessageKind::kRegisterReadable:
      for (size_t k = 0; k < actor.consumed.size(); ++k) {
        if (actor.consumed[k] == message.register_index) actor.readable[k] = message.iteration + 1;
      }
      break;
    case MessageKind::kRegisterReturned: {
      auto slot = actor.return_slot.find({message.register_index, message.from});
      if (slot == actor.return_slot.end()) break;
      const auto [k, c] = slot->second;
      const int64_t before = actor.returned[k][c];
      actor.returned[k][c] = message.iteration + 1;
      if (before == actor.released[k] && --actor.at_release[k] == 0) {
        // Every consumer moved past the old minimum: find the new one (once per
        // iteration per register, so amortized O(1) per message).
        const auto& returned = actor.returned[k];
        actor.released[k] = *std::min_element(returned.begin(), returned.end());
        actor.at_release[k] = static_cast<int>(std::count(returned.begin(), returned.end(), actor.released[k]));
      }
      break;
    }
    case MessageKind::kPredecessorActed:
      for (size_t k = 0; k < actor.predecessors.size(); ++k) {
        if (actor.predecessors[k] == message.from) actor.predecessor_acted[k] = message.iteration + 1;
      }
      break;
    case MessageKind::kEndOfData: {
      int64_t ratio = 1;
      for (size_t k = 0; k < actor.consumed.size(); ++k) {
        if (actor.consumed[k] == message.register_index) ratio = actor.consume_ratio[k];
      }
      actor.announced_end = std::min(actor.announced_end, message.iteration * ratio);
      if (--actor.ends_pending == 0) {
        actor.end = actor.announced_end;
        // Nothing more will come: end without acting (a source ran fewer iterations).
        if (actor.next >= actor.end && actor.state != ActorRuntime::State::kDone) EndOfData(message.to);
      }
      break;
    }
    default:
      break;
  }
  candidates->push_back(message.to);
  // A collective that just became ready may be behind another in the order: the next
  // one in the sequence is the one to look at.
  if (thread.communication && !thread.collective_actor.empty()) {
    const int64_t length = static_cast<int64_t>(thread.collective_actor.size());
    candidates->push_back(thread.collective_actor[thread.collective_cursor % length]);
  }
}

void Engine::ThreadMain(int t) {
  ThreadRuntime& thread = threads_[t];
  std::vector<int> candidates = thread.actors;
  std::deque<Message> inbox;
  auto live = [&]() {
    for (int a : thread.actors) {
      if (actors_[a].state != ActorRuntime::State::kDone) return true;
    }
    return false;
  };
  // Ready weight-gradient acts of a zero-bubble schedule (ActorRuntime::fills_bubble),
  // held back while anything else can run or a message waits: the bubble they fill.
  std::vector<int> held;
  std::vector<bool> is_held(actors_.size(), false);
  // True when `a` is such an act (held if ready), which the caller then leaves alone.
  const std::function<bool(int)> hold = [&](int a) {
    if (!actors_[a].fills_bubble) return false;
    if (!is_held[a] && Ready(actors_[a], thread)) {
      is_held[a] = true;
      held.push_back(a);
    }
    return true;
  };
  while (!aborted_.load()) {
    if (thread.forward_first && !ActForwardFirst(thread, &candidates, &inbox, hold)) return;
    while (!candidates.empty() && !aborted_.load()) {
      const int a = candidates.back();
      candidates.pop_back();
      if (hold(a)) continue;
      while (!aborted_.load() && Ready(actors_[a], thread)) {
        Act(a, thread);
        if (thread.communication && !thread.collective_actor.empty()) {
          const int64_t length = static_cast<int64_t>(thread.collective_actor.size());
          candidates.push_back(thread.collective_actor[thread.collective_cursor % length]);
        }
      }
    }
    if (!live() || aborted_.load()) return;
    thread.queue.DrainInto(&inbox);
    if (inbox.empty() && !held.empty()) {
      // Nothing else to do: one held act, the oldest micro-batch's first (its memory is
      // the device's gate), then look at the messages again.
      auto oldest = std::min_element(held.begin(), held.end(), [&](int x, int y) {
        return std::make_pair(actors_[x].next, x) < std::make_pair(actors_[y].next, y);
      });
      const int a = *oldest;
      held.erase(oldest);
      is_held[a] = false;
      if (Ready(actors_[a], thread)) Act(a, thread);
      candidates.push_back(a);
      continue;
    }
    if (inbox.empty()) {
      std::optional<Message> message = thread.queue.Pop(options_.progress_timeout);
      if (!message) {
        // Actors waiting for an input, a predecessor or their turn first: one waiting for
        // a free slot only waits for a consumer, which is listed if it is stuck here.
        std::vector<std::string> waiting, waiting_for_slots;
        for (int a : thread.actors) {
          if (actors_[a].state == ActorRuntime::State::kDone) continue;
          std::string why = absl::StrCat(ActorText(a), " ", WaitingFor(actors_[a], thread));
          (why.find("for a free slot") != std::string::npos ? waiting_for_slots : waiting).push_back(std::move(why));
        }
        waiting.insert(waiting.end(), waiting_for_slots.begin(), waiting_for_slots.end());
        if (waiting.size() > 8) waiting.resize(8);
        Fail(absl::DeadlineExceededError(absl::StrCat(
            thread.name, " made no progress for ", options_.progress_timeout.count(), " ms: ",
            absl::StrJoin(waiting, "; "))));
        return;
      }
      inbox.push_back(*message);
    }
    while (!inbox.empty()) {
      if (inbox.front().kind == MessageKind::kAbort) return;
      Apply(inbox.front(), thread, &candidates);
      inbox.pop_front();
    }
  }
}

bool Engine::ActForwardFirst(ThreadRuntime& thread, std::vector<int>* candidates, std::deque<Message>* inbox,
                             const std::function<bool(int)>& hold) {
  auto key_of = [&](int a) {
    const ActorRuntime& actor = actors_[a];
    return ForwardFirstQueue::Key{forward_[a] ? 0 : 1, actor.next * (micro_batches_ / actor.rate), a};
  };
  auto ready = [&](int a) { return Ready(actors_[a], thread); };
  ForwardFirstQueue& queued = thread.forward_queue;
  while (!aborted_.load()) {
    for (int a : *candidates) {
      if (!hold(a)) queued.Push(key_of(a));
    }
    candidates->clear();
    const std::optional<int> next = queued.PopReady(key_of, ready);
    if (!next) return true;
    Act(*next, thread);
    candidates->push_back(*next);  // Perhaps ready for its next micro-batch.
    thread.queue.DrainInto(inbox);
    while (!inbox->empty()) {
      if (inbox->front().kind == MessageKind::kAbort) return false;
      Apply(inbox->front(), thread, candidates);
      inbox->pop_front();
    }
  }
  return true;
}

void Engine::Fail(absl::Status status) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_.ok()) {
      error_ = status;
      first = true;
    }
  }
  if (first && options_.on_failure) options_.on_failure(status);
  aborted_.store(true);
  for (ThreadRuntime& thread : threads_) thread.queue.Push(Message{MessageKind::kAbort});
}

absl::StatusOr<EngineResult> Engine::Run() {
  // Decided once, from the thread that starts the run; every worker sets its own.
  const int base = ThisThreadNice();
  const int levels = options_.communication_priority_levels;
  const bool short_slices = levels > 0 && KernelTakesThreadSlices();
  const ThreadNiceValues nice = ChooseThreadNiceValues(
      base, levels, !short_slices && MayRaiseThreadPriority(base, levels), short_slices);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads_.size(); ++t) {
    const int wanted = threads_[t].waits_on_peers ? nice.communication : nice.compute;
    const bool short_slice = threads_[t].waits_on_peers && nice.communication_short_slice;
    workers.emplace_back([this, t, wanted, base, short_slice] {
      // A scheduling preference, not a condition of the run: a refusal leaves the
      // thread at the base value and the kernel's slice.
      if (wanted != base) (void)SetThisThreadNice(wanted);
      if (short_slice) (void)SetThisThreadSlice(kCommunicationSlice);
      pthread_setname_np(pthread_self(), threads_[t].os_name.c_str());
      ThreadMain(static_cast<int>(t));
    });
  }
  for (std::thread& worker : workers) worker.join();
  if (!error_.ok()) return error_;
  if (options_.on_finished) {
    absl::Status finished = options_.on_finished();
    if (!finished.ok()) return finished;
  }
  EngineResult result;
  for (ThreadRuntime& thread : threads_) {
    result.acts.insert(result.acts.end(), thread.records.begin(), thread.records.end());
  }
  for (const DeviceRuntime& device : devices_) result.allocated_bytes.push_back(device.allocated);
  return result;
}

}  // namespace

absl::StatusOr<EngineResult> RunEngine(const proto::Plan& plan, const BindFunction& bind,
                                       const EngineOptions& options) {
  if (options.iterations < 0) {
    return absl::InvalidArgumentError(absl::StrCat("iterations is ", options.iterations, "; it must be >= 0"));
  }
  Engine engine(plan, options);
  absl::Status built = engine.Build(bind);
  if (!built.ok()) return built;
  return engine.Run();
}

}  // namespace oneflow::actors
