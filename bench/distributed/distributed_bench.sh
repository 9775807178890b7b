#!/usr/bin/env bash
# The distributed step against its floor (issue 24, "Benchmarks"; docs/benchmarks.md):
# each case's plan launched across processes/hosts through one `oneflowd` per node, and
# the SAME plan in one process (`oneflow run`, every node's devices as threads), measured
# in the same invocation, with the ratio launched / in-process. On emulated hosts (Linux
# network namespaces on a bridge, each link shaped with tc tbf like a NIC) the link time
# of the plan's traffic is measured too: the bytes each host's veth carried per iteration
# (kernel counters, max of sent and received) at the link rate, so "the floor" is
# max(in-process step, link time), both measured.
#
#   sudo bench/distributed/distributed_bench.sh                        every case, 1 Gbit/s
#   sudo bench/distributed/distributed_bench.sh --cases=demo_loopback --iters=30
#   sudo bench/distributed/distributed_bench.sh --cases=dp3_h256,dp3_h512 --rates_mbit=1000,10000
#
# Cases (nodes x devices per node, model, modes):
#   demo_loopback  2 x 2 loopback daemons, the demo's gpt (2 blocks, hidden 256, dp=2 x tp=2);
#                  goal launched <= 1.3x in-process
#   gpt_dp3tp2     3 hosts x 2, gpt layers 6 hidden 384 heads 6 seq 64 batch 12, dp=3 x tp=2,
#                  off, off_zero3, auto and off_searched; goals: off, off_zero3 and
#                  off_searched <= 1.2 x max(in-process, link), auto <= 1.2x in-process.
#                  off_zero3 is dense with --zero=3 --zero3_regather=false: off's bytes, half
#                  of them gathered in forward; off_searched is dense with the layout
#                  --auto_parallel chooses (the case's --dp and --tp dropped) for the
#                  calibration the compile reads
#   dp3_h256       3 hosts x 1, gpt hidden 256 layers 2 batch 12, dp=3, off, auto and PyTorch DDP;
#                  goal auto <= off
#   dp3_h512       3 hosts x 1, gpt hidden 512 layers 4 heads 8 batch 12, dp=3, off, auto and PyTorch
#                  DDP; goals auto <= off, auto <= 0.5x PyTorch DDP
#   dp2_h512       2 hosts x 1, dp3_h512's gpt at dp=2, off: one compute thread per core of a
#                  2-core machine (dp3_h512 runs 3 on 2 cores, and the scheduler's uneven share
#                  spreads the devices' ends of backward; backward_end_skew_ms), no goal
# The PyTorch reference (mode "pytorch_ddp"): bench/train/torch_step.py, the same gpt layer for
# layer, one DistributedDataParallel rank (gloo) per emulated host, one thread each, with
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for it (this image sets them; PyTorch's OpenBLAS
# runs half speed with them); its line names the OpenBLAS core it ran. Skipped, with a line
# saying so, where python3 cannot import torch (Debian's python3-torch).
#
# Flags [defaults]:
#   --cases=C,...         [demo_loopback,gpt_dp3tp2,dp3_h256,dp3_h512]
#   --rates_mbit=R,...    link rates of the netns cases [1000]
#   --iters=K --warmup=W  iterations per run, and those left out of the median [20, 5]
#   --rounds=N            run each mode in one process and launched N times, alternating
#                         (in-process, launch, in-process, launch, ...): the line's steps are
#                         the medians of the rounds' medians, "paired_launched_over_in_process"
#                         each round's launch over the in-process run just before it and
#                         "paired_median" their median; the link bytes are the launches' mean;
#                         --trace and --thread_cpu see the first round's launch; the
#                         pytorch_ddp mode runs once [1]
#   --launch_flags="..."  extra flags for every `oneflow launch` (e.g. --transport=gloo)
#   --gpt_flags="..."     extra flags for every case's gpt compile (e.g. --bucket_mb=4)
#   --modes=M,...         run only these of each case's modes (e.g. auto), in the case's order
#   --bucket_reference=M  also run each case's dense plan compiled with an explicit --bucket_mb=M
#                         (mode "off_bucket_mb_M", before "off"), the reference the "off" line's
#                         over_bucket_reference is measured against (e.g. 25: the buckets before
#                         the link-rate cap of node-crossing groups, docs/gradient_buckets.md)
#   --trace               launch with --trace and add the launched trace's gradient reduction
#                         figures (`oneflow profile`, docs/profile.md) to each line: the share
#                         hidden behind compute from each act's start and from each call's last
#                         arrival (the transfer), the exposed transfer time and the compute time,
#                         the transfer's share while any member's compute still acted
#                         (transfer_hidden_by_members_fraction) and the transfer after every
#                         member's compute (exposed_after_members_ms),
#                         and how long before the end of backward the first node-crossing bucket
#                         started (first_cross_node_bucket_lead_ms, median over iterations and
#                         devices; negative: after backward ended); how far apart the devices
#                         ended backward (backward_end_skew_ms) and how long the reductions ran
#                         on after the last device's backward (reduction_after_last_backward_ms),
#                         medians over iterations; how far apart they started the iteration
#                         (iteration_start_skew_ms: each device's first compute act) and ended
#                         forward (forward_end_skew_ms: its last compute act before its first
#                         backward act), medians over iterations; the share of the step the
#                         stream of the node-crossing buckets spent in acts
#                         (cross_node_stream_busy_fraction: its acts of iteration i over the time
#                         from the device's first compute act of i to that of i + 1; median); and
#                         how long after its own backward each device started the next forward
#                         (next_forward_after_backward_ms: its first compute act of i + 1 after
#                         its last backward act of i; median over devices and iterations)
#   --thread_cpu          sample every worker and daemon thread's run time and run-queue wait
#                         (/proc schedstat) during each launch (bench/distributed/thread_cpu.py)
#                         and add, per worker, its compute thread's run and wait per second and
#                         the share of a core it got while runnable (thread_cpu)
#   --calibration=C       what each case's gpt compiles with [daemons]: `daemons` runs `oneflow
#                         calibrate --nodes` once per case across that case's daemons (netns
#                         cases: while the links are shaped to the case's first rate), and every
#                         mode's compile reads the file (--codec_calibration: the link latencies,
#                         which price each collective's rounds and so the node-crossing bucket
#                         caps; the codecs' throughputs, which `auto` decides with; the compute
#                         rates of the predicted step time; the link rates stay the shaped one,
#                         --inter_node_bandwidth, and the intra-node measured); `none`: the
#                         compiler's defaults (every run before session 48); a path: that file
#                         (e.g. one run's, to compile alternated binaries alike). Each line records
#                         which (calibration, and its calibration_* figures)
#   --host_cpus=C         give each emulated host of the netns cases C cores of its own (a cpu
#                         cgroup with that CFS quota per 10 ms around its oneflowd and workers;
#                         bench/lib/netns_hosts.sh), as real hosts have, e.g. 0.667 for dp3_h512's
#                         three hosts on 2 cores, 1 for dp2_h512; the in-process run keeps the whole
#                         machine. Without it the hosts' threads share the cores as the kernel
#                         balances them (three compute threads on two cores: two on one, one on the
#                         other, so the hosts' backward ends drift apart). Recorded as "host_cpus"
#   --bin_dir=DIR         binaries (DIR/tools/cli/oneflow, ...) instead of building -c opt
#   --work_dir=DIR --keep where plans, logs and metrics go; kept with --keep or on failure
#
# Launches use --collective_timeout_s=300 --hang_seconds=120: on a loaded machine a rank can
# compute for more than the default 5 s between collectives, which the launch would stop
# as a hang ("stuck outside the collective (in compute ...)").
# Prints JSON lines on stdout: one "config" line, then one line per (case, rate, mode).
# Needs root. Everything it creates is named ofdb<pid>-* and is torn down on exit.
# A benchmark, not a test: it asserts nothing; the goal and whether it was met are fields.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
NETNS_PREFIX="ofdb$$"
NETNS_SUBNET="10.232.0"

CASES="demo_loopback,gpt_dp3tp2,dp3_h256,dp3_h512"
RATES="1000"
ITERS=20
ROUNDS=1
WARMUP=5
LAUNCH_FLAGS=""
GPT_FLAGS=""
MODES=""
BUCKET_REFERENCE=""
TRACE=0
THREAD_CPU=0
BIN_DIR=""
HOST_CPUS=""
CALIBRATION="daemons"
WORK_DIR=""
KEEP=0
PORT=5301

log() { echo "distributed_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --cases=*) CASES="${arg#*=}" ;;
    --rates_mbit=*) RATES="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --launch_flags=*) LAUNCH_FLAGS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --modes=*) MODES="${arg#*=}" ;;
    --bucket_reference=*) BUCKET_REFERENCE="${arg#*=}" ;;
    --trace) TRACE=1 ;;
    --thread_cpu) THREAD_CPU=1 ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --host_cpus=*) HOST_CPUS="${arg#*=}" ;;
    --calibration=*) CALIBRATION="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done

[[ "$ITERS" =~ ^[0-9]+$ && "$WARMUP" =~ ^[0-9]+$ ]] || die "--iters and --warmup must be integers"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "--rounds=$ROUNDS: give a whole number >= 1"
(( WARMUP + 2 <= ITERS )) || die "--warmup=$WARMUP must leave at least 2 of --iters=$ITERS"
IFS=, read -r -a RATE_LIST <<< "$RATES"
for r in "${RATE_LIST[@]}"; do [[ "$r" =~ ^[1-9][0-9]*$ ]] || die "--rates_mbit: '$r' is not a positive integer"; done
IFS=, read -r -a CASE_LIST <<< "$CASES"
[[ "$LAUNCH_FLAGS" =~ ^[-A-Za-z0-9_=.,\ ]*$ ]] || die "--launch_flags: only flags (letters, digits, - _ = . ,)"
[[ "$GPT_FLAGS" =~ ^[-A-Za-z0-9_=.,\ ]*$ ]] || die "--gpt_flags: only flags (letters, digits, - _ = . ,)"
[[ "$MODES" =~ ^[a-z0-9_,]*$ ]] || die "--modes: mode names separated by commas (off, auto, pytorch_ddp)"
[[ -z "$BUCKET_REFERENCE" || "$BUCKET_REFERENCE" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  die "--bucket_reference=$BUCKET_REFERENCE: give MiB (a number >= 0)"
if [[ "$CALIBRATION" != daemons && "$CALIBRATION" != none ]]; then
  [[ -r "$CALIBRATION" ]] || die "--calibration=$CALIBRATION: not daemons, none or a readable file"
  CALIBRATION="$(realpath "$CALIBRATION")"
fi
HOST_CPUS_JSON=null
if [[ -n "$HOST_CPUS" ]]; then
  netns_cpu_quota_us "$HOST_CPUS" >/dev/null 2>&1 ||
    die "--host_cpus=$HOST_CPUS: give the cores of each host, a number >= 0.1 (e.g. 0.667)"
  HOST_CPUS_JSON="$(awk -v c="$HOST_CPUS" 'BEGIN { print c + 0 }')"  # ".5" is not JSON; 0.5 is
fi
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"

# case -> "network nodes devices_per_node modes|gpt flags"
case_spec() {
  case "$1" in
    demo_loopback) echo "loopback 2 2 off|--dp=2 --tp=2 --layers=2 --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01" ;;
    gpt_dp3tp2) echo "netns 3 2 off,off_zero3,auto,off_searched|--dp=3 --tp=2 --layers=6 --hidden=384 --heads=6 --seq=64 --batch=12" ;;
    # batch 12: divisible by dp=3 (an uneven S(0) split of 8 rows makes a plan of 89 collectives
    # instead of 4, which examples/gpt refuses without --uneven_batch, and PyTorch's DDP needs
    # equal rows per rank).
    dp3_h256) echo "netns 3 1 off,auto,pytorch_ddp|--dp=3 --hidden=256 --layers=2 --batch=12" ;;
    dp3_h512) echo "netns 3 1 off,auto,pytorch_ddp|--dp=3 --hidden=512 --layers=4 --heads=8 --batch=12" ;;
    dp2_h512) echo "netns 2 1 off|--dp=2 --hidden=512 --layers=4 --heads=8 --batch=12" ;;
    *) return 1 ;;
  esac
}
for c in "${CASE_LIST[@]}"; do case_spec "$c" >/dev/null || die "--cases: '$c' is not one of demo_loopback, gpt_dp3tp2, dp3_h256, dp3_h512, dp2_h512"; done

RUN=""
CASE_CALIBRATION=""
OK=0
netns_trap_teardown

build() {
  if [[ -z "$BIN_DIR" ]]; then
    log "building -c opt"
    (cd "$ROOT" && bazel build -c opt --symlink_prefix=/ --jobs=2 --color=no --curses=no //tools/launcher:oneflowd \
      //tools/worker:oneflow_worker //tools/cli:oneflow //examples/gpt >&2)
    BIN_DIR="$ROOT/bazel-out/k8-opt/bin"
  fi
  netns_private_binaries "$BIN_DIR" "$RUN/bin" tools/launcher/oneflowd tools/worker/oneflow_worker \
    tools/cli/oneflow examples/gpt/gpt || die "a binary is missing in $BIN_DIR"
  BIN="$RUN/bin"
}

# The calibration file each case's compiles read (CASE_CALIBRATION, empty: none), per
# --calibration; `daemons` measures across the running daemons ($1: the case's network,
# $2: its first rate), from host 0's namespace on a netns cluster as the launches run.
calibrate_case() {
  local network="$1" rate="$2" dir="$3" in_host=()
  CASE_CALIBRATION=""
  case "$CALIBRATION" in
    none) return ;;
    daemons) ;;
    *) CASE_CALIBRATION="$CALIBRATION"; return ;;
  esac
  mkdir -p "$dir"
  [[ "$network" == netns ]] && { in_host=(ip netns exec "$(netns_name 0)"); netns_shape "$rate"; }
  if ! "${in_host[@]}" "$BIN/oneflow" calibrate --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" \
      --out="$dir/calibration.jsonl" > "$dir/calibrate.out" 2> "$dir/calibrate.err"; then
    tail -20 "$dir/calibrate.err" >&2
    die "oneflow calibrate across the daemons failed"
  fi
  [[ "$network" == netns ]] && netns_unshape
  CASE_CALIBRATION="$dir/calibration.jsonl"
}

median_step() {  # metrics file -> median step_ms after the warm-up
  "$PY" - "$1" "$WARMUP" <<'PYEOF'
import json, statistics, sys
steps = [json.loads(l)["step_ms"] for l in open(sys.argv[1]) if l.startswith("{") and '"step_ms"' in l]
steps = steps[int(sys.argv[2]):]
print(round(statistics.median(steps), 3) if steps else "null")
PYEOF
}

# The gpt flags of a case as torch_step.py spells them (examples/gpt's defaults for the rest).
torch_flags() {
  local flags="$1" name value hidden=128 layers=2 heads=4 batch=8 seq=64 vocab=512 lr=3e-4 dp=1 flag
  for flag in $flags; do
    name="${flag%%=*}"; value="${flag#*=}"
    case "$name" in
      --hidden) hidden="$value" ;; --layers) layers="$value" ;; --heads) heads="$value" ;;
      --batch) batch="$value" ;; --seq) seq="$value" ;; --vocab) vocab="$value" ;; --lr) lr="$value" ;;
      --dp) dp="$value" ;;
      *) die "torch_flags: no PyTorch spelling for $flag" ;;
    esac
  done
  echo "--model=gpt --dp=$dp --hidden=$hidden --layers=$layers --heads=$heads --batch=$batch --seq=$seq" \
    "--vocab=$vocab --lr=$lr --iters=$ITERS --warmup=$WARMUP"
}

# PyTorch DDP on the emulated hosts: rank i in namespace i, rank 0 listening on host 0.
# Prints rank 0's JSON line (median_step_ms, openblas_core, ...) on stdout.
run_torch_ddp() {
  local flags="$1" nodes="$2" dir="$3" i pids=() rc=0 args
  args="$(torch_flags "$flags")"
  for ((i = 0; i < nodes; i++)); do
    # shellcheck disable=SC2086
    ip netns exec "$(netns_name "$i")" env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 \
      OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 GLOO_SOCKET_IFNAME=eth0 \
      "$PY" "$ROOT/bench/train/torch_step.py" $args --rank="$i" --master="$(netns_ip 0):29511" \
      > "$dir/pytorch_ddp.rank$i.out" 2> "$dir/pytorch_ddp.rank$i.err" &
    pids+=("$!")
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
  if (( rc )); then
    tail -20 "$dir"/pytorch_ddp.rank*.err >&2
    die "PyTorch DDP ranks failed"
  fi
  grep '^{' "$dir/pytorch_ddp.rank0.out" | tail -1
}

# One case at one rate (0: loopback): compile each mode, run it in one process, launch it.
run_case() {
  local name="$1" rate="$2" spec network nodes dpn modes flags mode dir plan bw i
  spec="$(case_spec "$name")"
  read -r network nodes dpn modes <<< "${spec%%|*}"
  flags="${spec#*|}"
  dir="$RUN/$name.r$rate"
  mkdir -p "$dir"
  bw=$(( (rate > 0 ? rate : 10000) * 125000 ))
  [[ -n "$BUCKET_REFERENCE" ]] && modes="off_bucket_mb_$BUCKET_REFERENCE,$modes"
  IFS=, read -r -a mode_list <<< "$modes"
  for mode in "${mode_list[@]}"; do
    [[ -z "$MODES" || ",$MODES," == *",$mode,"* ]] || continue
    if [[ "$mode" == pytorch_ddp ]]; then
      run_ddp_mode "$name" "$rate" "$nodes" "$flags" "$dir"
      continue
    fi
    plan="$dir/$mode.plan"
    local compression="$mode" bucket_flags=() calibration_flags=() mode_flags=() layout_flags="$flags"
    [[ -n "$CASE_CALIBRATION" ]] && calibration_flags=(--codec_calibration="$CASE_CALIBRATION")
    if [[ "$mode" == off_bucket_mb_* ]]; then
      compression=off
      bucket_flags=(--bucket_mb="$BUCKET_REFERENCE")
    fi
    if [[ "$mode" == off_zero3 ]]; then
      # Dense, the same bytes as off: ZeRO-3 keeping forward's gathered copies, so each
      # gradient's all-reduce becomes a reduce-scatter in backward and a gather in the next
      # forward (docs/zero.md, "Stage 3 keeping forward's copy").
      compression=off
      mode_flags=(--zero=3 --zero3_regather=false)
    fi
    if [[ "$mode" == off_searched ]]; then
      # Dense, the layout the cost model chooses for this cluster and calibration.
      compression=off
      mode_flags=(--auto_parallel)
      layout_flags="$(sed -E 's/--(dp|tp)=[0-9]+ ?//g' <<< "$flags")"
    fi
    # shellcheck disable=SC2086
    "$BIN/gpt" --nodes="$nodes" --devices_per_node="$dpn" $layout_flags $GPT_FLAGS "${bucket_flags[@]}" "${mode_flags[@]}" "${calibration_flags[@]}" \
      --compression="$compression" --inter_node_bandwidth="$bw" --plan_out="$plan" > "$dir/$mode.compile.log"
    # --rounds: the in-process run and the launch alternate, ROUNDS times each, so that the
    # machine's drift between them lands on both sides; round r's files end in .rR (r > 0).
    local round suffix in_process_steps="" launched_steps="" link_bytes=0 tx rx
    for ((round = 0; round < ROUNDS; round++)); do
      suffix=""
      (( round > 0 )) && suffix=".r$round"
      # The floor's first half: the same plan, every node in this process, no network.
      "$BIN/oneflow" run "$plan" --iters="$ITERS" --metrics="$dir/$mode.inprocess.metrics$suffix" > /dev/null
      local before=()
      if [[ "$network" == netns ]]; then
        netns_shape "$rate"
        for ((i = 0; i < nodes; i++)); do before+=("$(netns_link_bytes "$i")"); done
      fi
      # The launch client runs on host 0 of a netns cluster; the trace and the thread sampling
      # are of the first round's launch.
      local in_host=() trace_flags=()
      (( TRACE && round == 0 )) && trace_flags=(--trace="$dir/$mode.launched.trace.json")
      [[ "$network" == netns ]] && in_host=(ip netns exec "$(netns_name 0)")
      local sampler=""
      if (( THREAD_CPU && round == 0 )); then
        "$PY" "$ROOT/bench/distributed/thread_cpu.py" sample "$dir/$mode.thread_cpu.jsonl" &
        sampler=$!
      fi
      # shellcheck disable=SC2086
      if ! "${in_host[@]}" "$BIN/oneflow" launch "$plan" --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" \
          --iters="$ITERS" --metrics="$dir/$mode.launched.metrics$suffix" --job_id="db-$name-$rate-$mode-$round-$$" \
          --collective_timeout_s=300 --hang_seconds=120 "${trace_flags[@]}" $LAUNCH_FLAGS > "$dir/$mode.launch.out$suffix" 2> "$dir/$mode.launch.err$suffix"; then
        tail -20 "$dir/$mode.launch.err$suffix" >&2
        die "oneflow launch of $name ($mode, rate $rate, round $round) failed"
      fi
      if [[ -n "$sampler" ]]; then
        kill -TERM "$sampler"
        wait "$sampler" || true
        "$PY" "$ROOT/bench/distributed/thread_cpu.py" summarize "$dir/$mode.thread_cpu.jsonl" > "$dir/$mode.thread_cpu.json"
      fi
      if [[ "$network" == netns ]]; then
        # The most bytes one host's veth carried in this launch (sent or received).
        local launch_bytes=0
        for ((i = 0; i < nodes; i++)); do
          read -r tx rx <<< "$(netns_link_bytes "$i")"
          read -r btx brx <<< "${before[$i]}"
          if (( tx - btx > launch_bytes )); then launch_bytes=$(( tx - btx )); fi
          if (( rx - brx > launch_bytes )); then launch_bytes=$(( rx - brx )); fi
        done
        link_bytes=$(( link_bytes + launch_bytes ))
        netns_unshape
      fi
      in_process_steps+="${in_process_steps:+,}$(median_step "$dir/$mode.inprocess.metrics$suffix")"
      launched_steps+="${launched_steps:+,}$(median_step "$dir/$mode.launched.metrics$suffix")"
    done
    local profile_json="$dir/$mode.launched.profile.json"
    if (( TRACE )); then
      "$BIN/oneflow" profile "$dir/$mode.launched.trace.json" --format=json > "$profile_json" ||
        die "oneflow profile of $name ($mode) failed"
      "$BIN/oneflow" inspect "$plan" --format=json > "$dir/$mode.inspect.json" ||
        die "oneflow inspect of $name ($mode) failed"
    fi
    BENCH_WARMUP="$WARMUP" BENCH_BUCKET_REFERENCE="$BUCKET_REFERENCE" BENCH_CALIBRATION="$CASE_CALIBRATION" BENCH_HOST_CPUS="$HOST_CPUS" \
    "$PY" - "$name" "$rate" "$mode" "$nodes" "$dpn" "$ITERS" "$link_bytes" \
        "$in_process_steps" "$launched_steps" "$dir" "$profile_json" <<'PYEOF'
import json, os, statistics, sys
name, rate, mode, nodes, dpn, iters, link_bytes, inproc_rounds, launched_rounds, d, profile_json = sys.argv[1:]
rate, iters, link_bytes = int(rate), int(iters), int(link_bytes)
# Each round's medians; the line's steps are their medians (one round: that round's).
inproc_rounds = [float(v) for v in inproc_rounds.split(",")]
launched_rounds = [float(v) for v in launched_rounds.split(",")]
inproc, launched = statistics.median(inproc_rounds), statistics.median(launched_rounds)
line = {"case": name, "rate_mbit": rate or None, "mode": mode, "nodes": int(nodes),
        "devices_per_node": int(dpn), "launched_step_ms": launched, "in_process_step_ms": inproc,
        "launched_over_in_process": round(launched / inproc, 3)}
# A searched layout (mode off_searched): the compile's choice and its predicted step.
compile_log = os.path.join(d, mode + ".compile.log")
if os.path.exists(compile_log):
    import re
    chose = re.search(r"^auto-parallel: chose (.*) among (\d+) layouts .*?: predicted step ([0-9.]+) ms",
                      open(compile_log).read(), re.M)
    if chose:
        line.update({"searched_layout": chose.group(1), "searched_among": int(chose.group(2)),
                     "predicted_step_ms": float(chose.group(3))})
if len(inproc_rounds) > 1:
    # Round by round: the launch over the in-process run just before it.
    paired = [l / i for l, i in zip(launched_rounds, inproc_rounds)]
    line.update({"rounds": len(inproc_rounds), "in_process_rounds_ms": inproc_rounds,
                 "launched_rounds_ms": launched_rounds,
                 "paired_launched_over_in_process": [round(r, 3) for r in paired],
                 "paired_median": round(statistics.median(paired), 3)})
if rate:
    per_iter = link_bytes / (iters * len(launched_rounds))
    link_ms = per_iter * 8 / (rate * 1e6) * 1e3
    floor = max(inproc, link_ms)
    line.update({"link_bytes_per_iter": int(per_iter), "link_ms": round(link_ms, 2),
                 "floor_ms": round(floor, 2), "launched_over_floor": round(launched / floor, 3)})
# Which calibration the compile read: the file and its links, compute rates and shared
# machine (sbp/calibration.h's lines).
calibration = os.environ.get("BENCH_CALIBRATION", "")
line["calibration"] = calibration or None
if rate and os.environ.get("BENCH_HOST_CPUS"):
    line["host_cpus"] = float(os.environ["BENCH_HOST_CPUS"])
if calibration:
    for l in open(calibration):
        c = json.loads(l)
        if c.get("compute") in ("gemm", "memory"):
            line["calibration_%s_per_second" % c["compute"]] = c["per_second"]
        elif c.get("link") in ("intra_node", "inter_node"):
            line["calibration_%s_latency_s" % c["link"]] = c["latency_seconds"]
            line["calibration_%s_bytes_per_second" % c["link"]] = c["bytes_per_second"]
        elif c.get("machine") == "shared":
            line["calibration_shared_machine_cores"] = c["cores"]
if name == "demo_loopback":
    line.update({"goal": "launched <= 1.3x in-process", "met": launched <= 1.3 * inproc})
elif name == "gpt_dp3tp2" and mode.startswith("off"):
    line.update({"goal": "launched <= 1.2x floor", "met": launched <= 1.2 * line["floor_ms"]})
elif name == "gpt_dp3tp2":
    line.update({"goal": "launched <= 1.2x in-process", "met": launched <= 1.2 * inproc})
if os.path.exists(profile_json):
    # The launched trace's gradient reductions (docs/profile.md), per iteration and device.
    r = json.load(open(profile_json))["gradient_reductions"]
    line.update({"reduction_hidden_fraction": round(r["hidden_fraction"], 3),
                 "transfer_ms": round(r["transfer_ms_per_iteration_and_device"], 2),
                 "transfer_hidden_fraction": round(r["transfer_hidden_fraction"], 3),
                 "exposed_transfer_ms": round(r["exposed_ms_per_iteration_and_device"], 2),
                 "transfer_hidden_by_members_fraction": round(r["transfer_hidden_by_members_fraction"], 3),
                 "exposed_after_members_ms": round(r["exposed_after_members_ms_per_iteration_and_device"], 2),
                 "compute_ms": round(r["compute_ms_per_iteration_and_device"], 2),
                 "compute_longer_than_transfer": r["compute_ms_per_iteration_and_device"] >
                                                 r["transfer_ms_per_iteration_and_device"]})
    # When the first node-crossing bucket started against the end of backward, per measured
    # iteration and device: the last act of a backward op (an actor named *_grad*) ends
    # backward; a node-crossing bucket is one on hierarchy axis 0 (every case here puts
    # the nodes on axis 0). Positive: it started that many ms before backward ended.
    plan = json.load(open(os.path.join(d, mode + ".inspect.json")))
    crossing = {"bucket_%d/" % b["id"] for b in plan["buckets"] if b["hierarchy_axis"] == 0}
    trace = json.load(open(os.path.join(d, mode + ".launched.trace.json")))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    backward_end, first_bucket, last_reduction = {}, {}, {}
    iteration_start, backward_start, compute_acts = {}, {}, {}
    crossing_thread = {}  # pid -> the thread (stream) that runs its node-crossing buckets
    for e in events:
        if e.get("ph") != "X":
            continue
        key = (e["pid"], e["args"]["iteration"])
        if e.get("cat") == "compute":
            iteration_start[key] = min(iteration_start.get(key, float("inf")), e["ts"])
            compute_acts.setdefault(key, []).append(e)
        if e.get("cat") == "compute" and "_grad" in e["name"]:
            backward_end[key] = max(backward_end.get(key, 0.0), e["ts"] + e["dur"])
            backward_start[key] = min(backward_start.get(key, float("inf")), e["ts"])
        if any(e["name"].startswith(p) for p in crossing):
            first_bucket[key] = min(first_bucket.get(key, float("inf")), e["ts"])
            crossing_thread[e["pid"]] = e["tid"]
        # The iteration's last collective: after backward only gradient reductions remain.
        if e.get("cat") == "boxing":
            last_reduction[key[1]] = max(last_reduction.get(key[1], 0.0), e["ts"] + e["dur"])
    warmup = int(os.environ.get("BENCH_WARMUP", "0"))
    leads = sorted((backward_end[k] - first_bucket[k]) / 1e3 for k in first_bucket
                   if k in backward_end and k[1] >= warmup)
    if leads:
        line["first_cross_node_bucket_lead_ms"] = round(leads[len(leads) // 2], 2)
    # Per measured iteration: how far apart the devices ended backward (all start it within
    # a few ms, after the same last collective), and how long the reductions ran on after
    # the last device's backward ended (what no device's backward could hide). Medians.
    by_iteration = {}
    for (pid, iteration), end in backward_end.items():
        if iteration >= warmup:
            by_iteration.setdefault(iteration, []).append(end)
    skews = sorted((max(v) - min(v)) / 1e3 for v in by_iteration.values())
    # Forward: a device's compute acts that start before its first backward act.
    forward_end = {k: max(e["ts"] + e["dur"] for e in acts if e["ts"] < backward_start[k])
                   for k, acts in compute_acts.items() if k in backward_start and
                   any(e["ts"] < backward_start[k] for e in acts)}
    def median_spread(per_key):
        spread = {}
        for (pid, iteration), t in per_key.items():
            if iteration >= warmup:
                spread.setdefault(iteration, []).append(t)
        values = sorted((max(v) - min(v)) / 1e3 for v in spread.values() if len(v) > 1)
        return round(values[len(values) // 2], 2) if values else None
    # How busy each device's node-crossing stream was: its acts' time in iteration i over
    # the step (first compute act of i to that of i + 1), median over devices and iterations.
    busy = {}
    for e in events:
        if e.get("ph") == "X" and crossing_thread.get(e["pid"]) == e["tid"]:
            key = (e["pid"], e["args"]["iteration"])
            busy[key] = busy.get(key, 0.0) + e["dur"]
    fractions = sorted(busy[(pid, i)] / (iteration_start[(pid, i + 1)] - iteration_start[(pid, i)])
                       for (pid, i) in busy if i >= warmup and (pid, i + 1) in iteration_start and
                       (pid, i) in iteration_start)
    if fractions:
        line["cross_node_stream_busy_fraction"] = round(fractions[len(fractions) // 2], 3)
    line["iteration_start_skew_ms"] = median_spread(iteration_start)
    line["forward_end_skew_ms"] = median_spread(forward_end)
    tails = sorted((last_reduction[i] - max(v)) / 1e3 for i, v in by_iteration.items() if i in last_reduction)
    if skews:
        line["backward_end_skew_ms"] = round(skews[len(skews) // 2], 2)
    if tails:
        line["reduction_after_last_backward_ms"] = round(tails[len(tails) // 2], 2)
    # When each device's next forward started after its own backward ended (its first
    # compute act of iteration i + 1 against its last backward act of i): how long the
    # next iteration waited for the reductions left at the end of backward. Median over
    # devices and measured iterations.
    waits = sorted((iteration_start[(pid, i + 1)] - end) / 1e3 for (pid, i), end in backward_end.items()
                   if i >= warmup and (pid, i + 1) in iteration_start)
    if waits:
        line["next_forward_after_backward_ms"] = round(waits[len(waits) // 2], 2)
if mode == "off" and os.path.exists(os.path.join(d, "off_bucket_mb_" + os.environ.get("BENCH_BUCKET_REFERENCE", "") + ".summary.json")):
    ref = json.load(open(os.path.join(d, "off_bucket_mb_" + os.environ["BENCH_BUCKET_REFERENCE"] + ".summary.json")))
    line["over_bucket_reference"] = round(launched / ref["launched_step_ms"], 3)
if mode not in ("off",) and not mode.startswith("off_bucket_mb_"):
    off = os.path.join(d, "off.summary.json")
    if os.path.exists(off):
        off_ms = json.load(open(off))["launched_step_ms"]
        line["over_off"] = round(launched / off_ms, 3)
        if name.startswith("dp3"):
            line.update({"goal": "auto <= off (3% noise)", "met": launched <= 1.03 * off_ms})
thread_cpu = os.path.join(d, mode + ".thread_cpu.json")
if os.path.exists(thread_cpu):
    line["thread_cpu"] = json.load(open(thread_cpu))
with open(os.path.join(d, mode + ".summary.json"), "w") as f:
    json.dump(line, f)
print(json.dumps(line), flush=True)
PYEOF
  done
}

# The PyTorch DDP reference of a netns case at one rate, with the launched plans' ratios to it.
run_ddp_mode() {
  local name="$1" rate="$2" nodes="$3" flags="$4" dir="$5" i before=() tx rx btx brx link_bytes=0 torch_line
  if ! "$PY" -c "import torch" 2> /dev/null; then
    echo "{\"case\": \"$name\", \"rate_mbit\": $rate, \"mode\": \"pytorch_ddp\", \"skipped\": \"python3 cannot import torch\"}"
    return
  fi
  netns_shape "$rate"
  for ((i = 0; i < nodes; i++)); do before+=("$(netns_link_bytes "$i")"); done
  torch_line="$(run_torch_ddp "$flags" "$nodes" "$dir")"
  for ((i = 0; i < nodes; i++)); do
    read -r tx rx <<< "$(netns_link_bytes "$i")"
    read -r btx brx <<< "${before[$i]}"
    if (( tx - btx > link_bytes )); then link_bytes=$(( tx - btx )); fi
    if (( rx - brx > link_bytes )); then link_bytes=$(( rx - brx )); fi
  done
  netns_unshape
  "$PY" - "$name" "$rate" "$ITERS" "$link_bytes" "$torch_line" "$dir" <<'PYEOF'
import json, os, sys
name, rate, iters, link_bytes, torch_line, d = sys.argv[1:]
rate, iters, link_bytes = int(rate), int(iters), int(link_bytes)
torch = json.loads(torch_line)
step = torch["median_step_ms"]
line = {"case": name, "rate_mbit": rate, "mode": "pytorch_ddp", "step_ms": step,
        "link_bytes_per_iter": int(link_bytes / iters),
        "link_ms": round(link_bytes / iters * 8 / (rate * 1e6) * 1e3, 2),
        "torch": torch["torch"], "openblas_core": torch["openblas_core"],
        "torch_threads": torch["torch_threads"], "params": torch["params"]}
for mode in ("off", "auto"):
    path = os.path.join(d, mode + ".summary.json")
    if os.path.exists(path):
        line[mode + "_over_pytorch_ddp"] = round(json.load(open(path))["launched_step_ms"] / step, 3)
if name == "dp3_h512" and "auto_over_pytorch_ddp" in line:
    line.update({"goal": "auto <= 0.5x PyTorch DDP", "met": line["auto_over_pytorch_ddp"] <= 0.5})
print(json.dumps(line), flush=True)
PYEOF
}

main() {
  RUN="${WORK_DIR:-$(mktemp -d /tmp/distributed_bench.XXXXXX)}"
  mkdir -p "$RUN"
  build
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  echo "{\"config\": {\"cases\": \"$CASES\", \"rates_mbit\": [$RATES], \"iters\": $ITERS, \"rounds\": $ROUNDS, \"warmup\": $WARMUP," \
    "\"launch_flags\": \"$LAUNCH_FLAGS\", \"gpt_flags\": \"$GPT_FLAGS\", \"modes\": \"$MODES\", \"bucket_reference\": \"$BUCKET_REFERENCE\", \"trace\": $TRACE, \"host_cpus\": $HOST_CPUS_JSON, \"calibration\": \"$CALIBRATION\", \"oneflow_openblas_coretype\": \"${OPENBLAS_CORETYPE:-auto}\", \"cpus\": $(nproc), \"load_avg_1m\": $(cut -d' ' -f1 /proc/loadavg)," \
    "\"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\"}}"
  local name spec network nodes rate
  for name in "${CASE_LIST[@]}"; do
    spec="$(case_spec "$name")"
    read -r network nodes _ <<< "${spec%%|*}"
    if [[ "$network" == loopback ]]; then
      loopback_start_daemons "$nodes" "$BIN" "$RUN/token" "$RUN/loopback.$name"
      calibrate_case loopback 0 "$RUN/$name.calibration"
      run_case "$name" 0
      netns_stop_daemons
    else
      netns_create "$nodes"
      NETNS_HOST_CPUS="$HOST_CPUS" netns_start_daemons "$BIN" "$RUN/token" "$RUN/netns.$name" "$PORT"
      calibrate_case netns "${RATE_LIST[0]}" "$RUN/$name.calibration"
      for rate in "${RATE_LIST[@]}"; do run_case "$name" "$rate"; done
      netns_teardown
    fi
  done
  OK=1
}

main
