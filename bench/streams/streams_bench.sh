#!/usr/bin/env bash
# Communication streams (docs/runtime.md#communication-streams; issue 24 item 2): the gpt
# on dp=2 x tp=2, compiled with one communication stream per group class
# (--communication_streams=auto: tensor-parallel collectives on one thread, data-parallel
# reductions and buckets on another) and with every collective on one thread
# (--communication_streams=one, the reference), run in turn in the same rounds:
#   - in one process (`oneflow run`): 1 node x 4 devices, collectives in shared memory;
#   - launched (`oneflow launch`, unless --no_launch): 2 nodes x 2 devices, one oneflowd
#     per node on loopback, dp across the nodes (Gloo), tp inside each node.
# Prints JSON lines (stdout): per case and mode the median step time over the rounds'
# post-warmup iterations and the speedup over one stream (one-stream ms / this ms), the
# loss difference between the modes, and from a trace of each in-process plan
# (`oneflow run --trace`) per device the milliseconds its two streams' acts overlapped
# (0 by construction with one stream) and the communication acts' total.
#
#   bench/streams/streams_bench.sh
#   bench/streams/streams_bench.sh --iters=20 --rounds=2 --gpt_flags="--layers=2 --hidden=256"
#
# Flags [defaults]: --iters=K [25] --warmup=W [5] --rounds=R [3] --gpt_flags="..." [""]
# --no_launch (in-process only) --bin_dir=DIR (prebuilt binaries) --work_dir=DIR [mktemp].
# The daemons listen on 127.0.0.1 ports the kernel picks; they are stopped on exit,
# failure or Ctrl-C. A benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ITERS=25
WARMUP=5
ROUNDS=3
GPT_FLAGS=""
LAUNCH=1
BIN_DIR=""
WORK_DIR=""
for arg in "$@"; do
  case "$arg" in
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --no_launch) LAUNCH=0 ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    *) echo "streams_bench: unknown flag $arg (valid: --iters= --warmup= --rounds= --gpt_flags= --no_launch --bin_dir= --work_dir=)" >&2; exit 2 ;;
  esac
done
log() { echo "streams_bench: $*" >&2; }

RUN="${WORK_DIR:-$(mktemp -d /tmp/streams_bench.XXXXXX)}"
mkdir -p "$RUN"
if [[ -z "$BIN_DIR" ]]; then
  # -c opt, with its own convenience symlinks so the tree's bazel-bin stays as it was.
  (cd "$ROOT" && bazel build -c opt --jobs=2 --symlink_prefix="$RUN/bazel-" //tools/launcher:oneflowd \
    //tools/worker:oneflow_worker //tools/cli:oneflow //examples/gpt >&2)
  BIN_DIR="$RUN/bazel-bin"
fi
BIN_DIR="$(cd "$BIN_DIR" && pwd)"
ONEFLOW="$BIN_DIR/tools/cli/oneflow"
DAEMON_PIDS=()
cleanup() {
  local pid
  for pid in "${DAEMON_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${DAEMON_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

NODES_ARG=""
if (( LAUNCH )); then
  # Two daemons on loopback, port 0: each prints the port it got.
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  for i in 0 1; do
    mkdir -p "$RUN/node$i"
    "$BIN_DIR/tools/launcher/oneflowd" --listen=127.0.0.1:0 --token_file="$RUN/token" --work_dir="$RUN/node$i/work" \
      --worker_binary="$BIN_DIR/tools/worker/oneflow_worker" > "$RUN/node$i/oneflowd.out" 2> "$RUN/node$i/oneflowd.err" &
    DAEMON_PIDS+=($!)
  done
  for i in 0 1; do
    deadline=$((SECONDS + 20))
    until grep -q "oneflowd listening on" "$RUN/node$i/oneflowd.out" 2>/dev/null; do
      kill -0 "${DAEMON_PIDS[$i]}" 2>/dev/null || { log "oneflowd $i exited: $(tail -3 "$RUN/node$i/oneflowd.err")"; exit 1; }
      (( SECONDS < deadline )) || { log "oneflowd $i did not start"; exit 1; }
      sleep 0.1
    done
    address="$(grep -o "oneflowd listening on [^ ]*" "$RUN/node$i/oneflowd.out" | head -1 | awk '{print $4}')"
    NODES_ARG+="${NODES_ARG:+,}$address"
  done
  log "daemons: $NODES_ARG; work dir $RUN"
fi

MODES=(auto one)
# shellcheck disable=SC2086
for mode in "${MODES[@]}"; do
  "$BIN_DIR/examples/gpt/gpt" --nodes=1 --devices_per_node=4 --dp=2 --tp=2 $GPT_FLAGS \
    --communication_streams="$mode" --plan_out="$RUN/run.$mode.plan" > "$RUN/run.$mode.compile.log"
  if (( LAUNCH )); then
    "$BIN_DIR/examples/gpt/gpt" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 $GPT_FLAGS \
      --communication_streams="$mode" --plan_out="$RUN/launch.$mode.plan" > "$RUN/launch.$mode.compile.log"
  fi
done
log "compiled: $(grep -h '^compiled' "$RUN/run.auto.compile.log")"

for ((round = 0; round < ROUNDS; round++)); do
  for mode in "${MODES[@]}"; do
    "$ONEFLOW" run "$RUN/run.$mode.plan" --iters="$ITERS" --metrics="$RUN/run.$mode.r$round.jsonl" > /dev/null
    if (( LAUNCH )); then
      "$ONEFLOW" launch "$RUN/launch.$mode.plan" --nodes="$NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" \
        --metrics="$RUN/launch.$mode.r$round.jsonl" --job_id="sb-$mode-$round-$$" > /dev/null \
        2> "$RUN/launch.$mode.r$round.err" || { log "launch failed:"; tail -20 "$RUN/launch.$mode.r$round.err" >&2; exit 1; }
      sleep 0.3
    fi
  done
  log "round $round done"
done
for mode in "${MODES[@]}"; do
  "$ONEFLOW" run "$RUN/run.$mode.plan" --iters="$ITERS" --metrics="$RUN/trace.$mode.jsonl" \
    --trace="$RUN/trace.$mode.json" > /dev/null 2> "$RUN/trace.$mode.err"
done

python3 - "$RUN" "$WARMUP" "$GPT_FLAGS" "$LAUNCH" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import glob, json, statistics, sys
run, warmup, gpt_flags, launch, cores, load = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5], sys.argv[6]
def lines(path):
    return [json.loads(l) for l in open(path) if l.startswith("{")]
def steps(pattern):
    out = []
    for path in sorted(glob.glob(f"{run}/{pattern}")):
        out += [l["step_ms"] for l in lines(path) if "step_ms" in l][warmup:]
    return out
def losses(path):
    return [l["loss"] for l in lines(path) if "loss" in l]
print(json.dumps({"bench": "streams", "model": "gpt " + (gpt_flags or "(defaults)"), "layout": "dp=2 x tp=2",
                  "cores": int(cores), "load_average_at_end": float(load)}))
cases = [("in_process", "run", "1 node x 4 devices, oneflow run")]
if launch:
    cases.append(("launch", "launch", "2 nodes x 2 devices on loopback, oneflow launch"))
for case, prefix, what in cases:
    medians = {mode: statistics.median(steps(f"{prefix}.{mode}.r*.jsonl")) for mode in ("auto", "one")}
    for mode in ("auto", "one"):
        s = steps(f"{prefix}.{mode}.r*.jsonl")
        print(json.dumps({"case": case, "what": what, "communication_streams": mode,
                          "median_step_ms": round(medians[mode], 2), "min_step_ms": round(min(s), 2), "steps": len(s),
                          "reference": "communication_streams=one, same rounds",
                          "speedup_vs_one_stream": round(medians["one"] / medians[mode], 3)}))
    a, b = losses(f"{run}/{prefix}.auto.r0.jsonl"), losses(f"{run}/{prefix}.one.r0.jsonl")
    print(json.dumps({"case": case, "check": "max relative loss difference, auto vs one",
                      "value": max(abs(x - y) / abs(y) for x, y in zip(a, b))}))
# Per device, from the traces: ms during which acts of two communication tracks (streams)
# overlapped, and the communication acts' total ms, over the post-warmup iterations.
for mode in ("auto", "one"):
    trace = json.load(open(f"{run}/trace.{mode}.json"))
    per_track = {}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e["args"]["iteration"] < warmup:
            continue
        if e["tid"] == 1 or e["tid"] >= 10:  # communication stream 0, or stream tid - 10
            per_track.setdefault(e["pid"], {}).setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    overlap_ms, communication_ms = [], []
    for device, tracks in sorted(per_track.items()):
        total = sum(end - start for t in tracks.values() for start, end in t)
        both = 0.0
        names = sorted(tracks)
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                for s1, e1 in tracks[names[i]]:
                    for s2, e2 in tracks[names[j]]:
                        both += max(0.0, min(e1, e2) - max(s1, s2))
        overlap_ms.append(round(both / 1000, 2))
        communication_ms.append(round(total / 1000, 2))
    print(json.dumps({"trace": f"in_process, communication_streams={mode}", "iterations": len(lines(f"{run}/trace.{mode}.jsonl")) - warmup,
                      "streams_per_device": max(len(t) for t in per_track.values()) if per_track else 0,
                      "overlapped_ms_per_device": overlap_ms, "communication_ms_per_device": communication_ms}))
PY
