#!/bin/bash
# The demo's 2-node plan (tools/dev.sh demo: gpt 2 blocks, hidden 256, dp=2 across nodes x
# tp=2) through two loopback oneflowd, once per transport, against the same plan in one
# process (`oneflow run`), in one run. One JSON line per case:
#   {"bench":"launch_transport","case":"run","step_ms":...}
#   {"bench":"launch_transport","case":"launch","transport":"ucx","step_ms":...,
#    "to_run":...}
# step_ms is the median of the iterations after the first 5 (warm-up); to_run is the
# launch's median over the one-process median (the issue's goal: <= 1.3).
#
#   bazel build //examples/gpt:gpt //tools/cli:oneflow //tools/launcher:oneflowd //tools/worker:oneflow_worker
#   bench/collectives/launch_transport_bench.sh [BIN_DIR] [ITERS]
# BIN_DIR defaults to bazel-bin; ITERS to 30.
set -euo pipefail
bin="${1:-bazel-bin}"
iters="${2:-30}"
dir="$(mktemp -d)"
daemons=()
cleanup() {
  [[ ${#daemons[@]} -gt 0 ]] && kill "${daemons[@]}" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

# The median step_ms of a metrics file's lines after the first 5.
median_step_ms() {
  python3 -c '
import json, statistics, sys
steps = [json.loads(line)["step_ms"] for line in open(sys.argv[1]) if line.startswith("{")][5:]
print("%.3f" % statistics.median(steps))' "$1"
}

"$bin/examples/gpt/gpt" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 --layers=2 \
  --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01 --plan_out="$dir/gpt2.plan" >/dev/null
"$bin/tools/cli/oneflow" run "$dir/gpt2.plan" --iters="$iters" --metrics="$dir/run.jsonl" >/dev/null 2>&1
run_ms="$(median_step_ms "$dir/run.jsonl")"
echo "{\"bench\":\"launch_transport\",\"case\":\"run\",\"iters\":$iters,\"step_ms\":$run_ms}"

head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
nodes=()
for i in 0 1; do
  mkdir -p "$dir/daemon$i"
  "$bin/tools/launcher/oneflowd" --listen=127.0.0.1:0 --token_file="$dir/token" \
    --work_dir="$dir/daemon$i" >"$dir/daemon$i.out" 2>"$dir/daemon$i.log" &
  daemons+=($!)
done
for i in 0 1; do
  for _ in $(seq 100); do
    grep -q "listening on" "$dir/daemon$i.out" 2>/dev/null && break
    sleep 0.1
  done
  nodes+=("$(sed -n 's/^oneflowd listening on //p' "$dir/daemon$i.out")")
done
for transport in ucx gloo; do
  "$bin/tools/cli/oneflow" launch --nodes="${nodes[0]},${nodes[1]}" --token_file="$dir/token" \
    "$dir/gpt2.plan" --iters="$iters" --transport="$transport" --metrics="$dir/$transport.jsonl" >/dev/null 2>&1
  grep -q "\"transport\": \"$transport\"" "$dir/$transport.jsonl" ||
    { echo "launch_transport_bench: the metrics of --transport=$transport do not name it" >&2; exit 1; }
  ms="$(median_step_ms "$dir/$transport.jsonl")"
  ratio="$(python3 -c "print('%.3f' % ($ms / $run_ms))")"
  echo "{\"bench\":\"launch_transport\",\"case\":\"launch\",\"transport\":\"$transport\",\"iters\":$iters,\"step_ms\":$ms,\"to_run\":$ratio}"
done
