// Training a plan on this process's devices: the engine (engine.h) with every actor
// bound to its behavior (data source, variable, compute kernel, boxing collective,
// loss sink), reporting per-iteration loss and throughput.
//
//   TrainOptions options;
//   options.iterations = 30;
//   options.on_iteration = [](const IterationMetrics& m) { ... m.loss ... };
//   OF_ASSIGN_OR_RETURN(TrainResult result, TrainPlan(plan, options));
#ifndef ACTORS_RUNTIME_H_
#define ACTORS_RUNTIME_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actors/checkpoint/checkpoint_writer.h"
#include "actors/engine.h"
#include "actors/flight_recorder.h"
#include "actors/metrics.h"
#include "kernels/compression/codec.h"
#include "oneflow_core/comm/key_value_store.h"
#include "oneflow_core/comm/transport.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

struct TrainOptions {
  // The node whose devices run in this process; < 0: every node (one process simulates
  // the whole cluster, each device a pair of threads).
  int64_t node = 0;
  int64_t iterations = 1;
  // Threads each local CPU device runs its compute kernels on (its compute thread plus
  // a pool of helpers from the device backend, DeviceBackend::CreateThreadPool). 0: the plan's
  // cluster.threads_per_device (1 when unset). Values outside [1, kMaxThreadsPerDevice]
  // fail with INVALID_ARGUMENT naming `threads_per_device_flag`.
  int64_t threads_per_device = 0;
  std::string threads_per_device_flag = "TrainOptions.threads_per_device";
  std::chrono::milliseconds progress_timeout{60000};
  // Keep every act for a trace.
  bool record_acts = false;
  // Keep every iteration's metrics in TrainResult::iterations (tests and benchmarks read
  // the curve there). A long run sets false and takes them from on_iteration instead: kept,
  // they cost ~180 B per iteration for as long as the run lasts (docs/runtime.md, "Long runs").
  bool keep_iteration_metrics = true;
  // The longest one collective may wait for its peers before the run fails with
  // DEADLINE_EXCEEDED naming the actor, the collective, its sequence number and the
  // ranks it waited for.
  absl::Duration collective_timeout = absl::Seconds(60);
  // Where collectives across processes meet, and this process's address for them.
  // Needed only when the plan has devices on other nodes; see CommunicatorPool.
  KeyValueStore* rendezvous = nullptr;
  std::string worker_host = "127.0.0.1";
  // The transport of groups with members in other processes (CommunicatorPool).
  Transport transport = kDefaultTransport;
  // Nice levels by which this process's communication threads lead its compute threads
  // (EngineOptions::communication_priority_levels, actors/thread_priority.h); 0: off.
  // Outside [0, 39] the run fails with INVALID_ARGUMENT naming
  // `communication_priority_levels_flag`.
  int64_t communication_priority_levels = kCommunicationPriorityLevels;
  std::string communication_priority_levels_flag = "TrainOptions.communication_priority_levels";
  // Progress per device (engine.h); the worker's status file.
  std::function<void(int device_index, int64_t completed)> on_collective_done;
  std::function<void(int device_index, int64_t completed)> on_iteration_done;
  // Called once with the first error, from the thread that hit it, after the
  // communicators were aborted; workers start their exit deadline here.
  std::function<void(const absl::Status& error)> on_failure;
  // Records every local device's collectives (flight_recorder.h) when set; it must
  // outlive the run. Its owner dumps it (the worker: on a failure and on SIGUSR1).
  FlightRecorder* flight_recorder = nullptr;
  // Wraps every actor's act function after binding (outside the flight recorder's
  // wrapper: a delay here is a rank late to enter its collective): fault injection in tests.
  std::function<ActFunction(const ActorBinding& binding, ActFunction act)> wrap_act;
  // Called in iteration order, once the iteration's loss arrived and every device of
  // this process finished the iteration (its backward boxings included, so that the
  // metrics cover all of the iteration's compressed boxing), from the thread that
  // completed the last of these.
  std::function<void(const IterationMetrics&)> on_iteration;
  // The relative L2 error above which a compressed boxing edge warns, once per edge
  // (compression_meter.h); unset: DocumentedErrorBound. Where the warnings go; unset:
  // stderr.
  std::function<double(const CodecOptions& codec)> compression_error_bound;
  std::function<void(const std::string& line)> on_warning;
  // Checkpoints of the persistent tensors every `checkpoint.every` iterations into
  // `checkpoint.dir` (actors/checkpoint/checkpoint_writer.h, docs/checkpoints.md). With
  // one node of several in this process, the nodes agree through `rendezvous` (unless
  // checkpoint.peers names another store) and checkpoint.dir must be reachable from
  // every node.
  CheckpointOptions checkpoint;
  // A checkpoint directory, or a directory of them (the newest complete one is taken):
  // the variables and optimizer state start from it, and the run trains iterations
  // k .. iterations - 1 for a checkpoint taken after k iterations (`iterations` stays
  // the total). Refused, before anything runs, when it is incomplete, damaged or of
  // another model.
  std::string resume_from;
  // In-memory checkpoints (docs/elastic.md): every `memory_checkpoint.every` iterations
  // this process's shards are handed to `memory_checkpoint.to_memory` (which must be set
  // with `every`), besides and independently of the disk checkpoints above.
  CheckpointOptions memory_checkpoint;
  // When set, the run resumes from this checkpoint held in memory (the parts of every
  // node, put together) instead of `resume_from`.
  std::shared_ptr<CheckpointInMemory> resume_from_memory;
};

struct TrainResult {
  // Every iteration's metrics, in order; empty unless TrainOptions::keep_iteration_metrics.
  std::vector<IterationMetrics> iterations;
  EngineResult engine;
  // The iteration the run started at (the checkpoint's when resuming, else 0) and the
  // checkpoint it resumed from.
  int64_t first_iteration = 0;
  std::string resumed_from;
  // The checkpoints this run wrote, oldest first.
  std::vector<CheckpointRecord> checkpoints;
  // The in-memory checkpoints this process handed off (dir "memory"), oldest first.
  std::vector<CheckpointRecord> memory_checkpoints;
};

absl::StatusOr<TrainResult> TrainPlan(const proto::Plan& plan, const TrainOptions& options);

}  // namespace oneflow::actors

#endif  // ACTORS_RUNTIME_H_
