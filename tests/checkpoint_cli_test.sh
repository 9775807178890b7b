#!/bin/bash
# Checkpoints through the CLI: `oneflow run --checkpoint_dir --checkpoint_every` on
# dp=2 x tp=2, `--resume_from` on 3 devices continues with the same losses and iteration
# numbers, `oneflow checkpoint` lists what the newest holds; flag and file errors.
set -euo pipefail
mlp="$1"
oneflow="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
loss() { sed -n "s/^{\"iter\": $1, \"loss\": \([0-9.e+-]*\),.*/\1/p" "$2"; }

"$mlp" --devices_per_node=4 --dp=2 --tp=2 --batch=24 --hidden=32 --plan_out="$dir/a.plan" >/dev/null
"$mlp" --devices_per_node=3 --dp=3 --batch=24 --hidden=32 --plan_out="$dir/b.plan" >/dev/null
"$oneflow" run "$dir/a.plan" --iters=6 --checkpoint_dir="$dir/ck" --checkpoint_every=2 \
  --metrics="$dir/whole.jsonl" 2>"$dir/err" || fail "run failed: $(cat "$dir/err")"
for k in 2 4 6; do
  grep -q "^checkpoint $dir/ck/iter-0000000$k: [0-9]* B" "$dir/err" || fail "no checkpoint $k: $(cat "$dir/err")"
done
"$oneflow" run "$dir/b.plan" --iters=6 --resume_from="$dir/ck/iter-00000004" \
  --metrics="$dir/resumed.jsonl" 2>"$dir/err" || fail "resume failed: $(cat "$dir/err")"
grep -q "resumed from $dir/ck/iter-00000004 at iteration 4" "$dir/err" || fail "$(cat "$dir/err")"
[[ "$(wc -l <"$dir/resumed.jsonl")" == 2 ]] || fail "expected iterations 4 and 5: $(cat "$dir/resumed.jsonl")"
for i in 4 5; do
  python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-4 * abs(a))" \
    "$(loss $i "$dir/whole.jsonl")" "$(loss $i "$dir/resumed.jsonl")" || fail "iteration $i loss differs"
done
# The listing of the newest, verified.
"$oneflow" checkpoint "$dir/ck" --verify >"$dir/list" || fail "checkpoint failed: $(cat "$dir/list")"
grep -q "complete checkpoints in $dir/ck: iter-00000002 iter-00000004 iter-00000006" "$dir/list" || fail "$(cat "$dir/list")"
grep -q "job 'mlp', taken after iteration 6" "$dir/list" || fail "$(cat "$dir/list")"
grep -q "  layer0/weight  \[64, 32\] DTYPE_F32  \[B, S(1)\] on cpu{0:0-3}\[2, 2\]" "$dir/list" || fail "$(cat "$dir/list")"
grep -q "device-0-0.shard  device 0:0 .* ok" "$dir/list" || fail "$(cat "$dir/list")"
# Errors.
if "$oneflow" run "$dir/a.plan" --checkpoint_dir="$dir/x" 2>"$dir/err"; then fail "no --checkpoint_every accepted"; fi
grep -q "go together" "$dir/err" || fail "$(cat "$dir/err")"
if "$oneflow" run "$dir/a.plan" --resume_from="$dir/none" 2>"$dir/err"; then fail "missing checkpoint accepted"; fi
grep -q "checkpoint directory '$dir/none' does not exist" "$dir/err" || fail "$(cat "$dir/err")"
printf 'x' | dd of="$dir/ck/iter-00000006/device-0-1.shard" bs=1 seek=10 conv=notrunc 2>/dev/null
if "$oneflow" checkpoint "$dir/ck" --verify >"$dir/out" 2>"$dir/err"; then fail "damaged shard verified"; fi
grep -q "checkpoint shard '$dir/ck/iter-00000006/device-0-1.shard' is damaged" "$dir/err" || fail "$(cat "$dir/err")"
echo PASS
