#include "tools/worker/worker.h"

#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "actors/flight_recorder.h"
#include "actors/runtime.h"
#include "oneflow_core/comm/transport.h"
#include "oneflow_core/comm/gloo/failure.h"
#include "plan/collective_groups.h"
#include "plan/plan_verifier.h"
#include "oneflow_core/status.h"
#include "plan/plan_io.h"
#include "tools/launcher/metrics_proto.h"
#include "tools/launcher/rendezvous_client.h"
#include "tools/launcher/rendezvous_service.h"
#include "tools/worker/link_measurement.h"
#include "tools/worker/transport_agreement.h"
#include "tools/launcher/signal_watcher.h"
#include "tools/launcher/worker_events.h"
#include "tools/launcher/worker_status_file.h"

namespace oneflow::worker {
namespace {

// "device 1:0 last completed collective 41, 7 iterations done" per device.
std::string ProgressText(const std::vector<proto::DeviceProgress>& records, const proto::Plan& plan) {
  std::vector<std::string> parts;
  for (const proto::DeviceProgress& record : records) {
    const proto::DeviceId& device = plan.devices(static_cast<int>(record.device())).device();
    parts.push_back(absl::StrCat("device ", device.node(), ":", device.device(), " last completed collective ",
                                 record.completed_collectives() > 0 ? absl::StrCat(record.completed_collectives() - 1)
                                                                    : std::string("none"),
                                 ", ", record.completed_iterations(), " iterations done"));
  }
  return absl::StrJoin(parts, "; ");
}

// Test hooks (docs/diagnosis.md), from the environment: ONEFLOW_TEST_SLOW_DEVICE=N:D:F
// makes device N:D's compute acts F times as long (sleeping (F - 1) x each act's time),
// ONEFLOW_TEST_JITTER=J makes every device's compute acts of an iteration 1 to 1 + 2J
// times as long (one random factor per device and iteration). Slept in whole
// milliseconds as the owed time accumulates.
std::function<actors::ActFunction(const actors::ActorBinding&, actors::ActFunction)> TestDelayHook() {
  const char* slow = std::getenv("ONEFLOW_TEST_SLOW_DEVICE");
  const char* jitter_text = std::getenv("ONEFLOW_TEST_JITTER");
  long long slow_node = -1, slow_device = -1;
  double slow_factor = 1, jitter = 0;
  if (slow != nullptr && std::sscanf(slow, "%lld:%lld:%lf", &slow_node, &slow_device, &slow_factor) != 3) slow_node = -1;
  if (jitter_text != nullptr) jitter = std::atof(jitter_text);
  if (slow_node < 0 && jitter <= 0) return nullptr;
  struct Debt {
    std::atomic<int64_t> ns{0};
  };
  auto debts = std::make_shared<std::vector<Debt>>(1024);
  return [=](const actors::ActorBinding& binding, actors::ActFunction act) -> actors::ActFunction {
    if (binding.actor->kind() != proto::ACTOR_COMPUTE || binding.device_index >= 1024) return act;
    const proto::DeviceId& id = binding.plan->devices(binding.device_index).device();
    const double factor = id.node() == slow_node && id.device() == slow_device ? slow_factor : 1;
    if (factor <= 1 && jitter <= 0) return act;
    const int device = binding.device_index;
    return [=, act = std::move(act)](int64_t iteration, const actors::ActContext& context) {
      const auto start = std::chrono::steady_clock::now();
      absl::Status status = act(iteration, context);
      double extra = factor - 1;
      if (jitter > 0) {
        std::mt19937_64 random(static_cast<uint64_t>(iteration) * 1000003 + static_cast<uint64_t>(device));
        extra += std::uniform_real_distribution<double>(0, 2 * jitter)(random);
      }
      const double took = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      Debt& debt = (*debts)[device];
      const int64_t owed = debt.ns.fetch_add(static_cast<int64_t>(took * extra)) + static_cast<int64_t>(took * extra);
      if (owed >= 1000000) {
        debt.ns.fetch_sub(owed);
        std::this_thread::sleep_for(std::chrono::nanoseconds(owed));
      }
      return status;
    };
  };
}

void AddProgress(const std::vector<proto::DeviceProgress>& records,
                 google::protobuf::RepeatedPtrField<proto::DeviceProgress>* out) {
  for (const proto::DeviceProgress& record : records) *out->Add() = record;
}

// Acts per JobEvent.trace: ~40 bytes each, so an event stays far below the events pipe's
// and gRPC's message limits (16 MiB, 4 MiB).
constexpr size_t kTraceActsPerEvent = 20000;

// The recorded acts as JobEvent.trace events, their steady-clock times moved to the wall
// clock (ns since the Unix epoch) so the launch can put the nodes' acts on one time axis.
template <typename WriteEvent>
void SendTrace(const std::vector<actors::ActRecord>& acts, const WorkerOptions& options, WriteEvent&& write_event) {
  const int64_t wall_minus_steady =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() -
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
  for (size_t begin = 0; begin < acts.size(); begin += kTraceActsPerEvent) {
    proto::JobEvent event;
    event.set_job_id(options.job_id);
    event.set_node_rank(options.node_rank);
    proto::JobEvent::TraceActs* trace = event.mutable_trace();
    for (size_t i = begin; i < std::min(acts.size(), begin + kTraceActsPerEvent); ++i) {
      proto::JobEvent::Act* act = trace->add_acts();
      act->set_thread(acts[i].thread);
      act->set_device_index(acts[i].device_index);
      act->set_actor_id(acts[i].actor_id);
      act->set_iteration(acts[i].iteration);
      act->set_start_unix_ns(acts[i].start_ns + wall_minus_steady);
      act->set_end_unix_ns(acts[i].end_ns + wall_minus_steady);
    }
    write_event(event);
  }
}

// In-memory checkpoints (docs/elastic.md): this node's parts go to its daemon and the
// next one's; a resume from memory fetches every node's part before anything trains.
absl::Status SetUpMemoryCheckpoints(const WorkerOptions& options, actors::TrainOptions* train) {
  const MemoryCheckpointSettings& settings = options.memory_checkpoints;
  if (settings.every > 0) {
    absl::StatusOr<MemoryCheckpointSink> sink =
        MakeMemoryCheckpointSink(settings, options.node_rank, options.token, options.tls_ca_file,
                                 [](const std::string& line) {
                                   std::fprintf(stderr, "%s\n", line.c_str());
                                   std::fflush(stderr);
                                 });
    if (!sink.ok()) return sink.status();
    train->memory_checkpoint.every = settings.every;
    train->memory_checkpoint.to_memory = *std::move(sink);
  }
  if (settings.resume_iteration > 0) {
    absl::StatusOr<std::shared_ptr<actors::CheckpointInMemory>> checkpoint =
        FetchMemoryCheckpoint(settings, options.token, options.tls_ca_file);
    if (!checkpoint.ok()) return checkpoint.status();
    train->resume_from_memory = *std::move(checkpoint);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunWorker(const WorkerOptions& options) {
  launcher::WorkerEventWriter event_writer(options.events_fd);
  // Without a daemon (no pipe) events go nowhere; a daemon gone mid-run is noticed by
  // the communicators (PDEATHSIG ends this process anyway).
  auto write_event = [&](const proto::JobEvent& event) {
    if (options.events_fd >= 0) event_writer.Write(event).IgnoreError();
  };
  auto fail_event = [&](const absl::Status& status, const std::vector<proto::DeviceProgress>& records) {
    proto::JobEvent event;
    event.set_job_id(options.job_id);
    event.set_node_rank(options.node_rank);
    event.mutable_failed()->set_reason(std::string(status.message()));
    event.mutable_failed()->set_failed_rank(options.node_rank);
    event.mutable_failed()->set_exit_code(1);
    const std::optional<gloo_backend::Failure> first = gloo_backend::FirstProcessFailure();
    event.mutable_failed()->set_caused_by_peer(first.has_value() &&
                                               first->source != gloo_backend::Failure::Source::kThisRank);
    AddProgress(records, event.mutable_failed()->mutable_progress());
    write_event(event);
  };
  auto prepare = [&]() -> absl::StatusOr<proto::Plan> {
    // ReadPlanFile runs the full verifier (the checksum on the bytes read).
    OF_ASSIGN_OR_RETURN(proto::Plan plan, ReadPlanFile(options.plan_path));
    const int64_t nodes = plan.cluster().num_nodes();
    if (options.node_rank < 0 || options.node_rank >= nodes) {
      return absl::InvalidArgumentError(absl::StrCat("node rank ", options.node_rank, " is outside the plan's ", nodes,
                                                     " nodes (valid: 0..", nodes - 1, ")"));
    }
    if (options.world_size > 0 && options.world_size != nodes) {
      return absl::InvalidArgumentError(absl::StrCat("the world size is ", options.world_size, " but the plan '",
                                                     options.plan_path, "' is for ", nodes,
                                                     " nodes: start one worker per node"));
    }
    if (options.iterations < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--iters=", options.iterations, " must be >= 1"));
    }
    if (options.checkpoint_dir.empty() != (options.checkpoint_every == 0) || options.checkpoint_every < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--checkpoint_dir='", options.checkpoint_dir,
                                                     "' and --checkpoint_every=", options.checkpoint_every,
                                                     " go together: a directory and N >= 1"));
    }
    OF_RETURN_IF_ERROR(actors::CheckRetentionPolicy(options.retention));
    return plan;
  };
  absl::StatusOr<proto::Plan> prepared = prepare();
  if (!prepared.ok()) {
    const absl::Status status(prepared.status().code(),
                              absl::StrCat("node ", options.node_rank, ": ", prepared.status().message()));
    fail_event(status, {});
    return status;
  }
  const proto::Plan& plan = *prepared;

  const std::vector<int64_t> local_devices = launcher::NodeDeviceIndices(plan, options.node_rank);
  // slot[d]: the position of plan device d among this node's devices (its status record).
  std::vector<int> slot(plan.devices_size(), -1);
  for (size_t i = 0; i < local_devices.size(); ++i) slot[local_devices[i]] = static_cast<int>(i);
  std::unique_ptr<launcher::WorkerStatusFile> status_file;
  if (!options.status_file.empty()) {
    // A record per (device, group): the launch compares members by their group counts.
    const CollectiveGroups groups = CollectiveGroupsOf(plan);
    std::vector<std::vector<int>> slot_groups;
    for (const int64_t d : local_devices) slot_groups.push_back(groups.of_device[d]);
    absl::StatusOr<std::unique_ptr<launcher::WorkerStatusFile>> created =
        launcher::WorkerStatusFile::Create(options.status_file, local_devices, /*heartbeat_ms=*/100, slot_groups);
    if (!created.ok()) {
      fail_event(created.status(), {});
      return created.status();
    }
    status_file = std::move(*created);
  }
  // Progress is also kept here, for the failure message of a worker without a status file.
  std::vector<std::atomic<int64_t>> collectives(plan.devices_size()), iterations(plan.devices_size());
  auto progress = [&] {
    std::vector<proto::DeviceProgress> records;
    for (int64_t d : local_devices) {
      records.emplace_back();
      records.back().set_device(d);
      records.back().set_completed_collectives(collectives[d].load());
      records.back().set_completed_iterations(iterations[d].load());
    }
    return records;
  };

  std::unique_ptr<launcher::RendezvousServer> server;
  std::unique_ptr<launcher::RendezvousClient> rendezvous;
  auto connect = [&]() -> absl::Status {
    if (plan.cluster().num_nodes() <= 1) return absl::OkStatus();
    if (options.serve_rendezvous) {
      launcher::ServerOptions server_options;
      server_options.address = options.rendezvous_address;
      server_options.token = options.token;
      OF_ASSIGN_OR_RETURN(server, launcher::StartRendezvousServer(server_options));
    }
    launcher::RendezvousClientOptions client_options;
    client_options.address = options.rendezvous_address;
    client_options.job_id = options.job_id;
    client_options.token = options.token;
    client_options.tls_ca_file = options.tls_ca_file;
    // Without a daemon, rank 0 starts the server as the others start connecting.
    client_options.wait_for_server = options.serve_rendezvous || options.events_fd < 0;
    OF_ASSIGN_OR_RETURN(rendezvous, launcher::RendezvousClient::Create(client_options));
    return absl::OkStatus();
  };
  // Before any node trains: every node can run the same transport.
  auto agree = [&]() -> absl::Status {
    if (rendezvous == nullptr) return absl::OkStatus();
    return AgreeOnTransport(*rendezvous, options.node_rank, plan.cluster().num_nodes(), options.transport,
                            TransportAvailable(options.transport), options.collective_timeout);
  };
  if (absl::Status status = connect(); !status.ok()) {
    const absl::Status named(status.code(), absl::StrCat("node ", options.node_rank, ": rendezvous at ",
                                                          options.rendezvous_address, ": ", status.message()));
    fail_event(named, {});
    return named;
  }
  if (absl::Status status = agree(); !status.ok()) {
    const absl::Status named(status.code(), absl::StrCat("node ", options.node_rank, ": ", status.message()));
    fail_event(named, {});
    return named;
  }

  if (options.measure_links) {
    NodeLinkOptions link_options;
    link_options.node = options.node_rank;
    link_options.nodes = plan.cluster().num_nodes();
    link_options.transport = options.transport;
    link_options.host = options.worker_host;
    link_options.store = rendezvous.get();
    link_options.connect_timeout = options.collective_timeout;
    absl::StatusOr<proto::LinkMeasurements> measured = MeasureNodeLinks(link_options);
    if (!measured.ok()) {
      const absl::Status named(measured.status().code(),
                               absl::StrCat("node ", options.node_rank, ": ", measured.status().message()));
      fail_event(named, {});
      return named;
    }
    proto::JobEvent event;
    event.set_job_id(options.job_id);
    event.set_node_rank(options.node_rank);
    *event.mutable_link_measurements() = *std::move(measured);
    write_event(event);
    event.Clear();
    event.set_job_id(options.job_id);
    event.set_node_rank(options.node_rank);
    event.mutable_finished();
    write_event(event);
    return absl::OkStatus();
  }

  std::unique_ptr<actors::MetricsReporter> reporter;
  if (!options.metrics_path.empty()) {
    // "-": JSON lines on stdout (never a progress bar: a scheduler collects the output).
    absl::StatusOr<std::unique_ptr<actors::MetricsReporter>> opened = actors::MetricsReporter::Open(
        options.metrics_path == "-" ? "" : options.metrics_path, options.iterations, &std::cout, false);
    if (!opened.ok()) {
      fail_event(opened.status(), {});
      return opened.status();
    }
    reporter = std::move(*opened);
  }

  // The flight recorder (docs/diagnosis.md): written on the run's first error and on
  // SIGUSR1, into the working directory (the daemon's node directory, which it keeps).
  actors::FlightRecorder recorder(plan, options.node_rank);
  const std::string flight_path =
      absl::StrCat(options.flight_dump_dir.empty() ? "." : options.flight_dump_dir, "/flight-node", options.node_rank,
                   ".json");
  auto dump_flight = [&](absl::string_view reason) {
    const absl::Status written = recorder.WriteDump(flight_path, reason, options.job_id);
    std::fprintf(stderr, "oneflow_worker: %s\n",
                 written.ok() ? absl::StrCat("flight recorder dumped to ", flight_path).c_str()
                              : std::string(written.message()).c_str());
    std::fflush(stderr);
  };
  launcher::SignalWatcher dump_on_signal({SIGUSR1}, [&](int) { dump_flight("SIGUSR1"); });

  // What each device entered and how long it spent in collectives goes to the status
  // file, for the daemon's heartbeats. ONEFLOW_FLIGHT_RECORDER=off: no recording (the
  // overhead benchmark's reference, bench/diagnosis).
  if (status_file) {
    recorder.SetProgressSink([&](const actors::FlightRecorder::Progress& progress) {
      const int device_slot = slot[progress.device_index];
      status_file->SetCollectiveActivity(device_slot, progress.entered, progress.collective_id,
                                         progress.collective_ns);
      if (progress.group >= 0) {
        status_file->SetGroupActivity(device_slot, progress.group, progress.group_entered, progress.group_completed,
                                      progress.group_collective);
      }
    });
  }
  const char* recording = std::getenv("ONEFLOW_FLIGHT_RECORDER");
  actors::TrainOptions train;
  train.flight_recorder = recording != nullptr && std::string(recording) == "off" ? nullptr : &recorder;
  train.wrap_act = TestDelayHook();
  train.node = options.node_rank;
  train.iterations = options.iterations;
  train.collective_timeout = options.collective_timeout;
  train.rendezvous = rendezvous.get();
  train.worker_host = options.worker_host;
  train.transport = options.transport;
  train.communication_priority_levels = options.communication_priority_levels;
  train.communication_priority_levels_flag = "--communication_priority_levels";
  train.checkpoint.dir = options.checkpoint_dir;
  train.checkpoint.every = options.checkpoint_every;
  train.checkpoint.retention = options.retention;
  train.checkpoint.on_saved = [&](const actors::CheckpointRecord& saved) {
    // Only the node completing a checkpoint gets here: one line per checkpoint.
    std::fprintf(stderr, "checkpoint %s complete: %lld B, written in %.1f ms\n", saved.dir.c_str(),
                 static_cast<long long>(saved.bytes), saved.write_ms);
    std::fflush(stderr);
  };
  train.resume_from = options.resume_from;
  if (absl::Status status = SetUpMemoryCheckpoints(options, &train); !status.ok()) {
    const absl::Status named(status.code(), absl::StrCat("node ", options.node_rank, ": ", status.message()));
    fail_event(named, {});
    return named;
  }
  // Training held by a checkpoint (an update waiting for its variable's copy, which waits
  // for the previous checkpoint's write): the status file says since when, so that the
  // launch does not call this rank hung while a slow write holds it (docs/diagnosis.md).
  std::atomic<int> checkpoint_waits{0};
  auto on_training_wait = [&](bool waiting) {
    if (!status_file) return;
    const int before = waiting ? checkpoint_waits.fetch_add(1) : checkpoint_waits.fetch_sub(1);
    if (waiting && before == 0) status_file->SetCheckpointWait(absl::ToUnixMillis(absl::Now()));
    if (!waiting && before == 1) status_file->SetCheckpointWait(0);
  };
  train.checkpoint.on_training_wait = on_training_wait;
  train.memory_checkpoint.on_training_wait = on_training_wait;
  train.record_acts = options.record_trace && options.events_fd >= 0;
  // Metrics leave as events and lines; none stay in the process (a job may run for weeks).
  train.keep_iteration_metrics = false;
  train.on_collective_done = [&](int device, int64_t completed) {
    collectives[device].store(completed, std::memory_order_relaxed);
    if (status_file) status_file->SetCompletedCollectives(slot[device], completed);
  };
  train.on_iteration_done = [&](int device, int64_t completed) {
    iterations[device].store(completed, std::memory_order_relaxed);
    if (status_file) status_file->SetCompletedIterations(slot[device], completed);
  };
  // Read once: the environment does not change during the run.
  const std::string transport_settings = TransportSettings(options.transport);
  train.on_iteration = [&](const actors::IterationMetrics& iteration_metrics) {
    actors::IterationMetrics m = iteration_metrics;
    // Which transport the cross-node groups ran over, for comparing runs.
    if (plan.cluster().num_nodes() > 1) {
      m.transport = TransportName(options.transport);
      m.transport_settings = transport_settings;
    }
    m.communication_priority_levels = options.communication_priority_levels;
    proto::JobEvent event;
    event.set_job_id(options.job_id);
    event.set_node_rank(options.node_rank);
    *event.mutable_metrics() = launcher::MetricsToProto(m);
    write_event(event);
    if (reporter) reporter->Report(m);
  };
  // A thread blocked in a transport that an abort cannot reach must not keep a failed
  // worker alive: its peers and the daemon wait for the process to end.
  absl::Notification run_ended;
  std::thread watchdog;
  train.on_failure = [&](const absl::Status& error) {
    const std::string reason = absl::StrCat("node ", options.node_rank, ": ", error.message());
    dump_flight(reason);
    watchdog = std::thread([&, reason] {
      if (run_ended.WaitForNotificationWithTimeout(options.exit_deadline)) return;
      const absl::Status status = absl::DeadlineExceededError(
          absl::StrCat(reason, " (the worker exited ", absl::FormatDuration(options.exit_deadline),
                       " after the error with threads still blocked) [progress: ", ProgressText(progress(), plan), "]"));
      fail_event(status, progress());
      std::fprintf(stderr, "oneflow_worker: %s\n", std::string(status.message()).c_str());
      std::fflush(stderr);
      _exit(1);
    });
  };
  absl::StatusOr<actors::TrainResult> result = actors::TrainPlan(plan, train);
  run_ended.Notify();
  if (watchdog.joinable()) watchdog.join();
  if (!result.ok()) {
    const absl::Status status(result.status().code(), absl::StrCat("node ", options.node_rank, ": ",
                                                                   result.status().message(), " [progress: ",
                                                                   ProgressText(progress(), plan), "]"));
    fail_event(status, progress());
    return status;
  }
  if (!result->resumed_from.empty()) {
    // The resume point, for the log the launch shows (the metrics restart there).
    std::fprintf(stderr, "resumed from %s at iteration %lld\n", result->resumed_from.c_str(),
                 static_cast<long long>(result->first_iteration));
    std::fflush(stderr);
  }
  if (options.world_size > 1 && rendezvous != nullptr) {
    // Every rank is done with the store (its communicators wrote their last records when
    // TrainPlan returned); only then may rank 0 take its server down.
    if (options.serve_rendezvous) {
      std::vector<std::string> keys;
      for (int64_t rank = 1; rank < options.world_size; ++rank) keys.push_back(absl::StrCat("finished/", rank));
      rendezvous->Wait(keys, absl::Seconds(30)).IgnoreError();
    } else {
      rendezvous->Set(absl::StrCat("finished/", options.node_rank), "1").IgnoreError();
    }
  }
  if (train.record_acts) SendTrace(result->engine.acts, options, write_event);
  proto::JobEvent event;
  event.set_job_id(options.job_id);
  event.set_node_rank(options.node_rank);
  AddProgress(progress(), event.mutable_finished()->mutable_progress());
  write_event(event);
  return absl::OkStatus();
}

}  // namespace oneflow::worker
