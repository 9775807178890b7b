// What `oneflow diagnose` concludes from flight recorder dumps (actors/flight_recorder.h,
// docs/diagnosis.md): the dumps' entries aligned by (group, the entry's sequence number
// within its group on its device: FlightEntry.group_sequence, which every member gives
// the same call), then
//   hang:     members of a group entered a collective and waited (or failed) while
//             another member never entered it (or entered only after they gave up);
//   slow:     a member that entered its group's collectives last, consistently and by
//             far more than the jitter between collectives;
//   mismatch: the members' entries at one sequence number are of different kinds or
//             sizes (workers running different plans).
// Dumps written before group_sequence existed are aligned by each device's own sequence
// number instead (Diagnosis.by_device_sequence), which the text says: that pairs
// different calls where a device has several communication streams or collectives its
// group's other members lack.
#ifndef TOOLS_CLI_DIAGNOSE_H_
#define TOOLS_CLI_DIAGNOSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/flight_recorder.pb.h"

namespace oneflow::cli {

// Reads one dump. NOT_FOUND naming the file when it is missing, INVALID_ARGUMENT naming
// it when it is not JSON or not a flight recorder dump.
absl::StatusOr<proto::FlightDump> ReadFlightDump(const std::string& path);
// The same for a dump's text; `name` (a path, "node 1's dump") is what errors call it.
absl::StatusOr<proto::FlightDump> ParseFlightDump(const std::string& text, const std::string& name);

struct DiagnoseOptions {
  // A collective whose arrived members have waited this long (at their dump) while a
  // member is missing is a hang; a failed wait is one whatever its length.
  double hang_ms = 1000;
  // A rank is slow when it is last to enter in at least `slow_last_fraction` of at least
  // `slow_min_samples` aligned collectives of its group, by a median of at least
  // max(slow_ms, slow_interval_fraction × the median time between the group's
  // consecutive collectives).
  double slow_ms = 1;
  double slow_interval_fraction = 0.2;
  double slow_last_fraction = 0.75;
  int slow_min_samples = 4;
};

struct Finding {
  enum class Kind { kHang, kSlow, kMismatch };
  Kind kind = Kind::kHang;
  std::string group;            // "devices [0:0, 0:1]"
  int64_t sequence = -1;        // hang, mismatch: the group sequence (or the device's, see Diagnosis)
  int64_t collective = -1;      // hang
  std::string collective_kind;  // hang
  int64_t bytes = 0;            // hang
  std::string actor;            // hang
  std::vector<std::string> suspects;  // hang: never entered (or too late); slow: the slow rank
  std::vector<std::string> arrived;   // hang: entered and waited
  std::vector<std::string> no_dump;   // hang: members no dump was given for
  double waited_ms = 0;               // hang: the longest wait among the arrived
  double late_ms = 0;                 // slow: median lateness
  int64_t last_count = 0, samples = 0;  // slow
  // mismatch: "ALL_REDUCE 4096 B" -> devices, one side per line of `sides`.
  std::vector<std::pair<std::string, std::vector<std::string>>> sides;
  std::string text;  // one line for people
};

struct Diagnosis {
  std::vector<Finding> findings;  // hangs, then mismatches, then slow ranks
  int64_t devices = 0;            // devices with entries in the dumps
  int64_t aligned = 0;            // (group, sequence) pairs seen
  // Some dump has entries without group_sequence: aligned by FlightEntry.sequence.
  bool by_device_sequence = false;
};

Diagnosis Diagnose(const std::vector<proto::FlightDump>& dumps, const DiagnoseOptions& options = {});

std::string RenderDiagnosisText(const Diagnosis& diagnosis);

// Dumps fetched from the daemons (Launcher.Dump): the node, the dump's JSON (empty when
// there is none) and why there is none.
struct FetchedDump {
  int64_t node = 0;
  std::string json;
  std::string note;
};
// Parses the dumps there are and diagnoses them: `diagnosis` gets the result, and the
// text is one line naming the nodes whose dumps were read (and why the others have
// none), then RenderDiagnosisText's lines. No dump at all: the line says so.
std::string DiagnoseFetchedDumps(const std::vector<FetchedDump>& fetched, Diagnosis* diagnosis = nullptr,
                                 const DiagnoseOptions& options = {});
std::string RenderDiagnosisJson(const Diagnosis& diagnosis);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_DIAGNOSE_H_
