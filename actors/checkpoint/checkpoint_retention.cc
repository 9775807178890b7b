#include "actors/checkpoint/checkpoint_retention.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;

// Paths compare as the same directory however they were spelled (relative, a trailing
// slash, a symlinked parent).
std::string Canonical(const std::string& path) {
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(fs::path(path), error);
  return error ? fs::path(path).lexically_normal().string() : canonical.string();
}

absl::Status RemovalError(const std::string& path, const std::error_code& error) {
  return absl::InternalError(absl::StrCat("checkpoint retention: cannot remove '", path, "': ", error.message()));
}

// Removes `path` (a file or an empty directory), then tells the hook.
absl::Status RemoveOne(const std::string& path, const RetentionPolicy& policy) {
  std::error_code error;
  fs::remove(path, error);
  if (error) return RemovalError(path, error);
  if (policy.after_remove) policy.after_remove(path);
  return absl::OkStatus();
}

// Empties and removes a directory named *.deleting: its manifest first, so that no
// moment of a crash leaves a manifest beside missing shards.
absl::Status RemoveDeletingDirectory(const std::string& deleting, const RetentionPolicy& policy) {
  std::error_code error;
  const std::string manifest = (fs::path(deleting) / kManifestFile).string();
  if (fs::exists(manifest, error)) OF_RETURN_IF_ERROR(RemoveOne(manifest, policy));
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(deleting, error)) files.push_back(entry.path());
  if (error) return RemovalError(deleting, error);
  for (const std::string& file : files) {
    if (fs::is_directory(file, error)) {
      fs::remove_all(file, error);  // Not written by the writer: whatever it holds goes.
      if (error) return RemovalError(file, error);
      continue;
    }
    OF_RETURN_IF_ERROR(RemoveOne(file, policy));
  }
  return RemoveOne(deleting, policy);
}

// Renames `checkpoint` out of the iter-N namespace, then removes it.
absl::Status DeleteCheckpoint(const std::string& dir, const std::string& checkpoint, const RetentionPolicy& policy) {
  const std::string deleting = checkpoint + kDeletingSuffix;
  std::error_code error;
  if (fs::exists(deleting, error)) OF_RETURN_IF_ERROR(RemoveDeletingDirectory(deleting, policy));
  if (std::rename(checkpoint.c_str(), deleting.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("checkpoint retention: cannot rename '", checkpoint, "' to '", deleting,
                                            "': ", std::strerror(errno)));
  }
  // The rename reaches the disk before any file goes: after a power loss the directory
  // is either still a complete iter-N or a .deleting one, never an iter-N with holes.
  OF_RETURN_IF_ERROR(SyncDirectory(dir));
  if (policy.after_remove) policy.after_remove(checkpoint);
  return RemoveDeletingDirectory(deleting, policy);
}

}  // namespace

absl::Status CheckRetentionPolicy(const RetentionPolicy& policy) {
  if (policy.keep_last < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--keep_checkpoints=", policy.keep_last,
                                                   " must be >= 0 (0 keeps every checkpoint)"));
  }
  if (policy.keep_every < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--keep_checkpoint_every=", policy.keep_every,
                                                   " must be >= 0 (0: no checkpoint is kept for its iteration)"));
  }
  return absl::OkStatus();
}

absl::Status VerifyCheckpointFiles(const std::string& checkpoint_dir) {
  // FindCheckpoint, not ReadManifest alone: a directory being deleted is refused by name.
  OF_ASSIGN_OR_RETURN(const CheckpointLocation location, FindCheckpoint(checkpoint_dir));
  for (const proto::CheckpointShard& shard : location.manifest.shards()) {
    const std::string file = (fs::path(location.dir) / shard.file()).string();
    std::ifstream in(file, std::ios::binary);
    if (!in) return absl::DataLossError(absl::StrCat("checkpoint shard '", file, "' is missing"));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const uint32_t crc = Crc32(0, data.data(), data.size());
    if (static_cast<int64_t>(data.size()) != shard.size_bytes() || crc != shard.crc32()) {
      return absl::DataLossError(absl::StrFormat(
          "checkpoint shard '%s' is damaged: %d B with CRC-32 0x%08x; the manifest lists %d B with 0x%08x", file,
          data.size(), crc, shard.size_bytes(), shard.crc32()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> PruneCheckpoints(const std::string& dir, const RetentionPolicy& policy,
                                                          const std::string& newest) {
  OF_RETURN_IF_ERROR(CheckRetentionPolicy(policy));
  std::vector<std::string> deleted;
  if (policy.keep_last == 0) return deleted;
  // Nothing goes unless the checkpoint that replaces them reads back whole.
  OF_RETURN_IF_ERROR(VerifyCheckpointFiles(newest));
  OF_ASSIGN_OR_RETURN(const proto::CheckpointManifest newest_manifest, ReadManifest(newest));
  const int64_t newest_iteration = newest_manifest.iteration();

  // What an earlier prune left when it was interrupted.
  std::error_code error;
  std::vector<std::string> leftovers;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (absl::EndsWith(entry.path().filename().string(), kDeletingSuffix) && entry.is_directory()) {
      leftovers.push_back(entry.path().string());
    }
  }
  for (const std::string& leftover : leftovers) OF_RETURN_IF_ERROR(RemoveDeletingDirectory(leftover, policy));

  std::vector<std::pair<int64_t, std::string>> complete;  // oldest first
  for (const std::string& checkpoint : CompleteCheckpoints(dir)) {
    absl::StatusOr<proto::CheckpointManifest> manifest = ReadManifest(checkpoint);
    if (manifest.ok()) complete.push_back({manifest->iteration(), checkpoint});
  }
  const std::string protected_dir = policy.protected_dir.empty() ? "" : Canonical(policy.protected_dir);
  const std::string newest_canonical = Canonical(newest);
  const size_t keep_last = static_cast<size_t>(policy.keep_last);
  for (size_t i = 0; i + keep_last < complete.size(); ++i) {
    const auto& [iteration, checkpoint] = complete[i];
    // Only older ones: a newer one is another run's, resumed from an older point.
    if (iteration >= newest_iteration) continue;
    if (policy.keep_every > 0 && iteration % policy.keep_every == 0) continue;
    const std::string canonical = Canonical(checkpoint);
    if (canonical == newest_canonical || canonical == protected_dir) continue;
    OF_RETURN_IF_ERROR(DeleteCheckpoint(dir, checkpoint, policy));
    deleted.push_back(checkpoint);
  }
  if (!deleted.empty()) OF_RETURN_IF_ERROR(SyncDirectory(dir));
  return deleted;
}

}  // namespace oneflow::actors
