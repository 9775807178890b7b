#include "oneflow_core/comm/gloo/departure.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include <utility>

namespace oneflow {
namespace gloo_backend {
namespace {

std::optional<std::vector<int64_t>> DecodeCounts(absl::string_view text, int64_t size) {
  std::vector<int64_t> counts;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t count = 0;
    if (!absl::SimpleAtoi(part, &count) || count < 0) return std::nullopt;
    counts.push_back(count);
  }
  if (static_cast<int64_t>(counts.size()) != size) return std::nullopt;
  return counts;
}

std::string Plural(int64_t count, const char* noun) {
  return absl::StrCat(count, " ", noun, count == 1 ? "" : "s");
}

}  // namespace

CallPosition PositionOfSlot(uint64_t slot) {
  CallPosition position;
  position.point_to_point = (slot & kPointToPointSlots) != 0;
  position.index = (slot & ~kPointToPointSlots) >> 8;
  return position;
}

std::string EncodeDeparture(const Departure& departure) {
  return absl::StrCat(departure.calls, "\n", absl::StrJoin(departure.sends, ","), "\n",
                      absl::StrJoin(departure.receives, ","));
}

std::optional<Departure> DecodeDeparture(const std::string& text, int64_t size) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '\n');
  Departure departure;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &departure.calls)) return std::nullopt;
  std::optional<std::vector<int64_t>> sends = DecodeCounts(parts[1], size);
  std::optional<std::vector<int64_t>> receives = DecodeCounts(parts[2], size);
  if (!sends.has_value() || !receives.has_value()) return std::nullopt;
  departure.sends = *std::move(sends);
  departure.receives = *std::move(receives);
  return departure;
}

DepartureVerdict Judge(const Departure& departure, const CallPosition& position, bool sending,
                       int64_t me, std::string* why) {
  uint64_t completed = departure.calls;
  if (position.point_to_point) {
    // What the peer received from `me` covers this rank's sends; what it sent, the receives.
    const std::vector<int64_t>& counts = sending ? departure.receives : departure.sends;
    completed = me >= 0 && me < static_cast<int64_t>(counts.size()) ? counts[me] : 0;
  }
  if (completed >= position.index) {
    return sending ? DepartureVerdict::kConsumed : DepartureVerdict::kInFlight;
  }
  if (position.point_to_point) {
    *why = absl::StrCat("its communicator was destroyed after ",
                        sending ? "receiving " : "sending ", Plural(completed, "message"),
                        sending ? " from" : " to", " rank ", me, ", before message ", position.index);
  } else {
    *why = absl::StrCat("its communicator was destroyed after ", Plural(completed, "collective call"),
                        ", before call ", position.index);
  }
  return DepartureVerdict::kLeftBefore;
}

DepartureLedger::DepartureLedger(int64_t rank, int64_t size, std::string group_prefix)
    : rank_(rank), group_prefix_(std::move(group_prefix)), departed_(size) {}

void DepartureLedger::Write(KeyValueStore& store, const Departure& departure) const {
  if (store.Set(absl::StrCat(group_prefix_, "departed/", rank_), EncodeDeparture(departure)).ok()) {
    (void)store.Add(absl::StrCat(group_prefix_, "departures"), 1);
  }
}

void DepartureLedger::Read(KeyValueStore& store) {
  const absl::StatusOr<std::string> counter = store.Get(absl::StrCat(group_prefix_, "departures"));
  int64_t departures = 0;
  if (!counter.ok() || !absl::SimpleAtoi(*counter, &departures) || departures <= departures_read_) {
    return;
  }
  const int64_t size = static_cast<int64_t>(departed_.size());
  int64_t read = 0;
  for (int64_t peer = 0; peer < size; ++peer) {
    if (departed_[peer].has_value()) {
      ++read;
      continue;
    }
    if (peer == rank_) continue;
    const absl::StatusOr<std::string> text = store.Get(absl::StrCat(group_prefix_, "departed/", peer));
    if (!text.ok()) continue;
    departed_[peer] = DecodeDeparture(*text, size);
    if (departed_[peer].has_value()) ++read;
  }
  departures_read_ = read;
}

}  // namespace gloo_backend
}  // namespace oneflow
