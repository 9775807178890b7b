#!/bin/bash
# The documented scheduler commands (docs/launcher.md, "Without daemons") on two hosts:
# two network namespaces joined by a veth pair, one worker in each, started from the
# environment exactly as the docs show and without ONEFLOW_WORKER_HOST: each worker must
# bind its address on the route to MASTER_ADDR (127.0.0.1 would refuse the other host's
# connections). Skips where namespaces cannot be made (not root, no iproute2, a sandbox
# without CAP_NET_ADMIN). Everything it creates is named ofw2h<pid>-* and removed on exit.
set -u
MLP="$TEST_SRCDIR/$TEST_WORKSPACE/examples/mlp/mlp"
WORKER="$TEST_SRCDIR/$TEST_WORKSPACE/tools/worker/oneflow_worker"
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
NAME="ofw2h$$"
A="$NAME-a"
B="$NAME-b"
NET="10.203.$(( $$ % 200 + 20 ))"

skip() {
  # tools/dev.sh test runs as root with iproute2 and says so (ONEFLOW_REQUIRE_TEST_DEPS):
  # there, not getting the namespaces is a failure, not a skip.
  if [[ ",${ONEFLOW_REQUIRE_TEST_DEPS:-}," == *",netns,"* ]]; then
    echo "FAIL: $* (ONEFLOW_REQUIRE_TEST_DEPS=$ONEFLOW_REQUIRE_TEST_DEPS requires network namespaces)" >&2
    exit 1
  fi
  echo "SKIP: $*"
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"$XML_OUTPUT_FILE" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="two_hosts_test" tests="1" skipped="1"><testcase name="two_hosts"><skipped message="$*"/></testcase></testsuite></testsuites>
XML
  fi
  exit 0
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cleanup() {
  for ns in "$A" "$B"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
}

[[ "$(id -u)" == 0 ]] || skip "needs root for network namespaces"
command -v ip >/dev/null || skip "iproute2's ip is missing"
trap cleanup EXIT
ip netns add "$A" 2>/dev/null || skip "cannot create network namespaces here"
ip netns add "$B" || skip "cannot create a second network namespace"
ip link add "${NAME}x" netns "$A" type veth peer name "${NAME}y" netns "$B" || skip "cannot create a veth pair"
ip -n "$A" link set lo up && ip -n "$B" link set lo up
ip -n "$A" addr add "$NET.1/24" dev "${NAME}x" && ip -n "$A" link set "${NAME}x" up
ip -n "$B" addr add "$NET.2/24" dev "${NAME}y" && ip -n "$B" link set "${NAME}y" up

"$MLP" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 --plan_out="$DIR/mlp2.plan" >"$DIR/compile.log" 2>&1 ||
  fail "compiling the plan: $(cat "$DIR/compile.log")"

# The documented commands, rank 0 on host A (MASTER_ADDR), rank 1 on host B.
ip netns exec "$B" env WORLD_SIZE=2 MASTER_ADDR="$NET.1" MASTER_PORT=29500 RANK=1 \
  timeout 120 "$WORKER" --plan="$DIR/mlp2.plan" --iters=20 >"$DIR/rank1.out" 2>"$DIR/rank1.err" &
RANK1=$!
ip netns exec "$A" env WORLD_SIZE=2 MASTER_ADDR="$NET.1" MASTER_PORT=29500 RANK=0 \
  timeout 120 "$WORKER" --plan="$DIR/mlp2.plan" --iters=20 >"$DIR/rank0.out" 2>"$DIR/rank0.err"
RC0=$?
wait "$RANK1"
RC1=$?
[[ $RC0 -eq 0 ]] || fail "rank 0 exited $RC0: $(cat "$DIR/rank0.err")"
[[ $RC1 -eq 0 ]] || fail "rank 1 exited $RC1: $(cat "$DIR/rank1.err")"
LINES=$(grep -c '"loss"' "$DIR/rank0.out")
[[ "$LINES" -eq 20 ]] || fail "rank 0 printed $LINES metrics lines, not 20: $(cat "$DIR/rank0.out")"
echo "PASS: two hosts ($NET.1, $NET.2) trained 20 iterations from the environment alone"
