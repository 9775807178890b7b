#include "tools/cli/launch_recovery.h"

#include <algorithm>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "actors/checkpoint/checkpoint_format.h"
#include "grpcpp/client_context.h"
#include "tools/cli/json_writer.h"
#include "tools/launcher/auth.h"
#include "tools/launcher/daemon_client.h"

namespace oneflow::cli {

std::vector<std::string> ParseSpareNodes(const std::string& flag) {
  std::vector<std::string> spares;
  for (absl::string_view entry : absl::StrSplit(flag, ',', absl::SkipWhitespace())) {
    spares.emplace_back(absl::StripAsciiWhitespace(entry));
  }
  return spares;
}

std::vector<absl::Status> ProbeDaemons(const std::vector<std::string>& addresses, const std::string& token,
                                       const std::string& tls_ca_file, absl::Duration timeout) {
  std::vector<absl::Status> results(addresses.size());
  // One at a time through ConnectToDaemons would refuse a list with a repeated entry;
  // each address is its own list here.
  std::vector<std::thread> threads;
  for (size_t i = 0; i < addresses.size(); ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::vector<launcher::DaemonNode>> daemon = launcher::ConnectToDaemons({addresses[i]}, tls_ca_file);
      if (!daemon.ok()) {
        results[i] = daemon.status();
        return;
      }
      grpc::ClientContext context;
      launcher::AttachToken(&context, token);
      context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
      // Not wait_for_ready: a refused connection (a killed daemon on a live host) answers
      // at once rather than being retried until the deadline; a host that is down takes
      // the whole timeout.
      proto::HealthResponse response;
      const grpc::Status status = (*daemon)[0].stub->Health(&context, proto::HealthRequest(), &response);
      if (status.ok()) return;
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
          status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        results[i] = absl::UnavailableError(
            absl::StrCat("unreachable: ", status.error_message().empty() ? "no answer within " +
                                                                              absl::FormatDuration(timeout)
                                                                        : status.error_message()));
      } else {
        results[i] = absl::PermissionDeniedError(absl::StrCat("refused the token: ", status.error_message()));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

absl::Status CheckSpareNodes(const std::vector<std::string>& spares, const std::vector<std::string>& nodes,
                             const std::string& token, const std::string& tls_ca_file, absl::Duration timeout) {
  std::set<std::string> seen(nodes.begin(), nodes.end());
  for (const std::string& spare : spares) {
    if (std::find(nodes.begin(), nodes.end(), spare) != nodes.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--spare_nodes: spare ", spare, " is also in --nodes; a spare is a daemon the job does not use yet"));
    }
    if (!seen.insert(spare).second) {
      return absl::InvalidArgumentError(absl::StrCat("--spare_nodes lists ", spare, " twice"));
    }
  }
  // The addresses' form (host:port, port 0) with --nodes' rules and words.
  absl::StatusOr<std::vector<launcher::DaemonNode>> parsed = launcher::ConnectToDaemons(spares, tls_ca_file);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--spare_nodes: ", parsed.status().message()));
  }
  const std::vector<absl::Status> answers = ProbeDaemons(spares, token, tls_ca_file, timeout);
  for (size_t i = 0; i < spares.size(); ++i) {
    if (!answers[i].ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--spare_nodes: spare ", spares[i], " ", answers[i].message(),
                       "; every spare must be a running oneflowd with this launch's --token_file"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ResumePoint> NewestResumePoint(const std::string& checkpoint_dir) {
  absl::StatusOr<actors::CheckpointLocation> location = actors::FindCheckpoint(checkpoint_dir);
  if (!location.ok()) return location.status();
  ResumePoint point;
  point.checkpoint = location->dir;
  point.iteration = location->manifest.iteration();
  point.warnings = actors::SkippedDamagedCheckpoints(checkpoint_dir, point.checkpoint, point.iteration);
  return point;
}

std::string RecoveryCause(const absl::Status& failure, bool daemon_answers) {
  if (daemon_answers) return "worker failed";
  // The hang monitor stopped the job (no progress, no heartbeats from the node) and its
  // daemon does not answer either: a frozen or vanished machine.
  if (failure.code() == absl::StatusCode::kDeadlineExceeded) return "heartbeat gone";
  return "daemon unreachable";
}

std::string RecoveryJson(const proto::Recovery& recovery, double seconds) {
  return absl::StrCat("{\"cause\": ", JsonQuote(recovery.cause()), ", \"node\": ", recovery.node(),
                      ", \"address\": ", JsonQuote(recovery.node_address()), ", \"action\": ",
                      JsonQuote(recovery.action()), ", \"from\": ", JsonQuote(recovery.from()),
                      ", \"iteration\": ", recovery.iteration(), ", \"seconds\": ", absl::StrFormat("%.3f", seconds),
                      "}");
}

std::string RecoveryText(const proto::Recovery& recovery) {
  return absl::StrCat(launcher::NodeName(recovery.node(), recovery.node_address()), " lost (", recovery.cause(),
                      "): ", recovery.action(), "; resuming from ", recovery.from(), " checkpoint ",
                      recovery.checkpoint(), " (iteration ", recovery.iteration(), ")");
}

}  // namespace oneflow::cli
