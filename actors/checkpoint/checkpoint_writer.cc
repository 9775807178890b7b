// CheckpointWriter's staging: the entries each device saves, Stage and its copier thread,
// the writer thread that takes a fully staged checkpoint, and the final checkpoint. What
// the writer thread does with a staged checkpoint (shard files, manifest, rename, peer
// agreement) is in checkpoint_files.cc.
#include "actors/checkpoint/checkpoint_writer.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;

}  // namespace

double CheckpointWriter::MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Create(const proto::Plan& plan,
                                                                           const PlanIndex& index,
                                                                           const CheckpointOptions& options,
                                                                           int64_t node, int64_t first_iteration,
                                                                           const DeviceBackend& backend) {
  if (options.every < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint_every is ", options.every, "; it must be >= 1 with a checkpoint directory"));
  }
  std::unique_ptr<CheckpointWriter> writer(new CheckpointWriter());
  writer->plan_ = &plan;
  writer->options_ = options;
  writer->backend_ = &backend;
  writer->every_ = options.every;
  writer->first_iteration_ = first_iteration;
  writer->node_ = node;
  writer->multi_process_ = node >= 0 && plan.cluster().num_nodes() > 1;
  if (writer->multi_process_ && options.peers == nullptr && !options.to_memory) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoints of a plan on ", plan.cluster().num_nodes(),
                     " nodes saved from one node's process need the nodes' rendezvous store "
                     "(CheckpointOptions.peers) to agree when a checkpoint is complete"));
  }
  std::error_code error;
  if (!options.to_memory) {
    fs::create_directories(options.dir, error);
    if (error || !fs::is_directory(options.dir)) {
      return absl::FailedPreconditionError(absl::StrCat("checkpoint directory '", options.dir,
                                                        "' cannot be created: ", error.message()));
    }
    if (::access(options.dir.c_str(), W_OK) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("checkpoint directory '", options.dir, "' is not writable: ", std::strerror(errno)));
    }
  }
  // The tensors: every variable of the job, with the layout saving it.
  proto::CheckpointManifest& manifest = writer->manifest_template_;
  manifest.set_format_version(kCheckpointFormatVersion);
  manifest.set_job(plan.job().name());
  manifest.set_plan_checksum(plan.checksum());
  std::map<std::string, const proto::TensorLayout*> layouts;
  for (const proto::TensorLayout& layout : plan.tensor_layouts()) layouts[layout.tensor()] = &layout;
  for (const proto::VariableDef& variable : plan.job().variables()) {
    OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, index.Tensor(variable.tensor()));
    proto::CheckpointTensor* tensor = manifest.add_tensors();
    tensor->set_name(def->name());
    *tensor->mutable_shape() = def->shape();
    tensor->set_dtype(def->dtype());
    auto it = layouts.find(def->name());
    if (it != layouts.end()) {
      *tensor->mutable_sbp() = it->second->sbp();
      *tensor->mutable_placement() = it->second->placement();
      for (const proto::SbpParallel& sbp : it->second->sbp().sbp()) {
        if (sbp.has_partial()) {
          // The compiler refuses a partial hint on a variable (shape_inference), and
          // its passes lay state variables out like their parameters: only a damaged
          // or hand-made plan gets here.
          return absl::FailedPreconditionError(absl::StrCat(
              "variable '", def->name(), "' is partial (P) on some axis in this plan; a variable is stored "
              "whole or in slices (B or S(i)), so the plan was not made by the compiler"));
        }
      }
    }
  }
  // The entries: each distinct slice once, by the first device of the plan holding it.
  std::map<std::pair<std::string, std::string>, int> saver;  // (tensor, slice) -> device
  for (int d = 0; d < plan.devices_size(); ++d) {
    for (const proto::ActorDef& actor : plan.devices(d).actors()) {
      if (actor.kind() != proto::ACTOR_VARIABLE) continue;
      const std::string& tensor = actor.kernels(0).op_name();
      OF_ASSIGN_OR_RETURN(TensorLayout layout, index.LeafLayout(tensor, d));
      const auto key = std::make_pair(tensor, layout.slice.ToString());
      if (saver.count(key) > 0) continue;
      saver[key] = d;
      if (node >= 0 && plan.devices(d).device().node() != node) continue;
      OF_ASSIGN_OR_RETURN(const proto::TensorDef* def, index.Tensor(tensor));
      OF_ASSIGN_OR_RETURN(const DType dtype, FromProto(def->dtype()));
      Entry entry;
      entry.device_index = d;
      entry.tensor = tensor;
      entry.slice.set_tensor(tensor);
      SetRanges(layout.slice, &entry.slice);
      entry.slice.set_size_bytes(layout.slice.NumElements() * SizeOf(dtype));
      entry.staging.resize(static_cast<size_t>(entry.slice.size_bytes()));
      writer->entry_index_[{d, tensor}] = static_cast<int>(writer->entries_.size());
      writer->entries_.push_back(std::move(entry));
    }
  }
  std::set<int64_t> saving_nodes;
  for (const auto& [key, device] : saver) saving_nodes.insert(plan.devices(device).device().node());
  // Every device of a step with error feedback saves its residual (AddResidual).
  for (const proto::DevicePlan& device : plan.devices()) {
    for (const proto::ActorDef& actor : device.actors()) {
      if (actor.kind() != proto::ACTOR_BOXING || actor.has_bucket_id() || actor.boxing_id() < 0 ||
          actor.boxing_id() >= plan.boxings_size()) {
        continue;
      }
      const proto::BoxingDef& boxing = plan.boxings(static_cast<int>(actor.boxing_id()));
      if (actor.boxing_step() >= 0 && actor.boxing_step() < boxing.steps_size() &&
          boxing.steps(static_cast<int>(actor.boxing_step())).compression().error_feedback()) {
        saving_nodes.insert(device.device().node());
      }
    }
  }
  writer->saving_nodes_.assign(saving_nodes.begin(), saving_nodes.end());
  if (!options.synchronous) {
    writer->thread_ = std::thread([w = writer.get()] { w->WriterMain(); });
    writer->copier_ = std::thread([w = writer.get()] { w->CopierMain(); });
  }
  return writer;
}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (copier_.joinable()) copier_.join();
  if (thread_.joinable()) thread_.join();
}

int CheckpointWriter::EntryFor(int device_index, const std::string& tensor) const {
  auto it = entry_index_.find({device_index, tensor});
  return it == entry_index_.end() ? -1 : it->second;
}

int CheckpointWriter::AddResidual(int device_index, const std::string& key, int64_t elements) {
  Entry entry;
  entry.device_index = device_index;
  entry.tensor = key;
  entry.residual = true;
  entry.slice.set_size_bytes(elements * static_cast<int64_t>(sizeof(float)));
  entry.staging.resize(static_cast<size_t>(entry.slice.size_bytes()));
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(std::move(entry));
  return static_cast<int>(entries_.size()) - 1;
}

absl::Status CheckpointWriter::Stage(int entry, int64_t iteration, const void* data) {
  Entry& staged = entries_[entry];
  staged.live = data;
  if (!Due(iteration)) {
    // An earlier save failed: stop before training past what no checkpoint holds.
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  if (!options_.synchronous) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_.ok()) return error_;
    staged.copy_pending = iteration;
    copies_.emplace_back(entry, iteration);
    changed_.notify_all();
    return absl::OkStatus();
  }
  return Copy(entry, iteration, data);
}

absl::Status CheckpointWriter::AwaitStaged(int entry, int64_t iteration) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (entries_[entry].copy_pending != iteration) return error_;
  const auto start = std::chrono::steady_clock::now();
  if (training_waiters_++ == 0 && options_.on_training_wait) options_.on_training_wait(true);
  changed_.wait(lock, [&] { return !error_.ok() || stopping_ || entries_[entry].copy_pending != iteration; });
  if (--training_waiters_ == 0 && options_.on_training_wait) options_.on_training_wait(false);
  stall_ms_ += MsSince(start);
  return error_;
}

bool CheckpointWriter::AnyCopyPending() const {
  for (const Entry& entry : entries_) {
    if (entry.copy_pending >= 0) return true;
  }
  return false;
}

void CheckpointWriter::CopierMain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !copies_.empty(); });
    if (copies_.empty()) return;
    const auto [entry, iteration] = copies_.front();
    copies_.pop_front();
    const void* data = entries_[entry].live;
    lock.unlock();
    const absl::Status status = Copy(entry, iteration, data);
    lock.lock();
    if (error_.ok()) error_ = status;
    entries_[entry].copy_pending = -1;
    changed_.notify_all();
  }
}

absl::Status CheckpointWriter::Copy(int entry, int64_t iteration, const void* data) {
  Entry& staged = entries_[entry];
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  // The buffers hold the previous checkpoint until it is written.
  RaiseWriter();
  changed_.wait(lock, [&] {
    return !error_.ok() || (!writing_ && (staging_iteration_ < 0 || staging_iteration_ == iteration));
  });
  if (!error_.ok()) return error_;
  staging_iteration_ = iteration;
  lock.unlock();
  backend_->CopyToHost(staged.staging.data(), data, static_cast<int64_t>(staged.staging.size()));
  lock.lock();
  // Inline (synchronous saves, the final checkpoint) the copy is training's stall; on the
  // copier it is not (AwaitStaged counts what training waits for it).
  if (std::this_thread::get_id() != copier_.get_id()) stall_ms_ += MsSince(start);
  if (++staged_ == static_cast<int64_t>(entries_.size())) StagedAll(lock, iteration);
  return error_;
}

void CheckpointWriter::RaiseWriter() {
  if (!writing_ || writer_raised_ || !thread_.joinable()) return;
  sched_param param{};
  param.sched_priority = 0;
  // Best effort, like the idle priority itself.
  writer_raised_ = pthread_setschedparam(thread_.native_handle(), SCHED_OTHER, &param) == 0;
}

void CheckpointWriter::StagedAll(std::unique_lock<std::mutex>& lock, int64_t iteration) {
  writing_ = true;
  if (!options_.synchronous) {
    to_write_ = iteration;
    changed_.notify_all();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  lock.unlock();
  double write_ms = 0;
  absl::Status status = Write(iteration, &write_ms);
  lock.lock();
  stall_ms_ += MsSince(start);
  if (!records_.empty() && records_.back().iteration == iteration) records_.back().stall_ms = stall_ms_;
  if (error_.ok()) error_ = status;
  writing_ = false;
  staging_iteration_ = -1;
  staged_ = 0;
  stall_ms_ = 0;
  changed_.notify_all();
}

absl::Status CheckpointWriter::StageFinal(int64_t iteration) {
  if (!Due(iteration)) return absl::OkStatus();
  if (entries_.empty()) return absl::OkStatus();
  for (size_t e = 0; e < entries_.size(); ++e) {
    if (entries_[e].live == nullptr) {
      return absl::InternalError(absl::StrCat("checkpoint after iteration ", iteration, ": the ",
                                              entries_[e].residual ? "reduction of the residual " : "variable ",
                                              "'", entries_[e].tensor, "' never acted"));
    }
    // Inline: the variables act no more, and Finish follows.
    OF_RETURN_IF_ERROR(Copy(static_cast<int>(e), iteration, entries_[e].live));
  }
  return absl::OkStatus();
}

void CheckpointWriter::WriterMain() {
  // Idle priority: the write (CRC, copies into the page cache) runs on cores training
  // leaves free and never takes one from a device thread. Best effort: an error leaves
  // the normal priority. If training keeps every core busy the write waits, and the next
  // checkpoint's copies wait for it: from then on (RaiseWriter) it runs at normal
  // priority until the write ends.
  sched_param param{};
  param.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || to_write_ >= 0; });
    if (to_write_ < 0) return;  // Stopping with nothing to write.
    const int64_t iteration = to_write_;
    to_write_ = -1;
    const double stall_ms = stall_ms_;
    lock.unlock();
    double write_ms = 0;
    absl::Status status = Write(iteration, &write_ms);
    lock.lock();
    if (!records_.empty() && records_.back().iteration == iteration) records_.back().stall_ms = stall_ms;
    if (error_.ok()) error_ = status;
    writing_ = false;
    if (writer_raised_) {
      // Back to idle for the next write (raised while training waited for this one).
      pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
      writer_raised_ = false;
    }
    staging_iteration_ = -1;
    staged_ = 0;
    stall_ms_ = 0;
    changed_.notify_all();
  }
}

absl::Status CheckpointWriter::Finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  RaiseWriter();  // The run's end waits for it.
  changed_.wait(lock, [&] { return copies_.empty() && !writing_ && !AnyCopyPending(); });
  if (staged_ > 0 && error_.ok()) {
    return absl::InternalError(absl::StrCat("checkpoint after iteration ", staging_iteration_, ": ", staged_,
                                            " of ", entries_.size(), " slices were staged when the run ended"));
  }
  return error_;
}

std::vector<CheckpointRecord> CheckpointWriter::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_;
}

}  // namespace oneflow::actors
