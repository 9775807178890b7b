#!/bin/bash
# --threads_per_device through the binaries: the example records it in the plan, `oneflow
# run` trains with it (or overrides it) to the one-thread losses, and bad counts are
# refused naming the flag.
set -euo pipefail
mlp="$1"
oneflow="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
losses() { sed 's/.*"loss": \([^,]*\),.*/\1/' "$1"; }

# Large enough for matmuls to be split (64 x 512 x 256 and up).
size=(--batch=64 --in_features=256 --hidden=512)
"$mlp" "${size[@]}" --plan_out="$dir/one.plan" >/dev/null
"$mlp" "${size[@]}" --threads_per_device=2 --plan_out="$dir/two.plan" >/dev/null
"$oneflow" run "$dir/one.plan" --iters=4 --metrics="$dir/one.jsonl"
"$oneflow" run "$dir/two.plan" --iters=4 --metrics="$dir/two.jsonl"
"$oneflow" run "$dir/one.plan" --iters=4 --threads_per_device=3 --metrics="$dir/three.jsonl"
[[ "$(losses "$dir/one.jsonl" | wc -l)" == 4 ]] || fail "expected 4 losses: $(cat "$dir/one.jsonl")"
python3 - "$dir/one.jsonl" "$dir/two.jsonl" "$dir/three.jsonl" <<'PY' || fail "losses differ"
import json, sys
curves = [[json.loads(line)["loss"] for line in open(path)] for path in sys.argv[1:]]
for curve in curves[1:]:
    for want, got in zip(curves[0], curve):
        assert abs(got - want) <= 1e-5 * abs(want), (curves[0], curve)
PY
# Errors name the flag: the example exits 2 (a bad flag value), `oneflow run` 1.
message="is not a valid thread count: a CPU device runs its kernels on 1 to 256 threads (its compute thread plus helpers)"
set +e
"$mlp" --threads_per_device=0 --plan_out="$dir/bad.plan" >/dev/null 2>"$dir/err"
code=$?
set -e
[[ $code == 2 ]] || fail "example --threads_per_device=0 exited $code"
grep -qF "mlp: error: --threads_per_device=0 $message" "$dir/err" || fail "$(cat "$dir/err")"
[[ ! -e "$dir/bad.plan" ]] || fail "a plan was written for --threads_per_device=0"
if "$oneflow" run "$dir/one.plan" --threads_per_device=-1 2>"$dir/err"; then fail "--threads_per_device=-1 accepted"; fi
grep -qF "oneflow run: --threads_per_device=-1 $message" "$dir/err" || fail "$(cat "$dir/err")"
echo PASS
