// Which OpenBLAS kernel set ("core") runs, settled once at the top of main().
//
// Debian's OpenBLAS 0.3.21 is built with DYNAMIC_ARCH: its library constructor maps the
// CPU model to a core, and a model it does not know (recent Intel Xeons among them) gets
// the generic Prescott core, which runs sgemm ~4.7x slower than SkylakeX on the same CPU.
// OpenBLAS reads OPENBLAS_CORETYPE in that constructor only, before main(), and has no
// public call to switch cores later (see docs/kernels.md, "Which OpenBLAS kernel runs").
//
// So every program that runs OpenBLAS calls UseBestBlasCore() first thing in main():
// when OPENBLAS_CORETYPE is unset and cpuid says this CPU runs a better core than the one
// OpenBLAS picked, it sets the variable and re-executes the program with the same
// arguments, so that OpenBLAS initialises again with the right core. It prints one line
// on stderr when it does so (or when it cannot), unless OPENBLAS_VERBOSE=0; otherwise it
// is silent. A user-set OPENBLAS_CORETYPE is always kept. An explicit call rather than a
// library constructor: linking a library has no side effect, and tests, which link the
// kernels but are no programs of the project, run on the core OpenBLAS picked.
// tools/check_layering.sh checks that every program linking OpenBLAS makes the call.
#ifndef KERNELS_CPU_BLAS_CORE_H_
#define KERNELS_CPU_BLAS_CORE_H_

#include "absl/strings/string_view.h"

namespace oneflow {
namespace cpu {

// The vector instruction sets that decide the OpenBLAS core, as cpuid reports them and
// only where the OS saves their registers (XCR0), i.e. where they can actually run.
struct CpuVectorSupport {
  bool avx512 = false;    // AVX-512 F, CD, BW, DQ and VL: what OpenBLAS's SkylakeX core uses
  bool avx2_fma = false;  // AVX2 and FMA: what its Haswell core uses
};

// This CPU's support.
CpuVectorSupport DetectCpuVectorSupport();

// The core to ask OpenBLAS for when it picked `openblas_core` (a name as
// openblas_get_corename() returns it, any case) on a CPU with `cpu`: "SkylakeX" or
// "Haswell", or nullptr when the pick is already of that class (e.g. Cooperlake, Zen),
// nothing better runs on this CPU, or the name is "Unknown" (OpenBLAS not initialised,
// so there is nothing reliable to compare).
const char* BetterBlasCore(absl::string_view openblas_core, CpuVectorSupport cpu);

// The startup check of every program that runs OpenBLAS: call it first in main(), before
// the program starts threads, opens files or writes output (a restart would do all of it
// again). Returns only when this process keeps running: OpenBLAS already runs the best
// core this CPU has, OPENBLAS_CORETYPE was set, or the re-exec failed (then said on
// stderr); otherwise the program starts again from the top with the variable set, and
// this call returns there. Calling it again is harmless (the variable stops a second
// restart, and with nothing to change it does nothing).
void UseBestBlasCore();

// The core OpenBLAS reported when UseBestBlasCore ran, or nullptr if it has not run.
// Tests use it to see that the check compared a real pick (OpenBLAS had initialised).
const char* BlasCoreSeenAtStartup();

// The check itself, given the core OpenBLAS picked: when OPENBLAS_CORETYPE is unset and
// BetterBlasCore names a core, sets OPENBLAS_CORETYPE to it and re-executes this program
// (/proc/self/exe with the arguments of /proc/self/cmdline); the re-executed process
// finds the variable set and leaves it alone. Returns only when it did not re-execute:
// nothing to change, or the re-exec failed (then logged, the environment restored, and
// the program goes on with the slower core). UseBestBlasCore calls it with OpenBLAS's
// pick; blas_core_probe calls it with a pretended pick to test the re-exec on CPUs
// OpenBLAS recognises.
void RestartWithBetterBlasCoreIfNeeded(const char* openblas_core);

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_BLAS_CORE_H_
