#!/usr/bin/env bash
# Gradient buckets across processes (docs/benchmarks.md; issue 12, "Benchmarks"): the
# 2-block gpt (examples/gpt defaults) data-parallel over 2 nodes x 1 device, each node a
# process under its own oneflowd on loopback, launched with `oneflow launch`, with
# gradient buckets (--bucket_mb, default 25) and without (--bucket_mb=0); and the same
# plans run in one process (`oneflow run`: both devices as threads, collectives in shared
# memory); and both again with small buckets (--overlap_bucket_mb, several buckets that
# overlap backward). Prints JSON lines (stdout): per configuration the median step time over the
# rounds' post-warmup iterations and its ratio to the in-process step (throughput ratio:
# in-process ms / this ms; the goal for launch with buckets is >= 0.8), and the overlap a
# trace of the in-process run shows (bucket all-reduce time during which the compute
# thread acted, acts that overlapped a later backward op), and the share of every gradient
# reduction's time hidden behind compute (`oneflow run --trace`'s "gradient reductions"
# line, actors/reduction_overlap.h) with the compute time it is compared with. Then the
# demo's 2-node plan (tools/dev.sh demo: gpt 2 blocks, hidden 256, dp=2 across the nodes x
# tp=2) with default buckets and without: collectives per step on device 0 (all of them,
# and the all-reduces), the launched step against the same plan in one process, and the
# hidden share in one process.
#
#   bench/buckets/buckets_bench.sh
#   bench/buckets/buckets_bench.sh --iters=40 --rounds=3 --gpt_flags="--layers=2 --hidden=256"
#
# Flags [defaults]: --iters=K [30] --warmup=W [5] --rounds=R [3] --gpt_flags="..." [""]
# --demo_flags="..." [the demo's gpt flags] --demo=0 (skip the demo plan)
# --overlap_bucket_mb=M [0.3] (a small limit for the overlap trace: several buckets)
# Launches name a rank hung only after 60 s without progress (--hang_seconds=60): on a
# loaded 2-core machine a compute act can take longer than the default allows.
# --bin_dir=DIR (prebuilt binaries) --work_dir=DIR [mktemp]. The daemons listen on
# 127.0.0.1 ports the kernel picks; both are stopped on exit, failure or Ctrl-C. A
# benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ITERS=30
WARMUP=5
ROUNDS=3
GPT_FLAGS=""
OVERLAP_MB=0.3
BIN_DIR=""
WORK_DIR=""
DEMO=1
DEMO_FLAGS="--layers=2 --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01"
for arg in "$@"; do
  case "$arg" in
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --overlap_bucket_mb=*) OVERLAP_MB="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --demo=*) DEMO="${arg#*=}" ;;
    --demo_flags=*) DEMO_FLAGS="${arg#*=}" ;;
    *) echo "buckets_bench: unknown flag $arg" >&2; exit 2 ;;
  esac
done
log() { echo "buckets_bench: $*" >&2; }

RUN="${WORK_DIR:-$(mktemp -d /tmp/buckets_bench.XXXXXX)}"
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

# Two daemons on loopback, port 0: each prints the port it got.
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
NODES_ARG=""
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

# shellcheck disable=SC2086
for mb in 25 0 "$OVERLAP_MB"; do
  "$BIN_DIR/examples/gpt/gpt" --nodes=2 --devices_per_node=1 --dp=2 $GPT_FLAGS --bucket_mb="$mb" \
    --plan_out="$RUN/b$mb.plan" > "$RUN/b$mb.compile.log"
done
log "compiled: $(grep -h '^compiled' "$RUN/b25.compile.log") / $(grep -h '^compiled' "$RUN/b0.compile.log")"

for ((round = 0; round < ROUNDS; round++)); do
  for mb in 25 0 "$OVERLAP_MB"; do
    "$ONEFLOW" run "$RUN/b$mb.plan" --iters="$ITERS" --metrics="$RUN/run.b$mb.r$round.jsonl" > /dev/null
    "$ONEFLOW" launch "$RUN/b$mb.plan" --nodes="$NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" --hang_seconds=60 \
      --metrics="$RUN/launch.b$mb.r$round.jsonl" --job_id="bb-$mb-$round-$$" > /dev/null 2> "$RUN/launch.b$mb.r$round.err" ||
      { log "launch failed:"; tail -20 "$RUN/launch.b$mb.r$round.err" >&2; exit 1; }
    sleep 0.3
  done
  log "round $round done"
done
for mb in 25 0 "$OVERLAP_MB"; do
  "$ONEFLOW" run "$RUN/b$mb.plan" --iters="$ITERS" --metrics="$RUN/trace.b$mb.jsonl" --trace="$RUN/trace.b$mb.json" \
    > /dev/null 2> "$RUN/trace.b$mb.err"
done

# The demo's plan: 2 nodes x 2 devices, dp=2 across the nodes x tp=2, buckets on (25) and
# off (0); in one process (with a trace) and launched, alternating, ROUNDS times.
if [[ "$DEMO" != 0 ]]; then
  for mb in 25 0; do
    # shellcheck disable=SC2086
    "$BIN_DIR/examples/gpt/gpt" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 $DEMO_FLAGS --bucket_mb="$mb" \
      --plan_out="$RUN/demo.b$mb.plan" > "$RUN/demo.b$mb.compile.log"
    # The order lines (one per communication stream) and their continuation lines (inspect
    # wraps lines at 200 characters).
    "$ONEFLOW" inspect "$RUN/demo.b$mb.plan" --device=0 |
      awk '/^    collective order/ { f = 1; print; next } f && /^        / { print; next } { f = 0 }' > "$RUN/demo.b$mb.order"
  done
  for ((round = 0; round < ROUNDS; round++)); do
    for mb in 25 0; do
      "$ONEFLOW" run "$RUN/demo.b$mb.plan" --iters="$ITERS" --metrics="$RUN/demo_run.b$mb.r$round.jsonl" > /dev/null
      "$ONEFLOW" launch "$RUN/demo.b$mb.plan" --nodes="$NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" --hang_seconds=60 \
        --metrics="$RUN/demo_launch.b$mb.r$round.jsonl" --job_id="bd-$mb-$round-$$" > /dev/null \
        2> "$RUN/demo_launch.b$mb.r$round.err" ||
        { log "demo launch failed:"; tail -20 "$RUN/demo_launch.b$mb.r$round.err" >&2; exit 1; }
      sleep 0.3
    done
    log "demo round $round done"
  done
  for mb in 25 0; do
    "$ONEFLOW" run "$RUN/demo.b$mb.plan" --iters="$ITERS" --trace="$RUN/demo_trace.b$mb.json" > /dev/null \
      2> "$RUN/demo_trace.b$mb.err"
  done
fi

python3 - "$RUN" "$WARMUP" "$OVERLAP_MB" "$GPT_FLAGS" "$DEMO" "$DEMO_FLAGS" <<'PY'
import glob, json, re, statistics, sys
run, warmup, overlap_mb, gpt_flags = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
demo, demo_flags = sys.argv[5] != "0", sys.argv[6]
REDUCTIONS = re.compile(r"gradient reductions: (\d+) acts, ([\d.]+) ms per iteration and device, ([\d.]+)% hidden "
                        r"behind compute; compute ([\d.]+) ms per iteration and device")
def reductions(path, what):
    m = REDUCTIONS.search(open(path).read())
    if not m:
        return None
    ms, compute = float(m.group(2)), float(m.group(4))
    return {"hidden_trace": what, "reduction_acts": int(m.group(1)), "reduction_ms_per_iteration_and_device": ms,
            "hidden_fraction": round(float(m.group(3)) / 100, 3), "compute_ms_per_iteration_and_device": compute,
            "compute_longer_than_reductions": compute > ms}
def steps(pattern):
    out = []
    for path in sorted(glob.glob(f"{run}/{pattern}")):
        lines = [json.loads(l) for l in open(path) if l.startswith("{")]
        out += [l["step_ms"] for l in lines if "step_ms" in l][warmup:]
    return out
def losses(pattern):
    path = sorted(glob.glob(f"{run}/{pattern}"))[0]
    return [json.loads(l)["loss"] for l in open(path) if l.startswith("{")]
print(json.dumps({"bench": "buckets", "model": "gpt " + (gpt_flags or "(defaults: 2 blocks, hidden 128)"),
                  "layout": "2 nodes x 1 device, dp=2"}))
reference = statistics.median(steps("run.b25.r*.jsonl"))
for name, pattern in [("in_process_buckets", "run.b25.r*.jsonl"), ("in_process_no_buckets", "run.b0.r*.jsonl"),
                      (f"in_process_buckets_{overlap_mb}mb", f"run.b{overlap_mb}.r*.jsonl"),
                      ("launch_buckets", "launch.b25.r*.jsonl"), ("launch_no_buckets", "launch.b0.r*.jsonl"),
                      (f"launch_buckets_{overlap_mb}mb", f"launch.b{overlap_mb}.r*.jsonl")]:
    s = steps(pattern)
    median = statistics.median(s)
    print(json.dumps({"config": name, "median_step_ms": round(median, 2), "min_step_ms": round(min(s), 2),
                      "steps": len(s), "throughput_vs_in_process": round(reference / median, 3)}))
ref_loss, launch_loss = losses("run.b0.r0.jsonl"), losses("launch.b25.r0.jsonl")
print(json.dumps({"check": "launch with buckets vs in-process without: max relative loss difference",
                  "value": max(abs(a - b) / abs(a) for a, b in zip(ref_loss, launch_loss))}))
for mb in ["25", overlap_mb]:
    text = open(f"{run}/trace.b{mb}.err").read()
    m = re.search(r"gradient buckets: (\d+) acts, ([\d.]+) ms of all-reduce, ([\d.]+) ms of it while the compute "
                  r"thread acted; (\d+) acts overlapped a later backward op", text)
    if m:
        acts, ms, overlapped, later = int(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))
        print(json.dumps({"overlap_trace": f"bucket_mb={mb}, oneflow run --trace", "bucket_acts": acts,
                          "all_reduce_ms": ms, "overlapped_ms": overlapped,
                          "acts_overlapping_later_backward_op": later}))
for mb in ["25", "0", overlap_mb]:
    line = reductions(f"{run}/trace.b{mb}.err", f"gpt dp=2, bucket_mb={mb}, oneflow run --trace")
    if line:
        print(json.dumps(line))
if demo:
    def order(mb):
        text = open(f"{run}/demo.b{mb}.order").read()
        entries = re.findall(r"\d+ (\w+)\(", text)
        return len(entries), sum(1 for e in entries if e == "all_reduce")
    print(json.dumps({"bench": "buckets_demo", "model": "gpt " + demo_flags,
                      "layout": "2 nodes x 2 devices, dp=2 across nodes x tp=2 (tools/dev.sh demo)"}))
    demo_reference = statistics.median(steps("demo_run.b25.r*.jsonl"))
    for mb in ["25", "0"]:
        collectives, all_reduces = order(mb)
        run_ms = statistics.median(steps(f"demo_run.b{mb}.r*.jsonl"))
        launch_ms = statistics.median(steps(f"demo_launch.b{mb}.r*.jsonl"))
        print(json.dumps({"config": f"demo bucket_mb={mb}", "collectives_per_step_device0": collectives,
                          "all_reduces_per_step_device0": all_reduces, "in_process_step_ms": round(run_ms, 2),
                          "launch_step_ms": round(launch_ms, 2),
                          "launch_over_in_process": round(launch_ms / run_ms, 3),
                          "in_process_vs_reference": round(demo_reference / run_ms, 3),
                          "reference": "in-process step, bucket_mb=25, same run"}))
        line = reductions(f"{run}/demo_trace.b{mb}.err", f"demo bucket_mb={mb}, oneflow run --trace")
        if line:
            print(json.dumps(line))
PY
