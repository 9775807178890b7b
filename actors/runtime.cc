#include "actors/runtime.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actors/behaviors/boxing_behavior.h"
#include "actors/behaviors/bucket_behavior.h"
#include "actors/behaviors/compute_behavior.h"
#include "actors/behaviors/leaf_behaviors.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "actors/checkpoint/checkpoint_reader.h"
#include "actors/compression_meter.h"
#include "actors/sparse_meter.h"
#include "kernels/backends.h"
#include "kernels/device_backend.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/ops/registry.h"
#include "oneflow_core/status.h"
#include "plan/plan_index.h"
#include "plan/plan_verifier.h"

namespace oneflow::actors {

namespace {

// The threads per device this run uses: the option when set, else the plan's.
absl::StatusOr<int64_t> ThreadsPerDevice(const proto::Plan& plan, const TrainOptions& options) {
  if (options.threads_per_device != 0) {
    OF_RETURN_IF_ERROR(
        CheckThreadsPerDevice(options.threads_per_device, options.threads_per_device_flag));
    return options.threads_per_device;
  }
  // Plans written before the field have 0: one thread, as they ran then.
  const int64_t planned = plan.cluster().threads_per_device();
  if (planned == 0) return 1;
  OF_RETURN_IF_ERROR(CheckThreadsPerDevice(planned, "the plan's cluster.threads_per_device"));
  return planned;
}

}  // namespace

absl::StatusOr<TrainResult> TrainPlan(const proto::Plan& plan, const TrainOptions& options) {
  // Before anything is allocated: a plan that is damaged, crafted, would deadlock or
  // needs a step the runtime lacks is refused here, not in iteration 0.
  OF_RETURN_IF_ERROR(VerifyPlan(plan));
  OF_RETURN_IF_ERROR(CheckDevicesRunHere(plan));
  OF_ASSIGN_OR_RETURN(PlanIndex index, PlanIndex::Create(plan));
  OF_ASSIGN_OR_RETURN(const int64_t threads_per_device, ThreadsPerDevice(plan, options));
  OF_RETURN_IF_ERROR(ValidateCommunicationPriorityLevels(options.communication_priority_levels,
                                                         options.communication_priority_levels_flag));
  OF_ASSIGN_OR_RETURN(DeviceBackend* const backend, BackendFor(PlanDeviceType(plan)));
  // A checkpoint to resume from is read and checked whole before anything runs.
  std::unique_ptr<CheckpointReader> reader;
  int64_t first_iteration = 0;
  if (options.resume_from_memory != nullptr) {
    OF_ASSIGN_OR_RETURN(reader, CheckpointReader::OpenInMemory(std::move(*options.resume_from_memory), plan, index,
                                                               *backend));
    first_iteration = reader->iteration();
    if (first_iteration >= options.iterations) {
      return absl::InvalidArgumentError(absl::StrCat(reader->dir(), " was taken after ", first_iteration,
                                                     " iterations: nothing is left of ", options.iterations,
                                                     " iterations in all"));
    }
  } else if (!options.resume_from.empty()) {
    OF_ASSIGN_OR_RETURN(reader, CheckpointReader::Open(options.resume_from, plan, index, *backend));
    first_iteration = reader->iteration();
    // A damaged newer checkpoint the directory scan passed over is named, never skipped
    // silently: the run would otherwise quietly train iterations again.
    for (const std::string& skipped : SkippedDamagedCheckpoints(options.resume_from, reader->dir(), first_iteration)) {
      const std::string line = absl::StrCat("warning: ", skipped);
      if (options.on_warning) {
        options.on_warning(line);
      } else {
        fprintf(stderr, "%s\n", line.c_str());
        fflush(stderr);
      }
    }
    if (first_iteration >= options.iterations) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint '", reader->dir(), "' was taken after ",
                                                     first_iteration, " iterations: nothing is left of ",
                                                     options.iterations, " iterations in all"));
    }
  }
  std::unique_ptr<CheckpointWriter> writer;
  if (!options.checkpoint.dir.empty()) {
    // One node of several: the nodes agree on complete checkpoints through the store
    // their collectives meet at.
    CheckpointOptions checkpoint = options.checkpoint;
    if (checkpoint.peers == nullptr) checkpoint.peers = options.rendezvous;
    // Its variables load during the first iteration: retention leaves it alone all run.
    if (reader != nullptr) checkpoint.retention.protected_dir = reader->dir();
    OF_ASSIGN_OR_RETURN(writer,
                        CheckpointWriter::Create(plan, index, checkpoint, options.node, first_iteration, *backend));
  }
  // In-memory checkpoints: a second writer with its own staging buffers, so that its
  // saves and the disk saves never wait for each other's buffers.
  std::unique_ptr<CheckpointWriter> memory_writer;
  if (options.memory_checkpoint.every > 0) {
    if (!options.memory_checkpoint.to_memory) {
      return absl::InvalidArgumentError("TrainOptions.memory_checkpoint.every is set without to_memory");
    }
    OF_ASSIGN_OR_RETURN(memory_writer, CheckpointWriter::Create(plan, index, options.memory_checkpoint, options.node,
                                                                first_iteration, *backend));
  }
  // The writers a variable stages into and an in-place update waits for.
  std::vector<CheckpointWriter*> writers;
  if (writer != nullptr) writers.push_back(writer.get());
  if (memory_writer != nullptr) writers.push_back(memory_writer.get());
  CommunicatorPoolOptions pool_options;
  pool_options.node = options.node;
  pool_options.rendezvous = options.rendezvous;
  pool_options.worker_host = options.worker_host;
  pool_options.transport = options.transport;
  CommunicatorPool communicators(plan, pool_options);
  // The loss is B: every device's sink sees the same value; the first device of this
  // node (of the plan, when every node runs here) that has a sink reports it. With
  // pipeline stages only the last stage's devices have one, so a node holding no last
  // stage reports no losses.
  int reporting_device = -1;
  for (int d = 0; d < plan.devices_size() && reporting_device < 0; ++d) {
    if (options.node >= 0 && plan.devices(d).device().node() != options.node) continue;
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      if (actor.kind() == proto::ACTOR_SINK) {
        reporting_device = d;
        break;
      }
    }
  }
  CompressionMeterOptions meter_options;
  meter_options.bound = options.compression_error_bound;
  meter_options.warn = options.on_warning;
  CompressionMeter meter(std::move(meter_options));
  SparseMeter sparse_meter;
  TrainResult result;
  std::mutex mutex;
  auto last = std::chrono::steady_clock::now();
  const int64_t batch = plan.job().batch_size();
  // A line covers its whole iteration: the backward boxings (and what they meter) run
  // after the loss arrives, so iteration i is reported once its loss arrived and every
  // local device finished it (the engine's iteration gate: all its actors acted on i).
  std::vector<int64_t> completed(plan.devices_size(), 0);
  std::vector<int> local_devices;
  for (int d = 0; d < plan.devices_size(); ++d) {
    const bool local = options.node < 0 || plan.devices(d).device().node() == options.node;
    if (local && plan.devices(d).actors_size() > 0) local_devices.push_back(d);
  }
  // One pool per local device that computes; they outlive the engine run below.
  std::vector<std::shared_ptr<KernelThreadPool>> pools(plan.devices_size());
  for (int d : local_devices) pools[d] = backend->CreateThreadPool(threads_per_device);
  std::map<int64_t, IterationMetrics> losses;  // arrived, not yet reported
  int64_t next_report = first_iteration;
  auto report_ready = [&] {  // under `mutex`
    int64_t finished = std::numeric_limits<int64_t>::max();
    for (int d : local_devices) finished = std::min(finished, completed[d] + first_iteration);
    for (auto it = losses.find(next_report); it != losses.end() && next_report < finished;
         it = losses.find(next_report)) {
      IterationMetrics metrics = std::move(it->second);
      losses.erase(it);
      metrics.sparse = sparse_meter.TakeIteration(next_report);
      metrics.compression = meter.TakeIteration(next_report++);
      if (options.keep_iteration_metrics) result.iterations.push_back(metrics);
      if (options.on_iteration) options.on_iteration(metrics);
    }
  };
  auto on_loss = [&](int64_t iteration, float loss) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto now = std::chrono::steady_clock::now();
    IterationMetrics& metrics = losses[iteration];
    metrics.iteration = iteration;
    metrics.loss = loss;
    metrics.step_ms = std::chrono::duration<double, std::milli>(now - last).count();
    metrics.samples_per_s = metrics.step_ms > 0 ? batch * 1000.0 / metrics.step_ms : 0;
    last = now;
    report_ready();
  };
  // Error feedback's residuals (boxing_behavior.h): restored where the checkpoint holds
  // one of the same key and size, else zeros; a resume whose checkpoint misses some (it
  // was saved on another layout, or without error feedback) says so once.
  ResidualCheckpointing residuals;
  bool warned_missing_residual = false;
  if (reader != nullptr) {
    residuals.restore = [&](const std::string& key, absl::Span<float> residual) {
      if (reader->LoadResidual(key, residual)) return true;
      if (!warned_missing_residual) {
        warned_missing_residual = true;
        const std::string line = absl::StrCat(
            "warning: checkpoint '", reader->dir(), "' holds ", reader->residual_count(),
            " error-feedback residuals and none for the ", residual.size(), "-float residual of the ", key,
            " (saved on another layout or without error feedback): error feedback starts from zero there and "
            "wherever else none fits");
        if (options.on_warning) {
          options.on_warning(line);
        } else {
          fprintf(stderr, "%s\n", line.c_str());
        }
      }
      return false;
    };
  }
  if (!writers.empty()) {
    residuals.save = [&](int device_index, const std::string& key, int64_t elements)
        -> std::function<absl::Status(int64_t, const float*)> {
      // Binding runs on one thread, before any act: the writers' entries are complete
      // before the first Stage.
      std::vector<std::pair<CheckpointWriter*, int>> entries;
      for (CheckpointWriter* each : writers) entries.push_back({each, each->AddResidual(device_index, key, elements)});
      return [entries](int64_t iteration, const float* residual) {
        for (const auto& [each, entry] : entries) OF_RETURN_IF_ERROR(each->Stage(entry, iteration, residual));
        for (const auto& [each, entry] : entries) OF_RETURN_IF_ERROR(each->AwaitStaged(entry, iteration));
        return absl::OkStatus();
      };
    };
  }
  BindFunction behavior = [&](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
    switch (binding.actor->kind()) {
      case proto::ACTOR_DATA_SOURCE:
        return BindDataSource(index, binding, *backend);
      case proto::ACTOR_VARIABLE: {
        VariableCheckpointing checkpointing;
        checkpointing.first_iteration = first_iteration;
        const std::string& tensor = binding.actor->kernels(0).op_name();
        if (reader != nullptr) {
          OF_ASSIGN_OR_RETURN(TensorLayout layout, index.LeafLayout(tensor, binding.device_index));
          OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, index.Tensor(tensor));
          OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(def->dtype()));
          checkpointing.restore = [reader = reader.get(), tensor, layout, size = SizeOf(dtype)](void* slice) {
            return reader->Load(tensor, layout, size, slice);
          };
        }
        std::vector<std::pair<CheckpointWriter*, int>> entries;
        for (CheckpointWriter* each : writers) {
          const int entry = each->EntryFor(binding.device_index, tensor);
          if (entry >= 0) entries.push_back({each, entry});
        }
        if (!entries.empty()) {
          checkpointing.snapshot = [entries](int64_t iteration, const void* slice) {
            for (const auto& [each, entry] : entries) OF_RETURN_IF_ERROR(each->Stage(entry, iteration, slice));
            return absl::OkStatus();
          };
        }
        return BindVariable(index, binding, *backend, std::move(checkpointing));
      }
      case proto::ACTOR_COMPUTE: {
        OF_ASSIGN_OR_RETURN(ActFunction act, BindCompute(index, binding, pools[binding.device_index].get(), *backend));
        if (writers.empty()) return act;
        // An in-place update waits for the checkpoint copies of the variables it writes.
        std::vector<std::pair<CheckpointWriter*, int>> entries;
        OF_ASSIGN_OR_RETURN(const proto::OpDef* op, index.Op(binding.actor->kernels(0).op_name()));
        OF_ASSIGN_OR_RETURN(const OpDefinition* definition, OpRegistry::Get().Find(op->type()));
        for (const std::string& argument : definition->updated_inputs) {
          auto it = op->inputs().find(argument);
          if (it == op->inputs().end()) continue;
          for (CheckpointWriter* each : writers) {
            const int entry = each->EntryFor(binding.device_index, it->second);
            if (entry >= 0) entries.push_back({each, entry});
          }
        }
        if (entries.empty()) return act;
        return ActFunction([act = std::move(act), entries](int64_t iteration, const ActContext& context) {
          for (const auto& [each, entry] : entries) OF_RETURN_IF_ERROR(each->AwaitStaged(entry, iteration));
          return act(iteration, context);
        });
      }
      case proto::ACTOR_BOXING:
        if (binding.actor->has_bucket_id()) {
          return BindBucket(index, binding, &communicators, options.collective_timeout, &meter, residuals);
        }
        return BindBoxing(index, binding, &communicators, options.collective_timeout, &meter, &sparse_meter,
                          residuals);
      case proto::ACTOR_SINK:
        return BindLossSink(binding, *backend,
                            binding.device_index == reporting_device ? std::function<void(int64_t, float)>(on_loss)
                                                                     : nullptr);
      default:
        return absl::UnimplementedError(absl::StrCat("actor kind ", proto::ActorKind_Name(binding.actor->kind()),
                                                     " has no behavior"));
    }
  };
  BindFunction bind = behavior;
  if (options.wrap_act || options.flight_recorder != nullptr) {
    bind = [&](const ActorBinding& binding) -> absl::StatusOr<ActFunction> {
      OF_ASSIGN_OR_RETURN(ActFunction act, behavior(binding));
      if (options.flight_recorder != nullptr) act = options.flight_recorder->Wrap(binding, std::move(act));
      if (options.wrap_act) act = options.wrap_act(binding, std::move(act));
      return act;
    };
  }
  EngineOptions engine_options;
  engine_options.node = options.node;
  engine_options.iterations = options.iterations - first_iteration;
  engine_options.first_iteration = first_iteration;
  if (writer != nullptr) {
    // The checkpoint after the last iteration, if due: its variables act no more.
    engine_options.on_finished = [&] { return writer->StageFinal(options.iterations); };
  }
  engine_options.progress_timeout = options.progress_timeout;
  engine_options.record_acts = options.record_acts;
  engine_options.communication_priority_levels = static_cast<int>(options.communication_priority_levels);
  engine_options.on_collective_done = options.on_collective_done;
  engine_options.on_iteration_done = [&](int device_index, int64_t count) {
    if (options.on_iteration_done) options.on_iteration_done(device_index, count);
    std::lock_guard<std::mutex> lock(mutex);
    // Two threads of one device may report out of order; counts only grow.
    completed[device_index] = std::max(completed[device_index], count);
    report_ready();
  };
  engine_options.on_failure = [&communicators, &options](const absl::Status& error) {
    communicators.AbortAll(absl::AbortedError(absl::StrCat("the run stopped: ", error.message())));
    if (options.on_failure) options.on_failure(error);
  };
  last = std::chrono::steady_clock::now();
  absl::StatusOr<EngineResult> engine = RunEngine(plan, bind, engine_options);
  result.first_iteration = first_iteration;
  if (reader != nullptr) result.resumed_from = reader->dir();
  if (writer != nullptr) {
    // A save in flight completes (its snapshot is consistent) even when the run failed.
    const absl::Status saved = writer->Finish();
    result.checkpoints = writer->records();
    if (engine.ok() && !saved.ok()) return saved;
  }
  if (memory_writer != nullptr) {
    const absl::Status saved = memory_writer->Finish();
    result.memory_checkpoints = memory_writer->records();
    if (engine.ok() && !saved.ok()) return saved;
  }
  OF_RETURN_IF_ERROR(engine.status());
  result.engine = *std::move(engine);
  return result;
}

}  // namespace oneflow::actors
