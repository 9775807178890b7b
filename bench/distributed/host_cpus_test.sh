#!/usr/bin/env bash
# What distributed_bench.sh's --host_cpus does without root or namespaces: the CFS quota
# each emulated host gets (bench/lib/netns_hosts.sh, netns_cpu_quota_us), and the bench's
# refusal of a bad value, naming it, before it needs root or touches anything.
set -euo pipefail
BENCH=bench/distributed/distributed_bench.sh
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck source=bench/lib/netns_hosts.sh
source bench/lib/netns_hosts.sh
# Per 10 ms period: three hosts on two cores get 6.67 ms each, a host of one core 10 ms,
# of two cores 20 ms.
[[ "$(netns_cpu_quota_us 0.667)" == 6670 ]] || fail "0.667 cores: $(netns_cpu_quota_us 0.667)"
[[ "$(netns_cpu_quota_us 1)" == 10000 ]] || fail "1 core: $(netns_cpu_quota_us 1)"
[[ "$(netns_cpu_quota_us 2)" == 20000 ]] || fail "2 cores: $(netns_cpu_quota_us 2)"
[[ "$(netns_cpu_quota_us .5)" == 5000 ]] || fail "0.5 cores: $(netns_cpu_quota_us .5)"
# Below the kernel's 1 ms minimum quota, or not a number: refused, naming the value.
for bad in 0.05 0 abc 1e3 -1 ""; do
  if netns_cpu_quota_us "$bad" > "$DIR/out" 2> "$DIR/err"; then fail "'$bad' accepted: $(cat "$DIR/out")"; fi
  grep -qF "host cores '$bad': give a number >= 0.1" "$DIR/err" || fail "'$bad': $(cat "$DIR/err")"
done

# The bench refuses it before anything else (exit 2, the flag and the valid range named).
for bad in abc 0.05; do
  set +e
  bash "$BENCH" --host_cpus="$bad" > "$DIR/out" 2> "$DIR/err"
  rc=$?
  set -e
  [[ "$rc" == 2 ]] || fail "--host_cpus=$bad: exit $rc"
  grep -qF "error: --host_cpus=$bad: give the cores of each host, a number >= 0.1 (e.g. 0.667)" "$DIR/err" ||
    fail "--host_cpus=$bad: $(cat "$DIR/err")"
  [[ ! -s "$DIR/out" ]] || fail "--host_cpus=$bad printed on stdout: $(cat "$DIR/out")"
done
echo PASS
