#include "tools/cli/checkpoint_command.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "oneflow_core/status.h"

ABSL_FLAG(bool, verify, false, "checkpoint: also read every shard and check its size and CRC-32.");

namespace oneflow::cli {
namespace {

namespace fs = std::filesystem;

std::string LayoutText(const proto::CheckpointTensor& tensor) {
  absl::StatusOr<NdSbp> sbp = NdSbp::FromProto(tensor.sbp());
  absl::StatusOr<Placement> placement = Placement::FromProto(tensor.placement());
  if (!sbp.ok() || !placement.ok() || tensor.sbp().sbp_size() == 0) return "(layout not recorded)";
  return absl::StrCat(sbp->ToString(), " on ", placement->ToString());
}

absl::Status RunCheckpoint(const std::vector<std::string>& arguments, std::ostream& out) {
  return DescribeCheckpoint(arguments[0], absl::GetFlag(FLAGS_verify), out);
}

}  // namespace

absl::Status DescribeCheckpoint(const std::string& path, bool verify, std::ostream& out) {
  OF_ASSIGN_OR_RETURN(const actors::CheckpointLocation location, actors::FindCheckpoint(path));
  if (location.dir != path) {
    out << "complete checkpoints in " << path << ":";
    for (const std::string& dir : actors::CompleteCheckpoints(path)) out << " " << fs::path(dir).filename().string();
    out << "\n\n";
  }
  const proto::CheckpointManifest& manifest = location.manifest;
  int64_t bytes = 0;
  for (const proto::CheckpointShard& shard : manifest.shards()) bytes += shard.size_bytes();
  out << "checkpoint " << location.dir << " (format version " << manifest.format_version() << ")\n";
  out << "job '" << manifest.job() << "', taken after iteration " << manifest.iteration()
      << absl::StrFormat(" (resumes at iteration %d), plan checksum 0x%08x\n", manifest.iteration(),
                         manifest.plan_checksum());
  out << "\ntensors (" << manifest.tensors_size() << ")\n";
  for (const proto::CheckpointTensor& tensor : manifest.tensors()) {
    out << "  " << tensor.name() << "  [" << absl::StrJoin(tensor.shape(), ", ") << "] "
        << proto::DataType_Name(tensor.dtype()) << "  " << LayoutText(tensor) << "\n";
  }
  out << "\nshards (" << manifest.shards_size() << "), " << bytes << " B in all\n";
  for (const proto::CheckpointShard& shard : manifest.shards()) {
    out << absl::StrFormat("  %s  device %d:%d  %d B  crc32 0x%08x  %d slices", shard.file(), shard.device().node(),
                           shard.device().device(), shard.size_bytes(), shard.crc32(), shard.slices_size());
    if (verify) {
      const std::string file = (fs::path(location.dir) / shard.file()).string();
      std::ifstream in(file, std::ios::binary);
      const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) return absl::DataLossError(absl::StrCat("checkpoint shard '", file, "' is missing"));
      const uint32_t crc = actors::Crc32(0, data.data(), data.size());
      if (static_cast<int64_t>(data.size()) != shard.size_bytes() || crc != shard.crc32()) {
        return absl::DataLossError(absl::StrFormat(
            "checkpoint shard '%s' is damaged: %d B with CRC-32 0x%08x; the manifest lists %d B with 0x%08x", file,
            data.size(), crc, shard.size_bytes(), shard.crc32()));
      }
      out << "  ok";
    }
    out << "\n";
    for (const proto::CheckpointSlice& slice : shard.slices()) {
      out << "    " << slice.tensor() << " " << actors::SliceOf(slice).ToString() << " at " << slice.offset_bytes()
          << ", " << slice.size_bytes() << " B\n";
    }
  }
  return absl::OkStatus();
}

Subcommand CheckpointSubcommand() {
  Subcommand command;
  command.name = "checkpoint";
  command.arguments = "DIR";
  command.flag_usage = "[--verify]";
  command.summary = "list a checkpoint's iteration, tensors and layout (the newest under DIR)";
  command.flags = {"verify"};
  command.min_arguments = 1;
  command.max_arguments = 1;
  command.run = &RunCheckpoint;
  return command;
}

}  // namespace oneflow::cli
