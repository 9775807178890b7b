#!/bin/bash
# `oneflow run` end to end: compile the MLP example for 2 devices, train 3 iterations,
# check the metrics lines and the trace; and the flag errors.
set -euo pipefail
mlp="$1"
oneflow="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$mlp" --devices_per_node=2 --dp=2 --batch=16 --hidden=32 --plan_out="$dir/mlp.plan" >/dev/null
"$oneflow" run "$dir/mlp.plan" --iters=3 --metrics="$dir/metrics.jsonl" --trace="$dir/trace.json" \
  >"$dir/out" || fail "run failed: $(cat "$dir/out")"
[[ "$(wc -l <"$dir/metrics.jsonl")" == 3 ]] || fail "expected 3 metrics lines: $(cat "$dir/metrics.jsonl")"
for i in 0 1 2; do
  grep -q "^{\"iter\": $i, \"loss\": [0-9.e+-]*, \"step_ms\": [0-9.]*, \"samples_per_s\": [0-9.]*}$" \
    "$dir/metrics.jsonl" || fail "bad metrics line for iteration $i: $(cat "$dir/metrics.jsonl")"
done
# Without --metrics and stdout not a terminal: the same lines on stdout.
"$oneflow" run "$dir/mlp.plan" --iters=2 >"$dir/stdout"
[[ "$(grep -c '"iter"' "$dir/stdout")" == 2 ]] || fail "stdout: $(cat "$dir/stdout")"
# The trace has a slice per act: 2 devices x actors x 3 iterations, and collective flows.
python3 - "$dir/trace.json" "$dir/mlp.plan" <<'PY' || fail "trace check failed"
import json, sys
trace = json.load(open(sys.argv[1]))
slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
assert len(slices) > 0 and len(slices) % 3 == 0, len(slices)
assert {e["args"]["iteration"] for e in slices} == {0, 1, 2}
assert len(flows) > 0
PY
# Errors: exit 1 with the flag named, nothing written.
if "$oneflow" run "$dir/mlp.plan" --iters=0 2>"$dir/err"; then fail "--iters=0 accepted"; fi
grep -q "oneflow run: --iters=0 must be >= 1" "$dir/err" || fail "$(cat "$dir/err")"
if "$oneflow" run "$dir/missing.plan" 2>"$dir/err"; then fail "missing plan accepted"; fi
grep -q "plan file '$dir/missing.plan': cannot open" "$dir/err" || fail "$(cat "$dir/err")"
echo PASS
