#include "oneflow_core/process_memory.h"

#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace oneflow {
namespace {

// "   12345 kB" -> 12345 * 1024; false when it is not that.
bool ParseKilobytes(absl::string_view value, int64_t* bytes) {
  value = absl::StripAsciiWhitespace(value);
  if (!absl::ConsumeSuffix(&value, "kB")) return false;
  int64_t kilobytes = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &kilobytes) || kilobytes < 0) return false;
  *bytes = kilobytes * 1024;
  return true;
}

}  // namespace

absl::StatusOr<ProcessMemory> ParseProcessStatus(const std::string& text, const std::string& source) {
  ProcessMemory memory;
  bool resident = false, peak = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "VmRSS:")) {
      resident = ParseKilobytes(line, &memory.resident_bytes);
    } else if (absl::ConsumePrefix(&line, "VmHWM:")) {
      peak = ParseKilobytes(line, &memory.peak_resident_bytes);
    }
  }
  if (!resident || !peak) {
    return absl::InternalError(absl::StrCat(source, " has no readable VmRSS and VmHWM lines"));
  }
  return memory;
}

absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid) {
  const std::string path = pid == 0 ? "/proc/self/status" : absl::StrCat("/proc/", pid, "/status");
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("process ", pid, " is gone ('", path, "' cannot be read)"));
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  absl::StatusOr<ProcessMemory> memory = ParseProcessStatus(text, path);
  // A zombie's status has no Vm lines: its memory is already gone.
  if (!memory.ok() && text.find("State:\tZ") != std::string::npos) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " has exited (a zombie holds no memory)"));
  }
  return memory;
}

}  // namespace oneflow
