#!/usr/bin/env bash
# Losing a node on emulated hosts (issue 28, "Benchmarks"; docs/elastic.md): 4 network
# namespaces on a bridge, each link shaped with tc tbf like a NIC (bench/lib/netns_hosts.sh),
# one `oneflowd` each: hosts 0..2 run the job, host 3 waits as a spare. The model is the
# issue's gpt hidden 512, 4 layers (heads 8, batch 12), dp=3 over 3 nodes x 1 device.
#
#   sudo bench/elastic/elastic_netns_bench.sh                          every path, 1 Gbit/s
#   sudo bench/elastic/elastic_netns_bench.sh --paths=memory,disk --runs=2
#   sudo bench/elastic/elastic_netns_bench.sh --bin_dir=bazel-bin      the tree's default build
#
# Recovery paths, each from a fresh set of daemons; node 1 is lost once iteration
# --kill_after was printed (and, for disk checkpoints, the one after iteration 10 is complete):
#   spare   node 1's oneflowd SIGKILLed; --spare_nodes gives its rank to host 3; resumes
#           from the disk checkpoint (--checkpoint_every=K)
#   shrink  node 1's oneflowd SIGKILLed, no spare; --elastic=shrink --min_nodes=2 compiles the
#           job for the 2 survivors (dp 3 -> 2) and resumes from the disk checkpoint
#   memory  node 1's oneflowd SIGKILLed; the spare takes its rank; resumes from the in-memory
#           checkpoint (--memory_checkpoint_every=K; disk only every 1000: none is written)
#   disk    node 1's worker SIGKILLed, its daemon lives; --max_restarts=1 restarts the job on
#           the same daemons from the disk checkpoint (the path that existed before spares)
# Each line: kill_to_training_s (SIGKILL -> the first metrics line of the next attempt, the
# issue's "kill -> next trained iteration"; goal <= 10 s), iterations_lost (newest iteration
# printed before + 1 - the resume point; goal <= K), the launch's own "recovery" (its
# seconds count from when the launch saw the failure) and its timeline, and two references
# from the same launch: its cold start (launch to its first metrics line: the same plan
# started from nothing, so kill_to_training_over_cold_start is what a recovery costs
# against starting the job) and its median step before the kill.
#
# Step cost: the same plan launched to its end without in-memory checkpoints (the reference)
# and with --memory_checkpoint_every=K, alternating, --cost_runs pairs; the mean step of
# iterations [K, --cost_iters) (whole periods of K, the saving steps included) of each, and
# the ratio of the medians of those means (goal <= 1.03 at K = 10).
#
# Flags [defaults]:
#   --paths=P,...       [spare,shrink,memory,disk]; "none" skips the recovery runs
#   --runs=N            recovery runs per path [1]
#   --cost_runs=N       step-cost pairs (0: none) [1]
#   --cost_iters=N      iterations of each step-cost launch [40]
#   --every=K           the checkpoint period, disk and memory [10]
#   --kill_after=I      the iteration after which node 1 is lost [14]
#   --rate_mbit=R       link rate [1000]
#   --bin_dir=DIR       binaries (DIR/tools/cli/oneflow, ...) instead of building -c opt
#   --work_dir=DIR --keep   where plans, logs and metrics go; kept with --keep or on failure
#
# Prints JSON lines on stdout: a "config" line (with the 1-minute load average), one line per
# recovery run and per step-cost launch, and a summary. Needs root. Everything it creates is
# named e37<pid>-* and is torn down on exit. A benchmark, not a test: it asserts nothing; each
# goal and whether it was met are fields.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
NETNS_PREFIX="e37$$"
NETNS_SUBNET="10.237.0"

PATHS="spare,shrink,memory,disk"
RUNS=1
COST_RUNS=1
COST_ITERS=40
EVERY=10
KILL_AFTER=14
RATE=1000
BIN_DIR=""
WORK_DIR=""
KEEP=0
PORT=5371
MODEL_FLAGS="--hidden=512 --layers=4 --heads=8 --batch=12"

log() { echo "elastic_netns_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --paths=*) PATHS="${arg#*=}" ;;
    --runs=*) RUNS="${arg#*=}" ;;
    --cost_runs=*) COST_RUNS="${arg#*=}" ;;
    --cost_iters=*) COST_ITERS="${arg#*=}" ;;
    --every=*) EVERY="${arg#*=}" ;;
    --kill_after=*) KILL_AFTER="${arg#*=}" ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done

for pair in "runs=$RUNS" "cost_runs=$COST_RUNS" "cost_iters=$COST_ITERS" "every=$EVERY" "kill_after=$KILL_AFTER" \
    "rate_mbit=$RATE"; do
  [[ "${pair#*=}" =~ ^[0-9]+$ ]] || die "--${pair%%=*}: '${pair#*=}' is not a non-negative integer"
done
(( EVERY >= 1 )) || die "--every=$EVERY must be >= 1"
(( RATE >= 1 )) || die "--rate_mbit=$RATE must be >= 1"
(( KILL_AFTER > EVERY )) || die "--kill_after=$KILL_AFTER must be above --every=$EVERY (a checkpoint must exist)"
(( COST_RUNS == 0 || COST_ITERS >= 2 * EVERY )) || die "--cost_iters=$COST_ITERS must be at least 2 x --every=$EVERY"
IFS=, read -r -a PATH_LIST <<< "$PATHS"
[[ "$PATHS" == none ]] && PATH_LIST=()
for p in "${PATH_LIST[@]}"; do
  case "$p" in spare|shrink|memory|disk) ;; *) die "--paths: '$p' is not one of spare, shrink, memory, disk (or none)" ;; esac
done
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"

RUN=""
OK=0
netns_trap_teardown

build() {
  if [[ -z "$BIN_DIR" ]]; then
    log "building -c opt"
    (cd "$ROOT" && bazel build -c opt --symlink_prefix=/ --jobs=2 --color=no --curses=no //tools/launcher:oneflowd \
      //tools/worker:oneflow_worker //tools/cli:oneflow //examples/gpt >&2)
    # --symlink_prefix=/ makes no bazel-* links: ask where the -c opt outputs are.
    BIN_DIR="$(cd "$ROOT" && bazel info -c opt --symlink_prefix=/ bazel-bin 2>/dev/null)"
  fi
  netns_private_binaries "$BIN_DIR" "$RUN/bin" tools/launcher/oneflowd tools/worker/oneflow_worker \
    tools/cli/oneflow examples/gpt/gpt || die "a binary is missing in $BIN_DIR"
  BIN="$RUN/bin"
}

NODES=""  # hosts 0..2
SPARE=""  # host 3
start_daemons() {
  netns_start_daemons "$BIN" "$RUN/token" "$RUN/daemons.$1" "$PORT"
  NODES="$(netns_ip 0):$PORT,$(netns_ip 1):$PORT,$(netns_ip 2):$PORT"
  SPARE="$(netns_ip 3):$PORT"
}

# LAUNCH: the launch's command line. The client runs on host 0, as a user on the cluster
# would. --hang_seconds: a loaded 2-core machine can take seconds for one step.
LAUNCH=()
launch_command() {  # JOB ITERS METRICS_FILE EXTRA_FLAGS...
  local job="$1" iters="$2" metrics="$3"
  shift 3
  LAUNCH=(ip netns exec "$(netns_name 0)" "$BIN/oneflow" launch "$RUN/gpt.plan" --nodes="$NODES"
    --token_file="$RUN/token" --iters="$iters" --job_id="$job" --collective_timeout_s=120 --hang_seconds=60)
  [[ -n "$metrics" ]] && LAUNCH+=(--metrics="$metrics")
  LAUNCH+=("$@")
}

# One recovery run of PATH: prints its JSON line.
recovery_run() {
  local path="$1" run="$2"
  local job="e37-$path-$$-$run" dir victim=() wait_for="" announced extra=() result
  dir="$RUN/recovery.$path.$run"
  mkdir -p "$dir"
  start_daemons "$path.$run"
  case "$path" in
    spare) extra=(--spare_nodes="$SPARE" --checkpoint_dir="$dir/ck" --checkpoint_every="$EVERY") ;;
    shrink) extra=(--elastic=shrink --min_nodes=2 --checkpoint_dir="$dir/ck" --checkpoint_every="$EVERY") ;;
    memory) extra=(--spare_nodes="$SPARE" --checkpoint_dir="$dir/ck" --checkpoint_every=1000
                   --memory_checkpoint_every="$EVERY") ;;
    disk) extra=(--max_restarts=1 --checkpoint_dir="$dir/ck" --checkpoint_every="$EVERY") ;;
  esac
  if [[ "$path" == disk ]]; then
    victim=(--victim_worker="$job:1")
    announced="oneflow launch: restart 1 of 1"
  else
    victim=(--victim_pid="${NETNS_DAEMON_PIDS[1]}")
    announced="oneflow launch: recovery: "
  fi
  [[ "$path" != memory ]] && wait_for="$(printf 'iter-%08d complete' "$EVERY")"
  netns_shape "$RATE"
  launch_command "$job" 100000000 "" "${extra[@]}"
  result="$("$PY" "$ROOT/bench/elastic/recovery_run.py" --kill_after="$KILL_AFTER" --wait_for="$wait_for" \
    "${victim[@]}" --announced="$announced" --log_prefix="$dir/launch" -- "${LAUNCH[@]}")" || true
  netns_unshape
  netns_stop_daemons
  "$PY" - "$path" "$run" "$EVERY" "$result" "$(cut -d' ' -f1 /proc/loadavg)" <<'PYEOF'
import json, sys
path, run, every, result, load = sys.argv[1:]
line = {"bench": "elastic_netns", "path": path, "run": int(run), "checkpoint_every": int(every)}
line.update(json.loads(result) if result.strip() else {"error": "recovery_run.py printed nothing"})
if "kill_to_training_s" in line:
    line.update({"goal": "kill -> next trained iteration <= 10 s, iterations lost <= K",
                 "met": line["kill_to_training_s"] <= 10 and line["iterations_lost"] <= int(every)})
line["load_avg_1m"] = float(load)
print(json.dumps(line), flush=True)
PYEOF
}

# One step-cost launch (memory: 0 or 1): prints its JSON line; the mean goes to $dir/mean.
cost_run() {
  local memory="$1" run="$2" job dir extra=()
  job="e37-cost$memory-$$-$run"
  dir="$RUN/cost.$memory.$run"
  mkdir -p "$dir"
  # In-memory checkpoints are read only by a recovery (--max_restarts), which needs a
  # checkpoint directory: every 1000 iterations writes none in either launch.
  extra=(--max_restarts=1 --checkpoint_dir="$dir/ck" --checkpoint_every=1000)
  (( memory )) && extra+=(--memory_checkpoint_every="$EVERY")
  launch_command "$job" "$COST_ITERS" "$dir/metrics" "${extra[@]}"
  if ! "${LAUNCH[@]}" > "$dir/launch.out" 2> "$dir/launch.err"; then
    tail -20 "$dir/launch.err" >&2
    die "the step-cost launch ($job) failed"
  fi
  "$PY" - "$dir/metrics" "$EVERY" "$COST_ITERS" "$memory" "$run" "$(cut -d' ' -f1 /proc/loadavg)" <<'PYEOF'
import json, statistics, sys
path, every, iters, memory, run, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
steps = {}
for l in open(path):
    if l.startswith("{") and '"step_ms"' in l:
        m = json.loads(l)
        steps[m["iter"]] = m["step_ms"]  # A line printed twice: the last one counts.
window = [steps[i] for i in range(every, iters) if i in steps]
line = {"bench": "elastic_netns_step_cost", "run": run, "memory_checkpoint_every": every if memory else 0,
        "iterations": f"{every}..{iters - 1}", "mean_step_ms": round(statistics.mean(window), 3),
        "median_step_ms": round(statistics.median(window), 3), "load_avg_1m": load}
print(json.dumps(line), flush=True)
PYEOF
}

main() {
  RUN="${WORK_DIR:-$(mktemp -d /tmp/elastic_netns_bench.XXXXXX)}"
  mkdir -p "$RUN"
  build
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  echo "{\"config\": {\"model\": \"gpt $MODEL_FLAGS, dp=3 on 3 hosts x 1 device, host 3 the spare\"," \
    "\"paths\": \"$PATHS\", \"runs\": $RUNS, \"cost_runs\": $COST_RUNS, \"cost_iters\": $COST_ITERS, \"every\": $EVERY," \
    "\"kill_after\": $KILL_AFTER, \"rate_mbit\": $RATE, \"cpus\": $(nproc), \"load_avg_1m\": $(cut -d' ' -f1 /proc/loadavg)," \
    "\"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\"}}"
  # shellcheck disable=SC2086
  "$BIN/gpt" --nodes=3 --devices_per_node=1 --dp=3 $MODEL_FLAGS --compression=off \
    --inter_node_bandwidth=$(( RATE * 125000 )) --plan_out="$RUN/gpt.plan" > "$RUN/compile.log"
  netns_create 4
  local run path
  local results="$RUN/results.jsonl"
  : > "$results"
  if (( COST_RUNS > 0 )); then
    start_daemons cost
    netns_shape "$RATE"
    for ((run = 0; run < COST_RUNS; run++)); do
      cost_run 0 "$run" | tee -a "$results"
      cost_run 1 "$run" | tee -a "$results"
    done
    netns_unshape
    netns_stop_daemons
  fi
  for ((run = 0; run < RUNS; run++)); do
    for path in "${PATH_LIST[@]}"; do recovery_run "$path" "$run" | tee -a "$results"; done
  done
  "$PY" - "$results" "$EVERY" <<'PYEOF'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
every = int(sys.argv[2])
summary = {"bench": "elastic_netns", "summary": True}
none = [l["mean_step_ms"] for l in lines if l.get("bench") == "elastic_netns_step_cost" and l["memory_checkpoint_every"] == 0]
memory = [l["mean_step_ms"] for l in lines if l.get("bench") == "elastic_netns_step_cost" and l["memory_checkpoint_every"]]
if none and memory:
    ratio = statistics.median(memory) / statistics.median(none)
    summary.update({"mean_step_ms_none": statistics.median(none), "mean_step_ms_memory": statistics.median(memory),
                    "step_ratio_memory_over_none": round(ratio, 4),
                    "step_cost_goal": f"<= 1.03 at K = {every}", "step_cost_met": ratio <= 1.03})
for path in ("spare", "shrink", "memory", "disk"):
    seconds = [l["kill_to_training_s"] for l in lines if l.get("path") == path and "kill_to_training_s" in l]
    if seconds:
        summary[f"median_kill_to_training_s_{path}"] = statistics.median(seconds)
    over_cold = [l["kill_to_training_over_cold_start"] for l in lines
                 if l.get("path") == path and "kill_to_training_over_cold_start" in l]
    if over_cold:
        summary[f"median_kill_to_training_over_cold_start_{path}"] = statistics.median(over_cold)
disk = summary.get("median_kill_to_training_s_disk")
for path in ("spare", "shrink", "memory"):
    if disk and f"median_kill_to_training_s_{path}" in summary:
        summary[f"ratio_{path}_over_disk"] = round(summary[f"median_kill_to_training_s_{path}"] / disk, 3)
print(json.dumps(summary), flush=True)
PYEOF
  OK=1
}

main
