// The checkpoint directory format (docs/checkpoints.md), shared by the writer, the
// reader and `oneflow checkpoint`:
//
//   DIR/iter-00000010/              a complete checkpoint: taken after 10 iterations
//     manifest.pb                   CheckpointManifest (proto/checkpoint.proto), last
//     device-0-0.shard ...          each device's slices, row-major bytes
//   DIR/iter-00000020.partial/      a save in progress or interrupted: never read
//   DIR/iter-00000002.deleting/     an old checkpoint being deleted: never read
//
// A checkpoint exists once its directory has its final name: the writer fills the
// `.partial` directory, fsyncs every file, writes the manifest, then renames the
// directory. A crash at any point leaves the previous checkpoint the newest complete one.
#ifndef ACTORS_CHECKPOINT_CHECKPOINT_FORMAT_H_
#define ACTORS_CHECKPOINT_CHECKPOINT_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "oneflow_core/tensor_slice.h"
#include "proto/checkpoint.pb.h"

namespace oneflow::actors {

// Bumped on incompatible changes; readers refuse other versions.
inline constexpr int64_t kCheckpointFormatVersion = 1;
inline constexpr char kManifestFile[] = "manifest.pb";
inline constexpr char kPartialSuffix[] = ".partial";
// A checkpoint being deleted (checkpoint_retention.h): never read.
inline constexpr char kDeletingSuffix[] = ".deleting";

// "iter-00000010": the directory name of the checkpoint taken after `iteration`.
std::string CheckpointDirName(int64_t iteration);
// "device-0-1.shard".
std::string ShardFileName(int64_t node, int64_t device);

// CRC-32 (zlib) of `size` bytes, continuing `crc` (0 to start).
uint32_t Crc32(uint32_t crc, const void* data, size_t size);

// The checksum a manifest should carry: CRC-32 of its deterministic serialization
// with `checksum` unset.
uint32_t ManifestChecksum(const proto::CheckpointManifest& manifest);

// Reads and checks `checkpoint_dir`/manifest.pb: it parses, its checksum matches and its
// format version is this build's. Errors name the file: NOT_FOUND when it is missing
// (an incomplete checkpoint), DATA_LOSS when it is damaged, FAILED_PRECONDITION for
// another format version.
absl::StatusOr<proto::CheckpointManifest> ReadManifest(const std::string& checkpoint_dir);

// A checkpoint (or one node's part of one) held in memory rather than in files:
// in-memory checkpoints (`oneflow launch --memory_checkpoint_every`, docs/elastic.md).
struct CheckpointInMemory {
  // For messages, in place of a directory: "in-memory checkpoint after iteration 40".
  std::string name;
  // Its shards' `file` fields are names only; nothing is read from disk.
  proto::CheckpointManifest manifest;
  // The bytes of each shard of the manifest, in its order.
  std::vector<std::string> shards;
};

// A complete checkpoint: its directory and manifest.
struct CheckpointLocation {
  std::string dir;
  proto::CheckpointManifest manifest;
};

// `path` itself when it holds a manifest, otherwise the newest complete checkpoint
// (iter-N with a valid manifest, largest N) directly under it. NOT_FOUND naming `path`
// (and the partial saves it found) when there is none.
absl::StatusOr<CheckpointLocation> FindCheckpoint(const std::string& path);

// Every iter-N directory under `dir` whose manifest is valid, oldest first.
std::vector<std::string> CompleteCheckpoints(const std::string& dir);

// An iter-N directory whose manifest exists but does not read back (truncated, a
// checksum mismatch, another format version): FindCheckpoint passes over it to an older
// one, and whoever resumes should say so (`oneflow launch` warns naming it).
struct DamagedCheckpoint {
  std::string dir;
  int64_t iteration = 0;
  absl::Status error;  // ReadManifest's
};
// Those under `dir`, oldest first. A directory without a manifest is a save still in
// progress or cut short, not damaged: it is not listed.
std::vector<DamagedCheckpoint> DamagedCheckpoints(const std::string& dir);

// What a resume from the directory `dir` that took `chosen_dir` (FindCheckpoint's choice)
// (taken after `chosen_iteration` iterations) passed over: one warning per damaged
// checkpoint newer than it, oldest first:
//   checkpoint /ck/iter-00000030 is damaged and skipped (<ReadManifest's error>); resuming from /ck/iter-00000020
// None when `dir` is itself a checkpoint (nothing was chosen among others).
std::vector<std::string> SkippedDamagedCheckpoints(const std::string& dir, const std::string& chosen_dir,
                                                   int64_t chosen_iteration);

// fsyncs the directory `path` (a rename or removal in it reaches the disk); INTERNAL
// naming it on failure.
absl::Status SyncDirectory(const std::string& path);

// The slice a CheckpointSlice holds, and the reverse.
TensorSlice SliceOf(const proto::CheckpointSlice& slice);
void SetRanges(const TensorSlice& slice, proto::CheckpointSlice* out);

}  // namespace oneflow::actors

#endif  // ACTORS_CHECKPOINT_CHECKPOINT_FORMAT_H_
