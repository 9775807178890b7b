// How much memory a process holds, read the one way every tool here reads it: the
// kernel's own counters in /proc/PID/status. VmRSS is what the process has resident now
// (anonymous memory, file pages it mapped, shared memory); VmHWM is the most it ever had.
// A process that keeps state per iteration shows it here as a VmRSS that keeps rising
// (docs/runtime.md, "Long runs"); `oneflow status` shows a worker's, bench/soak samples
// every process of a job.
//
//   OF_ASSIGN_OR_RETURN(ProcessMemory memory, ReadProcessMemory(pid));
//   ... memory.resident_bytes ...
#ifndef ONEFLOW_CORE_PROCESS_MEMORY_H_
#define ONEFLOW_CORE_PROCESS_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace oneflow {

struct ProcessMemory {
  int64_t resident_bytes = 0;       // VmRSS
  int64_t peak_resident_bytes = 0;  // VmHWM
};

// `pid` 0: this process. NOT_FOUND when the process is gone (or a zombie, which has no
// memory left to report); INTERNAL when the file lacks the fields.
absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid = 0);

// The fields of a /proc/PID/status text ("VmRSS:\t   12345 kB"); `source` names it in
// errors.
absl::StatusOr<ProcessMemory> ParseProcessStatus(const std::string& text, const std::string& source);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_PROCESS_MEMORY_H_
