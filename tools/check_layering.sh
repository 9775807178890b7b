#!/bin/bash
# The build's layering rules, checked with `bazel query` (tools/dev.sh test runs this and
# reports it as the test line //tools:check_layering):
#  1. Layers: proto, oneflow_core, sbp, kernels, plan, compiler, actors, examples, tools,
#     from the bottom (plan/'s verifier asks kernels/boxing what the runtime supports; the
#     runtime reads and checks plans through plan/, never through the compiler). No target of a layer depends on a target of a higher layer, tests included
#     (tests that need a higher layer live in tests/ or bench/, above all of them).
#  2. The runtime reads plans, it does not make them: no non-test target of actors/,
#     tools/worker/ or tools/launcher/ depends on compiler/ (only on plan/).
#  3. The runtime reaches devices through the seam: no non-test target of actors/ depends
#     on a backend's package (//kernels/cpu/..., //kernels/cuda/...) and no file under
#     actors/ includes a header from one; it uses //kernels:device_backend and
#     //kernels:backends (kernels/device_backend.h), which hand kernels their threads.
#  4. Test helpers are testonly: every cc_library under tests/, named "...testing...", or
#     built from files in a testing/ folder is testonly = True, so Bazel refuses any
#     non-test target that depends on one.
#  5. Every program that links OpenBLAS settles its core first: each cc_binary depending
#     on //third_party/system:openblas (except gtest programs, which are tests) has a
#     source that calls UseBestBlasCore() (kernels/cpu/blas_core.h) or ParseExampleFlags(
#     (examples/common/example_main.h, which calls it first). Nothing does it behind the
#     program's back: there is no library constructor any more.
# A failing query fails the check (it is not read as "no violation").
# Prints each violation and exits 1; exits 0 when the tree keeps the rules.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LAYERS=(proto oneflow_core sbp kernels plan compiler actors examples tools)
status=0
ERRORS="$(mktemp)"
trap 'rm -f "$ERRORS"' EXIT
# A query that fails must fail the check, not read as "no violation".
query() {
  if ! bazel query --noshow_progress "$1" 2>>"$ERRORS"; then
    echo "query failed: $1" >>"$ERRORS"
  fi
}

for ((i = 0; i < ${#LAYERS[@]}; i++)); do
  lower="${LAYERS[$i]}"
  higher=""
  for ((j = i + 1; j < ${#LAYERS[@]}; j++)); do higher+="${higher:+ + }//${LAYERS[$j]}/..."; done
  [[ -z "$higher" ]] && continue
  # Direct edges from a rule of this layer into a rule of a higher one.
  bad="$(query "kind(rule, rdeps(//$lower/..., $higher, 1) intersect //$lower/...)" |
    while read -r target; do
      reach="$(query "kind(rule, deps($target, 1) intersect ($higher))" | tr '\n' ' ')"
      [[ -n "$reach" ]] && echo "$target -> $reach"
    done)"
  if [[ -n "$bad" ]]; then
    echo "layering: //$lower/... depends on a higher layer:"
    echo "$bad" | sed 's/^/  /'
    status=1
  fi
done

RUNTIME="//actors/... + //tools/worker/... + //tools/launcher/..."
compiler_uses="$(query "kind(rule, deps(($RUNTIME) except attr(testonly, 1, //...))) intersect //compiler/...")"
if [[ -n "$compiler_uses" ]]; then
  echo "layering: the runtime (actors/, tools/worker/, tools/launcher/) depends on the compiler:"
  echo "$compiler_uses" | sed 's/^/  /'
  echo "  (read and check plans through //plan:plan_io and //plan:plan_verifier instead)"
  status=1
fi

backend_uses="$(query "kind(rule, deps(//actors/... except attr(testonly, 1, //actors/...), 1)) intersect (//kernels/cpu/... + //kernels/cuda/...)")"
backend_includes="$(grep -rnE '#include "kernels/(cpu|cuda)/' actors/ || true)"
if [[ -n "$backend_uses$backend_includes" ]]; then
  echo "layering: the runtime (actors/) reaches a device backend's package directly:"
  [[ -n "$backend_uses" ]] && echo "$backend_uses" | sed 's/^/  /'
  [[ -n "$backend_includes" ]] && echo "$backend_includes" | sed 's/^/  /'
  echo "  (go through kernels/device_backend.h: BackendFor, FindKernel, CreateThreadPool, KernelContext::thread_pool)"
  status=1
fi

helpers="$(query "kind(cc_library, //tests/... + attr(name, '.*testing.*', //...) + attr(hdrs, 'testing/', //...) + attr(srcs, 'testing/', //...)) except attr(testonly, 1, //...)")"
if [[ -n "$helpers" ]]; then
  echo "layering: test helpers that are not testonly (add testonly = True):"
  echo "$helpers" | sed 's/^/  /'
  status=1
fi
programs="$(query "kind(cc_binary, rdeps(//..., //third_party/system:openblas)) except rdeps(//..., //third_party/system:gtest_main)")"
[[ -n "$programs" ]] || echo "query found no programs linking //third_party/system:openblas" >>"$ERRORS"
missing=""
for program in $programs; do
  sources="$(query "labels(srcs, $program)" | sed -e 's|^//||' -e 's|:|/|')"
  # shellcheck disable=SC2086
  if ! grep -sqE 'UseBestBlasCore\(\)|ParseExampleFlags\(' $sources /dev/null; then missing+="  $program"$'\n'; fi
done
if [[ -n "$missing" ]]; then
  echo "layering: programs that link OpenBLAS without settling its core first (call"
  echo "  oneflow::cpu::UseBestBlasCore() at the top of main, kernels/cpu/blas_core.h):"
  printf '%s' "$missing"
  status=1
fi

# The rules above found something to check (a query that returns nothing everywhere
# would prove nothing).
for layer in compiler plan; do
  [[ -n "$(query "kind(rule, //$layer/...)")" ]] || echo "query found no rules in //$layer/..." >>"$ERRORS"
done
if grep -q "query failed\|query found no" "$ERRORS"; then
  echo "layering: bazel query failed:"
  grep -v "^INFO\|^Loading\|^$" "$ERRORS" | sed 's/^/  /'
  status=1
fi
exit "$status"
