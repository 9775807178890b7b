#!/usr/bin/env bash
# Compressed boxing on emulated slow links (docs/benchmarks.md, issue 11 "Benchmarks"):
# N "nodes" as Linux network namespaces on one bridge, each joined by a veth pair whose
# both ends are rate-limited with tc, one oneflowd per namespace bound to its address,
# the gpt compiled for N nodes x 1 device (data parallel, so every gradient crosses the
# emulated link) with a link model equal to the tc rate, and each compression mode
# launched through `oneflow launch` on the same links, one after the other. Prints JSON
# lines (stdout): the conditions, the link as measured, and per mode the median step
# time, the speedup over the dense (`off`) run of the same plan on the same links, the
# plan's wire bytes per device against the dense plan's, measured wire bytes when the
# metrics lines carry them, and the final loss against the dense run's.
#
#   sudo bench/slow_links/slow_link_bench.sh                   2 nodes, 1 Gbit/s, off,auto,fp8,int4
#   sudo bench/slow_links/slow_link_bench.sh --rates_mbit=1000,250 --iters=30 --rounds=2
#   sudo bench/slow_links/slow_link_bench.sh --nodes=3 --gpt_flags="--hidden=256 --layers=2"
#
# Flags (defaults in brackets):
#   --nodes=N             namespaces, one oneflowd and one device each [2]
#   --rates_mbit=R,...    tc rate of every link in Mbit/s; one set of runs per rate [1000]
#   --latency_ms=L        one-way delay added on each veth end with netem [0; needs sch_netem]
#   --modes=M,...         compression modes besides the dense reference `off` [auto,fp8,int4]
#   --iters=K             iterations per launch [25]
#   --warmup=W            iterations left out of the step-time median [5]
#   --rounds=R            launches per mode, interleaved off,auto,...,off,auto,... [2]
#   --gpt_flags="..."     model flags of examples/gpt [--hidden=512 --layers=4 --heads=8 --batch=2]
#                         (batch 2: on 2 cores the compute of batch 8 hides much of the link;
#                         the gradients, 51.5 MB per device per step, do not depend on it)
#   --codec_bytes_per_second=B   the compiler's codec model (passed to gpt) [gpt's default]
#   --calibration=run|none|FILE  the cost model's calibration (gpt's --codec_calibration):
#                         run `oneflow calibrate` into the work dir first, none, or a file
#                         [run]; the inter-node bandwidth is the tc rate either way (the
#                         flag wins over the file), latencies and codecs come from the file
#   --unshaped_modes=M,...|none  the same plans again with tc removed, to show the compute
#                                floor [off,auto]
#   --subnet=A.B.C        the namespaces' /24 (only inside them) [10.231.0]
#   --probe_mib=M         bytes of the link probe [64]
#   --wait_quiet=S        before each launch, wait up to S s for other processes to keep
#                         less than 0.2 cores busy [0]; every mode line reports the load
#                         others put on the machine during its launches either way
#   --bin_dir=DIR         use these binaries (DIR/tools/cli/oneflow, ...) instead of building
#   --work_dir=DIR        where plans, logs and metrics go [mktemp -d /tmp/slow_links.XXXXXX]
#   --keep                keep the work dir (it is kept anyway when the run fails)
#
# Needs root (namespaces, veth, tc). Everything it creates is named ofslb<pid>-*, and
# everything is torn down on exit, failure, Ctrl-C, SIGTERM or SIGHUP: the launch client,
# the daemons (which stop their workers), any process left in its namespaces, then the
# namespaces themselves (their veths and bridge go with them). Only addresses of the
# namespaces it creates are ever dialled. A benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/bench/slow_links"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
TARGETS=(//tools/launcher:oneflowd //tools/worker:oneflow_worker //tools/cli:oneflow //examples/gpt)

NODES=2
RATES="1000"
LATENCY_MS=0
MODES="auto,fp8,int4"
ITERS=25
WARMUP=5
ROUNDS=2
GPT_FLAGS="--hidden=512 --layers=4 --heads=8 --batch=2"
CODEC_BPS=""
CALIBRATION="run"
UNSHAPED_MODES="off,auto"
SUBNET="10.231.0"
PROBE_MIB=64
WAIT_QUIET=0
BIN_DIR=""
WORK_DIR=""
KEEP=0
PORT=5001
PROBE_PORT=5201

log() { echo "slow_link_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --nodes=*) NODES="${arg#*=}" ;;
    --rates_mbit=*) RATES="${arg#*=}" ;;
    --latency_ms=*) LATENCY_MS="${arg#*=}" ;;
    --modes=*) MODES="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --codec_bytes_per_second=*) CODEC_BPS="${arg#*=}" ;;
    --calibration=*) CALIBRATION="${arg#*=}" ;;
    --unshaped_modes=*) UNSHAPED_MODES="${arg#*=}" ;;
    --subnet=*) SUBNET="${arg#*=}" ;;
    --probe_mib=*) PROBE_MIB="${arg#*=}" ;;
    --wait_quiet=*) WAIT_QUIET="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done

uint() { if ! [[ "$2" =~ ^[0-9]+$ ]] || (( $2 < $3 )); then die "--$1=$2 must be an integer >= $3"; fi; }
uint nodes "$NODES" 2
(( NODES <= 200 )) || die "--nodes=$NODES: at most 200"
uint iters "$ITERS" 2
uint warmup "$WARMUP" 0
(( WARMUP < ITERS )) || die "--warmup=$WARMUP must be < --iters=$ITERS"
uint rounds "$ROUNDS" 1
uint probe_mib "$PROBE_MIB" 1
uint wait_quiet "$WAIT_QUIET" 0
[[ "$LATENCY_MS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--latency_ms=$LATENCY_MS must be a number >= 0"
IFS=, read -r -a RATE_LIST <<< "$RATES"
for r in "${RATE_LIST[@]}"; do uint rates_mbit "$r" 1; done
MODE_LIST=(off)
IFS=, read -r -a extra_modes <<< "$MODES"
for m in "${extra_modes[@]}"; do
  [[ "$m" =~ ^(off|auto|fp8|int8|int4)$ ]] || die "--modes: '$m' is not one of auto, fp8, int8, int4"
  [[ "$m" == off ]] || MODE_LIST+=("$m")
done
UNSHAPED_LIST=()
if [[ "$UNSHAPED_MODES" != none && -n "$UNSHAPED_MODES" ]]; then
  UNSHAPED_LIST=(off)  # the speedups of these lines are against the unshaped dense run
  IFS=, read -r -a extra_modes <<< "$UNSHAPED_MODES"
  for m in "${extra_modes[@]}"; do
    [[ " ${MODE_LIST[*]} " == *" $m "* ]] || die "--unshaped_modes: '$m' is not among the modes (${MODE_LIST[*]})"
    [[ "$m" == off ]] || UNSHAPED_LIST+=("$m")
  done
fi
[[ "$SUBNET" =~ ^(10|192\.168|172\.(1[6-9]|2[0-9]|3[01]))(\.[0-9]{1,3}){0,2}$ && \
   $(tr -cd . <<< "$SUBNET" | wc -c) == 2 ]] || die "--subnet=$SUBNET: three octets of a private range, e.g. 10.231.0"
[[ "$GPT_FLAGS" =~ ^[-A-Za-z0-9_=.,\ ]*$ ]] || die "--gpt_flags: only flags (letters, digits, - _ = . ,)"
[[ -z "$CODEC_BPS" || "$CODEC_BPS" =~ ^[0-9.eE+]+$ ]] || die "--codec_bytes_per_second=$CODEC_BPS is not a number"
[[ "$CALIBRATION" == run || "$CALIBRATION" == none || -f "$CALIBRATION" ]] || \
  die "--calibration=$CALIBRATION: give run, none or an existing calibration file"
[[ -z "$CODEC_BPS" || "$CALIBRATION" == none ]] || die "--codec_bytes_per_second needs --calibration=none (both give codec throughputs)"
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc); run it with sudo"
for tool in ip tc; do command -v "$tool" >/dev/null || die "'$tool' (iproute2) is missing"; done

# ---------------------------------------------------------------------------------------
# State the teardown reads. Everything below is created after the trap is set.
PREFIX="ofslb$$"
BR_NS="$PREFIX-br"
CREATED_NS=()
DAEMON_PIDS=()
CHILD_PID=""
RUN=""
OK=0

stop_pid() {  # SIGTERM, up to $2 seconds, then SIGKILL; only pids this script started
  local pid="$1" grace="$2" i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

teardown() {
  local rc=$? ns pid pids=()
  trap - EXIT INT TERM HUP
  set +e
  [[ -n "$CHILD_PID" ]] && stop_pid "$CHILD_PID" 12
  for pid in "${DAEMON_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${DAEMON_PIDS[@]}"; do stop_pid "$pid" 8; done
  # Whatever is still inside the namespaces this script created is this script's.
  for ns in "${CREATED_NS[@]}"; do
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    if (( ${#pids[@]} )); then
      log "killing leftover processes in $ns: ${pids[*]}"
      kill -KILL "${pids[@]}" 2>/dev/null
    fi
  done
  sleep 0.2
  for ns in "${CREATED_NS[@]}"; do
    ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
  done
  if [[ -n "$RUN" && -d "$RUN" ]]; then
    if (( KEEP )) || (( ! OK )); then
      log "work dir kept: $RUN"
    else
      rm -rf "$RUN"
    fi
  fi
  (( OK )) || log "failed (exit $rc); torn down"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Runs a command in the background and waits for it, so a signal to this script is
# handled at once (bash runs traps only between commands, but `wait` is interruptible).
run_waiting() {
  "$@" &
  CHILD_PID=$!
  local rc=0
  wait "$CHILD_PID" || rc=$?
  CHILD_PID=""
  return "$rc"
}

# ---------------------------------------------------------------------------------------
build() {
  if [[ -n "$BIN_DIR" ]]; then
    log "using binaries under $BIN_DIR"
  else
    log "building (-c opt, --jobs=2): ${TARGETS[*]}"
    cd "$ROOT"
    run_waiting bazel build -c opt --symlink_prefix=/ --jobs=2 --color=no --curses=no "${TARGETS[@]}" >&2
    # bazel-out/k8-opt, not bazel-bin: the link follows whichever configuration built last.
    BIN_DIR="$ROOT/bazel-out/k8-opt/bin"
  fi
  # A private copy, so builds running beside the bench cannot replace a binary mid-run.
  mkdir -p "$RUN/bin"
  local src
  for src in tools/launcher/oneflowd tools/worker/oneflow_worker tools/cli/oneflow examples/gpt/gpt; do
    [[ -x "$BIN_DIR/$src" ]] || die "$BIN_DIR/$src is missing"
    cp "$BIN_DIR/$src" "$RUN/bin/"
  done
  BIN="$RUN/bin"
}

node_ns() { echo "$PREFIX-n$1"; }
node_ip() { echo "$SUBNET.$(( $1 + 1 ))"; }

create_network() {
  log "creating $NODES namespaces on bridge namespace $BR_NS, subnet $SUBNET.0/24"
  ip netns add "$BR_NS"
  CREATED_NS+=("$BR_NS")
  ip -n "$BR_NS" link set lo up
  ip -n "$BR_NS" link add br0 type bridge
  ip -n "$BR_NS" link set br0 up
  local i ns
  for ((i = 0; i < NODES; i++)); do
    ns="$(node_ns "$i")"
    ip netns add "$ns"
    CREATED_NS+=("$ns")
    ip -n "$ns" link set lo up
    # Created directly inside the namespaces: nothing appears in the caller's namespace.
    ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$BR_NS"
    ip -n "$BR_NS" link set "p$i" master br0
    ip -n "$BR_NS" link set "p$i" up
    ip -n "$ns" addr add "$(node_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

# Both ends of every veth: a node's sends (its eth0) and its receives (its bridge port),
# so each node has a full-duplex link of the rate, like a NIC.
qdisc_args() {
  local rate_mbit="$1"
  if [[ "$LATENCY_MS" != 0 ]]; then
    echo "netem delay ${LATENCY_MS}ms rate ${rate_mbit}mbit limit 100000"
  else
    # burst: 2 ms of the rate, at least 128 KiB (veth hands tbf GSO packets up to 64 KiB).
    local burst=$(( rate_mbit * 1000000 / 8 / 500 ))
    (( burst < 131072 )) && burst=131072
    echo "tbf rate ${rate_mbit}mbit burst $burst latency 20ms"
  fi
}

shape() {
  local rate_mbit="$1" i args=()
  read -r -a args <<< "$(qdisc_args "$rate_mbit")"
  for ((i = 0; i < NODES; i++)); do
    tc -n "$(node_ns "$i")" qdisc replace dev eth0 root "${args[@]}"
    tc -n "$BR_NS" qdisc replace dev "p$i" root "${args[@]}"
  done
}

unshape() {
  local i
  for ((i = 0; i < NODES; i++)); do
    tc -n "$(node_ns "$i")" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$BR_NS" qdisc del dev "p$i" root 2>/dev/null || true
  done
}

check_qdisc() {
  # netem is a module many kernels (and containers) lack: fail before anything runs.
  local probe="$PREFIX-probe" args=()
  read -r -a args <<< "$(qdisc_args "${RATE_LIST[0]}")"
  ip netns add "$probe"
  CREATED_NS+=("$probe")
  ip -n "$probe" link set lo up
  if ! tc -n "$probe" qdisc add dev lo root "${args[@]}" 2>"$RUN/qdisc.err"; then
    die "this kernel refuses '${args[*]}': $(cat "$RUN/qdisc.err")$([[ "$LATENCY_MS" != 0 ]] && echo ' (--latency_ms needs sch_netem)')"
  fi
  ip netns del "$probe"
  unset 'CREATED_NS[-1]'
}

probe_link() {  # node 0 -> node 1, through both shaped ends
  local out="$1"
  ip netns exec "$(node_ns 1)" "$PY" "$HERE/net_probe.py" server "$(node_ip 1)" "$PROBE_PORT" &
  local server=$!
  DAEMON_PIDS+=("$server")
  run_waiting ip netns exec "$(node_ns 0)" "$PY" "$HERE/net_probe.py" client "$(node_ip 1)" "$PROBE_PORT" \
    $(( PROBE_MIB * 1048576 )) > "$out"
  wait "$server" || true
  unset 'DAEMON_PIDS[-1]'
}

start_daemons() {
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  local i ns deadline
  NODES_ARG=""
  for ((i = 0; i < NODES; i++)); do
    ns="$(node_ns "$i")"
    mkdir -p "$RUN/node$i"
    # UCX_TLS: the namespaces share one kernel and /dev/shm, so UCX would use shared memory
    # past the shaped links (bench/lib/netns_hosts.sh says the same).
    ip netns exec "$ns" env UCX_TLS=tcp,self "$BIN/oneflowd" --listen="$(node_ip "$i"):$PORT" --token_file="$RUN/token" \
      --work_dir="$RUN/node$i/work" --worker_binary="$BIN/oneflow_worker" \
      > "$RUN/node$i/oneflowd.out" 2> "$RUN/node$i/oneflowd.err" &
    DAEMON_PIDS+=($!)
    NODES_ARG+="${NODES_ARG:+,}$(node_ip "$i"):$PORT"
  done
  for ((i = 0; i < NODES; i++)); do
    deadline=$((SECONDS + 20))
    until grep -q "oneflowd listening on" "$RUN/node$i/oneflowd.out" 2>/dev/null; do
      kill -0 "${DAEMON_PIDS[$i]}" 2>/dev/null || die "oneflowd of node $i exited: $(tail -5 "$RUN/node$i/oneflowd.err")"
      (( SECONDS < deadline )) || die "oneflowd of node $i did not start in 20 s"
      sleep 0.1
    done
  done
  log "daemons: $NODES_ARG"
}

compile_plans() {  # rate_mbit dir
  local rate_mbit="$1" dir="$2" mode bw
  bw="$(( rate_mbit * 125000 ))"  # Mbit/s -> bytes/s
  for mode in "${MODE_LIST[@]}"; do
    # shellcheck disable=SC2086
    "$BIN/gpt" --nodes="$NODES" --devices_per_node=1 --dp="$NODES" $GPT_FLAGS \
      --inter_node_bandwidth="$bw" ${CODEC_BPS:+--codec_bytes_per_second=$CODEC_BPS} \
      ${CALIBRATION_FILE:+--codec_calibration=$CALIBRATION_FILE} \
      --compression="$mode" --plan_out="$dir/$mode.plan" > "$dir/$mode.compile.log"
    "$BIN/oneflow" inspect "$dir/$mode.plan" --format=json > "$dir/$mode.inspect.json"
    "$BIN/oneflow" inspect "$dir/$mode.plan" > "$dir/$mode.inspect.txt"
  done
  log "compiled ${MODE_LIST[*]} for inter-node $bw B/s: $(grep -h '^device 0:0' "$dir/off.compile.log")"
}

# CPU time, in clock ticks: the machine's busy time, and ours (the daemons with the workers
# they reaped, and this script's reaped children: the launch client).
HZ="$(getconf CLK_TCK)"
machine_busy_ticks() {
  local _cpu user nice system _idle _iowait irq softirq steal _rest
  read -r _cpu user nice system _idle _iowait irq softirq steal _rest < /proc/stat
  echo $(( user + nice + system + irq + softirq + steal ))
}
our_ticks() {
  local total=0 pid stat fields
  for pid in "${DAEMON_PIDS[@]}" "$$"; do
    stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || continue
    read -r -a fields <<< "${stat##*) }"  # from field 3 (state) on: utime is fields[11]
    total=$(( total + fields[11] + fields[12] + fields[13] + fields[14] ))
  done
  echo "$total"
}
now_ms() { local t; t="$(cat /proc/uptime)"; t="${t%% *}"; echo "${t/./}0"; }

# --wait_quiet: wait until other processes keep less than 0.2 cores busy (2 s windows).
wait_quiet() {
  (( WAIT_QUIET > 0 )) || return 0
  local start=$SECONDS b0 o0 b1 o1 busy
  while (( SECONDS - start < WAIT_QUIET )); do
    b0="$(machine_busy_ticks)"; o0="$(our_ticks)"
    sleep 2
    b1="$(machine_busy_ticks)"; o1="$(our_ticks)"
    busy=$(( (b1 - b0) - (o1 - o0) ))
    if (( busy * 100 < 2 * HZ * 20 )); then
      (( SECONDS - start > 2 )) && log "waited $(( SECONDS - start )) s for the machine to go quiet"
      return 0
    fi
    (( SECONDS - start <= 2 )) && log "machine busy ($(( busy * 100 / (2 * HZ) ))% of a core by others): waiting up to $WAIT_QUIET s"
  done
  log "still busy after --wait_quiet=$WAIT_QUIET s; running anyway"
}

launch() {  # plan metrics_file job_id
  local plan="$1" metrics="$2" job="$3" b0 o0 t0 b1 o1 t1
  wait_quiet
  b0="$(machine_busy_ticks)"; o0="$(our_ticks)"; t0="$(now_ms)"
  if ! run_waiting ip netns exec "$(node_ns 0)" "$BIN/oneflow" launch "$plan" --nodes="$NODES_ARG" \
      --token_file="$RUN/token" --iters="$ITERS" --metrics="$metrics" --job_id="$job" \
      --collective_timeout_s=300 > "${metrics%.metrics}.out" 2> "${metrics%.metrics}.err"; then
    log "oneflow launch of $job failed:"
    tail -20 "${metrics%.metrics}.err" >&2
    exit 1
  fi
  sleep 0.3  # the daemons reap their workers around the end of the stream
  b1="$(machine_busy_ticks)"; o1="$(our_ticks)"; t1="$(now_ms)"
  echo "{\"wall_ms\": $(( t1 - t0 )), \"busy_ticks\": $(( b1 - b0 )), \"our_ticks\": $(( o1 - o0 )), \"hz\": $HZ}" \
    > "${metrics%.metrics}.load"
}

run_modes() {  # plan_dir out_dir label modes...
  local plan_dir="$1" out_dir="$2" label="$3" round mode median
  shift 3
  for ((round = 0; round < ROUNDS; round++)); do
    for mode in "$@"; do
      launch "$plan_dir/$mode.plan" "$out_dir/$mode.r$round.metrics" "slb-$label-$mode-r$round-$$"
      median="$("$PY" -c 'import json,statistics,sys; w=int(sys.argv[2]); s=[json.loads(l)["step_ms"] for l in open(sys.argv[1]) if l.startswith("{")]; print(round(statistics.median(s[w:]),1))' \
        "$out_dir/$mode.r$round.metrics" "$WARMUP")"
      log "$label $mode round $round: median step $median ms"
    done
  done
}

main() {
  RUN="${WORK_DIR:-$(mktemp -d /tmp/slow_links.XXXXXX)}"
  mkdir -p "$RUN"
  check_qdisc
  build
  create_network
  start_daemons
  CALIBRATION_FILE=""
  if [[ "$CALIBRATION" == run ]]; then
    CALIBRATION_FILE="$RUN/calibration.jsonl"
    "$BIN/oneflow" calibrate --out="$CALIBRATION_FILE" || die "oneflow calibrate failed"
    log "calibration: $(tr '\n' ' ' < "$CALIBRATION_FILE" | grep -o '{"link[^}]*}' | tr '\n' ' ')"
  elif [[ "$CALIBRATION" != none ]]; then
    CALIBRATION_FILE="$CALIBRATION"
  fi
  "$PY" "$HERE/report.py" config nodes="$NODES" devices_per_node=1 dp="$NODES" \
    rates_mbit="[$RATES]" latency_ms="$LATENCY_MS" qdisc="\"$(qdisc_args 1 | cut -d' ' -f1)\"" \
    modes="\"${MODE_LIST[*]}\"" iters="$ITERS" warmup="$WARMUP" rounds="$ROUNDS" \
    gpt_flags="\"$GPT_FLAGS\"" codec_bytes_per_second="\"${CODEC_BPS:-default}\"" calibration="\"$CALIBRATION\"" \
    cpus="$(nproc)" kernel="\"$(uname -r)\"" commit="\"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)\"" \
    tree_dirty="$([[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]] && echo true || echo false)"
  local rate dir
  for rate in "${RATE_LIST[@]}"; do
    dir="$RUN/rate$rate"
    mkdir -p "$dir"
    shape "$rate"
    probe_link "$dir/link.json"
    "$PY" "$HERE/report.py" link --run_dir="$RUN" --rate_mbit="$rate" --latency_ms="$LATENCY_MS"
    compile_plans "$rate" "$dir"
    run_modes "$dir" "$dir" "r$rate" "${MODE_LIST[@]}"
    "$PY" "$HERE/report.py" modes --run_dir="$RUN" --rate_mbit="$rate" --modes="$(IFS=,; echo "${MODE_LIST[*]}")" \
      --warmup="$WARMUP"
  done
  if (( ${#UNSHAPED_LIST[@]} )); then
    unshape
    mkdir -p "$RUN/unshaped"
    run_modes "$RUN/rate${RATE_LIST[0]}" "$RUN/unshaped" unshaped "${UNSHAPED_LIST[@]}"
    "$PY" "$HERE/report.py" unshaped --run_dir="$RUN" --rate_mbit="${RATE_LIST[0]}" \
      --modes="$(IFS=,; echo "${UNSHAPED_LIST[*]}")" --warmup="$WARMUP"
  fi
  OK=1
}

main
