// CheckpointWriter's durable half: a staged checkpoint written as fsynced shard files and
// a manifest in DIR/iter-k.partial, renamed to DIR/iter-k once complete (or handed to
// the in-memory sink), and, with several processes, the agreement on who completes it.
// The staging threads that fill the buffers it writes are in checkpoint_writer.cc.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "actors/checkpoint/checkpoint_writer.h"
#include "oneflow_core/files/file_descriptor.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;

absl::Status IoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat("checkpoint: cannot ", what, " '", path, "': ", std::strerror(errno)));
}

// Writes `pieces` to a new file at `path` and fsyncs it; the CRC-32 of what it wrote.
absl::StatusOr<uint32_t> WriteFile(const std::string& path, const std::vector<std::pair<const char*, size_t>>& pieces) {
  FileDescriptor file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!file.valid()) return IoError("create", path);
  uint32_t crc = 0;
  for (const auto& [data, size] : pieces) {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(file.get(), data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return IoError("write", path);
      done += static_cast<size_t>(n);
    }
    crc = Crc32(crc, data, size);
  }
  if (::fsync(file.get()) != 0) return IoError("fsync", path);
  if (file.Close() != 0) return IoError("close", path);
  return crc;
}

}  // namespace

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

}  // namespace oneflow::actors
