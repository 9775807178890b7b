#!/usr/bin/env bash
# Compressed gradient buckets (docs/gradient_buckets.md, "Compressed buckets"): the demo's
# gpt on 2 nodes x 2 devices in two layouts,
#   dp2tp2  dp=2 across the nodes x tp=2 (compressed all-reduces on the dp axis and
#           in-node reduce-scatters starting the 2-D chains), and
#   zero2   dp=4 --zero=2 (every gradient reduce-scattered over the 4 devices, across
#           the nodes: ZeRO-2's compressed reduce-scatters),
# each with its gradient reductions compressed (--compression=int8) and in bf16 on the
# wire (--compression=off --gradient_wire=bf16), each compiled with gradient buckets
# (--bucket_mb=25, the default: the compressed reductions ride in buckets of their codec)
# and without (--bucket_mb=0: one compressed collective per gradient), run in one process
# (`oneflow run`: the 4 devices as threads), alternating, ROUNDS times. Prints JSON lines
# (stdout): per plan the median step time over the rounds' post-warmup iterations and the
# ratio of the unbucketed plan's median (same layout and wire) to it (> 1: the buckets are
# faster), the gradient buckets and the collectives per iteration of device 0 (`oneflow
# inspect --format=json`), and whether the two plans' losses are equal bit for bit (they
# are by construction: a bucket encodes each member by itself). A benchmark, not a test:
# it asserts nothing.
#
#   bench/buckets/compressed_buckets_bench.sh
#   bench/buckets/compressed_buckets_bench.sh --iters=20 --rounds=2 --bin_dir=bazel-bin --layouts=zero2
#
# Flags [defaults]: --iters=K [20] --warmup=W [5] --rounds=R [3] --gpt_flags="..." [the
# demo's: 2 blocks, hidden 256] --layouts=L,L [dp2tp2,zero2] --bin_dir=DIR (prebuilt
# binaries; else builds -c opt with its own symlinks) --work_dir=DIR [mktemp].
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ITERS=20
WARMUP=5
ROUNDS=3
BIN_DIR=""
WORK_DIR=""
GPT_FLAGS="--layers=2 --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01"
LAYOUTS="dp2tp2,zero2"
for arg in "$@"; do
  case "$arg" in
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    --layouts=*) LAYOUTS="${arg#*=}" ;;
    --bin_dir=*) BIN_DIR="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    *) echo "compressed_buckets_bench: unknown flag $arg" >&2; exit 2 ;;
  esac
done
log() { echo "compressed_buckets_bench: $*" >&2; }

RUN="${WORK_DIR:-$(mktemp -d /tmp/compressed_buckets_bench.XXXXXX)}"
mkdir -p "$RUN"
if [[ -z "$BIN_DIR" ]]; then
  (cd "$ROOT" && bazel build -c opt --jobs=2 --symlink_prefix="$RUN/bazel-" //tools/cli:oneflow //examples/gpt >&2)
  BIN_DIR="$RUN/bazel-bin"
fi
BIN_DIR="$(cd "$BIN_DIR" && pwd)"
ONEFLOW="$BIN_DIR/tools/cli/oneflow"

# layout name -> its flags; wire name -> the flags that put the gradient reductions on that wire
declare -A LAYOUT=([dp2tp2]="--nodes=2 --devices_per_node=2 --dp=2 --tp=2"
                   [zero2]="--nodes=2 --devices_per_node=2 --dp=4 --zero=2")
declare -A WIRE=([int8]="--compression=int8" [bf16]="--compression=off --gradient_wire=bf16")
IFS=, read -r -a LAYOUT_NAMES <<< "$LAYOUTS"
for layout in "${LAYOUT_NAMES[@]}"; do
  if [[ -z "${LAYOUT[$layout]:-}" ]]; then
    echo "compressed_buckets_bench: unknown layout '$layout'; valid: dp2tp2, zero2" >&2
    exit 2
  fi
done
for layout in "${LAYOUT_NAMES[@]}"; do
  for wire in int8 bf16; do
    for mb in 25 0; do
      name="$layout.$wire.b$mb"
      # shellcheck disable=SC2086
      "$BIN_DIR/examples/gpt/gpt" ${LAYOUT[$layout]} $GPT_FLAGS ${WIRE[$wire]} \
        --bucket_mb="$mb" --plan_out="$RUN/$name.plan" > "$RUN/$name.compile.log"
      "$ONEFLOW" inspect "$RUN/$name.plan" --format=json > "$RUN/$name.inspect.json"
    done
  done
done
for ((round = 0; round < ROUNDS; round++)); do
  for layout in "${LAYOUT_NAMES[@]}"; do
    for wire in int8 bf16; do
      for mb in 25 0; do
        name="$layout.$wire.b$mb"
        "$ONEFLOW" run "$RUN/$name.plan" --iters="$ITERS" --metrics="$RUN/$name.r$round.jsonl" > /dev/null
      done
    done
  done
  log "round $round done"
done

python3 - "$RUN" "$WARMUP" "$GPT_FLAGS" "$LAYOUTS" <<'PY'
import glob, json, statistics, sys
run, warmup, gpt_flags, layouts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
def steps(prefix):
    out = []
    for path in sorted(glob.glob(f"{run}/{prefix}.r*.jsonl")):
        lines = [json.loads(l) for l in open(path) if l.startswith("{")]
        out += [l["step_ms"] for l in lines if "step_ms" in l][warmup:]
    return out
def losses(prefix):
    return [json.loads(l)["loss"] for l in open(f"{run}/{prefix}.r0.jsonl") if l.startswith("{") and "loss" in l]
def plan_facts(prefix):
    plan = json.load(open(f"{run}/{prefix}.inspect.json"))
    buckets = plan.get("buckets", [])
    coded = [b for b in buckets if b.get("codec") not in (None, "", "none", "dense")]
    devices = plan.get("devices", [])
    order = devices[0].get("collective_order", devices[0].get("collectiveOrder", [])) if devices else []
    return {"buckets": len(buckets), "compressed_buckets": len(coded), "device0_collectives": len(order)}
described = {"dp2tp2": "2 nodes x 2 devices, dp=2 (across nodes) x tp=2",
             "zero2": "2 nodes x 2 devices, dp=4 (across nodes), zero=2"}
print(json.dumps({"bench": "compressed_buckets", "model": "gpt " + gpt_flags, "run": "oneflow run (one process)",
                  "layouts": {name: described[name] for name in layouts}}))
for layout in layouts:
    for wire in ["int8", "bf16"]:
        reference = statistics.median(steps(f"{layout}.{wire}.b0"))
        for mb in ["25", "0"]:
            s = steps(f"{layout}.{wire}.b{mb}")
            median = statistics.median(s)
            line = {"layout": layout, "wire": wire, "bucket_mb": float(mb), "median_step_ms": round(median, 2),
                    "min_step_ms": round(min(s), 2), "steps": len(s),
                    "unbucketed_over_this": round(reference / median, 3)}
            line.update(plan_facts(f"{layout}.{wire}.b{mb}"))
            print(json.dumps(line))
        print(json.dumps({"check": f"{layout} {wire}: losses with buckets equal the unbucketed plan's bit for bit",
                          "value": losses(f"{layout}.{wire}.b25") == losses(f"{layout}.{wire}.b0")}))
PY
