#!/usr/bin/env bash
# Tests tools/dev.sh without touching the machine: fake apt-get / dpkg-query / sudo
# come first on PATH and record how they were called.
set -euo pipefail

DEV_SH="$(pwd)/tools/dev.sh"
FAKES="$(mktemp -d)"
trap 'rm -rf "$FAKES"' EXIT
CALLS="$FAKES/calls"

fail() { echo "FAIL: $*" >&2; exit 1; }

# apt-get that records its arguments instead of installing.
cat >"$FAKES/apt-get" <<FAKE
#!/usr/bin/env bash
echo "apt-get \$*" >>"$CALLS"
FAKE
chmod +x "$FAKES/apt-get"
cat >"$FAKES/sudo" <<'FAKE'
#!/usr/bin/env bash
exec "$@"
FAKE
chmod +x "$FAKES/sudo"

# 1. Idempotence on this machine: the test runs after dev.sh installed everything, so a
#    second run must find every package and call apt-get not at all.
rm -f "$CALLS"
output="$(PATH="$FAKES:$PATH" "$DEV_SH" deps 2>&1)" || fail "deps exited non-zero: $output"
[[ ! -e "$CALLS" ]] || fail "second run called: $(cat "$CALLS")"
# The count is that of dev.sh's own PACKAGES list (one package per indented line).
expected="$(sed -n '/^PACKAGES=(/,/^)/p' "$DEV_SH" | grep -c '^  [a-z]')"
[[ "$expected" -ge 17 ]] || fail "could not count dev.sh's PACKAGES (got $expected)"
[[ "$output" == *"all $expected packages present"* ]] || fail "unexpected output: $output"

# 2. A machine missing two packages: dev.sh installs exactly those, after an update.
cat >"$FAKES/dpkg-query" <<'FAKE'
#!/usr/bin/env bash
package="${@: -1}"
case "$package" in
  libgloo-dev|bazel-bootstrap) echo -n "unknown ok not-installed"; exit 1 ;;
  *) echo -n "install ok installed" ;;
esac
FAKE
chmod +x "$FAKES/dpkg-query"
rm -f "$CALLS"
PATH="$FAKES:$PATH" "$DEV_SH" deps >/dev/null 2>&1 || fail "deps with missing packages failed"
expected="apt-get update -q
apt-get install -y -q --no-install-recommends bazel-bootstrap libgloo-dev"
[[ "$(cat "$CALLS")" == "$expected" ]] || fail "apt-get calls were: $(cat "$CALLS")"

# 3. An unknown command is refused with exit code 2 and names the valid ones.
set +e
output="$("$DEV_SH" frobnicate 2>&1)"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "unknown command exited $rc"
[[ "$output" == *"unknown command 'frobnicate'; valid: deps, build, test, demo, help"* ]] ||
  fail "unexpected message: $output"

# 4. The summary line CI reads, counted from a Bazel test summary.
# shellcheck source=/dev/null
source "$DEV_SH"
cat >"$FAKES/bazel.log" <<'LOG'
//oneflow_core:shape_test                                         PASSED in 0.1s
//oneflow_core:sbp_test                                  (cached) PASSED in 0.0s
//proto:proto_test                                                FAILED in 0.2s
//compiler:slow_test                                             TIMEOUT in 300.0s
//kernels/cuda:cuda_smoke_test                                   SKIPPED
//tests:broken_test                                     FAILED TO BUILD
Executed 4 out of 5 tests: 2 tests pass and 3 fail locally.
LOG
[[ "$(summarize_tests "$FAKES/bazel.log")" == "2 passed, 3 failed" ]] ||
  fail "summary was: $(summarize_tests "$FAKES/bazel.log")"
# A test that passed by skipping (its test.log says "SKIP: why") is no pass: it is listed.
mkdir -p "$FAKES/testlogs/oneflow_core/shape_test" "$FAKES/testlogs/oneflow_core/sbp_test"
printf 'SKIP: chromium not installed (apt-get install chromium)\n' >"$FAKES/testlogs/oneflow_core/shape_test/test.log"
printf 'PASS\n' >"$FAKES/testlogs/oneflow_core/sbp_test/test.log"
expected="1 passed, 3 failed
1 skipped: //oneflow_core:shape_test (chromium not installed (apt-get install chromium))"
[[ "$(summarize_tests "$FAKES/bazel.log" "$FAKES/testlogs")" == "$expected" ]] ||
  fail "summary with a skip was: $(summarize_tests "$FAKES/bazel.log" "$FAKES/testlogs")"

echo "PASS"
