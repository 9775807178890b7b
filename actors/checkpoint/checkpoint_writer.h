// Asynchronous, atomic checkpoints of a plan's persistent tensors (variables and
// optimizer state), one shard file per device (docs/checkpoints.md).
//
// Every `every` iterations each variable actor, at its act on iteration k (when the
// update of iteration k - 1 has written it and the update of k has not started: the
// update consumes the variable's register of iteration k), calls Stage, which hands the
// copy of its slice into a staging buffer (allocated once) to a copier thread and
// returns: the copy runs while iteration k's forward and backward only read the
// variable, and the update that writes it in place calls AwaitStaged first, so training
// waits only when the copy has not finished by then (synchronous saves copy inline).
// When every slice this process saves is
// staged, a background thread writes the shards into DIR/iter-k.partial, fsyncs them,
// writes the manifest and renames the directory to DIR/iter-k; training goes on
// meanwhile. A replicated slice (B) is saved by the first device of the plan that
// holds it. The next checkpoint's Stage waits while the previous one is still being
// written (the staging buffers are reused).
//
//   OF_ASSIGN_OR_RETURN(auto writer, CheckpointWriter::Create(plan, index, options));
//   const int entry = writer->EntryFor(device_index, "layer0/weight");  // -1: not saved here
//   ... in the variable's act: OF_RETURN_IF_ERROR(writer->Stage(entry, iteration, data));
//   ... before its in-place update: OF_RETURN_IF_ERROR(writer->AwaitStaged(entry, iteration));
//   ... after the run: OF_RETURN_IF_ERROR(writer->Finish());
//
// Several processes (one per node, `oneflow launch`): every node writes the shards of its
// own devices into the same DIR/iter-k.partial (DIR must be a directory every node
// reaches) and fsyncs them, then publishes its part of the manifest (its shards, sizes
// and CRCs) under the key "checkpoint/k/node/N" of the rendezvous store the nodes share.
// The assembler, the lowest node that saves anything, waits for every saving node's part
// (`peer_timeout` at most), writes the manifest and renames the directory: the
// checkpoint exists only once every node's shards are on disk.
#ifndef ACTORS_CHECKPOINT_CHECKPOINT_WRITER_H_
#define ACTORS_CHECKPOINT_CHECKPOINT_WRITER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "actors/checkpoint/checkpoint_retention.h"
#include "kernels/device_backend.h"
#include "oneflow_core/comm/key_value_store.h"
#include "plan/plan_index.h"
#include "proto/checkpoint.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

// What one save cost.
struct CheckpointRecord {
  int64_t iteration = 0;
  std::string dir;
  int64_t bytes = 0;
  // Summed over the acts that staged it: time spent in Stage (copies, waiting for the
  // previous save, and with `synchronous` the write), i.e. the training threads' stall.
  double stall_ms = 0;
  // The write itself: shards, fsyncs, manifest, rename.
  double write_ms = 0;
};

struct CheckpointOptions {
  // Where checkpoints go (created when missing); empty: no checkpoints.
  std::string dir;
  // A checkpoint after every `every`-th iteration (counted from 1); 0: none.
  int64_t every = 0;
  // Write in the act that stages the last slice, blocking training until the files are
  // on disk: the baseline the asynchronous save is measured against.
  bool synchronous = false;
  // Test hook: a save fails after writing this many shard files, leaving its partial
  // directory, as a crash mid-save would. < 0: off.
  int64_t fail_after_shards = -1;
  // Several processes: the store the nodes agree through (the rendezvous store; keys
  // scoped by the job) and how long the assembling node waits for the other nodes' parts
  // before the save fails. Needed only when the plan has several nodes and this process
  // runs one of them.
  KeyValueStore* peers = nullptr;
  absl::Duration peer_timeout = absl::Seconds(300);
  // Called from the writer thread once a checkpoint is complete (renamed), by the process
  // that completed it: the only one with several processes.
  std::function<void(const CheckpointRecord& record)> on_saved;
  // In-memory checkpoints (docs/elastic.md): when set, a save builds this node's shards
  // in memory and hands them to `to_memory` (from the writer thread) instead of writing
  // files: `dir`, `peers`, `retention` and `on_saved` are not used, and the nodes do not
  // agree on anything (whoever keeps the parts knows when every saving node sent one).
  // `part.manifest` holds every tensor and this node's shards; `saving_nodes` lists every
  // node that sends a part of each checkpoint.
  std::function<absl::Status(CheckpointInMemory part, const std::vector<int64_t>& saving_nodes)> to_memory;
  // Which older checkpoints the process completing a checkpoint deletes once it verifies
  // (checkpoint_retention.h); by default none. A failed deletion warns on stderr and
  // training goes on.
  RetentionPolicy retention;
  // Told when training starts waiting for this writer (an in-place update's AwaitStaged
  // finds its variable's copy not made yet: the copier is behind, or waits for the
  // previous checkpoint's write to free the staging buffers) with true, when the first
  // device starts waiting, and with false when the last one stops. Called by the waiting
  // threads under the writer's lock: keep it short. The worker puts it in its status file
  // so that `oneflow launch` does not call a rank held by a slow write hung.
  std::function<void(bool waiting)> on_training_wait;
};


class CheckpointWriter {
 public:
  // Saves what the devices of `node` (< 0: every node) hold. `first_iteration`: the
  // iteration the run starts at (no checkpoint is taken at it). Creates options.dir.
  // Device memory reaches the staging buffers through `backend`'s CopyToHost.
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Create(const proto::Plan& plan, const PlanIndex& index,
                                                                  const CheckpointOptions& options, int64_t node,
                                                                  int64_t first_iteration,
                                                                  const DeviceBackend& backend);
  ~CheckpointWriter();

  // The entry of the slice of `tensor` that device `device_index` saves; -1 when another
  // device saves that slice (or the device is not local).
  int EntryFor(int device_index, const std::string& tensor) const;

  // Error feedback: makes the residual of a compressed gradient step (a reduction, or an
  // all-gather's shard owner's) on local device
  // `device_index` (`elements` floats, proto CheckpointResidual `key`) an entry, saved in
  // the device's shard after its slices. Called while the actors are bound, before any
  // Stage; the reduction's act stages the residual before the act changes it
  // (Stage, then AwaitStaged).
  int AddResidual(int device_index, const std::string& key, int64_t elements);

  // Whether a checkpoint is taken at the start of iteration `iteration` (after
  // `iteration` iterations).
  bool Due(int64_t iteration) const {
    return every_ > 0 && iteration > first_iteration_ && iteration % every_ == 0;
  }

  // From the act of entry `entry`'s variable on `iteration`: copies `data` when Due.
  // Returns the error of a failed earlier save (the run stops before the next one).
  absl::Status Stage(int entry, int64_t iteration, const void* data);

  // Before the in-place update of entry `entry`'s variable on `iteration`: waits until
  // the copy Stage handed off for `iteration` (if any) is done. The wait counts as stall.
  absl::Status AwaitStaged(int entry, int64_t iteration);

  // The checkpoint after the run's last iteration `iteration` (its variables act no
  // more): stages every entry from the memory it last saw, while the engine still holds
  // it. Nothing when not Due.
  absl::Status StageFinal(int64_t iteration);

  // Waits for the saves in flight; the first error of any save.
  absl::Status Finish();

  std::vector<CheckpointRecord> records() const;

 private:
  // Milliseconds from `start` to now (stalls and write times of records()).
  static double MsSince(std::chrono::steady_clock::time_point start);
  struct Entry {
    int device_index = 0;
    std::string tensor;
    proto::CheckpointSlice slice;  // ranges and size; offset set per shard
    bool residual = false;         // An error-feedback residual: `tensor` is its key.
    std::vector<char> staging;
    const void* live = nullptr;    // The variable's memory, last seen in Stage.
    int64_t copy_pending = -1;     // The iteration whose copy the copier has yet to make.
  };
  CheckpointWriter() = default;
  void WriterMain();
  // Takes the copies Stage hands off, one at a time, and makes them.
  void CopierMain();
  // Under mutex_: some entry's copy is handed off and not made yet.
  bool AnyCopyPending() const;
  // Copies entry `entry` of `iteration` (from `data`) once the staging buffers are free;
  // the last one of an iteration starts the write. Called with no lock held.
  absl::Status Copy(int entry, int64_t iteration, const void* data);
  // Writes the staged checkpoint of `iteration`; called with no lock held
  // (checkpoint_files.cc, as are WriteToMemory, StagedShards and AgreeWithPeers).
  absl::Status Write(int64_t iteration, double* write_ms);
  // The same, handed to options_.to_memory instead.
  absl::Status WriteToMemory(int64_t iteration, double* write_ms);
  // The staged slices and residuals of each local device, in shard order, and the
  // manifest's shard (without size and CRC) for each, in device order.
  struct ShardPieces {
    proto::CheckpointShard shard;
    std::vector<std::pair<const char*, size_t>> pieces;
    int64_t size_bytes = 0;
  };
  std::vector<ShardPieces> StagedShards() const;
  // Several processes: publishes this node's `part` (a manifest holding only its shards);
  // on the assembling node, waits for every other saving node's part and adds their
  // shards to `manifest`. Returns whether this node completes the checkpoint.
  absl::StatusOr<bool> AgreeWithPeers(int64_t iteration, proto::CheckpointManifest* manifest);
  // Under mutex_: the last entry of `iteration` was staged.
  void StagedAll(std::unique_lock<std::mutex>& lock, int64_t iteration);
  // Under mutex_, before a wait for the write in progress that training waits on (a copy
  // of the next checkpoint, which an update awaits, or the run's end): the
  // writer thread (idle priority, WriterMain) runs at normal priority until that write
  // ends. Otherwise, on a machine whose cores are busy, training would wait for a thread
  // that gets almost no CPU (session 45: writes of 200 KB took up to 4.2 s under load).
  void RaiseWriter();

  const proto::Plan* plan_ = nullptr;
  CheckpointOptions options_;
  const DeviceBackend* backend_ = nullptr;
  int64_t every_ = 0;
  int64_t first_iteration_ = 0;
  // Several processes: this node, the nodes that save slices, the one that assembles.
  bool multi_process_ = false;
  int64_t node_ = -1;
  std::vector<int64_t> saving_nodes_;
  // Under mutex_: threads in AwaitStaged's wait (options_.on_training_wait).
  int training_waiters_ = 0;
  std::vector<Entry> entries_;
  std::map<std::pair<int, std::string>, int> entry_index_;
  proto::CheckpointManifest manifest_template_;  // tensors, job, plan checksum

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int64_t staging_iteration_ = -1;  // The checkpoint being staged, -1: none.
  int64_t staged_ = 0;
  bool writing_ = false;            // The staged checkpoint is being written.
  // The writer thread runs at normal priority until its write ends: training waits for it
  // (RaiseWriter).
  bool writer_raised_ = false;
  int64_t to_write_ = -1;           // Handed to the writer thread.
  bool stopping_ = false;
  double stall_ms_ = 0;             // Of the checkpoint being staged.
  absl::Status error_;
  std::vector<CheckpointRecord> records_;
  std::deque<std::pair<int, int64_t>> copies_;  // (entry, iteration) handed to the copier
  std::thread thread_;
  std::thread copier_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_CHECKPOINT_CHECKPOINT_WRITER_H_
