#include "kernels/cpu/blas_core.h"

#include <cpuid.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "oneflow_core/files/file_descriptor.h"

// Also in Debian's OpenBLAS cblas.h; declared here so this file needs no BLAS header.
extern "C" char* openblas_get_corename(void);

namespace oneflow {
namespace cpu {
namespace {

constexpr char kCoreTypeVariable[] = "OPENBLAS_CORETYPE";

// What UseBestBlasCore saw: a pointer to OpenBLAS's static name.
const char* seen_at_startup = nullptr;

// 2: cores with AVX-512 kernels; 1: cores OpenBLAS picks for AVX2 CPUs it knows; 0: older
// ones, among them Prescott, its fallback for CPUs it does not know. Only the class is
// compared, so OpenBLAS's own choice within a class (Cooperlake on Zen 4, Zen on Zen 2) stands.
int CoreClass(absl::string_view core) {
  for (absl::string_view name : {"SkylakeX", "Cooperlake", "SapphireRapids"}) {
    if (absl::EqualsIgnoreCase(core, name)) return 2;
  }
  for (absl::string_view name : {"Haswell", "Zen", "Excavator"}) {
    if (absl::EqualsIgnoreCase(core, name)) return 1;
  }
  return 0;
}

// XCR0, the register state the OS saves on a context switch: an instruction set whose
// registers it does not save cannot be used even where cpuid lists it.
uint64_t EnabledRegisterState() {
  uint32_t low, high;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<uint64_t>(high) << 32) | low;
}

// /proc/self/cmdline: the arguments as the program was started, each ended by a NUL.
bool ReadCommandLine(std::string* command_line, std::string* error) {
  const FileDescriptor file(open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
  if (!file.valid()) {
    *error = std::string("/proc/self/cmdline: ") + std::strerror(errno);
    return false;
  }
  char buffer[4096];
  ssize_t got;
  while ((got = read(file.get(), buffer, sizeof(buffer))) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *error = std::string("/proc/self/cmdline: ") + std::strerror(errno);
      return false;
    }
    command_line->append(buffer, got);
  }
  if (command_line->empty()) {
    *error = "/proc/self/cmdline is empty";
    return false;
  }
  if (command_line->back() != '\0') command_line->push_back('\0');
  return true;
}

// Sets OPENBLAS_CORETYPE=core and execs this program again; returns why not otherwise,
// with the environment as it was. Output the program buffered in stdio before this point
// is dropped, not flushed: its re-executed self writes it again.
std::string Reexecute(const char* core) {
  std::string command_line, error;
  if (!ReadCommandLine(&command_line, &error)) return error;
  std::vector<char*> argv;
  for (size_t start = 0; start < command_line.size(); start = command_line.find('\0', start) + 1) {
    argv.push_back(&command_line[start]);
  }
  argv.push_back(nullptr);
  if (setenv(kCoreTypeVariable, core, /*overwrite=*/1) != 0) {
    return std::string("setenv: ") + std::strerror(errno);
  }
  // /proc/self/exe, not argv[0]: argv[0] may be a bare name found through PATH, a symlink
  // or anything the parent chose. The link opens this very file even if it was replaced
  // or deleted since.
  execv("/proc/self/exe", argv.data());
  const int exec_errno = errno;
  unsetenv(kCoreTypeVariable);
  return std::string("execv(/proc/self/exe): ") + std::strerror(exec_errno);
}

// OpenBLAS's own verbosity: 0 silences its warnings, 1 (the default) shows them, and our
// lines with them. Tests set 0: some compare a program's stderr exactly (.bazelrc).
bool Quiet() {
  const char* verbose = std::getenv("OPENBLAS_VERBOSE");
  return verbose != nullptr && std::atoi(verbose) <= 0;
}

}  // namespace

CpuVectorSupport DetectCpuVectorSupport() {
  CpuVectorSupport cpu;
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return cpu;
  const bool fma = (ecx & bit_FMA) != 0;
  // xgetbv exists only where the OS enabled XSAVE; without it there is no AVX at all.
  if ((ecx & bit_OSXSAVE) == 0 || (ecx & bit_AVX) == 0) return cpu;
  const uint64_t state = EnabledRegisterState();
  const bool ymm_saved = (state & 0x6) == 0x6;                 // SSE and the upper halves of ymm
  const bool zmm_saved = ymm_saved && (state & 0xe0) == 0xe0;  // opmask, zmm0-15 upper, zmm16-31
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return cpu;
  const unsigned avx512 = bit_AVX512F | bit_AVX512CD | bit_AVX512BW | bit_AVX512DQ | bit_AVX512VL;
  cpu.avx2_fma = ymm_saved && fma && (ebx & bit_AVX2) != 0;
  cpu.avx512 = cpu.avx2_fma && zmm_saved && (ebx & avx512) == avx512;
  return cpu;
}

const char* BetterBlasCore(absl::string_view openblas_core, CpuVectorSupport cpu) {
  if (absl::EqualsIgnoreCase(openblas_core, "Unknown")) return nullptr;
  const int picked = CoreClass(openblas_core);
  if (cpu.avx512 && picked < 2) return "SkylakeX";
  if (cpu.avx2_fma && picked < 1) return "Haswell";
  return nullptr;
}

void UseBestBlasCore() {
  // OpenBLAS's constructor, which ran before main(), has picked its core by now.
  seen_at_startup = openblas_get_corename();
  RestartWithBetterBlasCoreIfNeeded(seen_at_startup);
}

const char* BlasCoreSeenAtStartup() { return seen_at_startup; }

void RestartWithBetterBlasCoreIfNeeded(const char* openblas_core) {
  // Set by the user (kept as a deliberate choice) or by our own re-exec (which ends the loop).
  if (std::getenv(kCoreTypeVariable) != nullptr) return;
  const CpuVectorSupport cpu = DetectCpuVectorSupport();
  const char* better = BetterBlasCore(openblas_core, cpu);
  if (better == nullptr) return;
  const bool quiet = Quiet();
  if (!quiet) {
    std::fprintf(stderr,
                 "[blas_core] OpenBLAS picked its %s kernels, but this CPU has %s: restarting "
                 "with %s=%s (set %s yourself to choose)\n",
                 openblas_core, cpu.avx512 ? "AVX-512" : "AVX2 and FMA", kCoreTypeVariable, better,
                 kCoreTypeVariable);
  }
  const std::string error = Reexecute(better);
  if (!quiet) {
    std::fprintf(stderr,
                 "[blas_core] could not restart (%s): going on with the slower %s kernels; "
                 "start the program with %s=%s to avoid this\n",
                 error.c_str(), openblas_core, kCoreTypeVariable, better);
  }
}

}  // namespace cpu
}  // namespace oneflow
