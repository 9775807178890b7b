#!/usr/bin/env bash
# Mixture of experts across processes (docs/benchmarks.md, "Mixture of experts: fssdp vs
# ep vs replicated", setting (b)): the MoE gpt compiled for 2 nodes x 2 devices (dp = 4,
# the experts sharded over all 4 devices) with fssdp, ep and replicated, each launched
# through `oneflow launch` on two `oneflowd` daemons, one per node. By default each node
# is a Linux network namespace joined to the other by veth pairs on a bridge, both ends
# of each veth rate-limited with tc (tbf); with --loopback the daemons listen on
# 127.0.0.1 instead (no shaping, no root needed). Prints JSON lines (stdout): the
# conditions, then per (hidden, skew, mode) the median step time over the launches'
# post-warm-up iterations, bytes per iteration on the wire summed over the 4 devices, the
# bytes ratio replicated/fssdp and the step-time ratio ep/fssdp.
#
# Bytes: the plan's bytes_sent_per_iter summed over the devices, with the sparse steps'
# planned (dense worst-case) bytes replaced by measured ones: the launch's own, from the
# "sparse" object of its metrics lines (summed over the nodes; median over the
# post-warm-up iterations), and for comparison those of `moe_bench --plan_file=PLAN`, the
# same plan trained in one process (same seed, data and routing). "bytes_source" says
# which one "bytes_per_iter" uses (the launch's when its lines carry them).
#
#   sudo bench/moe/moe_launch_bench.sh                           namespaces, 1000 Mbit/s
#   bench/moe/moe_launch_bench.sh --loopback
#   sudo bench/moe/moe_launch_bench.sh --rate_mbit=200 --hidden=16,64 --skew=0.3
#
# Flags (defaults in brackets):
#   --loopback            daemons on 127.0.0.1, no namespaces, no tc [off]
#   --rate_mbit=R         tc rate of every veth end, Mbit/s; also the plans' inter-node
#                         bandwidth (the auto rule's link) [1000]
#   --hidden=H,...        hidden sizes [16,64]
#   --skew=S,...          Zipf skews of the router prior [0,0.3]
#   --modes=M,...         [fssdp,ep,replicated]
#   --gpt_flags="..."     the other gpt flags [--moe_experts=32 --moe_top_k=1 --seq=128
#                         --batch=32 --layers=1 --heads=2 --vocab=64 --compression=off]: the
#                         same model as moe_bench's defaults; compression off, since a
#                         compressed step is never sparse (with the gpt's default
#                         --compression=auto a slow link makes the fssdp steps dense and compressed)
#   --iters=K             iterations per launch [12]
#   --warmup=W            iterations left out of the step-time median [4]
#   --rounds=R            launches per plan, interleaved over the modes [1]
#   --subnet=A.B.C        the namespaces' /24 [10.232.0]
#   --port=P              the daemons' port (loopback: P and P+1) [5401]
#   --bin_dir=DIR         use these binaries (DIR/tools/cli/oneflow, ...) instead of building
#   --work_dir=DIR        where plans, logs and metrics go [mktemp -d /tmp/moe_launch.XXXXXX]
#   --keep                keep the work dir (it is kept anyway when the run fails)
#
# Everything it creates is named ofmoe<pid>-*, and everything is torn down on exit,
# failure, Ctrl-C, SIGTERM or SIGHUP: the launch client, the daemons (which stop their
# workers), any process left in its namespaces, then the namespaces (their veths and
# bridge go with them). Only loopback or addresses of the namespaces it creates are
# dialled. A benchmark, not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"
TARGETS=(//tools/launcher:oneflowd //tools/worker:oneflow_worker //tools/cli:oneflow //examples/gpt //bench/moe:moe_bench)

LOOPBACK=0
RATE=1000
HIDDEN="16,64"
SKEW="0,0.3"
MODES="fssdp,ep,replicated"
GPT_FLAGS="--moe_experts=32 --moe_top_k=1 --seq=128 --batch=32 --layers=1 --heads=2 --vocab=64 --compression=off"
ITERS=12
WARMUP=4
ROUNDS=1
SUBNET="10.232.0"
PORT=5401
BIN_DIR=""
WORK_DIR=""
KEEP=0

log() { echo "moe_launch_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --loopback) LOOPBACK=1 ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --hidden=*) HIDDEN="${arg#*=}" ;;
    --skew=*) SKEW="${arg#*=}" ;;
    --modes=*) MODES="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --subnet=*) SUBNET="${arg#*=}" ;;
    --port=*) PORT="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done

uint() { if ! [[ "$2" =~ ^[0-9]+$ ]] || (( $2 < $3 )); then die "--$1=$2 must be an integer >= $3"; fi; }
uint rate_mbit "$RATE" 1
uint iters "$ITERS" 2
uint warmup "$WARMUP" 0
(( WARMUP < ITERS )) || die "--warmup=$WARMUP must be < --iters=$ITERS"
uint rounds "$ROUNDS" 1
uint port "$PORT" 1024
(( PORT < 65535 )) || die "--port=$PORT must be < 65535"
IFS=, read -r -a HIDDEN_LIST <<< "$HIDDEN"
for h in "${HIDDEN_LIST[@]}"; do uint hidden "$h" 1; done
IFS=, read -r -a SKEW_LIST <<< "$SKEW"
for s in "${SKEW_LIST[@]}"; do [[ "$s" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--skew: '$s' is not a number >= 0"; done
IFS=, read -r -a MODE_LIST <<< "$MODES"
for m in "${MODE_LIST[@]}"; do [[ "$m" =~ ^(fssdp|ep|replicated)$ ]] || die "--modes: '$m' is not fssdp, ep or replicated"; done
[[ "$GPT_FLAGS" =~ ^[-A-Za-z0-9_=.,\ ]*$ ]] || die "--gpt_flags: only flags (letters, digits, - _ = . ,)"
[[ "$SUBNET" =~ ^(10|192\.168|172\.(1[6-9]|2[0-9]|3[01]))(\.[0-9]{1,3}){0,2}$ && \
   $(tr -cd . <<< "$SUBNET" | wc -c) == 2 ]] || die "--subnet=$SUBNET: three octets of a private range, e.g. 10.232.0"
if (( ! LOOPBACK )); then
  [[ "$(id -u)" == 0 ]] || die "namespaces need root; run it with sudo, or pass --loopback"
  for tool in ip tc; do command -v "$tool" >/dev/null || die "'$tool' (iproute2) is missing"; done
fi

# ---------------------------------------------------------------------------------------
PREFIX="ofmoe$$"
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
    if (( KEEP )) || (( ! OK )); then log "work dir kept: $RUN"; else rm -rf "$RUN"; fi
  fi
  (( OK )) || log "failed (exit $rc); torn down"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

run_waiting() {  # in the background, so a signal is handled at once
  "$@" &
  CHILD_PID=$!
  local rc=0
  wait "$CHILD_PID" || rc=$?
  CHILD_PID=""
  return "$rc"
}

build() {
  if [[ -n "$BIN_DIR" ]]; then
    log "using binaries under $BIN_DIR"
  else
    log "building (-c opt, --jobs=2): ${TARGETS[*]}"
    cd "$ROOT"
    run_waiting bazel build -c opt --symlink_prefix=/ --jobs=2 --color=no --curses=no "${TARGETS[@]}" >&2
    BIN_DIR="$ROOT/bazel-out/k8-opt/bin"  # not bazel-bin: it follows the last configuration
  fi
  mkdir -p "$RUN/bin"  # a private copy: builds beside the bench cannot replace a binary mid-run
  local src
  for src in tools/launcher/oneflowd tools/worker/oneflow_worker tools/cli/oneflow examples/gpt/gpt bench/moe/moe_bench; do
    [[ -x "$BIN_DIR/$src" ]] || die "$BIN_DIR/$src is missing"
    cp "$BIN_DIR/$src" "$RUN/bin/"
  done
  BIN="$RUN/bin"
}

node_ns() { echo "$PREFIX-n$1"; }
node_ip() { if (( LOOPBACK )); then echo 127.0.0.1; else echo "$SUBNET.$(( $1 + 1 ))"; fi; }
node_port() { if (( LOOPBACK )); then echo $(( PORT + $1 )); else echo "$PORT"; fi; }
in_node() {  # node command...: run in the node's namespace (or here on loopback)
  local node="$1"
  shift
  # Always in a background subshell (&): exec, so its pid is the process itself.
  if (( LOOPBACK )); then exec "$@"; else exec ip netns exec "$(node_ns "$node")" "$@"; fi
}

create_network() {
  local burst=$(( RATE * 1000000 / 8 / 500 )) i ns
  (( burst < 131072 )) && burst=131072  # 2 ms of the rate, at least 128 KiB (veth GSO)
  QDISC=(tbf rate "${RATE}mbit" burst "$burst" latency 20ms)
  log "creating 2 namespaces on bridge namespace $BR_NS, $SUBNET.0/24, tc ${QDISC[*]} on every veth end"
  ip netns add "$BR_NS"
  CREATED_NS+=("$BR_NS")
  ip -n "$BR_NS" link set lo up
  ip -n "$BR_NS" link add br0 type bridge
  ip -n "$BR_NS" link set br0 up
  for i in 0 1; do
    ns="$(node_ns "$i")"
    ip netns add "$ns"
    CREATED_NS+=("$ns")
    ip -n "$ns" link set lo up
    ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$BR_NS"
    ip -n "$BR_NS" link set "p$i" master br0
    ip -n "$BR_NS" link set "p$i" up
    ip -n "$ns" addr add "$(node_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    tc -n "$ns" qdisc replace dev eth0 root "${QDISC[@]}"
    tc -n "$BR_NS" qdisc replace dev "p$i" root "${QDISC[@]}"
  done
}

start_daemons() {
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  local i deadline
  NODES_ARG=""
  for i in 0 1; do
    mkdir -p "$RUN/node$i"
    in_node "$i" "$BIN/oneflowd" --listen="$(node_ip "$i"):$(node_port "$i")" --token_file="$RUN/token" \
      --work_dir="$RUN/node$i/work" --worker_binary="$BIN/oneflow_worker" \
      > "$RUN/node$i/oneflowd.out" 2> "$RUN/node$i/oneflowd.err" &
    DAEMON_PIDS+=($!)
    NODES_ARG+="${NODES_ARG:+,}$(node_ip "$i"):$(node_port "$i")"
  done
  for i in 0 1; do
    deadline=$((SECONDS + 20))
    until grep -q "oneflowd listening on" "$RUN/node$i/oneflowd.out" 2>/dev/null; do
      kill -0 "${DAEMON_PIDS[$i]}" 2>/dev/null || die "oneflowd of node $i exited: $(tail -5 "$RUN/node$i/oneflowd.err")"
      (( SECONDS < deadline )) || die "oneflowd of node $i did not start in 20 s"
      sleep 0.1
    done
  done
  log "daemons: $NODES_ARG"
}

compile_and_measure() {  # dir hidden skew
  local dir="$1" hidden="$2" skew="$3" mode bw=$(( RATE * 125000 ))
  for mode in "${MODE_LIST[@]}" auto; do
    # shellcheck disable=SC2086
    "$BIN/gpt" --nodes=2 --devices_per_node=2 --dp=4 $GPT_FLAGS --hidden="$hidden" --moe_zipf_skew="$skew" \
      --inter_node_bandwidth="$bw" --moe_parallel="$mode" --plan_out="$dir/$mode.plan" \
      > "$dir/$mode.compile.log" 2>&1 || die "gpt --moe_parallel=$mode failed: $(tail -3 "$dir/$mode.compile.log")"
  done
  grep -h '^experts:' "$dir/auto.compile.log" > "$dir/rule.txt" || true
  for mode in "${MODE_LIST[@]}"; do
    run_waiting "$BIN/moe_bench" --plan_file="$dir/$mode.plan" --iterations="$ITERS" --warmup="$WARMUP" \
      > "$dir/$mode.plan.json" 2> "$dir/$mode.plan.err" || die "moe_bench --plan_file=$dir/$mode.plan: $(tail -3 "$dir/$mode.plan.err")"
  done
}

launch() {  # plan metrics job
  if ! run_waiting in_node 0 "$BIN/oneflow" launch "$1" --nodes="$NODES_ARG" --token_file="$RUN/token" \
      --iters="$ITERS" --metrics="$2" --job_id="$3" --collective_timeout_s=300 \
      > "${2%.metrics}.out" 2> "${2%.metrics}.err"; then
    log "oneflow launch of $3 failed:"
    tail -20 "${2%.metrics}.err" >&2
    exit 1
  fi
}

report() {  # dir hidden skew
  "$PY" - "$1" "$2" "$3" "$WARMUP" "$ROUNDS" "$RATE" "$LOOPBACK" "${MODE_LIST[*]}" "$GPT_FLAGS" <<'EOF'
import json, statistics, sys
d, hidden, skew, warmup, rounds, rate, loopback, modes, gpt_flags = sys.argv[1:]
warmup, rounds, modes = int(warmup), int(rounds), modes.split()
flags = dict(f.lstrip("-").split("=", 1) for f in gpt_flags.split() if "=" in f)
rows = {}
for m in modes:
    steps, sparse = [], []
    for r in range(rounds):
        lines = [json.loads(l) for l in open(f"{d}/{m}.r{r}.metrics") if l.startswith("{")]
        steps.append(statistics.median([l["step_ms"] for l in lines[warmup:]]))
        sparse += [l["sparse"]["payload_bytes"] + l["sparse"]["metadata_bytes"] for l in lines[warmup:] if "sparse" in l]
    plan = json.loads(open(f"{d}/{m}.plan.json").read())
    if sparse:
        # The launch's measured sparse bytes in place of the sparse steps' planned ones.
        plan["launch_sparse_bytes"] = round(statistics.median(sparse))
        plan["launch_bytes_per_iter"] = (plan["plan_bytes_per_iter"] - plan["sparse_planned_bytes"]
                                         + plan["launch_sparse_bytes"])
    rows[m] = dict(step_ms=statistics.median(steps), plan=plan)
rule = open(f"{d}/rule.txt").read().strip()
def ratio(a, b):
    return round(a / b, 3) if b else None
def wire_bytes(row):  # the launch's measured bytes when its lines had them
    return row["plan"].get("launch_bytes_per_iter", row["plan"]["bytes_per_iter"])
for m in modes:
    r, p = rows[m], rows[m]["plan"]
    f, e, rep = rows.get("fssdp"), rows.get("ep"), rows.get("replicated")
    out = {
        "bench": "moe", "setting": "launch_2x2", "network": "loopback" if loopback == "1" else f"netns_tbf_{rate}mbit",
        "nodes": 2, "devices": 4, "experts": int(flags.get("moe_experts", 0)), "hidden": int(hidden),
        "top_k": int(flags.get("moe_top_k", 1)), "seq": int(flags.get("seq", 64)), "batch": int(flags.get("batch", 8)),
        "skew": float(skew), "layers": int(flags.get("layers", 2)), "mode": m, "step_ms": round(r["step_ms"], 2),
        "step_ms_in_process_same_plan": p["step_ms_in_process"],
        "bytes_per_iter": p.get("launch_bytes_per_iter", p["bytes_per_iter"]),
        "bytes_per_iter_in_process_same_plan": p["bytes_per_iter"], "expert_bytes_per_iter": p["expert_bytes_per_iter"],
        "plan_bytes_per_iter": p["plan_bytes_per_iter"], "sparse_planned_bytes": p["sparse_planned_bytes"],
        "sparse_measured_bytes": p.get("launch_sparse_bytes", p["sparse_measured_bytes"]),
        "sparse_measured_bytes_in_process_same_plan": p["sparse_measured_bytes"],
        "bytes_source": "plan, sparse steps measured by the launch (its metrics' sparse bytes)" if "launch_sparse_bytes" in p
            else "plan, sparse steps measured by moe_bench --plan_file in one process" if p["sparse_planned_bytes"]
            else "plan (all dense)",
        "ratio_bytes_replicated_over_fssdp": ratio(wire_bytes(rep), wire_bytes(f)) if f and rep else None,
        "ratio_expert_bytes_replicated_over_fssdp": ratio(rep["plan"]["expert_bytes_per_iter"], f["plan"]["expert_bytes_per_iter"]) if f and rep else None,
        "ratio_step_ep_over_fssdp": ratio(e["step_ms"], f["step_ms"]) if f and e else None,
        "rule_at_link": rule, "final_loss_in_process": p["final_loss"],
    }
    print(json.dumps(out), flush=True)
EOF
}

main() {
  RUN="${WORK_DIR:-$(mktemp -d /tmp/moe_launch.XXXXXX)}"
  mkdir -p "$RUN"
  build
  (( LOOPBACK )) || create_network
  start_daemons
  echo "{\"bench\":\"moe\",\"setting\":\"launch_2x2\",\"config\":true,\"network\":\"$( (( LOOPBACK )) && echo loopback || echo "netns_tbf_${RATE}mbit")\",\"cpus\":$(nproc),\"loadavg_1m_at_start\":$(cut -d' ' -f1 /proc/loadavg),\"iters\":$ITERS,\"warmup\":$WARMUP,\"rounds\":$ROUNDS,\"gpt_flags\":\"$GPT_FLAGS\"}"
  local hidden skew dir round mode
  for skew in "${SKEW_LIST[@]}"; do
    for hidden in "${HIDDEN_LIST[@]}"; do
      dir="$RUN/h$hidden-s$skew"
      mkdir -p "$dir"
      compile_and_measure "$dir" "$hidden" "$skew"
      for ((round = 0; round < ROUNDS; round++)); do
        for mode in "${MODE_LIST[@]}"; do
          launch "$dir/$mode.plan" "$dir/$mode.r$round.metrics" "moe-h$hidden-s$skew-$mode-r$round-$$"
          log "hidden $hidden skew $skew $mode round $round: done"
        done
      done
      report "$dir" "$hidden" "$skew"
    done
  done
  echo "{\"bench\":\"moe\",\"setting\":\"launch_2x2\",\"config\":true,\"loadavg_1m_at_end\":$(cut -d' ' -f1 /proc/loadavg)}"
  OK=1
}

main
