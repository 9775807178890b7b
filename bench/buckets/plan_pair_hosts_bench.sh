#!/usr/bin/env bash
# Two compiled plans of one layout (e.g. one compiler's plan against another's) launched on
# emulated hosts, alternating, and each run in one process as the reference: N Linux network
# namespaces at RATE Mbit/s (bench/lib/netns_hosts.sh), one `oneflowd` each, `oneflow
# launch` from host 0; then `oneflow run` of the same plan. JSON lines (stdout): per round
# and plan the median step after the warm-up, launched and in one process, with the load
# average; then one summary line: the medians over the rounds, the second plan's launched
# step over the first's, and each plan's launched step over its in-process step.
#
#   sudo bench/buckets/plan_pair_hosts_bench.sh --plans=/tmp/before.plan,/tmp/after.plan \
#     --labels=before,after --nodes=3 --bin_dir=bazel-bin
#
# Flags [defaults]: --plans=A,B (required; plans compiled for --nodes nodes)
# --labels=a,b [a,b] --nodes=N [3] --rate_mbit=R [1000] --iters=K [30] --warmup=W [5]
# --rounds=R [5] --bin_dir=DIR (required: holds tools/launcher/oneflowd,
# tools/worker/oneflow_worker, tools/cli/oneflow; copied, so a build beside the bench cannot
# replace them). Needs root; tears down its namespaces and daemons on exit. Run it under the
# bench lock on a shared machine. A benchmark, not a test: it asserts nothing.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PLANS=""
LABELS="a,b"
NODES=3
RATE=1000
ITERS=30
WARMUP=5
ROUNDS=5
BIN_DIR=""
for arg in "$@"; do
  case "$arg" in
    --plans=*) PLANS="${arg#*=}" ;;
    --labels=*) LABELS="${arg#*=}" ;;
    --nodes=*) NODES="${arg#*=}" ;;
    --rate_mbit=*) RATE="${arg#*=}" ;;
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    *) echo "plan_pair_hosts_bench: unknown flag $arg" >&2; exit 2 ;;
  esac
done
die() { echo "plan_pair_hosts_bench: $*" >&2; exit 2; }
IFS=',' read -r -a PLAN <<< "$PLANS"
IFS=',' read -r -a LABEL <<< "$LABELS"
(( ${#PLAN[@]} == 2 )) || die "--plans=$PLANS: give two plan files, comma-separated"
(( ${#LABEL[@]} == 2 )) || die "--labels=$LABELS: give two labels, comma-separated"
for plan in "${PLAN[@]}"; do [[ -r "$plan" ]] || die "--plans: cannot read '$plan'"; done
[[ -n "$BIN_DIR" ]] || die "--bin_dir is required (the tree's bazel-bin after building the binaries)"
for n in "$NODES" "$RATE" "$ITERS" "$ROUNDS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a whole number >= 1 (--nodes, --rate_mbit, --iters, --rounds)"
done
(( WARMUP + 2 <= ITERS )) || die "--warmup=$WARMUP leaves fewer than 2 of --iters=$ITERS iterations"
[[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, veth pairs, tc)"

RUN="$(mktemp -d /tmp/plan_pair_hosts.XXXXXX)"
NETNS_PREFIX="ofpp$$"
NETNS_SUBNET="10.247.$(( $$ % 200 + 20 ))"
# shellcheck source=bench/lib/netns_hosts.sh
source "$ROOT/bench/lib/netns_hosts.sh"
# shellcheck source=bench/lib/step_metrics.sh
source "$ROOT/bench/lib/step_metrics.sh"
trap 'netns_teardown; rm -rf "$RUN"' EXIT INT TERM HUP
netns_private_binaries "$BIN_DIR" "$RUN/bin" tools/launcher/oneflowd tools/worker/oneflow_worker tools/cli/oneflow ||
  die "a binary is missing in $BIN_DIR"
head -c 32 /dev/urandom | base64 > "$RUN/token"
chmod 600 "$RUN/token"
netns_create "$NODES"
netns_shape "$RATE"
netns_start_daemons "$RUN/bin" "$RUN/token" "$RUN" 29446 || die "the daemons did not start"

declare -a LAUNCHED0 LAUNCHED1 ONE0 ONE1
for ((round = 1; round <= ROUNDS; round++)); do
  for k in 0 1; do
    out="$RUN/${LABEL[$k]}.$round"
    load="$(cut -d' ' -f1 /proc/loadavg)"
    timeout -k 10 300 ip netns exec "$(netns_name 0)" "$RUN/bin/oneflow" launch "${PLAN[$k]}" \
      --nodes="$NETNS_NODES_ARG" --token_file="$RUN/token" --iters="$ITERS" --metrics="$out.metrics" \
      --job_id="pp-${LABEL[$k]}-$round-$$" --collective_timeout_s=120 --hang_seconds=60 \
      > "$out.launch.out" 2> "$out.launch.err" ||
      echo "plan_pair_hosts_bench: launch of ${LABEL[$k]} (round $round) failed: $(tail -2 "$out.launch.err")" >&2
    launched="$(median_step "$out.metrics" "$WARMUP")"
    "$RUN/bin/oneflow" run "${PLAN[$k]}" --iters="$ITERS" --metrics="$out.one.metrics" > "$out.one.out" 2>&1 ||
      echo "plan_pair_hosts_bench: run of ${LABEL[$k]} (round $round) failed" >&2
    one="$(median_step "$out.one.metrics" "$WARMUP")"
    eval "LAUNCHED$k+=(\"$launched\"); ONE$k+=(\"$one\")"
    echo "{\"bench\": \"plan_pair_hosts\", \"plan\": \"${LABEL[$k]}\", \"round\": $round, \"nodes\": $NODES, \"rate_mbit\": $RATE, \"launched_ms\": $launched, \"in_process_ms\": $one, \"load_avg_1m\": $load}"
  done
done
python3 - "${LABEL[0]}" "${LABEL[1]}" "${LAUNCHED0[*]}" "${LAUNCHED1[*]}" "${ONE0[*]}" "${ONE1[*]}" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PYEOF'
import json, statistics, sys
a, b = sys.argv[1], sys.argv[2]
def med(text):
    values = [float(v) for v in text.split() if v != "null"]
    return round(statistics.median(values), 3) if values else None
la, lb, oa, ob = (med(t) for t in sys.argv[3:7])
ratio = lambda x, y: round(x / y, 4) if x and y else None
print(json.dumps({"bench": "plan_pair_hosts_summary", "launched_ms": {a: la, b: lb}, "in_process_ms": {a: oa, b: ob},
                  "launched_%s_over_%s" % (b, a): ratio(lb, la),
                  "launched_over_in_process": {a: ratio(la, oa), b: ratio(lb, ob)},
                  "load_avg_end": sys.argv[7]}))
PYEOF
