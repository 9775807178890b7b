// `oneflow checkpoint DIR`: what a checkpoint holds (docs/checkpoints.md). DIR is a
// checkpoint directory, or a directory of them (then its complete checkpoints are
// listed and the newest is shown). Prints the job, the iteration, every tensor with its
// shape, dtype and the layout that saved it, and every shard with its device, size,
// CRC-32 and slices; with --verify, also reads every shard and checks size and CRC.
#ifndef TOOLS_CLI_CHECKPOINT_COMMAND_H_
#define TOOLS_CLI_CHECKPOINT_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "tools/cli/subcommand.h"

namespace oneflow::cli {

Subcommand CheckpointSubcommand();

// The listing of the checkpoint at (or newest under) `path`; `verify` checks the shards.
absl::Status DescribeCheckpoint(const std::string& path, bool verify, std::ostream& out);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_CHECKPOINT_COMMAND_H_
