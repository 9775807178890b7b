#!/usr/bin/env bash
# A tied embedding's gradient across a pipeline cut, before and after it crossed once per
# iteration (session 45; docs/auto_parallel_measurements.md, "Tied gradients once per
# iteration"): the bench gpt with pp = 2 on 2 emulated hosts (Linux network namespaces on
# a bridge, each link shaped with tc tbf to --rate_mbit, one `oneflowd` each;
# bench/lib/netns_hosts.sh), compiled by two builds' `gpt` (BEFORE and AFTER: plans that
# differ only in where the embedding's gradient is accumulated) and launched with the
# same runtime (AFTER's daemons and workers; the change is the compiler's), and the same
# plans in one process (`oneflow run`) as the reference, in rounds that interleave all of
# them so slow drift of the machine spreads over every plan (odd rounds run the AFTER
# build's plan first).
#
#   sudo bench/auto_parallel/tied_gradient_hosts_bench.sh --before=DIR --after=DIR
#   sudo bench/auto_parallel/tied_gradient_hosts_bench.sh --before=DIR --after=DIR --micro_batches=8,24 --repeats=2
#
# DIR: a bazel-bin (or a copy) holding examples/gpt/gpt, tools/cli/oneflow,
# tools/launcher/oneflowd and tools/worker/oneflow_worker.
# Flags [defaults]:
#   --micro_batches=M,...  [8,24]
#   --rate_mbit=R          link rate of each host [1000]
#   --repeats=N            rounds; a plan's step is the median of its rounds' [2]
#   --iters=K --warmup=W   iterations per launch or run, and those left out of its median [20, 5]
#   --gpt_flags="..."      [--layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512]
#   --work_dir=DIR --keep  where plans and logs go; kept with --keep or on failure
#
# Prints JSON lines: a "config" line; per (M, build) one line with the median step across
# the hosts and in one process, their ratio, and the bytes host 1 (the last stage) sent per
# iteration (its eth0 counter over the launch, divided by the iterations); per M a summary
# line with after / before of each. Needs root. Everything it creates is named
# $NETNS_PREFIX-* (oftg<pid>-* unless the environment sets it) and torn down on exit.
# A benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
# shellcheck source=bench/lib/step_metrics.sh
source "$ROOT/bench/lib/step_metrics.sh"
NETNS_PREFIX="${NETNS_PREFIX:-oftg$$}"
NETNS_SUBNET="10.234.0"

BEFORE=""
AFTER=""
MICRO_BATCHES="8,24"
RATE=1000
REPEATS=2
ITERS=20
WARMUP=5
GPT_FLAGS="--layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512"
WORK_DIR=""
KEEP=0
PORT=5321

log() { echo "tied_gradient_hosts_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --before=*) BEFORE="${arg#*=}" ;;
    --after=*) AFTER="${arg#*=}" ;;
    --micro_batches=*) MICRO_BATCHES="${arg#*=}" ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --repeats=*) REPEATS="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
[[ -n "$BEFORE" && -n "$AFTER" ]] || die "give --before=DIR and --after=DIR (the two builds' binaries)"
[[ "$RATE" =~ ^[1-9][0-9]*$ ]] || die "--rate_mbit=$RATE: give a positive integer (Mbit/s)"
[[ "$REPEATS" =~ ^[1-9][0-9]*$ ]] || die "--repeats=$REPEATS: give a whole number >= 1"
[[ "$ITERS" =~ ^[0-9]+$ && "$WARMUP" =~ ^[0-9]+$ ]] || die "--iters and --warmup must be whole numbers"
(( WARMUP + 2 <= ITERS )) || die "--warmup=$WARMUP must leave at least 2 of --iters=$ITERS"
[[ "$MICRO_BATCHES" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--micro_batches=$MICRO_BATCHES: give whole numbers >= 1, comma-separated"
[[ "$GPT_FLAGS" =~ ^[-A-Za-z0-9_=.,\ ]*$ ]] || die "--gpt_flags: only flags (letters, digits, - _ = . ,)"
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"
IFS=, read -r -a M_LIST <<< "$MICRO_BATCHES"

RUN=""
OK=0
netns_trap_teardown

main() {
  RUN="${WORK_DIR:-$(mktemp -d /tmp/tied_gradient_hosts_bench.XXXXXX)}"
  mkdir -p "$RUN"
  local build
  for build in before after; do
    local dir="$BEFORE"
    [[ "$build" == after ]] && dir="$AFTER"
    netns_private_binaries "$dir" "$RUN/$build" examples/gpt/gpt tools/cli/oneflow tools/launcher/oneflowd \
      tools/worker/oneflow_worker || die "a binary is missing in $dir"
  done
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  echo "{\"config\": {\"bench\": \"tied_gradient_hosts\", \"micro_batches\": \"$MICRO_BATCHES\", \"rate_mbit\": $RATE," \
    "\"repeats\": $REPEATS, \"iters\": $ITERS, \"warmup\": $WARMUP, \"gpt_flags\": \"$GPT_FLAGS\", \"cpus\": $(nproc)," \
    "\"load_avg_1m\": $(cut -d' ' -f1 /proc/loadavg), \"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\"}}"
  local m round
  for m in "${M_LIST[@]}"; do
    for build in before after; do
      # shellcheck disable=SC2086
      "$RUN/$build/gpt" --nodes=2 --devices_per_node=1 --pp=2 --micro_batches="$m" $GPT_FLAGS \
        --plan_out="$RUN/m${m}_$build.plan" > "$RUN/m${m}_$build.compile.log" 2>&1 ||
        die "compile of pp=2 M=$m with the $build build failed: $(tail -2 "$RUN/m${m}_$build.compile.log")"
      : > "$RUN/m${m}_$build.rounds"
    done
  done
  netns_create 2
  netns_shape "$RATE"
  netns_start_daemons "$RUN/after" "$RUN/token" "$RUN/netns" "$PORT"
  local base tx0 tx1 hosts one
  local -a order
  for ((round = 0; round < REPEATS; round++)); do
    # Odd rounds run the after build first, so neither build always follows the other.
    order=(before after)
    (( round % 2 )) && order=(after before)
    for m in "${M_LIST[@]}"; do
      for build in "${order[@]}"; do
        base="$RUN/m${m}_${build}_r$round"
        tx0="$(netns_link_bytes 1 | cut -d' ' -f1)"
        hosts=null
        if timeout -k 10 240 ip netns exec "$(netns_name 0)" "$RUN/after/oneflow" launch "$RUN/m${m}_$build.plan" \
            --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" --metrics="$base.hosts.metrics" \
            --job_id="tg-m$m-$build-$round-$$" --collective_timeout_s=180 --hang_seconds=120 \
            > "$base.launch.out" 2> "$base.launch.err"; then
          hosts="$(median_step "$base.hosts.metrics" "$WARMUP")"
        else
          log "launch of M=$m ($build) failed: $(tail -3 "$base.launch.err" | tr '\n' ' ')"
        fi
        tx1="$(netns_link_bytes 1 | cut -d' ' -f1)"
        one=null
        if "$RUN/after/oneflow" run "$RUN/m${m}_$build.plan" --iters="$ITERS" --metrics="$base.one.metrics" \
            > "$base.run.out" 2> "$base.run.err"; then
          one="$(median_step "$base.one.metrics" "$WARMUP")"
        else
          log "one-process run of M=$m ($build) failed: $(tail -3 "$base.run.err" | tr '\n' ' ')"
        fi
        echo "$hosts $one $(( (tx1 - tx0) / ITERS )) $(cut -d' ' -f1 /proc/loadavg)" >> "$RUN/m${m}_$build.rounds"
      done
    done
  done
  netns_teardown
  "$PY" - "$RUN" "$RATE" "${M_LIST[@]}" <<'PYEOF'
import json, statistics, sys
run, rate, ms = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
number = lambda t: None if t == "null" else float(t)
for m in ms:
    lines = {}
    for build in ("before", "after"):
        rounds = [l.split() for l in open(f"{run}/m{m}_{build}.rounds")]
        hosts = [number(r[0]) for r in rounds]
        one = [number(r[1]) for r in rounds]
        ran_hosts = [h for h in hosts if h is not None]
        ran_one = [o for o in one if o is not None]
        line = {"bench": "tied_gradient_hosts", "pp": 2, "micro_batches": int(m), "build": build, "rate_mbit": rate,
                "hosts_ms": round(statistics.median(ran_hosts), 3) if ran_hosts else None,
                "one_process_ms": round(statistics.median(ran_one), 3) if ran_one else None,
                "hosts_rounds_ms": hosts, "one_process_rounds_ms": one,
                "host1_tx_bytes_per_iteration": [int(r[2]) for r in rounds],
                "load_avg_1m": [float(r[3]) for r in rounds]}
        if line["hosts_ms"] and line["one_process_ms"]:
            line["hosts_over_one_process"] = round(line["hosts_ms"] / line["one_process_ms"], 4)
        lines[build] = line
        print(json.dumps(line), flush=True)
    b, a = lines["before"], lines["after"]
    ratio = lambda key: round(a[key] / b[key], 4) if a.get(key) and b.get(key) else None
    print(json.dumps({"bench": "tied_gradient_hosts_summary", "pp": 2, "micro_batches": int(m),
                      "hosts_after_over_before": ratio("hosts_ms"),
                      "one_process_after_over_before": ratio("one_process_ms"),
                      "hosts_over_one_process_after_over_before": ratio("hosts_over_one_process"),
                      "host1_tx_bytes_per_iteration_after_over_before":
                          round(statistics.median(a["host1_tx_bytes_per_iteration"]) /
                                statistics.median(b["host1_tx_bytes_per_iteration"]), 4)}), flush=True)
PYEOF
  OK=1
}

main
