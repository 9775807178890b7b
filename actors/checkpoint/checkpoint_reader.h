// Reading a checkpoint into a run of any layout (docs/checkpoints.md).
//
// Open finds the checkpoint (a checkpoint directory, or the newest complete one under a
// directory), checks that it holds exactly the plan's persistent tensors with their
// shapes and dtypes, that the saved slices of each tensor cover it once, and that every
// shard file has the size and CRC-32 the manifest lists; all before anything is loaded.
// Load then fills a device's slice of a tensor from whichever saved slices overlap it,
// so a checkpoint saved on dp=2 x tp=2 resumes on one device, on tp=4 or on 3 devices.
#ifndef ACTORS_CHECKPOINT_CHECKPOINT_READER_H_
#define ACTORS_CHECKPOINT_CHECKPOINT_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "kernels/device_backend.h"
#include "oneflow_core/tensor_slice.h"
#include "plan/plan_index.h"
#include "proto/checkpoint.pb.h"
#include "proto/plan.pb.h"

namespace oneflow::actors {

class CheckpointReader {
 public:
  // Errors: NOT_FOUND (no complete checkpoint at `path`, naming it), FAILED_PRECONDITION
  // (the checkpoint is of another model: the first differences, tensor by tensor),
  // DATA_LOSS (a damaged manifest or shard, naming the file).
  // Loads reach device memory through `backend`'s CopyFromHost.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& path, const proto::Plan& plan,
                                                                const PlanIndex& index, const DeviceBackend& backend);

  // A checkpoint held in memory (in-memory checkpoints, docs/elastic.md): the same checks
  // as Open, the manifest's checksum excepted (the parts come from several nodes and are
  // put together by the caller); every shard's size and CRC-32 is checked. Errors name
  // `checkpoint.name` where Open names files.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenInMemory(CheckpointInMemory checkpoint,
                                                                        const proto::Plan& plan,
                                                                        const PlanIndex& index,
                                                                        const DeviceBackend& backend);

  // The directory read (the name of an in-memory checkpoint) and the iteration the
  // checkpoint was taken after.
  const std::string& dir() const { return dir_; }
  int64_t iteration() const { return manifest_.iteration(); }

  // Fills `out`, the dense row-major buffer of `layout.slice` of `tensor`, with
  // `element_size`-byte elements, from the saved slices.
  absl::Status Load(const std::string& tensor, const TensorLayout& layout, int64_t element_size, void* out) const;

  // Error feedback: fills `residual` (host memory) with the saved residual of `key`
  // (proto CheckpointResidual) and returns true; false, leaving it alone, when the
  // checkpoint has none of that key and size (it was saved on another layout, or without
  // error feedback).
  bool LoadResidual(const std::string& key, absl::Span<float> residual) const;
  // How many residuals the checkpoint holds, for messages.
  int64_t residual_count() const { return static_cast<int64_t>(residuals_.size()); }

 private:
  struct Saved {
    int shard = 0;
    TensorSlice slice;
    int64_t offset_bytes = 0;
  };
  CheckpointReader() = default;
  // Everything after the manifest is found: the model's tensors, the slices, then each
  // shard from `read_shard` checked against its size and CRC-32. `manifest_path` names
  // the manifest in errors.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenManifest(
      const std::string& dir, const std::string& manifest_path, proto::CheckpointManifest manifest,
      const proto::Plan& plan, const PlanIndex& index, const DeviceBackend& backend,
      const std::function<absl::StatusOr<std::string>(const proto::CheckpointShard& shard)>& read_shard);

  std::string dir_;
  proto::CheckpointManifest manifest_;
  const DeviceBackend* backend_ = nullptr;
  std::vector<std::string> shard_bytes_;  // Per manifest shard, the whole file.
  std::map<std::string, std::vector<Saved>> saved_;  // Per tensor.
  std::map<std::string, Saved> residuals_;            // Per key; `slice` unused.
  std::map<std::string, int64_t> residual_elements_;
};

}  // namespace oneflow::actors

#endif  // ACTORS_CHECKPOINT_CHECKPOINT_READER_H_
