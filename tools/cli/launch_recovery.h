// What `oneflow launch` needs to survive a lost node (docs/elastic.md): checking the
// --spare_nodes before anything trains, asking the job's daemons after a failure which
// of them are gone, choosing the checkpoint the job resumes from (naming damaged newer
// ones it passes over), and the words and JSON of a recovery.
//
// The policy itself (spare first, then shrink, then --max_restarts on the same nodes)
// is launch_command.cc's; these are its parts, each testable alone.
#ifndef TOOLS_CLI_LAUNCH_RECOVERY_H_
#define TOOLS_CLI_LAUNCH_RECOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/launcher.pb.h"

namespace oneflow::cli {

// The --spare_nodes entries (comma-separated HOST:PORT, whitespace trimmed); an empty
// flag gives none.
std::vector<std::string> ParseSpareNodes(const std::string& flag);

// Each spare answers Launcher.Health with this launch's token within `timeout`, and is
// none of `nodes` nor listed twice. INVALID_ARGUMENT naming the spare and why
// ("--spare_nodes: spare 127.0.0.1:5004 is unreachable: ...", "... refused the token:
// ...", "... is also in --nodes"), so a spare that could not take over is known before
// the job trains, not when a node is lost.
absl::Status CheckSpareNodes(const std::vector<std::string>& spares, const std::vector<std::string>& nodes,
                             const std::string& token, const std::string& tls_ca_file, absl::Duration timeout);

// Launcher.Health of every daemon in `addresses`, in parallel, each within `timeout`:
// OK, or why it did not answer. A daemon that does not answer is a lost node.
std::vector<absl::Status> ProbeDaemons(const std::vector<std::string>& addresses, const std::string& token,
                                       const std::string& tls_ca_file, absl::Duration timeout);

// The checkpoint a recovered job resumes from: the newest complete one under
// `checkpoint_dir` (FindCheckpoint's choice, made here so that the launch can name it and
// its iteration), and one warning per damaged checkpoint newer than it that is passed over:
//   checkpoint /ck/iter-00000030 is damaged and skipped (...); resuming from /ck/iter-00000020
struct ResumePoint {
  std::string checkpoint;
  int64_t iteration = 0;
  std::vector<std::string> warnings;
};
// NOT_FOUND (FindCheckpoint's words) when there is no complete checkpoint.
absl::StatusOr<ResumePoint> NewestResumePoint(const std::string& checkpoint_dir);

// The cause of a recovery from the failure that ended the attempt and whether the node's
// daemon still answers: "worker failed" (it answers: its worker died or failed and the
// node is not retried), "heartbeat gone" (it does not, and the hang monitor stopped the
// job: DEADLINE_EXCEEDED), "daemon unreachable" (it does not; any other failure).
std::string RecoveryCause(const absl::Status& failure, bool daemon_answers);

// {"cause": "daemon unreachable", "node": 1, "address": "127.0.0.1:5002", "action":
//  "spare 127.0.0.1:5004", "from": "disk", "iteration": 10, "seconds": 1.234}: the value of
// the metrics line's "recovery" key; `seconds` from the failure to the first iteration
// trained again.
std::string RecoveryJson(const proto::Recovery& recovery, double seconds);
// "node 1 (127.0.0.1:5002) lost (daemon unreachable): spare 127.0.0.1:5004 takes its
// place; resuming from disk checkpoint /ck/iter-00000010 (iteration 10)".
std::string RecoveryText(const proto::Recovery& recovery);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_LAUNCH_RECOVERY_H_
