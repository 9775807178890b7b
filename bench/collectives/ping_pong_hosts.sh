#!/usr/bin/env bash
# Point-to-point round trips between 2 emulated hosts (bench/lib/netns_hosts.sh: network
# namespaces on a bridge), as ping_pong_bench's JSON lines with "link" added: first the
# veths unshaped, then shaped with tc tbf to --rate_mbit (as the prediction benches shape
# them), each beside a plain TCP socket between the same hosts in the same run. With
# --trace_gpt, then one traced launch of the pipeline the session-44 analysis traced
# (gpt pp = 2, M = 8 on 2 x 1: `oneflow launch --trace`, `oneflow profile`), whose
# trace and profile stay in the work dir (--keep).
#
#   bench/collectives/ping_pong_hosts.sh --bin_dir=BAZEL_BIN [--rate_mbit=1000] [--scale=1]
#       [--trace_gpt] [--keep]
# BAZEL_BIN holds bench/collectives/ping_pong_bench (and, with --trace_gpt,
# tools/launcher/oneflowd, tools/worker/oneflow_worker, tools/cli/oneflow, examples/gpt/gpt),
# built with -c opt. Needs root. Everything it creates is named $NETNS_PREFIX-* (ofpp<pid>-*
# unless set) and is torn down on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
NETNS_PREFIX="${NETNS_PREFIX:-ofpp$$}"
NETNS_SUBNET="10.234.0"

RATE=1000
SCALE=1
TRACE_GPT=0
BIN_DIR=""
KEEP=0
PORT=5411
GPT_FLAGS="--layers=6 --hidden=96 --heads=12 --seq=32 --batch=24 --vocab=512"

log() { echo "ping_pong_hosts: $*" >&2; }
die() { log "error: $*"; exit 2; }

for arg in "$@"; do
  case "$arg" in
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --scale=*) SCALE="${arg#*=}" ;;
    --trace_gpt) TRACE_GPT=1 ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument '$arg' (see --help)" ;;
  esac
done
[[ -n "$BIN_DIR" ]] || die "give --bin_dir=BAZEL_BIN (an opt build)"
[[ "$RATE" =~ ^[1-9][0-9]*$ ]] || die "--rate_mbit=$RATE: give a positive integer (Mbit/s)"
[[ "$SCALE" =~ ^[0-9.]+$ ]] || die "--scale=$SCALE: give a positive number"
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"

RUN="$(mktemp -d /tmp/ping_pong_hosts.XXXXXX)"
OK=0
netns_trap_teardown

binaries=(bench/collectives/ping_pong_bench)
(( TRACE_GPT )) && binaries+=(tools/launcher/oneflowd tools/worker/oneflow_worker tools/cli/oneflow examples/gpt/gpt)
netns_private_binaries "$BIN_DIR" "$RUN/bin" "${binaries[@]}" || die "a binary is missing in $BIN_DIR"
BIN="$RUN/bin"

netns_create 2

# One ping_pong_bench between host 0 (rank 0) and host 1 (rank 1); its lines with "link".
ping_pong() {
  local link="$1" store="$RUN/store-$1" peer
  mkdir -p "$store"
  ip netns exec "$(netns_name 1)" env UCX_TLS=tcp,self "$BIN/ping_pong_bench" --rank=1 \
    --host="$(netns_ip 1)" --store_directory="$store" --scale="$SCALE" > "$RUN/rank1-$link.out" 2>&1 &
  peer=$!
  ip netns exec "$(netns_name 0)" env UCX_TLS=tcp,self "$BIN/ping_pong_bench" --rank=0 --peer=external \
    --host="$(netns_ip 0)" --store_directory="$store" --scale="$SCALE" |
    sed "s/^{\"bench\":\"ping_pong\",/{\"bench\":\"ping_pong_hosts\",\"link\":\"$link\",/"
  wait "$peer" || die "rank 1 failed: $(tail -3 "$RUN/rank1-$link.out")"
}

ping_pong unshaped
netns_shape "$RATE"
ping_pong "tbf_${RATE}mbit"

if (( TRACE_GPT )); then
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$RUN/token")
  netns_start_daemons "$BIN" "$RUN/token" "$RUN/netns" "$PORT"
  # shellcheck disable=SC2086
  "$BIN/gpt" --nodes=2 --devices_per_node=1 $GPT_FLAGS --pp=2 --micro_batches=8 --plan_out="$RUN/pp2_m8.plan" \
    > "$RUN/compile.log" 2>&1 || die "compile failed: $(tail -3 "$RUN/compile.log")"
  timeout -k 10 240 ip netns exec "$(netns_name 0)" "$BIN/oneflow" launch "$RUN/pp2_m8.plan" \
    --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" --iters=20 --metrics="$RUN/pp2_m8.metrics" \
    --trace="$RUN/pp2_m8.trace.json" --job_id="pp-$$" > "$RUN/launch.out" 2> "$RUN/launch.err" ||
    die "launch failed: $(tail -3 "$RUN/launch.err")"
  "$BIN/oneflow" profile "$RUN/pp2_m8.trace.json" --top=30 > "$RUN/pp2_m8.profile.txt"
  log "traced launch: $RUN/pp2_m8.trace.json, profile $RUN/pp2_m8.profile.txt"
  KEEP=1
fi
OK=1
