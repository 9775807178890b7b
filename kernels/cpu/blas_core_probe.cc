// What blas_core_test runs in a child process, with an environment it controls: prints
// the OpenBLAS core this process ended up with, what the startup check saw, the variable
// and the arguments, one "key=value" line each.
//
//   blas_core_probe [--pretend_openblas_picked=CORE] [ARGUMENTS...]
//
// Like every program that runs OpenBLAS, it calls UseBestBlasCore() first.
// --pretend_openblas_picked runs the check again as if OpenBLAS had picked CORE, so the
// re-exec path can be tested on CPUs that OpenBLAS recognises. The re-executed probe sees
// the same argument, but OPENBLAS_CORETYPE is set by then.
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/blas_core.h"

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();
  constexpr char kPretend[] = "--pretend_openblas_picked=";
  if (argc > 1 && std::strncmp(argv[1], kPretend, std::strlen(kPretend)) == 0) {
    oneflow::cpu::RestartWithBetterBlasCoreIfNeeded(argv[1] + std::strlen(kPretend));
  }
  const char* seen = oneflow::cpu::BlasCoreSeenAtStartup();
  const char* variable = std::getenv("OPENBLAS_CORETYPE");
  std::printf("openblas_core=%s\n", openblas_get_corename());
  std::printf("seen_at_startup=%s\n", seen != nullptr ? seen : "(check did not run)");
  std::printf("OPENBLAS_CORETYPE=%s\n", variable != nullptr ? variable : "(unset)");
  for (int i = 0; i < argc; ++i) std::printf("argv[%d]=%s\n", i, argv[i]);
  return 0;
}
