// Which checkpoints a run keeps on disk, and deleting the others without ever leaving
// one that looks complete but is not (docs/checkpoints.md, "Retention").
//
// After each checkpoint the writer completes, PruneCheckpoints first verifies it (its
// manifest and every shard's size and CRC-32, as `oneflow checkpoint --verify` does) and
// only then deletes: the complete checkpoints under the directory beyond the newest
// `keep_last` (by iteration), older than the one just written, except those whose
// iteration is a multiple of `keep_every` and the one the run resumed from.
//
// A deletion is crash-safe: the directory iter-N is first renamed to iter-N.deleting (one
// atomic rename, after which neither a scan of the directory, a resume nor
// `oneflow checkpoint` takes it as a checkpoint), then its manifest goes before its shards,
// so a crash at any point leaves at most a .deleting directory without a manifest. The
// next prune removes such leftovers first.
//
//   RetentionPolicy policy{.keep_last = 2};
//   OF_ASSIGN_OR_RETURN(std::vector<std::string> deleted,
//                       PruneCheckpoints(dir, policy, dir + "/iter-00000400"));
#ifndef ACTORS_CHECKPOINT_CHECKPOINT_RETENTION_H_
#define ACTORS_CHECKPOINT_CHECKPOINT_RETENTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actors/checkpoint/checkpoint_format.h"

namespace oneflow::actors {

// `oneflow run` and `oneflow launch` keep this many checkpoints unless told otherwise.
inline constexpr int64_t kDefaultKeepCheckpoints = 3;

struct RetentionPolicy {
  // The newest complete checkpoints kept; 0 keeps every one (nothing is deleted). The
  // library keeps all unless told; the flags default to kDefaultKeepCheckpoints.
  int64_t keep_last = 0;
  // Checkpoints whose iteration is a multiple of this survive besides; 0: none do.
  int64_t keep_every = 0;
  // Never deleted: the checkpoint a running resume reads (the run's --resume_from).
  std::string protected_dir;
  // Test hook: called after each file or directory the prune removes, with its path; a
  // crash injected here leaves what a crash mid-deletion leaves.
  std::function<void(const std::string& removed)> after_remove;
};

// INVALID_ARGUMENT naming the flags (--keep_checkpoints=-1 ...) when a count is negative.
absl::Status CheckRetentionPolicy(const RetentionPolicy& policy);

// Reads `checkpoint_dir`'s manifest and every shard it lists, checking sizes and CRC-32s
// (a directory of checkpoints: its newest, as FindCheckpoint takes it). NOT_FOUND without
// a manifest or for a directory being deleted, DATA_LOSS naming the file when one is
// missing or damaged.
absl::Status VerifyCheckpointFiles(const std::string& checkpoint_dir);

// Applies `policy` to the checkpoints under `dir` once `newest` (a checkpoint directory
// under `dir`, just completed) verifies; returns the directories it deleted, oldest first.
// Deletes nothing when keep_last is 0 or `newest` does not verify (that error is
// returned). Leftover .deleting directories are removed first.
absl::StatusOr<std::vector<std::string>> PruneCheckpoints(const std::string& dir, const RetentionPolicy& policy,
                                                          const std::string& newest);

}  // namespace oneflow::actors

#endif  // ACTORS_CHECKPOINT_CHECKPOINT_RETENTION_H_
