#!/usr/bin/env bash
# docs/first_model.md, run as a user would: its `sh` blocks in order in one shell, in a
# workspace of its own that depends on this repository by `local_repository`. Then checks
# what they produced: 4 devices (dp=2 x tp=2) train with the one-device losses, `oneflow
# run` of the written plan gives the same, `oneflow compile` of the model's text
# reports the C++ plan's ops, boxings, collectives and actors, and its text without hints
# (the tp split inferred) trains with the one-device losses too, as does the layout
# `--auto_parallel` chooses for it.
#
#   $1  the `oneflow` binary; $2 docs/first_model.md; $3 this repository's WORKSPACE
#
# The nested bazel uses its own --output_user_root (a second server beside the outer one)
# and the real home's ~/.bazelrc, whose shared --disk_cache makes later runs fast. Where
# bazel is missing, the test reports itself skipped.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }

skip() {
  echo "SKIP: $1"
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"$XML_OUTPUT_FILE" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="first_model_docs_test" tests="1" skipped="1"><testcase name="docs"><skipped message="$1"/></testcase></testsuite></testsuites>
XML
  fi
  exit 0
}

ONEFLOW_BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
DOC="$(readlink -f "$2")"
# The runfiles are links into the source tree: the repository is the WORKSPACE's folder.
export ONEFLOW="$(dirname "$(readlink -f "$3")")"
[[ -f "$ONEFLOW/examples/first_model/my_model.cc" ]] || fail "no repository at $ONEFLOW"
BAZEL="$(command -v bazel || true)"
[[ -n "$BAZEL" ]] || skip "bazel not installed (tools/dev.sh deps installs bazel-bootstrap)"

# Short paths: the nested server's socket lives under its output root.
SCRATCH="$(mktemp -d /tmp/first_model_test.XXXXXX)"
export WORK="$SCRATCH/my_model"
REAL_HOME="$(getent passwd "$(id -u)" | cut -d: -f6)"
cleanup() {
  # Stops the nested server (ours: its own output root) before its files go.
  (cd "$WORK" 2>/dev/null && HOME="$REAL_HOME" "$BAZEL" --output_user_root="$SCRATCH/root" shutdown) >/dev/null 2>&1 || true
  chmod -R u+w "$SCRATCH" 2>/dev/null || true
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# The page's commands, with `oneflow` and `bazel` as a user in step 0 has them.
{
  echo 'set -euo pipefail'
  echo "oneflow() { \"$ONEFLOW_BIN\" \"\$@\"; }"
  echo "bazel() { HOME=\"$REAL_HOME\" \"$BAZEL\" --output_user_root=\"$SCRATCH/root\" \"\$@\" --color=no --curses=no; }"
  awk '/^```sh$/ {inside = 1; next} /^```/ {inside = 0} inside' "$DOC"
} >"$SCRATCH/commands.sh"
[[ $(grep -c "bazel-bin/my_model" "$SCRATCH/commands.sh") -ge 4 ]] || fail "the page's sh blocks were not found: $(cat "$SCRATCH/commands.sh")"
bash "$SCRATCH/commands.sh" >"$SCRATCH/out.txt" 2>&1 || fail "a command of docs/first_model.md failed:
$(tail -n 40 "$SCRATCH/out.txt")"

cd "$WORK"
# Losses: 5 iterations each, 4 devices equal to 1 within 1e-4 (relative), and the plan
# run by `oneflow run` equal to `--run` of the same layout.
losses() { sed -n 's/^{"iter": \([0-9]*\), "loss": \([^,]*\),.*/\1 \2/p' "$1"; }
for f in one_device.jsonl four_devices.jsonl run.jsonl from_text.jsonl free.jsonl auto.jsonl; do
  [[ $(losses "$f" | wc -l) -eq 5 ]] || fail "$f has no 5 loss lines: $(cat "$f")"
done
compare() {
  paste <(losses "$1") <(losses "$2") | awk -v a="$1" -v b="$2" '{
    d = $2 - $4; if (d < 0) d = -d; s = $2 < 0 ? -$2 : $2;
    if ($1 != $3 || d > 1e-4 * (s > 1 ? s : 1)) { print "iteration " $1 ": " a " " $2 ", " b " " $4; bad = 1 }
  } END { exit bad }' || fail "$1 and $2 differ"
}
compare one_device.jsonl four_devices.jsonl
compare four_devices.jsonl run.jsonl
compare four_devices.jsonl from_text.jsonl
compare one_device.jsonl free.jsonl  # the text without hints, Megatron's split inferred
compare one_device.jsonl auto.jsonl  # the layout the search chose for it
# The losses move: a curve, not a constant.
[[ "$(losses one_device.jsonl | head -n 1 | cut -d' ' -f2)" != "$(losses one_device.jsonl | tail -n 1 | cut -d' ' -f2)" ]] ||
  fail "the loss did not change: $(cat one_device.jsonl)"

# The compile summaries of the C++ model and of its text: the same plan figures.
figures() { sed -n "s/^compiled 'my_model' for \(.*\) in [0-9.]* s: \(.*\)$/\1: \2/p" "$1"; }
[[ -n "$(figures compile.txt)" ]] || fail "no summary: $(cat compile.txt)"
[[ "$(figures compile.txt)" == "$(figures compile_text.txt)" ]] || fail "$(cat compile.txt) vs $(cat compile_text.txt)"
grep -q "^device 0:0: " compile_text.txt || fail "$(cat compile_text.txt)"
grep -qE '^%fc1/weight = variable f32\[64, 256\] init=xavier_uniform seed=2 sbp=\[B, S\(1\)\] loc="my_model\.cc:[0-9]+"$' my_model.txt ||
  fail "$(head -n 20 my_model.txt)"
# Without hints: the split it inferred, on the first line.
grep -q "^tensor parallelism: .*split over --tp=2 as Megatron would: .*fc1/weight S(1), fc1/bias S(0), fc2/weight S(0), head/weight S(1); every other variable replicated$" compile_free.txt ||
  fail "$(head -n 3 compile_free.txt)"
# The search over the text: its choice on the first line, and what it left out (no blocks).
grep -q "^auto-parallel: chose --dp=[0-9]* --tp=[0-9]* --pp=1 --micro_batches=[0-9]* --zero=[0-3] --recompute=[a-z]* among [0-9]* layouts in " compile_auto.txt ||
  fail "$(head -n 3 compile_auto.txt)"
grep -q "^pipelines not searched: the graph has 0 block(s) (ops marked block=NAME); pipeline stages cut between blocks$" compile_auto.txt ||
  fail "$(cat compile_auto.txt)"
# The text carries the C++ source locations (loc=): the same plan, byte for byte.
cmp my_model.plan from_text.plan || fail "the plan compiled from my_model.txt differs from my_model.plan"
echo PASS
