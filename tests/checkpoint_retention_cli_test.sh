#!/bin/bash
# Checkpoint retention through the CLI: `oneflow run --keep_checkpoints=2` leaves the two
# newest, the default keeps 3, 0 keeps all, --keep_checkpoint_every=N survivors stay; a
# directory as a crash mid-deletion leaves it (renamed .deleting, manifest gone) is
# refused by `oneflow checkpoint --verify` and `--resume_from`, while resuming from the
# directory takes the newest; negative counts are refused naming the flag.
set -euo pipefail
mlp="$1"
oneflow="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
names() { (cd "$1" && echo *); }

"$mlp" --devices_per_node=2 --tp=2 --batch=8 --hidden=16 --plan_out="$dir/a.plan" >/dev/null
run() { "$oneflow" run "$dir/a.plan" --metrics=/dev/null "$@" 2>"$dir/err" || fail "run $*: $(cat "$dir/err")"; }

run --iters=6 --checkpoint_dir="$dir/two" --checkpoint_every=1 --keep_checkpoints=2
[[ "$(names "$dir/two")" == "iter-00000005 iter-00000006" ]] || fail "keep 2: $(names "$dir/two")"
run --iters=6 --checkpoint_dir="$dir/default" --checkpoint_every=1
[[ "$(names "$dir/default")" == "iter-00000004 iter-00000005 iter-00000006" ]] || fail "default: $(names "$dir/default")"
run --iters=4 --checkpoint_dir="$dir/all" --checkpoint_every=1 --keep_checkpoints=0
[[ "$(names "$dir/all")" == "iter-00000001 iter-00000002 iter-00000003 iter-00000004" ]] || fail "all: $(names "$dir/all")"
run --iters=8 --checkpoint_dir="$dir/every" --checkpoint_every=1 --keep_checkpoints=1 --keep_checkpoint_every=3
[[ "$(names "$dir/every")" == "iter-00000003 iter-00000006 iter-00000008" ]] || fail "every 3: $(names "$dir/every")"

# What a crash between the manifest's and the shards' removal leaves.
mv "$dir/two/iter-00000005" "$dir/two/iter-00000005.deleting"
rm "$dir/two/iter-00000005.deleting/manifest.pb"
"$oneflow" checkpoint "$dir/two" --verify >"$dir/list" || fail "verify: $(cat "$dir/list")"
grep -q "complete checkpoints in $dir/two: iter-00000006$" "$dir/list" || fail "$(cat "$dir/list")"
if "$oneflow" checkpoint "$dir/two/iter-00000005.deleting" --verify >/dev/null 2>"$dir/err"; then
  fail "a half-deleted checkpoint verified"
fi
grep -q "is being deleted (checkpoint retention): it is not a complete checkpoint" "$dir/err" || fail "$(cat "$dir/err")"
if "$oneflow" run "$dir/a.plan" --iters=8 --resume_from="$dir/two/iter-00000005.deleting" 2>"$dir/err"; then
  fail "resumed from a half-deleted checkpoint"
fi
grep -q "is being deleted" "$dir/err" || fail "$(cat "$dir/err")"
run --iters=8 --resume_from="$dir/two"
grep -q "resumed from $dir/two/iter-00000006 at iteration 6" "$dir/err" || fail "$(cat "$dir/err")"
# The next save's prune removes the leftover.
run --iters=8 --resume_from="$dir/two" --checkpoint_dir="$dir/two" --checkpoint_every=1 --keep_checkpoints=2
[[ "$(names "$dir/two")" == "iter-00000006 iter-00000007 iter-00000008" ]] || fail "after resume: $(names "$dir/two")"

# Errors.
if "$oneflow" run "$dir/a.plan" --checkpoint_dir="$dir/x" --checkpoint_every=1 --keep_checkpoints=-1 2>"$dir/err"; then
  fail "--keep_checkpoints=-1 accepted"
fi
grep -q -- "--keep_checkpoints=-1 must be >= 0 (0 keeps every checkpoint)" "$dir/err" || fail "$(cat "$dir/err")"
echo PASS
