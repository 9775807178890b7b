#include "tools/cli/diagnose.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "tools/cli/json_writer.h"

namespace oneflow::cli {
namespace {

constexpr char kFormat[] = "oneflow-flight-recorder";

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// One device's entry with what its own dump says about the collective.
struct Arrival {
  std::string device;
  const proto::FlightEntry* entry = nullptr;
  const proto::FlightCollective* collective = nullptr;
  int64_t dumped_unix_ns = 0;
};

struct DeviceState {
  int64_t last_sequence = -1;  // recorded - 1
  // Group -> the last group_sequence the device began there (absent: none).
  std::map<std::string, int64_t> last_in_group;
  int64_t dumped_unix_ns = 0;
};

std::string Signature(const Arrival& arrival) {
  return arrival.collective == nullptr
             ? absl::StrCat("collective ", arrival.entry->collective(), " (not in its dump's table)")
             : absl::StrCat(arrival.collective->kind(), " ", arrival.collective->bytes(), " B");
}

// The last sequence number the device began: in `group` when aligning by group.
int64_t LastSequence(const DeviceState& state, const std::string& group, bool by_group) {
  if (!by_group) return state.last_sequence;
  const auto found = state.last_in_group.find(group);
  return found == state.last_in_group.end() ? -1 : found->second;
}

std::string RankOf(const std::string& device, const proto::FlightCollective& collective) {
  for (int m = 0; m < collective.members_size(); ++m) {
    if (collective.members(m) == device) return absl::StrCat("rank ", m, " of ", collective.group());
  }
  return collective.group();
}

}  // namespace

absl::StatusOr<proto::FlightDump> ParseFlightDump(const std::string& text, const std::string& name) {
  proto::FlightDump dump;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  const auto parsed = google::protobuf::util::JsonStringToMessage(text, &dump, parse);
  if (!parsed.ok() || dump.format() != kFormat) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name, "' is not a flight recorder dump (", !parsed.ok() ? std::string(parsed.message()) : "no \"format\": \"oneflow-flight-recorder\"",
        "); dumps are the flight-node<N>.json files a worker writes on a failure or SIGUSR1 (docs/diagnosis.md)"));
  }
  if (dump.version() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is a flight recorder dump of version ", dump.version(), "; this tool reads version 1"));
  }
  return dump;
}

absl::StatusOr<proto::FlightDump> ReadFlightDump(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    const std::string message = absl::StrCat("'", path, "': cannot open: ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseFlightDump(text.str(), path);
}

Diagnosis Diagnose(const std::vector<proto::FlightDump>& dumps, const DiagnoseOptions& options) {
  Diagnosis diagnosis;
  std::map<std::string, DeviceState> devices;
  // (group, sequence) -> arrivals; group -> its members (from any dump).
  std::map<std::pair<std::string, int64_t>, std::vector<Arrival>> aligned;
  std::map<std::string, const proto::FlightCollective*> group_info;
  // Per-group numbers only when every entry has one: a dump of an older worker numbers
  // its entries per device only, and mixing the two numberings would pair anything.
  for (const proto::FlightDump& dump : dumps) {
    for (const proto::FlightDevice& device : dump.devices()) {
      for (const proto::FlightEntry& entry : device.entries()) {
        if (!entry.has_group_sequence()) diagnosis.by_device_sequence = true;
      }
    }
  }
  const bool by_group = !diagnosis.by_device_sequence;
  for (const proto::FlightDump& dump : dumps) {
    std::map<int64_t, const proto::FlightCollective*> table;
    for (const proto::FlightCollective& collective : dump.collectives()) {
      table[collective.collective()] = &collective;
      group_info.emplace(collective.group(), &collective);
    }
    for (const proto::FlightDevice& device : dump.devices()) {
      DeviceState& state = devices[device.device()];
      state.last_sequence = std::max(state.last_sequence, device.recorded() - 1);
      state.dumped_unix_ns = dump.dumped_unix_ns();
      for (const auto& [group, recorded] : device.group_recorded()) {
        if (recorded > 0) state.last_in_group[group] = std::max(state.last_in_group[group], recorded - 1);
      }
      for (const proto::FlightEntry& entry : device.entries()) {
        auto it = table.find(entry.collective());
        Arrival arrival{device.device(), &entry, it == table.end() ? nullptr : it->second, dump.dumped_unix_ns()};
        const std::string group = arrival.collective != nullptr ? arrival.collective->group() : "unknown group";
        if (by_group) {
          // The counts were read before the entries: an entry begun meanwhile is newer.
          auto [last, added] = state.last_in_group.emplace(group, entry.group_sequence());
          if (!added) last->second = std::max(last->second, entry.group_sequence());
        }
        aligned[{group, by_group ? entry.group_sequence() : entry.sequence()}].push_back(arrival);
      }
    }
  }
  for (const auto& [name, state] : devices) diagnosis.devices += state.last_sequence >= 0 ? 1 : 0;
  diagnosis.aligned = static_cast<int64_t>(aligned.size());

  std::vector<Finding> hangs, mismatches, slow;
  std::set<std::string> hung_groups;
  for (const auto& [key, arrivals] : aligned) {
    const auto& [group, sequence] = key;
    // Mismatch: one sequence number, different calls.
    std::map<std::string, std::vector<std::string>> by_signature;
    for (const Arrival& arrival : arrivals) by_signature[Signature(arrival)].push_back(arrival.device);
    if (by_signature.size() > 1) {
      Finding finding;
      finding.kind = Finding::Kind::kMismatch;
      finding.group = group;
      finding.sequence = sequence;
      std::vector<std::string> parts;
      for (auto& [signature, members] : by_signature) {
        parts.push_back(absl::StrCat(signature, " on ", absl::StrJoin(members, ", ")));
        finding.sides.push_back({signature, members});
      }
      finding.text = absl::StrCat("mismatch: group ", group, " sequence ", sequence,
                                  ": the ranks called different collectives: ", absl::StrJoin(parts, "; "));
      mismatches.push_back(std::move(finding));
    }
    // Hang: the first sequence of a group some members entered and waited at while
    // another never entered.
    if (hung_groups.count(group) > 0) continue;
    auto info = group_info.find(group);
    if (info == group_info.end()) continue;
    const proto::FlightCollective& collective = *info->second;
    const Arrival& first = arrivals.front();
    int64_t gave_up_unix_ns = 0;  // the earliest failed end among the arrived
    double waited_ms = 0;
    bool waiting = false;
    for (const Arrival& arrival : arrivals) {
      const proto::FlightEntry& entry = *arrival.entry;
      if (entry.state() == "failed") {
        waiting = true;
        if (gave_up_unix_ns == 0 || entry.end_unix_ns() < gave_up_unix_ns) gave_up_unix_ns = entry.end_unix_ns();
        waited_ms = std::max(waited_ms, (entry.end_unix_ns() - entry.enqueue_unix_ns()) / 1e6);
      } else if (entry.state() == "running") {
        const double ms = (arrival.dumped_unix_ns - entry.enqueue_unix_ns()) / 1e6;
        waited_ms = std::max(waited_ms, ms);
        waiting |= ms >= options.hang_ms;
      }
    }
    if (!waiting) continue;
    Finding finding;
    finding.kind = Finding::Kind::kHang;
    finding.group = group;
    finding.sequence = sequence;
    finding.collective = first.entry->collective();
    if (first.collective != nullptr) {
      finding.collective_kind = first.collective->kind();
      finding.bytes = first.collective->bytes();
      finding.actor = first.collective->actor();
    }
    finding.waited_ms = waited_ms;
    std::vector<std::string> late;
    for (const std::string& member : collective.members()) {
      auto arrived = std::find_if(arrivals.begin(), arrivals.end(),
                                  [&](const Arrival& a) { return a.device == member; });
      if (arrived != arrivals.end()) {
        // Entered only after another member had given up: as good as never.
        if (gave_up_unix_ns != 0 && arrived->entry->state() != "ok" &&
            arrived->entry->enqueue_unix_ns() > gave_up_unix_ns) {
          finding.suspects.push_back(member);
          late.push_back(member);
        } else {
          finding.arrived.push_back(member);
        }
        continue;
      }
      auto state = devices.find(member);
      if (state == devices.end()) {
        finding.no_dump.push_back(member);
      } else if (LastSequence(state->second, group, by_group) < sequence) {
        finding.suspects.push_back(member);
      }
      // Otherwise it went past this sequence number and the entry left its ring.
    }
    if (finding.suspects.empty() && finding.no_dump.empty()) continue;
    hung_groups.insert(group);
    const std::string what = absl::StrCat("collective ", finding.collective, " (", finding.collective_kind, ", ",
                                          finding.bytes, " B",
                                          finding.actor.empty() ? "" : absl::StrCat(", actor '", finding.actor, "'"),
                                          ") sequence ", sequence, " of group ", group);
    std::vector<std::string> names;
    for (const std::string& suspect : finding.suspects) {
      names.push_back(absl::StrCat("device ", suspect, " (", RankOf(suspect, collective), ")",
                                   std::find(late.begin(), late.end(), suspect) != late.end()
                                       ? " entered only after the others gave up"
                                       : absl::StrCat(" never entered it (its last", by_group ? " in the group" : "",
                                                      ": sequence ",
                                                      LastSequence(devices[suspect], group, by_group) < 0
                                                          ? std::string("none")
                                                          : absl::StrCat(LastSequence(devices[suspect], group, by_group)),
                                                      ")")));
    }
    finding.text = absl::StrCat(
        "hang: ", what, names.empty() ? "" : absl::StrCat(": ", absl::StrJoin(names, "; ")), "; arrived: ",
        finding.arrived.empty() ? "none" : absl::StrJoin(finding.arrived, ", "),
        absl::StrFormat(" (waited %.0f ms)", waited_ms),
        finding.no_dump.empty() ? ""
                                : absl::StrCat("; no dump for ", absl::StrJoin(finding.no_dump, ", "),
                                               " (give its node's dump, or it was stopped or killed before "
                                               "writing one)"));
    hangs.push_back(std::move(finding));
  }

  // Slow: per group, each member's lateness at the collectives every member completed.
  std::map<std::string, std::vector<const std::vector<Arrival>*>> complete;
  for (const auto& [key, arrivals] : aligned) {
    auto info = group_info.find(key.first);
    if (info == group_info.end() || arrivals.size() < 2) continue;
    if (static_cast<int>(arrivals.size()) != info->second->members_size()) continue;
    if (std::any_of(arrivals.begin(), arrivals.end(), [](const Arrival& a) { return a.entry->state() != "ok"; })) {
      continue;
    }
    complete[key.first].push_back(&arrivals);
  }
  for (const auto& [group, rows] : complete) {
    if (static_cast<int>(rows.size()) < options.slow_min_samples) continue;
    std::map<std::string, std::vector<double>> lateness;
    std::map<std::string, int64_t> last;
    std::vector<double> firsts;
    for (const std::vector<Arrival>* row : rows) {
      int64_t earliest = row->front().entry->enqueue_unix_ns(), latest = earliest;
      std::string latest_device = row->front().device;
      for (const Arrival& a : *row) {
        earliest = std::min(earliest, a.entry->enqueue_unix_ns());
        if (a.entry->enqueue_unix_ns() > latest) {
          latest = a.entry->enqueue_unix_ns();
          latest_device = a.device;
        }
      }
      firsts.push_back(earliest / 1e6);
      ++last[latest_device];
      for (const Arrival& a : *row) {
        std::vector<double> others;
        for (const Arrival& b : *row) {
          if (&b != &a) others.push_back(b.entry->enqueue_unix_ns() / 1e6);
        }
        lateness[a.device].push_back(a.entry->enqueue_unix_ns() / 1e6 - Median(others));
      }
    }
    std::sort(firsts.begin(), firsts.end());
    std::vector<double> intervals;
    for (size_t i = 1; i < firsts.size(); ++i) intervals.push_back(firsts[i] - firsts[i - 1]);
    const double threshold = std::max(options.slow_ms, options.slow_interval_fraction * Median(intervals));
    const int64_t samples = static_cast<int64_t>(rows.size());
    for (const auto& [device, values] : lateness) {
      const double late = Median(values);
      const int64_t count = last[device];
      if (count < options.slow_last_fraction * samples || late < threshold) continue;
      Finding finding;
      finding.kind = Finding::Kind::kSlow;
      finding.group = group;
      finding.suspects = {device};
      finding.late_ms = late;
      finding.last_count = count;
      finding.samples = samples;
      finding.text = absl::StrFormat(
          "slow: device %s (%s) entered its collectives %.1f ms after the others (median over %d collectives; "
          "last to enter in %d of them; the group's collectives are %.1f ms apart)",
          device, RankOf(device, *group_info[group]), late, samples, count, Median(intervals));
      slow.push_back(std::move(finding));
    }
  }
  for (auto* part : {&hangs, &mismatches, &slow}) {
    for (Finding& finding : *part) diagnosis.findings.push_back(std::move(finding));
  }
  return diagnosis;
}

std::string RenderDiagnosisText(const Diagnosis& diagnosis) {
  std::string out;
  if (diagnosis.by_device_sequence) {
    absl::StrAppend(&out,
                    "note: these dumps have no per-group sequence numbers (written by an older worker): entries are "
                    "aligned by each device's own sequence number, which pairs different calls where a device has "
                    "several communication streams or collectives its group's other members lack\n");
  }
  for (const Finding& finding : diagnosis.findings) absl::StrAppend(&out, finding.text, "\n");
  if (diagnosis.findings.empty()) {
    absl::StrAppend(&out, "no hang, slow rank or mismatch found: ", diagnosis.devices, " devices, ",
                    diagnosis.aligned, " (group, sequence) pairs aligned\n");
  }
  return out;
}

std::string DiagnoseFetchedDumps(const std::vector<FetchedDump>& fetched, Diagnosis* diagnosis,
                                 const DiagnoseOptions& options) {
  std::vector<proto::FlightDump> dumps;
  std::vector<std::string> read, missing;
  for (const FetchedDump& dump : fetched) {
    if (dump.json.empty()) {
      missing.push_back(absl::StrCat("node ", dump.node, ": ", dump.note.empty() ? "no dump" : dump.note));
      continue;
    }
    absl::StatusOr<proto::FlightDump> parsed = ParseFlightDump(dump.json, absl::StrCat("node ", dump.node, "'s dump"));
    if (!parsed.ok()) {
      missing.push_back(std::string(parsed.status().message()));
      continue;
    }
    dumps.push_back(*std::move(parsed));
    read.push_back(absl::StrCat(dump.node));
  }
  std::string text = read.empty() ? std::string("no flight recorder dump to diagnose")
                                  : absl::StrCat("flight recorder dumps of node", read.size() > 1 ? "s " : " ",
                                                 absl::StrJoin(read, ", "));
  if (!missing.empty()) absl::StrAppend(&text, " (", absl::StrJoin(missing, "; "), ")");
  absl::StrAppend(&text, "\n");
  if (dumps.empty()) return text;
  Diagnosis result = Diagnose(dumps, options);
  absl::StrAppend(&text, RenderDiagnosisText(result));
  if (diagnosis != nullptr) *diagnosis = std::move(result);
  return text;
}

std::string RenderDiagnosisJson(const Diagnosis& diagnosis) {
  JsonWriter json;
  auto strings = [&](const std::vector<std::string>& values) {
    json.BeginArray();
    for (const std::string& value : values) json.String(value);
    json.EndArray();
  };
  json.BeginObject();
  json.Key("devices");
  json.Int(diagnosis.devices);
  json.Key("aligned");
  json.Int(diagnosis.aligned);
  json.Key("alignment");
  json.String(diagnosis.by_device_sequence ? "device_sequence" : "group_sequence");
  json.Key("findings");
  json.BeginArray();
  for (const Finding& finding : diagnosis.findings) {
    json.BeginObject();
    json.Key("kind");
    json.String(finding.kind == Finding::Kind::kHang ? "hang" : finding.kind == Finding::Kind::kSlow ? "slow" : "mismatch");
    json.Key("group");
    json.String(finding.group);
    if (finding.kind != Finding::Kind::kSlow) {
      json.Key("sequence");
      json.Int(finding.sequence);
    }
    if (finding.kind == Finding::Kind::kHang) {
      json.Key("collective");
      json.Int(finding.collective);
      json.Key("collective_kind");
      json.String(finding.collective_kind);
      json.Key("bytes");
      json.Int(finding.bytes);
      json.Key("actor");
      json.String(finding.actor);
      json.Key("waited_ms");
      json.Double(finding.waited_ms);
      json.Key("arrived");
      strings(finding.arrived);
      json.Key("no_dump");
      strings(finding.no_dump);
    }
    if (finding.kind != Finding::Kind::kMismatch) {
      json.Key("suspects");
      strings(finding.suspects);
    }
    if (finding.kind == Finding::Kind::kSlow) {
      json.Key("late_ms");
      json.Double(finding.late_ms);
      json.Key("last_count");
      json.Int(finding.last_count);
      json.Key("samples");
      json.Int(finding.samples);
    }
    if (finding.kind == Finding::Kind::kMismatch) {
      json.Key("sides");
      json.BeginArray();
      for (const auto& [signature, members] : finding.sides) {
        json.BeginObject();
        json.Key("call");
        json.String(signature);
        json.Key("devices");
        strings(members);
        json.EndObject();
      }
      json.EndArray();
    }
    json.Key("text");
    json.String(finding.text);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  return json.Finish();
}

}  // namespace oneflow::cli
