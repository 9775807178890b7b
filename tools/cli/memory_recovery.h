// `oneflow launch --memory_checkpoint_every=K` after a failure (docs/elastic.md): what
// the daemons that still answer hold of the launch's in-memory checkpoints, and the
// newest checkpoint of which every saving node's part survived (on the node's own
// daemon or, when that node is lost, on the next node's replica). The policy (memory
// when it is at least as new as the newest disk checkpoint) is launch_command.cc's.
#ifndef TOOLS_CLI_MEMORY_RECOVERY_H_
#define TOOLS_CLI_MEMORY_RECOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/memory_checkpoint.pb.h"

namespace oneflow::cli {

// What one daemon holds of a scope (MemoryCheckpoints.List).
struct HeldParts {
  std::string address;
  std::vector<proto::MemoryCheckpointEntry> entries;
};

// MemoryCheckpoints.List of `scope` on each of `addresses`, each within `timeout`; a
// daemon that does not answer holds nothing.
std::vector<HeldParts> ListMemoryCheckpoints(const std::vector<std::string>& addresses, const std::string& scope,
                                             const std::string& token, const std::string& tls_ca_file,
                                             absl::Duration timeout);

// MemoryCheckpoints.Drop of `scope` on each of `addresses` (best effort: a daemon that
// is gone took its parts with it). The bytes freed.
int64_t DropMemoryCheckpoints(const std::vector<std::string>& addresses, const std::string& scope,
                              const std::string& token, const std::string& tls_ca_file, absl::Duration timeout);

struct MemoryResumePoint {
  // The newest iteration whose parts are all held; 0: none.
  int64_t iteration = 0;
  // Per node of the job (`nodes` entries): the daemon to fetch its part from; empty for a
  // node that saves no part.
  std::vector<std::string> holders;
  // One line per newer in-memory checkpoint that cannot be used, naming the nodes whose
  // parts are gone and where they were kept:
  //   in-memory checkpoint after iteration 40 is incomplete: node 1's part is lost (it
  //   was on 127.0.0.1:5002 and its replica on 127.0.0.1:5003)
  std::vector<std::string> incomplete;
};

// The newest in-memory checkpoint every saving node's part of which some daemon of
// `held` holds. `daemons` are the daemons the parts were put on (node order, the failed
// attempt's), for naming where a lost part was.
MemoryResumePoint ChooseMemoryCheckpoint(const std::vector<HeldParts>& held, const std::vector<std::string>& daemons);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_MEMORY_RECOVERY_H_
