#include "sbp/calibration.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sbp/json_line.h"

namespace oneflow {
namespace {

using Members = std::vector<std::pair<std::string, JsonValue>>;

absl::StatusOr<double> Number(const std::string& key, const JsonValue& value, bool zero_allowed) {
  double number = 0;
  if (value.type != JsonValue::Type::kNumber || !absl::SimpleAtod(value.text, &number) || !std::isfinite(number) ||
      number < 0 || (number == 0 && !zero_allowed)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", key, "\" is ", value.text, "; it must be a finite number ",
                                                   zero_allowed ? ">= 0" : "> 0"));
  }
  return number;
}

absl::Status UnknownKey(const std::string& key, absl::string_view valid) {
  return absl::InvalidArgumentError(absl::StrCat("unknown key \"", key, "\"; valid keys: ", valid));
}

absl::Status Missing(absl::string_view key) {
  return absl::InvalidArgumentError(absl::StrCat("missing key \"", key, "\""));
}

// A "link" line into `calibration`.
absl::Status ParseLink(const Members& members, Calibration* calibration) {
  std::optional<LinkLevelMeasurement>* level = nullptr;
  LinkLevelMeasurement measurement;
  bool has_latency = false, has_bandwidth = false;
  for (const auto& [key, value] : members) {
    if (key == "link") {
      if (value.text == "intra_node") {
        level = &calibration->intra_node;
      } else if (value.text == "inter_node") {
        level = &calibration->inter_node;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("\"link\" is \"", value.text, "\"; valid: intra_node, inter_node"));
      }
    } else if (key == "latency_seconds") {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/true);
      if (!number.ok()) return number.status();
      measurement.latency_seconds = *number;
      has_latency = true;
    } else if (key == "bytes_per_second") {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/false);
      if (!number.ok()) return number.status();
      measurement.bytes_per_second = *number;
      has_bandwidth = true;
    } else if (key == "method") {
      measurement.method = value.text;
    } else {
      return UnknownKey(key, "link, latency_seconds, bytes_per_second, method");
    }
  }
  if (!has_latency) return Missing("latency_seconds");
  if (!has_bandwidth) return Missing("bytes_per_second");
  if (level->has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("link ", members.front().second.text, " is measured twice"));
  }
  *level = measurement;
  return absl::OkStatus();
}

// A "compute" line into `calibration`. "bytes" belongs to the "memory_cached" line only
// (the cache its copy stayed in), which must have it; "operand_bytes_per_second" and
// "call_seconds" to the "gemm_shape" line only, which must have both (0 allowed: the fit
// found no such cost).
absl::Status ParseCompute(const Members& members, Calibration* calibration) {
  double* rate = nullptr;
  double per_second = 0;
  double bytes = 0;
  std::optional<double> operand_bytes_per_second;
  std::optional<double> call_seconds;
  const bool cached = members.front().second.text == "memory_cached";
  const bool gemm_shape = members.front().second.text == "gemm_shape";
  for (const auto& [key, value] : members) {
    if (key == "compute") {
      if (value.text == "gemm") {
        rate = &calibration->compute.gemm_flops_per_second;
      } else if (value.text == "memory") {
        rate = &calibration->compute.memory_bytes_per_second;
      } else if (value.text == "memory_cached") {
        rate = &calibration->compute.memory_cached_bytes_per_second;
      } else if (value.text == "gemm_shape") {
        rate = &calibration->compute.gemm_shape.flops_per_second;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("\"compute\" is \"", value.text, "\"; valid: gemm, memory, memory_cached, gemm_shape"));
      }
    } else if (key == "per_second") {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/false);
      if (!number.ok()) return number.status();
      per_second = *number;
    } else if (key == "bytes" && cached) {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/false);
      if (!number.ok()) return number.status();
      bytes = *number;
    } else if ((key == "operand_bytes_per_second" || key == "call_seconds") && gemm_shape) {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/true);
      if (!number.ok()) return number.status();
      (key == "call_seconds" ? call_seconds : operand_bytes_per_second) = *number;
    } else if (key != "method") {
      return UnknownKey(key, cached       ? "compute, per_second, bytes, method"
                             : gemm_shape ? "compute, per_second, operand_bytes_per_second, call_seconds, method"
                                          : "compute, per_second, method");
    }
  }
  if (per_second == 0) return Missing("per_second");
  if (cached && bytes == 0) return Missing("bytes");
  if (gemm_shape && !operand_bytes_per_second.has_value()) return Missing("operand_bytes_per_second");
  if (gemm_shape && !call_seconds.has_value()) return Missing("call_seconds");
  if (*rate != 0) {
    return absl::InvalidArgumentError(absl::StrCat("compute ", members.front().second.text, " is measured twice"));
  }
  *rate = per_second;
  if (cached) calibration->compute.cache_bytes = bytes;
  if (gemm_shape) {
    calibration->compute.gemm_shape.operand_bytes_per_second = *operand_bytes_per_second;
    calibration->compute.gemm_shape.call_seconds = *call_seconds;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> WholeNumber(const std::string& key, const JsonValue& value) {
  int64_t number = 0;
  if (value.type != JsonValue::Type::kNumber || !absl::SimpleAtoi(value.text, &number) || number < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", key, "\" is ", value.text, "; it must be a whole number >= 1"));
  }
  return number;
}

// A member of the runtime's measured terms (a host line's, or a machine line's) into
// `measurement`; false when `key` is none of them.
absl::StatusOr<bool> ParseRuntimeTerm(const std::string& key, const JsonValue& value, HostMeasurement* measurement,
                                      bool* has_act, bool* has_call) {
  if (key == "devices") {
    absl::StatusOr<int64_t> number = WholeNumber(key, value);
    if (!number.ok()) return number.status();
    measurement->devices = *number;
    return true;
  }
  const bool act = key == "act_seconds";
  const bool call = key == "collective_call_seconds";
  const bool share = key == "core_share";
  const bool boxing = key == "boxing_act_seconds";
  if (!act && !call && !share && !boxing) return false;
  // A core share of 0 would be no cores at all; the costs may be 0 (measured as none).
  absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/!share);
  if (!number.ok()) return number.status();
  if (act) {
    measurement->act_seconds = *number;
    *has_act = true;
  } else if (call) {
    measurement->collective_call_seconds = *number;
    *has_call = true;
  } else if (share) {
    measurement->core_share = *number;
  } else {
    measurement->boxing_act_seconds = *number;
  }
  return true;
}

// The optional members of a host line, before "method".
std::string RuntimeTermsJson(const HostMeasurement& measurement) {
  std::string optional_terms =
      measurement.core_share > 0 ? absl::StrFormat("\"core_share\": %.6g, ", measurement.core_share) : std::string();
  if (measurement.boxing_act_seconds.has_value()) {
    absl::StrAppendFormat(&optional_terms, "\"boxing_act_seconds\": %.6g, ", *measurement.boxing_act_seconds);
  }
  return optional_terms;
}

// A "host" line into `calibration`.
absl::Status ParseHost(const Members& members, Calibration* calibration) {
  HostMeasurement measurement;
  bool has_act = false, has_call = false;
  for (const auto& [key, value] : members) {
    if (key == "host") {
      if (value.text != "in_process") {
        return absl::InvalidArgumentError(absl::StrCat("\"host\" is \"", value.text, "\"; valid: in_process"));
      }
    } else if (key == "cores") {
      absl::StatusOr<int64_t> number = WholeNumber(key, value);
      if (!number.ok()) return number.status();
      measurement.cores = *number;
    } else if (key == "method") {
      measurement.method = value.text;
    } else {
      absl::StatusOr<bool> term = ParseRuntimeTerm(key, value, &measurement, &has_act, &has_call);
      if (!term.ok()) return term.status();
      if (!*term) {
        return UnknownKey(key,
                          "host, devices, act_seconds, collective_call_seconds, cores, core_share, "
                          "boxing_act_seconds, method");
      }
    }
  }
  if (measurement.devices == 0) return Missing("devices");
  if (!has_act) return Missing("act_seconds");
  if (!has_call) return Missing("collective_call_seconds");
  if (measurement.cores == 0) return Missing("cores");
  for (const HostMeasurement& other : calibration->hosts) {
    if (other.devices == measurement.devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("host for ", measurement.devices, " devices is measured twice"));
    }
  }
  calibration->hosts.push_back(std::move(measurement));
  return absl::OkStatus();
}

// A "machine" line into `calibration`.
absl::Status ParseMachine(const Members& members, Calibration* calibration) {
  SharedMachineMeasurement measurement;
  HostMeasurement turns;
  bool has_act = false, has_call = false, has_term = false;
  for (const auto& [key, value] : members) {
    if (key == "processes") {
      absl::StatusOr<int64_t> number = WholeNumber(key, value);
      if (!number.ok()) return number.status();
      measurement.processes = *number;
    } else if (key == "machine") {
      if (value.text != "shared") {
        return absl::InvalidArgumentError(absl::StrCat("\"machine\" is \"", value.text, "\"; valid: shared"));
      }
    } else if (key == "nodes" || key == "cores") {
      absl::StatusOr<int64_t> number = WholeNumber(key, value);
      if (!number.ok()) return number.status();
      (key == "nodes" ? measurement.nodes : measurement.cores) = *number;
    } else if (key == "method") {
      measurement.method = value.text;
    } else if (key == "own_core_act_seconds") {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/true);
      if (!number.ok()) return number.status();
      measurement.own_core_act_seconds = *number;
    } else {
      absl::StatusOr<bool> term = ParseRuntimeTerm(key, value, &turns, &has_act, &has_call);
      if (!term.ok()) return term.status();
      if (!*term) {
        return UnknownKey(key,
                          "machine, nodes, cores, devices, processes, act_seconds, collective_call_seconds, "
                          "core_share, boxing_act_seconds, own_core_act_seconds, method");
      }
      has_term = true;
    }
  }
  if (measurement.nodes == 0) return Missing("nodes");
  if (measurement.cores == 0) return Missing("cores");
  // The measured terms come together: a line with any of them has the three a host line
  // needs and the share (calibrate always measures one; the record tells measured turns
  // by it).
  if (has_term) {
    if (turns.devices == 0) return Missing("devices");
    if (!has_act) return Missing("act_seconds");
    if (!has_call) return Missing("collective_call_seconds");
    if (turns.core_share == 0) return Missing("core_share");
    turns.cores = measurement.cores;
    turns.method = measurement.method;
    // calibrate runs one device per process (one per node, as the launched job does).
    if (measurement.processes != 0 && measurement.processes != turns.devices) {
      return absl::InvalidArgumentError(absl::StrCat("\"processes\" is ", measurement.processes, " for ", turns.devices,
                                                     " devices; the turns are measured with one device per process"));
    }
    measurement.turns = std::move(turns);
  } else if (measurement.processes != 0) {
    return absl::InvalidArgumentError(
        "\"processes\" is given without the measured turns (devices, act_seconds, collective_call_seconds, "
        "core_share) whose measurement it describes");
  }
  if (measurement.nodes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"nodes\" is ", measurement.nodes, "; a shared machine holds at least 2 nodes"));
  }
  if (calibration->shared_machine.has_value()) {
    return absl::InvalidArgumentError("the shared machine is given twice");
  }
  calibration->shared_machine = std::move(measurement);
  return absl::OkStatus();
}

// A "transfer" line into `calibration`.
absl::Status ParseTransfer(const Members& members, Calibration* calibration) {
  TransferMeasurement measurement;
  bool has_latency = false, has_round_trip = false;
  for (const auto& [key, value] : members) {
    if (key == "transfer") {
      if (value.text != "inter_node") {
        return absl::InvalidArgumentError(absl::StrCat("\"transfer\" is \"", value.text, "\"; valid: inter_node"));
      }
    } else if (key == "latency_seconds" || key == "round_trip_seconds") {
      absl::StatusOr<double> number = Number(key, value, /*zero_allowed=*/key == "latency_seconds");
      if (!number.ok()) return number.status();
      (key == "latency_seconds" ? measurement.latency_seconds : measurement.round_trip_seconds) = *number;
      (key == "latency_seconds" ? has_latency : has_round_trip) = true;
    } else if (key == "bytes") {
      absl::StatusOr<int64_t> number = WholeNumber(key, value);
      if (!number.ok()) return number.status();
      measurement.bytes = *number;
    } else if (key == "method") {
      measurement.method = value.text;
    } else {
      return UnknownKey(key, "transfer, latency_seconds, round_trip_seconds, bytes, method");
    }
  }
  if (!has_latency) return Missing("latency_seconds");
  if (!has_round_trip) return Missing("round_trip_seconds");
  if (measurement.bytes == 0) return Missing("bytes");
  if (calibration->inter_node_transfer.has_value()) {
    return absl::InvalidArgumentError("the inter_node transfer is measured twice");
  }
  calibration->inter_node_transfer = std::move(measurement);
  return absl::OkStatus();
}

}  // namespace

std::string TransferMeasurementLine(const TransferMeasurement& measurement) {
  return absl::StrFormat(
      "{\"transfer\": \"inter_node\", \"latency_seconds\": %.6g, \"round_trip_seconds\": %.6g, \"bytes\": %d, "
      "\"method\": \"%s\"}",
      measurement.latency_seconds, measurement.round_trip_seconds, measurement.bytes, measurement.method);
}

std::string SharedMachineLine(const SharedMachineMeasurement& measurement) {
  const std::string terms =
      measurement.turns.has_value()
          ? absl::StrFormat("\"devices\": %d, %s\"act_seconds\": %.6g, \"collective_call_seconds\": %.6g, %s",
                            measurement.turns->devices,
                            measurement.processes > 0 ? absl::StrFormat("\"processes\": %d, ", measurement.processes)
                                                      : std::string(),
                            measurement.turns->act_seconds,
                            measurement.turns->collective_call_seconds, RuntimeTermsJson(*measurement.turns))
          : std::string();
  const std::string own_core_act =
      measurement.own_core_act_seconds.has_value()
          ? absl::StrFormat("\"own_core_act_seconds\": %.6g, ", *measurement.own_core_act_seconds)
          : std::string();
  return absl::StrFormat("{\"machine\": \"shared\", \"nodes\": %d, \"cores\": %d, %s%s\"method\": \"%s\"}",
                         measurement.nodes, measurement.cores, terms, own_core_act, measurement.method);
}

std::string HostMeasurementLine(const HostMeasurement& measurement) {
  const std::string optional_terms = RuntimeTermsJson(measurement);
  return absl::StrFormat(
      "{\"host\": \"in_process\", \"devices\": %d, \"act_seconds\": %.6g, \"collective_call_seconds\": %.6g, "
      "\"cores\": %d, %s\"method\": \"%s\"}",
      measurement.devices, measurement.act_seconds, measurement.collective_call_seconds, measurement.cores,
      optional_terms, measurement.method);
}

const HostMeasurement* NearestHostMeasurement(const Calibration& calibration, int64_t devices) {
  const HostMeasurement* nearest = nullptr;
  for (const HostMeasurement& host : calibration.hosts) {
    if (nearest == nullptr) {
      nearest = &host;
      continue;
    }
    const int64_t distance = std::abs(host.devices - devices);
    const int64_t best = std::abs(nearest->devices - devices);
    if (distance < best || (distance == best && host.devices > nearest->devices)) nearest = &host;
  }
  return nearest;
}

std::string LinkMeasurementLine(absl::string_view level, const LinkLevelMeasurement& measurement) {
  return absl::StrFormat(
      "{\"link\": \"%s\", \"latency_seconds\": %.6g, \"bytes_per_second\": %.6g, \"method\": \"%s\"}", level,
      measurement.latency_seconds, measurement.bytes_per_second, measurement.method);
}

std::string ComputeMeasurementLine(absl::string_view kind, double per_second, absl::string_view method) {
  return absl::StrFormat("{\"compute\": \"%s\", \"per_second\": %.6g, \"method\": \"%s\"}", kind, per_second,
                         method);
}

std::string GemmShapeMeasurementLine(const GemmShapeModel& model, absl::string_view method) {
  return absl::StrFormat(
      "{\"compute\": \"gemm_shape\", \"per_second\": %.6g, \"operand_bytes_per_second\": %.6g, "
      "\"call_seconds\": %.6g, \"method\": \"%s\"}",
      model.flops_per_second, model.operand_bytes_per_second, model.call_seconds, method);
}

std::string CachedMemoryMeasurementLine(double per_second, int64_t bytes, absl::string_view method) {
  return absl::StrFormat(
      "{\"compute\": \"memory_cached\", \"per_second\": %.6g, \"bytes\": %d, \"method\": \"%s\"}", per_second,
      bytes, method);
}

absl::StatusOr<Calibration> ParseCalibration(absl::string_view text, absl::string_view file) {
  Calibration calibration;
  bool any_codec = false;
  int lines = 0;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    ++lines;
    auto fail = [&](const absl::Status& status) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration file '", file, "' line ", number, ": ", status.message()));
    };
    absl::StatusOr<Members> members = LineParser(line).Object();
    if (!members.ok()) return fail(members.status());
    const std::string kind = members->empty() ? "" : members->front().first;
    if (kind == "link") {
      if (absl::Status status = ParseLink(*members, &calibration); !status.ok()) return fail(status);
    } else if (kind == "compute") {
      if (absl::Status status = ParseCompute(*members, &calibration); !status.ok()) return fail(status);
    } else if (kind == "host") {
      if (absl::Status status = ParseHost(*members, &calibration); !status.ok()) return fail(status);
    } else if (kind == "machine") {
      if (absl::Status status = ParseMachine(*members, &calibration); !status.ok()) return fail(status);
    } else if (kind == "transfer") {
      if (absl::Status status = ParseTransfer(*members, &calibration); !status.ok()) return fail(status);
    } else {
      any_codec = true;
    }
  }
  if (lines == 0) {
    return absl::InvalidArgumentError(absl::StrCat("calibration file '", file,
                                                    "' has no measurement; write one with `oneflow calibrate --out=",
                                                    file, "`"));
  }
  if (any_codec) {
    // Codec lines keep their own parser, errors and duplicate checks.
    absl::StatusOr<std::vector<CodecMeasurement>> codecs = ParseCodecCalibration(text, file);
    if (!codecs.ok()) return codecs.status();
    for (const CodecMeasurement& measurement : *codecs) AddCodecMeasurement(measurement, &calibration.codecs);
  }
  return calibration;
}

absl::StatusOr<Calibration> ReadCalibrationFile(const std::string& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration file '", path, "': is a directory, not a calibration file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    const int error = errno;
    const std::string message = absl::StrCat("calibration file '", path, "': cannot open: ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("calibration file '", path, "': cannot read"));
  return ParseCalibration(text.str(), path);
}

}  // namespace oneflow
