#include "tools/worker/transport_agreement.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace oneflow::worker {
namespace {

constexpr char kUnavailable[] = "unavailable:";

std::string Key(int64_t node) { return absl::StrCat("transport/", node); }

}  // namespace

absl::Status AgreeOnTransport(KeyValueStore& store, int64_t node, int64_t nodes, Transport transport,
                              const absl::Status& available, absl::Duration timeout) {
  const std::string name = TransportName(transport);
  const std::string mine =
      available.ok() ? name : absl::StrCat(kUnavailable, name, ":", available.message());
  if (absl::Status set = store.Set(Key(node), mine); !set.ok()) {
    return absl::UnavailableError(absl::StrCat("publishing this node's transport: ", set.message()));
  }
  std::vector<std::string> keys;
  for (int64_t other = 0; other < nodes; ++other) keys.push_back(Key(other));
  if (absl::Status waited = store.Wait(keys, timeout); !waited.ok()) {
    std::vector<int64_t> missing;
    for (int64_t other = 0; other < nodes; ++other) {
      if (!store.Get(Key(other)).ok()) missing.push_back(other);
    }
    return absl::Status(waited.code(), absl::StrCat("waited ", absl::FormatDuration(timeout), " for node",
                                                    missing.size() == 1 ? " " : "s ", absl::StrJoin(missing, ", "),
                                                    " to report a transport: ", waited.message()));
  }
  std::vector<std::string> entries;
  for (int64_t other = 0; other < nodes; ++other) {
    absl::StatusOr<std::string> entry = store.Get(Key(other));
    if (!entry.ok()) return entry.status();
    entries.push_back(*std::move(entry));
  }
  // Node 0 may serve the store (a job without daemons) and exit on a failed verdict: it
  // waits, briefly, until every node has read the entries.
  (void)store.Set(absl::StrCat("transport/read/", node), "1");
  if (node == 0) {
    std::vector<std::string> read;
    for (int64_t other = 0; other < nodes; ++other) read.push_back(absl::StrCat("transport/read/", other));
    (void)store.Wait(read, std::min(timeout, absl::Seconds(10)));
  }
  // Every node checks the same entries in the same order: the same verdict everywhere.
  for (int64_t other = 0; other < nodes; ++other) {
    if (!absl::StartsWith(entries[other], kUnavailable)) continue;
    const std::vector<std::string> parts = absl::StrSplit(entries[other], absl::MaxSplits(':', 2));
    return absl::FailedPreconditionError(absl::StrCat("node ", other, " cannot run transport '",
                                                      parts.size() > 1 ? parts[1] : "", "': ",
                                                      parts.size() > 2 ? parts[2] : ""));
  }
  for (int64_t other = 1; other < nodes; ++other) {
    if (entries[other] == entries[0]) continue;
    return absl::FailedPreconditionError(absl::StrCat("node ", other, " runs transport '", entries[other],
                                                      "' but node 0 runs '", entries[0],
                                                      "'; every node must be started with the same --transport"));
  }
  return absl::OkStatus();
}

}  // namespace oneflow::worker
