#!/usr/bin/env bash
# Traces of hand layouts of the prediction benchmark's gpt on emulated hosts, and each
# collective call in them timed from its last member's arrival (collective_calls.py): what a
# call between processes costs on these links by kind and size, beside the link line the
# daemons' calibration measured (docs/auto_parallel_measurements.md, "Session 48: c48cache").
# As prediction_hosts_bench.sh: one network namespace per node on a bridge, links shaped with
# tc to --rate_mbit, one `oneflowd` each (bench/lib/netns_hosts.sh), `oneflow calibrate
# --nodes` between them; then each layout compiled with --predict_step and that calibration,
# launched twice (the first with --trace), and the trace's calls printed.
#
#   sudo flock /work/.bench.lock env NETNS_PREFIX=c48t bench/auto_parallel/collective_calls_hosts.sh \
#     --bin_dir="$(bazel info -c opt bazel-bin)" --work_dir=/tmp/calls \
#     --layouts="--dp=3 --zero=1;--dp=1 --tp=3 --compression=off"
#
# Flags [defaults]:
#   --nodes=N             emulated hosts, one device each [3]
#   --rate_mbit=R         link rate [1000]
#   --layouts="F;F;..."   the gpt's layout flags of each plan, ';' between plans [dp=3 ZeRO-1]
#   --gpt_flags="..."     the model [the prediction benchmark's: --layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512]
#   --iters=K             iterations per launch [20]
#   --bin_dir=DIR         built binaries (DIR/tools/cli/oneflow, ...): required
#   --work_dir=DIR        plans, traces, logs (kept): required
# Prints per layout a {"layout": ..., "predicted": the launch's predicted-vs-measured line,
# "launches_ms": [...]} line, then collective_calls.py's lines for its trace. Needs root.
# A benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/bench/auto_parallel"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
NETNS_PREFIX="${NETNS_PREFIX:-ofcc$$}"
NETNS_SUBNET="10.233.48"

NODES=3
RATE=1000
LAYOUTS="--dp=3 --zero=1"
GPT_FLAGS="--layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512"
ITERS=20
BIN_DIR=""
WORK_DIR=""
log() { echo "collective_calls_hosts: $*" >&2; }
die() { log "error: $*"; exit 2; }
for arg in "$@"; do
  case "$arg" in
    --nodes=*) NODES="${arg#*=}" ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --layouts=*) LAYOUTS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
[[ "$NODES" =~ ^[0-9]+$ ]] && (( NODES >= 2 )) || die "--nodes=$NODES: give a whole number >= 2"
[[ "$RATE" =~ ^[1-9][0-9]*$ ]] || die "--rate_mbit=$RATE: give a positive integer (Mbit/s)"
[[ "$ITERS" =~ ^[0-9]+$ ]] && (( ITERS >= 6 )) || die "--iters=$ITERS: give at least 6 (the calls count iterations 3..iters-3)"
[[ -n "$BIN_DIR" ]] || die "--bin_dir is required (e.g. \"\$(bazel info -c opt bazel-bin)\")"
[[ -n "$WORK_DIR" ]] || die "--work_dir is required (where plans and traces are kept)"
[[ "$LAYOUTS$GPT_FLAGS" =~ ^[-A-Za-z0-9_=.,\;\ ]*$ ]] || die "--layouts / --gpt_flags: only flags (letters, digits, - _ = . , ;)"
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"

RUN="$WORK_DIR"
KEEP=1
OK=0
netns_trap_teardown
mkdir -p "$RUN"
netns_private_binaries "$BIN_DIR" "$RUN/bin" tools/launcher/oneflowd tools/worker/oneflow_worker \
  tools/cli/oneflow examples/gpt/gpt || die "a binary is missing in $BIN_DIR"
BIN="$RUN/bin"
head -c 32 /dev/urandom | base64 > "$RUN/token"
chmod 600 "$RUN/token"
netns_create "$NODES"
netns_shape "$RATE"
netns_start_daemons "$BIN" "$RUN/token" "$RUN/netns" 5348
timeout -k 10 300 ip netns exec "$(netns_name 0)" "$BIN/oneflow" calibrate --nodes="$NETNS_NODES_ARG" \
  --token_file="$RUN/token" --out="$RUN/cluster.jsonl" > "$RUN/calibrate.out" 2> "$RUN/calibrate.err" ||
  die "oneflow calibrate between the daemons failed: $(tail -3 "$RUN/calibrate.err")"
IFS=';' read -r -a PLANS <<< "$LAYOUTS"
for i in "${!PLANS[@]}"; do
  # shellcheck disable=SC2086
  "$BIN/gpt" --nodes="$NODES" --devices_per_node=1 $GPT_FLAGS ${PLANS[$i]} --predict_step \
    --codec_calibration="$RUN/cluster.jsonl" --plan_out="$RUN/layout$i.plan" > "$RUN/layout$i.compile.log" 2>&1 ||
    die "compile of '${PLANS[$i]}' failed: $(tail -2 "$RUN/layout$i.compile.log")"
done
# Two rounds over the plans, the first traced (tracing adds to each act), so a slow moment
# of the machine lands on every plan rather than on one.
for round in 1 2; do
  for i in "${!PLANS[@]}"; do
    trace=()
    [[ "$round" == 1 ]] && trace=(--trace="$RUN/layout$i.trace.json")
    timeout -k 10 240 ip netns exec "$(netns_name 0)" "$BIN/oneflow" launch "$RUN/layout$i.plan" \
      --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" --metrics="$RUN/layout$i.r$round.metrics" \
      --job_id="cc-$i-$round-$$" --collective_timeout_s=180 --hang_seconds=120 "${trace[@]}" \
      > "$RUN/layout$i.r$round.out" 2> "$RUN/layout$i.r$round.err" || log "launch of '${PLANS[$i]}' (round $round) failed"
  done
done
for i in "${!PLANS[@]}"; do
  "$PY" - "${PLANS[$i]}" "$RUN/layout$i" <<'PYEOF'
import json, sys
layout, base = sys.argv[1:]
line = {"bench": "auto_parallel_collective_calls_hosts", "layout": layout, "launches_ms": []}
for r in (1, 2):
    try:
        for text in open("%s.r%d.err" % (base, r), errors="replace"):
            if "auto-parallel: predicted step" in text and r == 1:
                line["predicted"] = text.strip()
            if "measured " in text and "auto-parallel" in text:
                line["launches_ms"].append(float(text.split("measured ")[1].split(" ms")[0]))
    except OSError:
        pass
print(json.dumps(line), flush=True)
PYEOF
  if [[ -s "$RUN/layout$i.trace.json" ]]; then
    "$BIN/oneflow" inspect "$RUN/layout$i.plan" --format=json > "$RUN/layout$i.inspect.json"
    "$PY" "$HERE/collective_calls.py" "$RUN/layout$i.inspect.json" "$RUN/layout$i.trace.json" \
      --first=3 --last=$((ITERS - 3)) --calibration="$RUN/cluster.jsonl" || log "no calls in layout $i's trace"
  fi
done
OK=1
