#!/usr/bin/env bash
# Prediction quality of --auto_parallel's cost model on emulated hosts (issue 26, "Prediction
# quality" (b) and "Choice quality"; docs/auto_parallel_measurements.md, "Prediction on emulated hosts"):
# per cluster of NODES x DEVICES_PER_NODE, one Linux network namespace per node on a bridge,
# each link shaped with tc tbf to --rate_mbit (bench/lib/netns_hosts.sh), one `oneflowd` each.
#
# Per cluster:
#   1. `oneflow calibrate --nodes=...` between the daemons, from host 0, with the links shaped:
#      the cluster's calibration (both link levels' alpha and beta, node 0's worker's codec and
#      compute rates, and the machine line: the namespaces share this machine's boot id, so
#      the nodes share its cores; with more nodes than cores calibrate also measures their
#      devices' turns on them, tools/cli/shared_machine_turns.h). Every plan below is compiled with it (--codec_calibration),
#      so the model sees the shaped link as measured, not the flag's 1 Gbit/s.
#   2. `oneflow calibrate --host_devices=D` on this machine (D = every device of the cluster):
#      its host line (per-act cost, collective call cost, cores, core share) appended to a
#      second file, the "shared host" calibration: every emulated host runs on this machine's
#      cores, which the first calibration does not know.
#   3. Each hand layout of bench/auto_parallel/prediction_hosts_layouts.py (dp/tp/pp,
#      micro-batches, ZeRO, recomputation, --compression; >= 20 per cluster) compiled by the
#      gpt with --predict_step (the search's cost model prices the given layout and the plan
#      records it) with each of three calibrations: "cluster" (1.), "shared_host" (2.) and
#      "link_rate" (no file: --inter_node_bandwidth at the netns rate, the rest the
#      examples' defaults). The "cluster" plan is launched with `oneflow launch` across the
#      daemons; its line has the three predictions and the measured median step.
#   4. The searched layout: the gpt with --auto_parallel with each calibration of
#   --searched_calibrations, launched.
#   Every plan of 3. and 4. is launched --repeats times, in rounds that each launch every
#   plan once (so slow drift of the machine spreads over all layouts instead of landing on
#   a few), round r starting r * plans / repeats plans further into the list (so no plan
#   always runs at the same moment of a round or after the same neighbour); a line's
#   measured step is the median of its launches' steps (each launch's: the median of its
#   iterations after --warmup), "repeat_spread" their spread.
#   5. The confirming round (--confirm=K): the K hand layouts the sweep measured fastest,
#   the fastest without a forced codec and the searched layouts, launched
#   --confirm_repeats more times each, in rounds of their own whose order turns by one plan
#   each round (with two plans, the searched one and the sweep's best, they alternate which
#   goes first). The sweep's best is the lowest of ~20 noisy medians, biased low by the
#   noise that picked it; the confirming launches, which did not pick it, compare the
#   searched layout with it without that bias, round by round (the summary's
#   "confirmed_paired_ratios": each round's searched step over the sweep's best's in the
#   same round, launched moments apart). Their lines' "bench" is
#   "auto_parallel_prediction_hosts_confirm".
#   6. With --trace, each confirmed plan launched once more with `oneflow launch --trace`:
#   the trace, `oneflow inspect --trace` (the measured idle of each pipeline stage) and
#   `oneflow profile` (per op type, actor and thread, the critical path) are kept in the
#   work directory, and a line "auto_parallel_prediction_hosts_trace" sets the traced
#   stages' idle time beside the predicted bubble.
# Then the summary per cluster (bench/auto_parallel/prediction_hosts_summary.py): median
# |error| and Spearman of each prediction, chosen / best measured, Megatron / best.
#
#   sudo bench/auto_parallel/prediction_hosts_bench.sh                   3x2 and 2x2 at 1 Gbit/s
#   sudo bench/auto_parallel/prediction_hosts_bench.sh --clusters=3x2 --offset=0 --layouts=12 --searched=0
#   sudo bench/auto_parallel/prediction_hosts_bench.sh --clusters=2x1     one device a host: 2 compute threads, 2 cores
#   sudo bench/auto_parallel/prediction_hosts_bench.sh --clusters=3x1 --searched_calibrations=cluster --trace --keep
#   bench/auto_parallel/prediction_hosts_bench.sh --summarize=a.jsonl,b.jsonl   summary of chunks or of repeated runs, no root
#
# Flags [defaults]:
#   --clusters=NxD,...     clusters, nodes x devices per node [3x2,2x2]; 2x1 and 3x1 (one
#                          device a host) sweep their own families (prediction_hosts_layouts.py)
#   --rate_mbit=R          link rate of every host [1000]
#   --offset=K --layouts=N a chunk of each cluster's hand layouts: N from the K-th (0-based)
#                          [0, all]; keeps one bench-lock hold short
#   --searched=0|1         also launch the searched layouts (--auto_parallel) [1]
#   --hand_sbp_search=0|1  compile the hand layouts with --sbp_search, as --auto_parallel
#                          compiles its probes and its choice since session 58 (0: the greedy
#                          per-op SBP, as runs before session 58 did) [1]
#   --repeats=N            launches of every plan, in N rounds over all of them; the line's
#                          measured step is their median, "measured_repeats_ms" each one [4]
#   --iters=K --warmup=W   iterations per launch, and those left out of the median [25, 3]:
#                          a step's first 3 iterations run 3.6x, 1.2x, 1.07x the launch's
#                          median, later ones within 2.5% (session 47's kept p47 launches,
#                          load 16-22), and within a launch steps vary ~18% (CV), so 22
#                          timed steps put the launch's median within ~5%, where a launch
#                          costs ~1.2 s besides its steps; on a VM whose speed drifts
#                          (session 59) --iters=60 --warmup=5 ranked the 2 x 1 layouts
#                          against themselves at 0.953 where 25 gave 0.78-0.91
#   --searched_calibrations=LIST  the calibrations whose --auto_parallel plan is compiled and
#                          launched (cluster, shared_host, link_rate) [all three]
#   --confirm=K            hand layouts of the confirming round (5. above; 0: none) [1]
#   --confirm_repeats=N    rounds of the confirming round [6]
#   --trace                trace each confirmed plan once after them (6. above)
#   --gpt_flags="..."      the model [--layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512]
#   --launch_timeout_s=S   a launch that takes longer is stopped and its line says so [240]
#   --bin_dir=DIR          binaries (DIR/tools/cli/oneflow, ...) instead of building
#   --work_dir=DIR --keep  where plans, calibrations, logs and metrics go; kept with --keep or on failure
#   --summarize=F,...      only print the summaries of earlier runs' JSON lines (no root, no netns)
#
# Prints JSON lines on stdout: a "config" line, a "calibration" line per cluster, one line per
# layout ({"bench": "auto_parallel_prediction_hosts", ...}) and the summaries. Needs root
# (except --summarize). Everything it creates is named $NETNS_PREFIX-* (ofph<pid>-* unless the
# environment sets it) and torn down on exit.
# A benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/bench/auto_parallel"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
# shellcheck source=bench/lib/step_metrics.sh
source "$ROOT/bench/lib/step_metrics.sh"
# A caller may name the run's namespaces (NETNS_PREFIX=h43 ...), e.g. to tell its own apart.
NETNS_PREFIX="${NETNS_PREFIX:-ofph$$}"
NETNS_SUBNET="10.233.0"

CLUSTERS="3x2,2x2"
RATE=1000
OFFSET=0
LAYOUTS=""
SEARCHED=1
HAND_SBP_SEARCH=1
REPEATS=4
ITERS=25
WARMUP=3
SEARCHED_CALIBRATIONS="cluster,shared_host,link_rate"
CONFIRM=1
CONFIRM_REPEATS=6
TRACE=0
GPT_FLAGS="--layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512"
LAUNCH_TIMEOUT=240
BIN_DIR=""
WORK_DIR=""
KEEP=0
SUMMARIZE=""
PORT=5311

log() { echo "prediction_hosts_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --clusters=*) CLUSTERS="${arg#*=}" ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --offset=*) OFFSET="${arg#*=}" ;;
    --layouts=*) LAYOUTS="${arg#*=}" ;;
    --searched=*) SEARCHED="${arg#*=}" ;;
    --hand_sbp_search=*) HAND_SBP_SEARCH="${arg#*=}" ;;
    --repeats=*) REPEATS="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --searched_calibrations=*) SEARCHED_CALIBRATIONS="${arg#*=}" ;;
    --confirm=*) CONFIRM="${arg#*=}" ;;
    --confirm_repeats=*) CONFIRM_REPEATS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --launch_timeout_s=*) LAUNCH_TIMEOUT="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    --trace) TRACE=1 ;;
    --summarize=*) SUMMARIZE="${arg#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done

if [[ -n "$SUMMARIZE" ]]; then
  IFS=, read -r -a files <<< "$SUMMARIZE"
  for f in "${files[@]}"; do [[ -r "$f" ]] || die "--summarize: cannot read '$f'"; done
  exec "$PY" "$HERE/prediction_hosts_summary.py" "${files[@]}"
fi

[[ "$RATE" =~ ^[1-9][0-9]*$ ]] || die "--rate_mbit=$RATE: give a positive integer (Mbit/s)"
[[ "$OFFSET" =~ ^[0-9]+$ ]] || die "--offset=$OFFSET: give a whole number >= 0"
[[ -z "$LAYOUTS" || "$LAYOUTS" =~ ^[1-9][0-9]*$ ]] || die "--layouts=$LAYOUTS: give a whole number >= 1"
[[ "$SEARCHED" == 0 || "$SEARCHED" == 1 ]] || die "--searched=$SEARCHED: give 0 or 1"
[[ "$HAND_SBP_SEARCH" == 0 || "$HAND_SBP_SEARCH" == 1 ]] || die "--hand_sbp_search=$HAND_SBP_SEARCH: give 0 or 1"
HAND_FLAGS=(--predict_step --nosbp_search)
[[ "$HAND_SBP_SEARCH" == 1 ]] && HAND_FLAGS=(--predict_step --sbp_search)
[[ "$REPEATS" =~ ^[1-9][0-9]*$ ]] || die "--repeats=$REPEATS: give a whole number >= 1 (launches of every plan)"
[[ "$CONFIRM" =~ ^[0-9]+$ ]] || die "--confirm=$CONFIRM: give a whole number >= 0 (hand layouts to confirm; 0: none)"
[[ "$CONFIRM_REPEATS" =~ ^[1-9][0-9]*$ ]] || die "--confirm_repeats=$CONFIRM_REPEATS: give a whole number >= 1 (launches of each confirmed plan)"
IFS=, read -r -a SEARCHED_LIST <<< "$SEARCHED_CALIBRATIONS"
for c in "${SEARCHED_LIST[@]}"; do
  [[ "$c" == cluster || "$c" == shared_host || "$c" == link_rate ]] ||
    die "--searched_calibrations: '$c' is not a calibration (valid: cluster, shared_host, link_rate)"
done
[[ "$ITERS" =~ ^[0-9]+$ && "$WARMUP" =~ ^[0-9]+$ ]] || die "--iters and --warmup must be whole numbers"
(( WARMUP + 2 <= ITERS )) || die "--warmup=$WARMUP must leave at least 2 of --iters=$ITERS"
[[ "$LAUNCH_TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--launch_timeout_s=$LAUNCH_TIMEOUT: give seconds >= 1"
[[ "$GPT_FLAGS" =~ ^[-A-Za-z0-9_=.,\ ]*$ ]] || die "--gpt_flags: only flags (letters, digits, - _ = . ,)"
IFS=, read -r -a CLUSTER_LIST <<< "$CLUSTERS"
for c in "${CLUSTER_LIST[@]}"; do
  [[ "$c" =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || die "--clusters: '$c' is not NODESxDEVICES_PER_NODE (e.g. 3x2)"
  (( ${c%x*} >= 2 )) || die "--clusters: '$c' has one node; emulated hosts need at least 2"
done
gpt_flag() {  # the value of --NAME in --gpt_flags
  local flag
  for flag in $GPT_FLAGS; do [[ "$flag" == "--$1="* ]] && { echo "${flag#*=}"; return; }; done
  die "--gpt_flags must give --$1 (the layouts depend on it)"
}
BATCH="$(gpt_flag batch)"; LAYERS="$(gpt_flag layers)"; HEADS="$(gpt_flag heads)"; HIDDEN="$(gpt_flag hidden)"
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc); --summarize does not"

RUN=""
OK=0
netns_trap_teardown

build() {
  if [[ -z "$BIN_DIR" ]]; then
    log "building"
    (cd "$ROOT" && bazel build --jobs=2 --color=no --curses=no //tools/launcher:oneflowd \
      //tools/worker:oneflow_worker //tools/cli:oneflow //examples/gpt >&2)
    BIN_DIR="$(cd "$ROOT" && bazel info bazel-bin 2> /dev/null)"
  fi
  netns_private_binaries "$BIN_DIR" "$RUN/bin" tools/launcher/oneflowd tools/worker/oneflow_worker \
    tools/cli/oneflow examples/gpt/gpt || die "a binary is missing in $BIN_DIR"
  BIN="$RUN/bin"
}

predicted() {  # plan -> "step_ms compute_ms exposed_ms bubble_ms layout" from its decision record
  "$BIN/oneflow" inspect "$1" --format=json | "$PY" "$HERE/prediction_hosts_predicted.py"
}

# Launches `plan` on the cluster from host 0; prints the median step (null when it failed).
# Further arguments are `oneflow launch` flags (--trace=FILE).
launch() {
  local plan="$1" out="$2" nodes="$3"
  shift 3
  # shellcheck disable=SC2086,SC2046
  if ! timeout -k 10 "$LAUNCH_TIMEOUT" ip netns exec "$(netns_name 0)" "$BIN/oneflow" launch "$plan" \
      --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" --metrics="$out.metrics" \
      --job_id="ph-$(basename "$out")-$$" --collective_timeout_s=180 --hang_seconds=120 "$@" \
      > "$out.launch.out" 2> "$out.launch.err"; then
    log "launch of $(basename "$plan") on $nodes nodes failed: $(tail -3 "$out.launch.err" | tr '\n' ' ')"
    echo null
    return
  fi
  median_step "$out.metrics" "$WARMUP"
}

# The flags of a calibration: "cluster" (the daemons' measurement), "shared_host" (it with
# this machine's host line), "link_rate" (no file: the netns link rate as the inter-node
# bandwidth, every other figure the examples' default).
calibration_flags() {
  case "$1" in
    cluster) echo "--codec_calibration=$2/cluster.jsonl" ;;
    shared_host) echo "--codec_calibration=$2/shared_host.jsonl" ;;
    link_rate) echo "--inter_node_bandwidth=$((RATE * 125000))" ;;
  esac
}

# Compiles one layout. A hand layout (searched=0): compiled with --predict_step with each
# calibration (the "cluster" plan is the one launched). The searched layout (searched=1):
# --auto_parallel with the calibration `calibration`. Writes BASE.predicted (the "cluster"
# plan's prediction, `predicted`'s fields) and BASE.others (the other calibrations' predicted
# steps, null where a compile failed); a failed compile prints its line and returns 1.
compile_layout() {
  local cluster="$1" nodes="$2" dpn="$3" dir="$4" index="$5" name="$6" flags="$7" searched="$8" calibration="$9"
  local base="$dir/layout$index" mode_flags=("${HAND_FLAGS[@]}") other
  local -A extra=([shared_host]=null [link_rate]=null)
  [[ "$searched" == 1 ]] && mode_flags=(--auto_parallel)
  # shellcheck disable=SC2086,SC2046
  if ! "$BIN/gpt" --nodes="$nodes" --devices_per_node="$dpn" $GPT_FLAGS $flags "${mode_flags[@]}" \
      $(calibration_flags "$calibration" "$dir") --plan_out="$base.plan" > "$base.compile.log" 2>&1; then
    log "compile of '$name' failed: $(tail -2 "$base.compile.log" | tr '\n' ' ')"
    echo "{\"bench\": \"auto_parallel_prediction_hosts\", \"cluster\": \"$cluster\", \"nodes\": $nodes, \"devices_per_node\": $dpn, \"layout\": \"$name\", \"searched\": $([[ $searched == 1 ]] && echo true || echo false), \"calibration\": \"$calibration\", \"measured_ms\": null, \"error\": \"compile failed\"}"
    return 1
  fi
  predicted "$base.plan" > "$base.predicted"
  if [[ "$searched" == 0 ]]; then
    # The same layout priced with the other calibrations (compiled, not launched).
    for other in shared_host link_rate; do
      # shellcheck disable=SC2086,SC2046
      "$BIN/gpt" --nodes="$nodes" --devices_per_node="$dpn" $GPT_FLAGS $flags "${HAND_FLAGS[@]}" \
        $(calibration_flags "$other" "$dir") --plan_out="$base.$other.plan" > "$base.$other.compile.log" 2>&1 &&
        extra[$other]="$(predicted "$base.$other.plan" | cut -d' ' -f1)"
    done
  fi
  echo "${extra[shared_host]} ${extra[link_rate]}" > "$base.others"
  : > "$base.repeats"
}

# Launches a compiled layout's plan once more (round `round`): appends "STEP LOAD LOG" to
# BASE.repeats, or to BASE.confirm for the confirming round's launches (STEP null when the
# launch failed; LOAD the 1-minute load average then).
launch_layout() {
  local dir="$1" index="$2" nodes="$3" round="$4" into="${5:-repeats}" base="$1/layout$2" measured
  measured="$(launch "$base.plan" "${base}_r$round" "$nodes")"
  echo "$measured $(cut -d' ' -f1 /proc/loadavg) ${base}_r$round.launch.err" >> "$base.$into"
}

# The plans of the confirming round, from the sweep's launches: prints the index of the
# CONFIRM hand layouts of the lowest median step, of the lowest without a forced codec (a
# --compression other than auto or off) when it is not among them, and of each searched
# layout that ran. Arguments: run_cluster's directory and its compiled entries.
confirm_candidates() {
  local dir="$1"
  shift
  "$PY" "$HERE/prediction_hosts_confirm.py" "$dir" "$CONFIRM" "$@"
}

# One layout's JSON line from its prediction and its launches: the measured step is the
# median of the launches that ran ("measured_repeats_ms": each launch's, null where one
# failed; "repeat_spread": (slowest - fastest) / median, with 2 or more).
emit_layout() {
  local cluster="$1" nodes="$2" dpn="$3" dir="$4" index="$5" flags="$6" megatron="$7" searched="$8"
  local calibration="$9" from="${10:-repeats}" base="$4/layout$5"
  "$PY" - "$cluster" "$nodes" "$dpn" "$RATE" "$flags" "$megatron" "$searched" "$calibration" \
      "$(cat "$base.predicted")" "$(cat "$base.others")" "$base.$from" <<'PYEOF'
import json, statistics, sys
(cluster, nodes, dpn, rate, flags, megatron, searched, calibration, p, others, repeats_file) = sys.argv[1:]
step, compute, exposed, bubble, *layout = p.split()
step = float(step)
number = lambda text: None if text == "null" else float(text)
shared, link_rate = (number(t) for t in others.split())
launches = [line.split() for line in open(repeats_file)]
steps = [number(l[0]) for l in launches]
ran = [s for s in steps if s is not None]
measured = round(statistics.median(ran), 3) if ran else None
loads = [float(l[1]) for l in launches]
error = lambda predicted: None if measured is None or predicted is None else round((predicted - measured) / measured, 4)
# The confirming round's launches (BASE.confirm) make a line of their own kind.
kind = "auto_parallel_prediction_hosts_confirm" if repeats_file.endswith(".confirm") else "auto_parallel_prediction_hosts"
line = {"bench": kind, "cluster": cluster, "nodes": int(nodes),
        "devices_per_node": int(dpn), "rate_mbit": int(rate),
        # The gpt's --compression is auto unless the hand layout's flags say otherwise.
        "layout": " ".join(layout) + " compression=" + (flags.split("--compression=")[1].split()[0] if "--compression=" in flags else "auto"),
        "searched": searched == "1", "calibration": calibration, "megatron": megatron == "1",
        "predicted_ms": step, "predicted_compute_ms": float(compute),
        "predicted_exposed_communication_ms": float(exposed), "predicted_bubble_ms": float(bubble),
        "measured_ms": measured, "error": error(step), "load_avg_1m": statistics.median(loads) if loads else None}
if len(launches) > 1:
    line.update({"measured_repeats_ms": steps, "load_avg_1m_repeats": loads,
                 "repeat_spread": round((max(ran) - min(ran)) / measured, 4) if len(ran) >= 2 else None})
if searched == "0":
    line.update({"shared_host_predicted_ms": shared, "shared_host_error": error(shared),
                 "link_rate_predicted_ms": link_rate, "link_rate_error": error(link_rate)})
# The last launch's own line (actors/predicted_step.h): the recorded prediction beside the mean step.
for text in open([l[2] for l in launches if number(l[0]) is not None][-1], errors="replace") if ran else []:
    if "auto-parallel: predicted step" in text:
        line["launch_summary"] = text.strip()
print(json.dumps(line), flush=True)
PYEOF
}

# One more launch of a confirmed plan with --trace (6. above): keeps BASE.trace.json,
# BASE.inspect_trace.json (`oneflow inspect --format=json --trace`: each pipeline stage's
# measured idle fraction) and BASE.profile.{txt,json} (`oneflow profile`), and prints a line
# with the traced step, the predicted bubble and each stage's idle time (its idle fraction
# of the traced window over the traced iterations: the bubble as the trace shows it, waits
# on transfers included).
trace_layout() {
  local cluster="$1" dir="$2" index="$3" nodes="$4" flags="$5" searched="$6" base="$2/layout$3" traced
  traced="$(launch "$base.plan" "${base}_trace" "$nodes" --trace="$base.trace.json")"
  if [[ "$traced" == null ]] || ! "$BIN/oneflow" inspect "$base.plan" --format=json --trace="$base.trace.json" \
      > "$base.inspect_trace.json" 2> "$base.inspect_trace.err"; then
    log "trace of layout $index failed: $(tail -2 "$base.inspect_trace.err" "${base}_trace.launch.err" 2> /dev/null | tr '\n' ' ')"
    return 0
  fi
  "$BIN/oneflow" profile "$base.plan" "$base.trace.json" > "$base.profile.txt" 2>&1 || true
  "$BIN/oneflow" profile "$base.plan" "$base.trace.json" --format=json > "$base.profile.json" 2> /dev/null || true
  "$PY" - "$cluster" "$traced" "$(cat "$base.predicted")" "$base.inspect_trace.json" "$flags" "$searched" <<'PYEOF'
import json, sys
cluster, traced, predicted, inspect, flags, searched = sys.argv[1:]
step, compute, exposed, bubble, *layout = predicted.split()
layout.append("compression=" + (flags.split("--compression=")[1].split()[0] if "--compression=" in flags else "auto"))
pipeline = json.load(open(inspect)).get("pipeline") or {}
trace = pipeline.get("trace") or {}
iterations = trace.get("last_iteration", 0) - trace.get("first_iteration", 0) + 1 if trace else 0
window_per_iteration = trace.get("window_ms", 0) / iterations if iterations > 0 else None
stages = [{"stage": s["index"], "measured_idle_fraction": s["measured_bubble"],
           "measured_idle_ms": None if window_per_iteration is None or s["measured_bubble"] is None
           else round(s["measured_bubble"] * window_per_iteration, 3)} for s in pipeline.get("stages", [])]
print(json.dumps({"bench": "auto_parallel_prediction_hosts_trace", "cluster": cluster, "layout": " ".join(layout),
                  "searched": searched == "1",
                  "traced_step_ms": float(traced), "window_per_iteration_ms": window_per_iteration and round(window_per_iteration, 3),
                  "predicted_ms": float(step), "predicted_compute_ms": float(compute),
                  "predicted_exposed_communication_ms": float(exposed), "predicted_bubble_ms": float(bubble),
                  "modelled_bubble_fraction": pipeline.get("modelled_bubble"), "stages": stages}), flush=True)
PYEOF
}

run_cluster() {
  local cluster="$1" nodes="${1%x*}" dpn="${1#*x}" dir i
  dir="$RUN/$cluster"
  mkdir -p "$dir"
  mapfile -t all < <("$PY" "$HERE/prediction_hosts_layouts.py" "$nodes" "$dpn" --batch="$BATCH" --layers="$LAYERS" \
    --heads="$HEADS" --hidden="$HIDDEN")
  local count="${LAYOUTS:-${#all[@]}}"
  netns_create "$nodes"
  netns_shape "$RATE"
  netns_start_daemons "$BIN" "$RUN/token" "$dir/netns" "$PORT"
  local start=$SECONDS
  if ! timeout -k 10 300 ip netns exec "$(netns_name 0)" "$BIN/oneflow" calibrate --nodes="$NETNS_NODES_ARG" \
      --token_file="$RUN/token" --out="$dir/cluster.jsonl" > "$dir/calibrate.out" 2> "$dir/calibrate.err"; then
    tail -5 "$dir/calibrate.err" >&2
    die "oneflow calibrate between the daemons of $cluster failed"
  fi
  "$BIN/oneflow" calibrate --host_devices="$((nodes * dpn))" --out="$dir/host.jsonl" > "$dir/host_calibrate.out" \
    2> "$dir/host_calibrate.err" || die "oneflow calibrate --host_devices=$((nodes * dpn)) failed: $(tail -3 "$dir/host_calibrate.err")"
  { cat "$dir/cluster.jsonl"; grep '"host"' "$dir/host.jsonl"; } > "$dir/shared_host.jsonl"
  "$PY" - "$cluster" "$dir/cluster.jsonl" "$dir/host.jsonl" "$((SECONDS - start))" <<'PYEOF'
import json, sys
cluster, links, host, seconds = sys.argv[1:]
line = {"bench": "auto_parallel_prediction_hosts_calibration", "cluster": cluster, "seconds": int(seconds)}
for path, keep in ((links, ("link", "compute", "machine", "transfer")), (host, ("host",))):
    for text in open(path):
        row = json.loads(text)
        kind = next((k for k in keep if k in row), None)
        if kind:
            line["%s_%s" % (kind, row[kind])] = {k: v for k, v in row.items() if k not in (kind, "method")}
print(json.dumps(line), flush=True)
PYEOF
  # Every plan compiled first, then launched in rounds: round r launches each once.
  local entry name flags megatron calibration round k searched j
  local -a compiled=()  # "index|flags|megatron|searched|calibration" of each plan to launch
  for ((i = OFFSET; i < OFFSET + count && i < ${#all[@]}; i++)); do
    entry="${all[$i]}"
    IFS='|' read -r name flags megatron <<< "$entry"
    compile_layout "$cluster" "$nodes" "$dpn" "$dir" "$i" "$name" "$flags" 0 cluster &&
      compiled+=("$i|$flags|$megatron|0|cluster")
  done
  if (( SEARCHED )); then
    for calibration in "${SEARCHED_LIST[@]}"; do
      compile_layout "$cluster" "$nodes" "$dpn" "$dir" "searched_$calibration" searched "" 1 "$calibration" &&
        compiled+=("searched_$calibration||0|1|$calibration")
    done
  fi
  # Round r starts r * plans / REPEATS plans in (prediction_hosts_rounds.py): each plan meets
  # every part of a round.
  local -a order
  round=0
  # The orders come on fd 3: a launch must not read them from its stdin.
  while read -r -a order <&3; do
    (( REPEATS > 1 )) && log "$cluster: round $((round + 1)) of $REPEATS (${#compiled[@]} plans)"
    for j in "${order[@]}"; do
      entry="${compiled[$j]}"
      launch_layout "$dir" "${entry%%|*}" "$nodes" "$round"
    done
    round=$((round + 1))
  done 3< <("$PY" "$HERE/prediction_hosts_rounds.py" "${#compiled[@]}" "$REPEATS" spread)
  for entry in "${compiled[@]}"; do
    IFS='|' read -r k flags megatron searched calibration <<< "$entry"
    emit_layout "$cluster" "$nodes" "$dpn" "$dir" "$k" "$flags" "$megatron" "$searched" "$calibration"
  done
  if (( CONFIRM > 0 )); then
    local -a confirmed
    mapfile -t confirmed < <(confirm_candidates "$dir" "${compiled[@]}")
    # The order turns by one plan a round: two plans alternate which goes first.
    round=0
    while read -r -a order <&3; do
      log "$cluster: confirming round $((round + 1)) of $CONFIRM_REPEATS (${#confirmed[@]} plans)"
      for j in "${order[@]}"; do launch_layout "$dir" "${confirmed[$j]}" "$nodes" "c$round" confirm; done
      round=$((round + 1))
    done 3< <("$PY" "$HERE/prediction_hosts_rounds.py" "${#confirmed[@]}" "$CONFIRM_REPEATS" one)
    for entry in "${compiled[@]}"; do
      IFS='|' read -r k flags megatron searched calibration <<< "$entry"
      if [[ " ${confirmed[*]} " == *" $k "* ]]; then
        emit_layout "$cluster" "$nodes" "$dpn" "$dir" "$k" "$flags" "$megatron" "$searched" "$calibration" confirm
      fi
    done
    if (( TRACE )); then
      for entry in "${compiled[@]}"; do
        IFS='|' read -r k flags megatron searched calibration <<< "$entry"
        [[ " ${confirmed[*]} " == *" $k "* ]] && trace_layout "$cluster" "$dir" "$k" "$nodes" "$flags" "$searched"
      done
    fi
  fi
  netns_teardown
}

main() {
  RUN="${WORK_DIR:-$(mktemp -d /tmp/prediction_hosts_bench.XXXXXX)}"
  mkdir -p "$RUN"
  build
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  echo "{\"config\": {\"bench\": \"auto_parallel_prediction_hosts\", \"clusters\": \"$CLUSTERS\", \"rate_mbit\": $RATE," \
    "\"offset\": $OFFSET, \"layouts\": \"${LAYOUTS:-all}\", \"searched\": $SEARCHED, \"hand_sbp_search\": $HAND_SBP_SEARCH, \"repeats\": $REPEATS, \"searched_calibrations\": \"$SEARCHED_CALIBRATIONS\", \"confirm\": $CONFIRM, \"confirm_repeats\": $CONFIRM_REPEATS, \"iters\": $ITERS, \"warmup\": $WARMUP," \
    "\"gpt_flags\": \"$GPT_FLAGS\", \"cpus\": $(nproc), \"load_avg_1m\": $(cut -d' ' -f1 /proc/loadavg)," \
    "\"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\"}}"
  local cluster
  # Not a pipe: run_cluster stays in this shell, whose EXIT trap tears down what it made.
  for cluster in "${CLUSTER_LIST[@]}"; do run_cluster "$cluster" > >(tee -a "$RUN/lines.jsonl"); done
  "$PY" "$HERE/prediction_hosts_summary.py" "$RUN/lines.jsonl"
  OK=1
}

main
