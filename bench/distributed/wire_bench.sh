#!/usr/bin/env bash
# The cross-node all-reduces of a data-parallel step alone (wire_bench.cc) on emulated hosts
# (bench/lib/netns_hosts.sh: network namespaces on a bridge, tc tbf on each veth), so their
# wall time can be read against the link time of the bytes they moved (kernel counters of
# each host's veth) without the step's compute beside them. Each variant is one set of
# environment variables for the ranks (UCX or our own settings); variants run in turn,
# round after round, so they share the machine's load. JSON lines on stdout: per (round,
# variant) the slowest host's wall time per call, the link time of the bytes, their ratio
# (link_busy: 1 = the wire never idled), the CPU seconds the hosts spent per GB on the wire.
#
#   sudo bench/distributed/wire_bench.sh --bin=bazel-bin/bench/distributed/wire_bench
#   sudo bench/distributed/wire_bench.sh --bin=... --variants="default;UCX_TCP_TX_SEG_SIZE=64k"
#
# Flags [defaults]: --bin=PATH (wire_bench binary) --hosts=3 --groups=2 --bytes=3538944
# (one of gpt_dp3tp2's cross-node buckets per device) --calls=10 --rate_mbit=1000 --rounds=2
# --variants="V;V;..." where V is "default" or space-separated NAME=VALUE (environment) and
#   --flag=value (wire_bench flags, e.g. --transport=gloo) [default]
# --burn=N  N busy-loop processes beside the ranks, standing in for compute threads [0]
# Needs root. Everything it creates is named ofwb<pid>-* and is torn down on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
NETNS_PREFIX="ofwb$$"
NETNS_SUBNET="10.233.0"

BIN="" HOSTS=3 GROUPS_PER_HOST=2 BYTES=3538944 CALLS=10 RATE=1000 ROUNDS=2 VARIANTS="default" BURN=0
log() { echo "wire_bench: $*" >&2; }
die() { log "error: $*"; exit 2; }
for arg in "$@"; do
  case "$arg" in
    --bin=*) BIN="${arg#*=}" ;;
    --hosts=*) HOSTS="${arg#*=}" ;;
    --groups=*) GROUPS_PER_HOST="${arg#*=}" ;;
    --bytes=*) BYTES="${arg#*=}" ;;
    --calls=*) CALLS="${arg#*=}" ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --variants=*) VARIANTS="${arg#*=}" ;;
    --burn=*) BURN="${arg#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
[[ -x "$BIN" ]] || die "--bin=$BIN is not an executable (bazel build //bench/distributed:wire_bench)"
for n in "$HOSTS" "$GROUPS_PER_HOST" "$BYTES" "$CALLS" "$RATE" "$ROUNDS" "$BURN"; do
  [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a non-negative integer"
done
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"

RUN="$(mktemp -d /tmp/wire_bench.XXXXXX)"
KEEP=0 OK=0
BURN_PIDS=()
stop_burn() { local p; for p in "${BURN_PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; BURN_PIDS=(); }
netns_trap_teardown
trap 'rc=$?; stop_burn; (exit $rc); _netns_on_exit' EXIT

netns_create "$HOSTS"
netns_shape "$RATE"
for ((b = 0; b < BURN; b++)); do (while :; do :; done) & BURN_PIDS+=("$!"); done

echo "{\"config\": {\"hosts\": $HOSTS, \"groups\": $GROUPS_PER_HOST, \"bytes\": $BYTES, \"calls\": $CALLS," \
  "\"rate_mbit\": $RATE, \"rounds\": $ROUNDS, \"burn\": $BURN, \"load_avg_1m\": $(cut -d' ' -f1 /proc/loadavg)}}"
IFS=';' read -r -a VARIANT_LIST <<< "$VARIANTS"
run_variant() {  # round, variant -> one JSON line
  local round="$1" variant="$2" dir i pids=() before=() tx rx btx brx link_bytes=0 rc=0 env_list=()
  dir="$RUN/r$round.$(echo "$variant" | tr -c 'A-Za-z0-9_=\n' '_')"
  mkdir -p "$dir/store"
  local flag_list=() word words=()
  [[ "$variant" != default ]] && read -r -a words <<< "$variant"
  for word in "${words[@]}"; do
    if [[ "$word" == --* ]]; then flag_list+=("$word"); else env_list+=("$word"); fi
  done
  for ((i = 0; i < HOSTS; i++)); do before+=("$(netns_link_bytes "$i")"); done
  for ((i = 0; i < HOSTS; i++)); do
    ip netns exec "$(netns_name "$i")" env UCX_TLS=tcp,self "${env_list[@]}" "$BIN" --rank="$i" --ranks="$HOSTS" \
      --groups="$GROUPS_PER_HOST" --bytes="$BYTES" --calls="$CALLS" --store_directory="$dir/store" \
      --host="$(netns_ip "$i")" "${flag_list[@]}" > "$dir/rank$i.out" 2> "$dir/rank$i.err" &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  (( rc == 0 )) || { tail -5 "$dir"/rank*.err >&2; die "variant '$variant' failed"; }
  for ((i = 0; i < HOSTS; i++)); do
    read -r tx rx <<< "$(netns_link_bytes "$i")"
    read -r btx brx <<< "${before[$i]}"
    (( tx - btx > link_bytes )) && link_bytes=$(( tx - btx ))
    (( rx - brx > link_bytes )) && link_bytes=$(( rx - brx ))
  done
  python3 - "$round" "$variant" "$link_bytes" "$RATE" "$CALLS" "$dir"/rank*.out <<'PYEOF'
import json, sys
round_, variant, link_bytes, rate, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
ranks = [json.loads(open(p).read()) for p in sys.argv[6:]]
# The warm-up call's bytes are in the counters too: per timed call, scale by calls / (calls + 1).
per_call_bytes = link_bytes / (calls + 1)
link_ms = per_call_bytes * 8 / (rate * 1e6) * 1e3
wall_ms = max(r["ms_per_call"] for r in ranks)
cpu = sum(r["cpu_seconds"] for r in ranks)
print(json.dumps({"round": int(round_), "variant": variant, "ms_per_call": round(wall_ms, 2),
                  "link_bytes_per_call": int(per_call_bytes), "link_ms_per_call": round(link_ms, 2),
                  "link_busy": round(link_ms / wall_ms, 3),
                  "cpu_seconds_per_gb_on_wire": round(cpu / (link_bytes * calls / (calls + 1) * len(ranks) / 1e9), 3)}),
      flush=True)
PYEOF
}
for ((round = 0; round < ROUNDS; round++)); do
  for variant in "${VARIANT_LIST[@]}"; do run_variant "$round" "$variant"; done
done
OK=1
