#include "actors/checkpoint/checkpoint_format.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "oneflow_core/files/file_descriptor.h"

namespace oneflow::actors {
namespace {

namespace fs = std::filesystem;

constexpr char kDirPrefix[] = "iter-";

// The iteration of a complete checkpoint's directory name, or -1.
int64_t IterationOfName(const std::string& name) {
  if (!absl::StartsWith(name, kDirPrefix)) return -1;
  int64_t iteration = 0;
  if (!absl::SimpleAtoi(name.substr(sizeof(kDirPrefix) - 1), &iteration) || iteration < 0) return -1;
  return iteration;
}

std::string Serialize(const proto::CheckpointManifest& manifest) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  manifest.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

}  // namespace

std::string CheckpointDirName(int64_t iteration) { return absl::StrFormat("%s%08d", kDirPrefix, iteration); }

std::string ShardFileName(int64_t node, int64_t device) { return absl::StrCat("device-", node, "-", device, ".shard"); }

uint32_t Crc32(uint32_t crc, const void* data, size_t size) {
  uLong value = crc;
  const Bytef* bytes = static_cast<const Bytef*>(data);
  // zlib takes a uInt length: feed large buffers in pieces.
  while (size > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(size, std::numeric_limits<uInt>::max()));
    value = crc32(value, bytes, piece);
    bytes += piece;
    size -= piece;
  }
  return static_cast<uint32_t>(value);
}

uint32_t ManifestChecksum(const proto::CheckpointManifest& manifest) {
  proto::CheckpointManifest unsealed = manifest;
  unsealed.clear_checksum();
  const std::string bytes = Serialize(unsealed);
  return Crc32(0, bytes.data(), bytes.size());
}

absl::StatusOr<proto::CheckpointManifest> ReadManifest(const std::string& checkpoint_dir) {
  const std::string path = (fs::path(checkpoint_dir) / kManifestFile).string();
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("checkpoint '", checkpoint_dir, "' has no manifest ('", path,
                                            "' cannot be opened): it is not a complete checkpoint"));
  }
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  proto::CheckpointManifest manifest;
  if (!manifest.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("checkpoint manifest '", path, "' is damaged: it does not parse"));
  }
  const uint32_t expected = ManifestChecksum(manifest);
  if (manifest.checksum() != expected) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint manifest '%s' is damaged: checksum 0x%08x does not match its contents (0x%08x)", path,
        manifest.checksum(), expected));
  }
  if (manifest.format_version() != kCheckpointFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint manifest '", path, "' has format version ",
                                                      manifest.format_version(), "; this build reads version ",
                                                      kCheckpointFormatVersion));
  }
  return manifest;
}

std::vector<std::string> CompleteCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const int64_t iteration = IterationOfName(entry.path().filename().string());
    if (iteration < 0 || !entry.is_directory()) continue;
    if (!ReadManifest(entry.path().string()).ok()) continue;
    found.push_back({iteration, entry.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> dirs;
  for (auto& [iteration, path] : found) dirs.push_back(std::move(path));
  return dirs;
}

std::vector<DamagedCheckpoint> DamagedCheckpoints(const std::string& dir) {
  std::vector<DamagedCheckpoint> damaged;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const int64_t iteration = IterationOfName(entry.path().filename().string());
    if (iteration < 0 || !entry.is_directory()) continue;
    if (!fs::exists(entry.path() / kManifestFile, error)) continue;
    absl::StatusOr<proto::CheckpointManifest> manifest = ReadManifest(entry.path().string());
    if (!manifest.ok()) damaged.push_back({entry.path().string(), iteration, manifest.status()});
  }
  std::sort(damaged.begin(), damaged.end(),
            [](const DamagedCheckpoint& a, const DamagedCheckpoint& b) { return a.iteration < b.iteration; });
  return damaged;
}

std::vector<std::string> SkippedDamagedCheckpoints(const std::string& dir, const std::string& chosen_dir,
                                                   int64_t chosen_iteration) {
  std::vector<std::string> warnings;
  std::error_code error;
  if (fs::exists(fs::path(dir) / kManifestFile, error)) return warnings;
  for (const DamagedCheckpoint& damaged : DamagedCheckpoints(dir)) {
    if (damaged.iteration <= chosen_iteration) continue;
    warnings.push_back(absl::StrCat("checkpoint ", damaged.dir, " is damaged and skipped (", damaged.error.message(),
                                    "); resuming from ", chosen_dir));
  }
  return warnings;
}

absl::StatusOr<CheckpointLocation> FindCheckpoint(const std::string& path) {
  std::error_code error;
  if (!fs::is_directory(path, error)) {
    if (fs::exists(path, error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint directory '", path,
                       "' is not a directory; give a checkpoint (DIR/iter-N) or the --checkpoint_dir holding them"));
    }
    return absl::NotFoundError(absl::StrCat("checkpoint directory '", path, "' does not exist"));
  }
  if (absl::EndsWith(absl::StripSuffix(fs::path(path).lexically_normal().string(), "/"), kDeletingSuffix)) {
    // Retention renamed it before deleting its files: whatever is left is not a checkpoint.
    return absl::NotFoundError(absl::StrCat(
        "checkpoint directory '", path, "' is being deleted (checkpoint retention): it is not a complete checkpoint"));
  }
  if (fs::exists(fs::path(path) / kManifestFile, error)) {
    absl::StatusOr<proto::CheckpointManifest> manifest = ReadManifest(path);
    if (!manifest.ok()) return manifest.status();
    return CheckpointLocation{path, *std::move(manifest)};
  }
  const std::vector<std::string> complete = CompleteCheckpoints(path);
  if (complete.empty()) {
    std::vector<std::string> partial;
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
      const std::string name = entry.path().filename().string();
      if (absl::StartsWith(name, kDirPrefix)) partial.push_back(name);
    }
    std::sort(partial.begin(), partial.end());
    return absl::NotFoundError(absl::StrCat(
        "no complete checkpoint in '", path, "' (a complete one is a directory iter-N holding ", kManifestFile, ")",
        partial.empty() ? "" : absl::StrCat("; incomplete or damaged: ", absl::StrJoin(partial, ", "))));
  }
  absl::StatusOr<proto::CheckpointManifest> manifest = ReadManifest(complete.back());
  if (!manifest.ok()) return manifest.status();
  return CheckpointLocation{complete.back(), *std::move(manifest)};
}

absl::Status SyncDirectory(const std::string& path) {
  const FileDescriptor directory(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory.valid()) {
    return absl::InternalError(
        absl::StrCat("checkpoint: cannot open directory '", path, "': ", std::strerror(errno)));
  }
  if (::fsync(directory.get()) != 0) {
    return absl::InternalError(
        absl::StrCat("checkpoint: cannot fsync directory '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

TensorSlice SliceOf(const proto::CheckpointSlice& slice) {
  std::vector<Range> ranges;
  for (const proto::CheckpointRange& range : slice.ranges()) ranges.push_back(Range{range.begin(), range.end()});
  return TensorSlice(std::move(ranges));
}

void SetRanges(const TensorSlice& slice, proto::CheckpointSlice* out) {
  out->clear_ranges();
  for (const Range& range : slice.ranges()) {
    proto::CheckpointRange* added = out->add_ranges();
    added->set_begin(range.begin);
    added->set_end(range.end);
  }
}

}  // namespace oneflow::actors
