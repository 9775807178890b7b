#include "compiler/precision.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "absl/strings/str_cat.h"

namespace oneflow {

absl::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
  }
  return "fp32";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  return absl::InvalidArgumentError(absl::StrCat("--precision=", name, " is not one of: fp32, bf16"));
}

CpuBf16Support ProbeCpuBf16Support() {
  CpuBf16Support support;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    support.amx_bf16 = (edx >> 22) & 1u;
    // Subleaf 1 exists when subleaf 0's eax (the highest subleaf) is at least 1.
    const unsigned max_subleaf = eax;
    if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {
      support.avx512_bf16 = ((eax >> 5) & 1u) && __builtin_cpu_supports("avx512f");
    }
  }
#endif
  return support;
}

absl::Status CheckPrecisionSupported(Precision precision, const CpuBf16Support& cpu) {
  if (precision != Precision::kBf16 || cpu.avx512_bf16 || cpu.amx_bf16) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "--precision=bf16 needs a CPU with AVX-512 BF16 or AMX-BF16 instructions; this CPU has neither, so "
      "bf16 products would run as fp32 products of rounded operands, no faster than fp32; use --precision=fp32");
}

}  // namespace oneflow
