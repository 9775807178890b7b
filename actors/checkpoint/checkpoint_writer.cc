#include "actors/checkpoint/checkpoint_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

absl::Status IoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat("checkpoint: cannot ", what, " '", path, "': ", std::strerror(errno)));
}

// Writes `pieces` to a new file at `path` and fsyncs it; the CRC-32 of what it wrote.
absl::StatusOr<uint32_t> WriteFile(const std::string& path, const std::vector<std::pair<const char*, size_t>>& pieces) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("create", path);
  uint32_t crc = 0;
  for (const auto& [data, size] : pieces) {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        absl::Status status = IoError("write", path);
        ::close(fd);
        return status;
      }
      done += static_cast<size_t>(n);
    }
    crc = Crc32(crc, data, size);
  }
  if (::fsync(fd) != 0) {
    absl::Status status = IoError("fsync", path);
    ::close(fd);
    return status;
  }
  if (::close(fd) != 0) return IoError("close", path);
  return crc;
}

}  // namespace

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
  // Every device of a reduction with error feedback saves its residual (AddResidual).
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
  changed_.wait(lock, [&] { return !error_.ok() || stopping_ || entries_[entry].copy_pending != iteration; });
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
  // checkpoint's copies wait for it.
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
    staging_iteration_ = -1;
    staged_ = 0;
    stall_ms_ = 0;
    changed_.notify_all();
  }
}

std::vector<CheckpointWriter::ShardPieces> CheckpointWriter::StagedShards() const {
  // One shard per device, its entries in order.
  std::map<int, std::vector<int>> by_device;
  for (size_t e = 0; e < entries_.size(); ++e) by_device[entries_[e].device_index].push_back(static_cast<int>(e));
  std::vector<ShardPieces> shards;
  for (const auto& [device_index, entries] : by_device) {
    const proto::DeviceId& device = plan_->devices(device_index).device();
    ShardPieces& staged = shards.emplace_back();
    proto::CheckpointShard* shard = &staged.shard;
    shard->set_file(ShardFileName(device.node(), device.device()));
    *shard->mutable_device() = device;
    int64_t offset = 0;
    for (int e : entries) {
      if (entries_[e].residual) continue;  // After the slices.
      proto::CheckpointSlice* slice = shard->add_slices();
      *slice = entries_[e].slice;
      slice->set_offset_bytes(offset);
      offset += slice->size_bytes();
      staged.pieces.push_back({entries_[e].staging.data(), entries_[e].staging.size()});
    }
    for (int e : entries) {
      if (!entries_[e].residual) continue;
      proto::CheckpointResidual* residual = shard->add_residuals();
      residual->set_key(entries_[e].tensor);
      residual->set_elements(entries_[e].slice.size_bytes() / static_cast<int64_t>(sizeof(float)));
      residual->set_offset_bytes(offset);
      residual->set_size_bytes(entries_[e].slice.size_bytes());
      offset += residual->size_bytes();
      staged.pieces.push_back({entries_[e].staging.data(), entries_[e].staging.size()});
    }
    staged.size_bytes = offset;
  }
  return shards;
}

absl::Status CheckpointWriter::WriteToMemory(int64_t iteration, double* write_ms) {
  const auto start = std::chrono::steady_clock::now();
  CheckpointInMemory part;
  part.name = absl::StrCat("in-memory checkpoint after iteration ", iteration);
  part.manifest = manifest_template_;
  part.manifest.set_iteration(iteration);
  int64_t bytes = 0;
  for (ShardPieces& staged : StagedShards()) {
    // One copy out of the staging buffers: they are reused by the next save while the
    // part is still being sent.
    std::string data;
    data.reserve(static_cast<size_t>(staged.size_bytes));
    for (const auto& [piece, size] : staged.pieces) data.append(piece, size);
    staged.shard.set_size_bytes(staged.size_bytes);
    staged.shard.set_crc32(Crc32(0, data.data(), data.size()));
    *part.manifest.add_shards() = std::move(staged.shard);
    part.shards.push_back(std::move(data));
    bytes += staged.size_bytes;
  }
  const absl::Status handed = options_.to_memory(std::move(part), saving_nodes_);
  *write_ms = MsSince(start);
  if (!handed.ok()) {
    return absl::Status(handed.code(),
                        absl::StrCat("in-memory checkpoint after iteration ", iteration, ": ", handed.message()));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  records_.push_back(CheckpointRecord{iteration, "memory", bytes, 0, *write_ms});
  return absl::OkStatus();
}

absl::Status CheckpointWriter::Write(int64_t iteration, double* write_ms) {
  if (options_.to_memory) return WriteToMemory(iteration, write_ms);
  const auto start = std::chrono::steady_clock::now();
  const std::string final_dir = (fs::path(options_.dir) / CheckpointDirName(iteration)).string();
  const std::string partial_dir = final_dir + kPartialSuffix;
  const std::string what = absl::StrCat("checkpoint after iteration ", iteration, ": ");
  std::error_code error;
  if (multi_process_) {
    // Every node writes into the same directory, whoever comes first creates it; what a
    // crashed earlier save left there is overwritten or, if no manifest lists it,
    // removed by the assembler before the rename.
    fs::create_directories(partial_dir, error);
    if (error || !fs::is_directory(partial_dir)) {
      return absl::InternalError(absl::StrCat(what, "cannot create '", partial_dir, "': ", error.message()));
    }
  } else {
    fs::remove_all(partial_dir, error);
    if (!fs::create_directory(partial_dir, error)) {
      return absl::InternalError(absl::StrCat(what, "cannot create '", partial_dir, "': ", error.message()));
    }
  }
  proto::CheckpointManifest manifest = manifest_template_;
  manifest.set_iteration(iteration);
  int64_t shards_written = 0, bytes = 0;
  for (ShardPieces& staged : StagedShards()) {
    if (options_.fail_after_shards >= 0 && shards_written >= options_.fail_after_shards) {
      return absl::AbortedError(absl::StrCat(what, "stopped by the test hook after ", shards_written,
                                             " shard files; '", partial_dir, "' stays incomplete"));
    }
    proto::CheckpointShard* shard = manifest.add_shards();
    *shard = std::move(staged.shard);
    const std::string path = (fs::path(partial_dir) / shard->file()).string();
    absl::StatusOr<uint32_t> crc = WriteFile(path, staged.pieces);
    if (!crc.ok()) return absl::Status(crc.status().code(), absl::StrCat(what, crc.status().message()));
    shard->set_size_bytes(staged.size_bytes);
    shard->set_crc32(*crc);
    bytes += staged.size_bytes;
    ++shards_written;
  }
  if (multi_process_) {
    OF_RETURN_IF_ERROR(SyncDirectory(partial_dir));
    absl::StatusOr<bool> assemble = AgreeWithPeers(iteration, &manifest);
    if (!assemble.ok()) {
      return absl::Status(assemble.status().code(), absl::StrCat(what, assemble.status().message()));
    }
    if (!*assemble) {
      // This node's shards are on disk; the assembling node completes the checkpoint.
      *write_ms = MsSince(start);
      std::lock_guard<std::mutex> lock(mutex_);
      records_.push_back(CheckpointRecord{iteration, final_dir, bytes, 0, *write_ms});
      return absl::OkStatus();
    }
    bytes = 0;
    for (const proto::CheckpointShard& shard : manifest.shards()) bytes += shard.size_bytes();
    // Leftovers of an interrupted earlier save of this iteration that no node wrote now.
    std::set<std::string> listed;
    for (const proto::CheckpointShard& shard : manifest.shards()) listed.insert(shard.file());
    for (const fs::directory_entry& entry : fs::directory_iterator(partial_dir, error)) {
      if (listed.count(entry.path().filename().string()) == 0) fs::remove_all(entry.path(), error);
    }
  }
  manifest.set_checksum(ManifestChecksum(manifest));
  std::string manifest_bytes;
  manifest.SerializeToString(&manifest_bytes);
  const std::string manifest_path = (fs::path(partial_dir) / kManifestFile).string();
  absl::StatusOr<uint32_t> written = WriteFile(manifest_path, {{manifest_bytes.data(), manifest_bytes.size()}});
  if (!written.ok()) return absl::Status(written.status().code(), absl::StrCat(what, written.status().message()));
  OF_RETURN_IF_ERROR(SyncDirectory(partial_dir));
  // Re-saving an iteration (a run resumed from an older checkpoint): the new one replaces it.
  if (fs::exists(final_dir, error)) fs::remove_all(final_dir, error);
  if (::rename(partial_dir.c_str(), final_dir.c_str()) != 0) return IoError("rename to", final_dir);
  OF_RETURN_IF_ERROR(SyncDirectory(options_.dir));
  *write_ms = MsSince(start);
  const CheckpointRecord record{iteration, final_dir, bytes, 0, *write_ms};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    records_.push_back(record);
  }
  if (options_.on_saved) options_.on_saved(record);
  if (options_.retention.keep_last > 0) {
    // The disk a long run uses stays bounded; the checkpoint just written is safe either way.
    absl::StatusOr<std::vector<std::string>> deleted = PruneCheckpoints(options_.dir, options_.retention, final_dir);
    if (!deleted.ok()) {
      std::fprintf(stderr, "oneflow: warning: older checkpoints are kept: %s\n",
                   std::string(deleted.status().message()).c_str());
      std::fflush(stderr);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> CheckpointWriter::AgreeWithPeers(int64_t iteration, proto::CheckpointManifest* manifest) {
  const std::string prefix = absl::StrCat("checkpoint/", iteration, "/node/");
  if (node_ != saving_nodes_.front()) {
    proto::CheckpointManifest part;
    *part.mutable_shards() = manifest->shards();
    OF_RETURN_IF_ERROR(options_.peers->Set(absl::StrCat(prefix, node_), part.SerializeAsString()));
    return false;
  }
  std::vector<std::string> keys;
  std::vector<int64_t> others;
  for (int64_t node : saving_nodes_) {
    if (node == node_) continue;
    keys.push_back(absl::StrCat(prefix, node));
    others.push_back(node);
  }
  if (absl::Status waited = options_.peers->Wait(keys, options_.peer_timeout); !waited.ok()) {
    return absl::Status(waited.code(),
                        absl::StrCat("waited ", absl::FormatDuration(options_.peer_timeout), " for nodes ",
                                     absl::StrJoin(others, ", "), " to write their shards; the checkpoint stays "
                                     "incomplete (", waited.message(), ")"));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    OF_ASSIGN_OR_RETURN(const std::string bytes, options_.peers->Get(keys[i]));
    proto::CheckpointManifest part;
    if (!part.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("node ", others[i], "'s list of shards does not parse"));
    }
    for (const proto::CheckpointShard& shard : part.shards()) *manifest->add_shards() = shard;
    // The store has no delete: an emptied part keeps a job checkpointing for weeks from
    // growing the rendezvous daemon by a list of shards per checkpoint.
    options_.peers->Set(keys[i], "").IgnoreError();
  }
  return true;
}

absl::Status CheckpointWriter::Finish() {
  std::unique_lock<std::mutex> lock(mutex_);
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
