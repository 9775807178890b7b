// Compute precision of a training plan (CompileOptions::precision, the examples' and
// `oneflow compile`'s --precision flag): fp32 everywhere, or bf16 mixed precision, in which
// the precision pass (compiler/passes/precision_pass.h) has every matrix product run on
// bf16 operands with fp32 accumulation while master weights, optimizer state, reductions
// and every other kernel stay fp32 (docs/memory_and_precision.md, "Precision").
//
// bf16 products run through oneDNN's bf16 matmul primitive, which is fast only where the
// CPU has AVX-512 BF16 (vdpbf16ps) or AMX-BF16 tiles; oneDNN has no bf16 primitive below
// AVX-512, where the kernels multiply the rounded operands in fp32 (kernels/cpu/sgemm.h):
// bf16's rounding without its speed (PyTorch users see bf16 44-499x slower on AVX2-only
// machines). So compiling for bf16 on such a CPU is refused rather than silently no faster.
#ifndef COMPILER_PRECISION_H_
#define COMPILER_PRECISION_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow {

enum class Precision { kFp32, kBf16 };

// "fp32", "bf16": the flag's spelling.
absl::string_view PrecisionName(Precision precision);

// Inverse of PrecisionName. Anything else is INVALID_ARGUMENT naming the flag:
//   --precision=fp8 is not one of: fp32, bf16
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

// The bf16 instruction sets of a CPU, as cpuid reports them (and the OS enables them).
struct CpuBf16Support {
  bool avx512_bf16 = false;  // AVX512_BF16: cpuid leaf 7 subleaf 1, eax bit 5
  bool amx_bf16 = false;     // AMX-BF16: cpuid leaf 7 subleaf 0, edx bit 22
};

// What this machine's CPU has. AVX-512 BF16 counts only where the OS saves AVX-512 state
// (the avx512f feature as GCC's runtime checks see it).
CpuBf16Support ProbeCpuBf16Support();

// OK for fp32 anywhere, and for bf16 where `cpu` has AVX-512 BF16 or AMX-BF16; otherwise
// FAILED_PRECONDITION naming the flag and the missing instruction sets:
//   --precision=bf16 needs a CPU with AVX-512 BF16 or AMX-BF16 instructions; this CPU has
//   neither, so bf16 products would run as fp32 products of rounded operands, no faster
//   than fp32; use --precision=fp32
absl::Status CheckPrecisionSupported(Precision precision, const CpuBf16Support& cpu);

}  // namespace oneflow

#endif  // COMPILER_PRECISION_H_
