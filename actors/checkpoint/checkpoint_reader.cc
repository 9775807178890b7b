#include "actors/checkpoint/checkpoint_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "oneflow_core/dtype.h"
#include "oneflow_core/status.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;

std::string ShapeText(const google::protobuf::RepeatedField<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The part of `a` inside `b`; empty (some range of size <= 0) when they do not overlap.
TensorSlice Intersect(const TensorSlice& a, const TensorSlice& b) {
  std::vector<Range> ranges;
  for (int64_t axis = 0; axis < a.rank(); ++axis) {
    ranges.push_back(Range{std::max(a.range(axis).begin, b.range(axis).begin),
                           std::min(a.range(axis).end, b.range(axis).end)});
  }
  return TensorSlice(std::move(ranges));
}

bool Empty(const TensorSlice& slice) {
  for (const Range& range : slice.ranges()) {
    if (range.size() <= 0) return true;
  }
  return false;
}

// `part` relative to `within` (both logical ranges; part inside within).
TensorSlice Relative(const TensorSlice& part, const TensorSlice& within) {
  std::vector<Range> ranges;
  for (int64_t axis = 0; axis < part.rank(); ++axis) {
    ranges.push_back(Range{part.range(axis).begin - within.range(axis).begin,
                           part.range(axis).end - within.range(axis).begin});
  }
  return TensorSlice(std::move(ranges));
}

// The plan's model against the checkpoint's: every difference, tensor by tensor.
std::vector<std::string> ModelDifferences(const proto::CheckpointManifest& manifest, const proto::Plan& plan,
                                          const PlanIndex& index) {
  std::map<std::string, const proto::CheckpointTensor*> saved;
  for (const proto::CheckpointTensor& tensor : manifest.tensors()) saved[tensor.name()] = &tensor;
  std::vector<std::string> differences;
  std::map<std::string, bool> in_plan;
  for (const proto::VariableDef& variable : plan.job().variables()) {
    in_plan[variable.tensor()] = true;
    absl::StatusOr<const proto::TensorDef*> def = index.Tensor(variable.tensor());
    if (!def.ok()) continue;
    auto it = saved.find(variable.tensor());
    if (it == saved.end()) {
      differences.push_back(absl::StrCat("tensor '", variable.tensor(), "' ", ShapeText((*def)->shape()),
                                         " of the plan is not in the checkpoint"));
    } else if (ShapeText(it->second->shape()) != ShapeText((*def)->shape())) {
      differences.push_back(absl::StrCat("tensor '", variable.tensor(), "' has shape ",
                                         ShapeText(it->second->shape()), " in the checkpoint and ",
                                         ShapeText((*def)->shape()), " in the plan"));
    } else if (it->second->dtype() != (*def)->dtype()) {
      differences.push_back(absl::StrCat("tensor '", variable.tensor(), "' is ",
                                         proto::DataType_Name(it->second->dtype()), " in the checkpoint and ",
                                         proto::DataType_Name((*def)->dtype()), " in the plan"));
    }
  }
  for (const proto::CheckpointTensor& tensor : manifest.tensors()) {
    if (!in_plan.count(tensor.name())) {
      differences.push_back(absl::StrCat("tensor '", tensor.name(), "' ", ShapeText(tensor.shape()),
                                         " of the checkpoint is not in the plan"));
    }
  }
  return differences;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path,
                                                                         const proto::Plan& plan,
                                                                         const PlanIndex& index,
                                                                         const DeviceBackend& backend) {
  OF_ASSIGN_OR_RETURN(CheckpointLocation location, FindCheckpoint(path));
  const std::string dir = location.dir;
  return OpenManifest(dir, (fs::path(dir) / kManifestFile).string(), std::move(location.manifest), plan, index,
                      backend, [&dir](const proto::CheckpointShard& shard) -> absl::StatusOr<std::string> {
                        const std::string file = (fs::path(dir) / shard.file()).string();
                        std::ifstream in(file, std::ios::binary);
                        if (!in) return absl::DataLossError(absl::StrCat("checkpoint shard '", file, "' is missing"));
                        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                      });
}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::OpenInMemory(CheckpointInMemory checkpoint,
                                                                                 const proto::Plan& plan,
                                                                                 const PlanIndex& index,
                                                                                 const DeviceBackend& backend) {
  if (checkpoint.shards.size() != static_cast<size_t>(checkpoint.manifest.shards_size())) {
    return absl::DataLossError(absl::StrCat(checkpoint.name, " has ", checkpoint.shards.size(),
                                            " shards; its manifest lists ", checkpoint.manifest.shards_size()));
  }
  std::vector<std::string>* shards = &checkpoint.shards;
  int next = 0;
  const std::string name = checkpoint.name;
  return OpenManifest(name, name, std::move(checkpoint.manifest), plan, index, backend,
                      [shards, &next](const proto::CheckpointShard&) -> absl::StatusOr<std::string> {
                        return std::move((*shards)[next++]);
                      });
}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::OpenManifest(
    const std::string& dir, const std::string& manifest_path, proto::CheckpointManifest checked_manifest,
    const proto::Plan& plan, const PlanIndex& index, const DeviceBackend& backend,
    const std::function<absl::StatusOr<std::string>(const proto::CheckpointShard& shard)>& read_shard) {
  std::unique_ptr<CheckpointReader> reader(new CheckpointReader());
  reader->backend_ = &backend;
  reader->dir_ = dir;
  reader->manifest_ = std::move(checked_manifest);
  const proto::CheckpointManifest& manifest = reader->manifest_;
  std::vector<std::string> differences = ModelDifferences(manifest, plan, index);
  if (!differences.empty()) {
    const size_t total = differences.size();
    if (differences.size() > 5) differences.resize(5);
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint '", reader->dir_, "' (job '", manifest.job(), "', iteration ", manifest.iteration(),
        ") is not of this plan's model (job '", plan.job().name(), "'): ", total, " difference",
        total == 1 ? "" : "s", ": ", absl::StrJoin(differences, "; "), total > 5 ? "; ..." : ""));
  }
  // The slices of every tensor: inside it, of the right size, covering it once.
  std::map<std::string, const proto::CheckpointTensor*> tensors;
  for (const proto::CheckpointTensor& tensor : manifest.tensors()) tensors[tensor.name()] = &tensor;
  for (int s = 0; s < manifest.shards_size(); ++s) {
    const proto::CheckpointShard& shard = manifest.shards(s);
    for (const proto::CheckpointSlice& slice : shard.slices()) {
      auto it = tensors.find(slice.tensor());
      const TensorSlice ranges = SliceOf(slice);
      bool fits = it != tensors.end() && ranges.rank() == it->second->shape_size();
      for (int64_t axis = 0; fits && axis < ranges.rank(); ++axis) {
        fits = ranges.range(axis).begin >= 0 && ranges.range(axis).begin <= ranges.range(axis).end &&
               ranges.range(axis).end <= it->second->shape(static_cast<int>(axis));
      }
      int64_t element_size = 0;
      if (fits) {
        absl::StatusOr<DType> dtype = FromProto(it->second->dtype());
        fits = dtype.ok();
        if (fits) element_size = SizeOf(*dtype);
      }
      if (!fits || slice.size_bytes() != ranges.NumElements() * element_size || slice.offset_bytes() < 0 ||
          slice.offset_bytes() + slice.size_bytes() > shard.size_bytes()) {
        return absl::DataLossError(absl::StrCat("checkpoint manifest '", manifest_path, "': shard '", shard.file(),
                                                "' lists slice ", ranges.ToString(), " of tensor '", slice.tensor(),
                                                "', which does not fit the tensor or the shard"));
      }
      reader->saved_[slice.tensor()].push_back(Saved{s, ranges, slice.offset_bytes()});
    }
    for (const proto::CheckpointResidual& residual : shard.residuals()) {
      if (residual.elements() < 0 || residual.size_bytes() != residual.elements() * 4 ||
          residual.offset_bytes() < 0 || residual.offset_bytes() + residual.size_bytes() > shard.size_bytes() ||
          reader->residuals_.count(residual.key()) > 0) {
        return absl::DataLossError(absl::StrCat("checkpoint manifest '", manifest_path, "': shard '", shard.file(),
                                                "' lists the residual of ", residual.key(), " (", residual.elements(),
                                                " floats), which does not fit the shard or is listed twice"));
      }
      reader->residuals_[residual.key()] = Saved{s, TensorSlice(), residual.offset_bytes()};
      reader->residual_elements_[residual.key()] = residual.elements();
    }
  }
  for (const proto::CheckpointTensor& tensor : manifest.tensors()) {
    const std::vector<Saved>& saved = reader->saved_[tensor.name()];
    int64_t covered = 0;
    for (size_t a = 0; a < saved.size(); ++a) {
      covered += saved[a].slice.NumElements();
      for (size_t b = a + 1; b < saved.size(); ++b) {
        if (!Empty(Intersect(saved[a].slice, saved[b].slice))) {
          return absl::DataLossError(absl::StrCat("checkpoint manifest '", manifest_path, "': slices ",
                                                  saved[a].slice.ToString(), " and ", saved[b].slice.ToString(),
                                                  " of tensor '", tensor.name(), "' overlap"));
        }
      }
    }
    int64_t elements = 1;
    for (int64_t dim : tensor.shape()) elements *= dim;
    if (covered != elements) {
      return absl::DataLossError(absl::StrCat("checkpoint manifest '", manifest_path, "': the slices of tensor '",
                                              tensor.name(), "' hold ", covered, " of its ", elements, " elements"));
    }
  }
  // Every shard whole and intact before anything is loaded.
  for (const proto::CheckpointShard& shard : manifest.shards()) {
    const std::string file = (fs::path(reader->dir_) / shard.file()).string();
    OF_ASSIGN_OR_RETURN(std::string bytes, read_shard(shard));
    if (static_cast<int64_t>(bytes.size()) != shard.size_bytes()) {
      return absl::DataLossError(absl::StrCat("checkpoint shard '", file, "' has ", bytes.size(),
                                              " bytes; the manifest lists ", shard.size_bytes(),
                                              " (truncated or replaced)"));
    }
    const uint32_t crc = Crc32(0, bytes.data(), bytes.size());
    if (crc != shard.crc32()) {
      return absl::DataLossError(absl::StrFormat(
          "checkpoint shard '%s' is damaged: CRC-32 0x%08x, the manifest lists 0x%08x", file, crc, shard.crc32()));
    }
    reader->shard_bytes_.push_back(std::move(bytes));
  }
  return reader;
}

absl::Status CheckpointReader::Load(const std::string& tensor, const TensorLayout& layout, int64_t element_size,
                                    void* out) const {
  auto it = saved_.find(tensor);
  if (it == saved_.end()) {
    return absl::NotFoundError(absl::StrCat("checkpoint '", dir_, "' has no tensor '", tensor, "'"));
  }
  char* dst = static_cast<char*>(out);
  const Shape dst_shape = layout.slice.shape();
  int64_t copied = 0;
  for (const Saved& saved : it->second) {
    const TensorSlice part = Intersect(saved.slice, layout.slice);
    if (Empty(part)) continue;
    const char* src = shard_bytes_[saved.shard].data() + saved.offset_bytes;
    // The runs of `part` in the saved slice's buffer, then in the device's, in the same order.
    std::vector<int64_t> src_runs;
    ForEachContiguousRun(saved.slice.shape(), Relative(part, saved.slice),
                         [&](int64_t, int64_t offset, int64_t) { src_runs.push_back(offset); });
    size_t run = 0;
    ForEachContiguousRun(dst_shape, Relative(part, layout.slice), [&](int64_t, int64_t offset, int64_t length) {
      backend_->CopyFromHost(dst + offset * element_size, src + src_runs[run++] * element_size,
                             length * element_size);
    });
    copied += part.NumElements();
  }
  if (copied != layout.slice.NumElements()) {
    return absl::DataLossError(absl::StrCat("checkpoint '", dir_, "': the saved slices of tensor '", tensor,
                                            "' hold ", copied, " of the ", layout.slice.NumElements(),
                                            " elements of slice ", layout.slice.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace oneflow::actors

namespace oneflow::actors {

bool CheckpointReader::LoadResidual(const std::string& key, absl::Span<float> residual) const {
  auto it = residuals_.find(key);
  if (it == residuals_.end() || residual_elements_.at(key) != static_cast<int64_t>(residual.size())) return false;
  std::memcpy(residual.data(), shard_bytes_[it->second.shard].data() + it->second.offset_bytes,
              residual.size() * sizeof(float));
  return true;
}

}  // namespace oneflow::actors
