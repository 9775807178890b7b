#!/usr/bin/env bash
# Compressed gradient buckets (docs/gradient_buckets.md, "Compressed buckets"): the demo's
# gpt on 2 nodes x 2 devices (dp=2 across the nodes x tp=2) with its gradient reductions
# compressed (--compression=int8) and with them in bf16 on the wire (--compression=off
# --gradient_wire=bf16), each compiled with gradient buckets (--bucket_mb=25, the default:
# the compressed all-reduces ride in buckets of their codec) and without (--bucket_mb=0:
# one compressed collective per gradient), run in one process (`oneflow run`: the 4
# devices as threads), alternating, ROUNDS times. Prints JSON lines (stdout): per plan the
# median step time over the rounds' post-warmup iterations and the ratio of the unbucketed
# plan's median to it (> 1: the buckets are faster), the gradient buckets and the
# collectives per iteration of device 0 (`oneflow inspect --format=json`), and whether the
# two plans' losses are equal bit for bit (they are by construction: a bucket encodes each
# member by itself). A benchmark, not a test: it asserts nothing.
#
#   bench/buckets/compressed_buckets_bench.sh
#   bench/buckets/compressed_buckets_bench.sh --iters=20 --rounds=2 --bin_dir=bazel-bin
#
# Flags [defaults]: --iters=K [20] --warmup=W [5] --rounds=R [3] --gpt_flags="..." [the
# demo's: 2 blocks, hidden 256] --bin_dir=DIR (prebuilt binaries; else builds -c opt with
# its own symlinks) --work_dir=DIR [mktemp].
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ITERS=20
WARMUP=5
ROUNDS=3
BIN_DIR=""
WORK_DIR=""
GPT_FLAGS="--layers=2 --hidden=256 --heads=8 --batch=8 --seq=32 --vocab=256 --lr=0.01"
for arg in "$@"; do
  case "$arg" in
    --iters=*) ITERS="${arg#*=}" ;;
    --warmup=*) WARMUP="${arg#*=}" ;;
    --rounds=*) ROUNDS="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
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

# wire name -> the flags that put the gradient reductions on that wire
declare -A WIRE=([int8]="--compression=int8" [bf16]="--compression=off --gradient_wire=bf16")
for wire in int8 bf16; do
  for mb in 25 0; do
    # shellcheck disable=SC2086
    "$BIN_DIR/examples/gpt/gpt" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 $GPT_FLAGS ${WIRE[$wire]} \
      --bucket_mb="$mb" --plan_out="$RUN/$wire.b$mb.plan" > "$RUN/$wire.b$mb.compile.log"
    "$ONEFLOW" inspect "$RUN/$wire.b$mb.plan" --format=json > "$RUN/$wire.b$mb.inspect.json"
  done
done
for ((round = 0; round < ROUNDS; round++)); do
  for wire in int8 bf16; do
    for mb in 25 0; do
      "$ONEFLOW" run "$RUN/$wire.b$mb.plan" --iters="$ITERS" --metrics="$RUN/$wire.b$mb.r$round.jsonl" > /dev/null
    done
  done
  log "round $round done"
done

python3 - "$RUN" "$WARMUP" "$GPT_FLAGS" <<'PY'
import glob, json, statistics, sys
run, warmup, gpt_flags = sys.argv[1], int(sys.argv[2]), sys.argv[3]
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
print(json.dumps({"bench": "compressed_buckets", "model": "gpt " + gpt_flags,
                  "layout": "2 nodes x 2 devices, dp=2 (across nodes) x tp=2, oneflow run (one process)"}))
for wire in ["int8", "bf16"]:
    reference = statistics.median(steps(f"{wire}.b0"))
    for mb in ["25", "0"]:
        s = steps(f"{wire}.b{mb}")
        median = statistics.median(s)
        line = {"wire": wire, "bucket_mb": float(mb), "median_step_ms": round(median, 2), "min_step_ms": round(min(s), 2),
                "steps": len(s), "unbucketed_over_this": round(reference / median, 3)}
        line.update(plan_facts(f"{wire}.b{mb}"))
        print(json.dumps(line))
    print(json.dumps({"check": f"{wire}: losses with buckets equal the unbucketed plan's bit for bit",
                      "value": losses(f"{wire}.b25") == losses(f"{wire}.b0")}))
PY
