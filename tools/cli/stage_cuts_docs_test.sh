#!/usr/bin/env bash
# docs/pipeline.md, "Where the stages cut (`--stage_blocks`)": its commands run as written;
# the cut plan names its blocks per stage in `oneflow inspect`, trains with the balanced
# plan's losses, and is the plan --stage_blocks=auto writes after printing the line the page
# shows; the errors the page quotes are the ones the example prints.
set -euo pipefail
ONEFLOW="$PWD/tools/cli/oneflow"
LLAMA="$PWD/examples/llama/llama"
PAGE="$PWD/docs/pipeline.md"
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

section="$(awk '/^### Where the stages cut/{in_section=1; next} in_section && /^### /{exit} in_section{print}' "$PAGE")"
[[ -n "$section" ]] || fail "no section '### Where the stages cut' in docs/pipeline.md"
# The llama commands of the section's blocks, continuation lines joined, without the
# binary and --plan_out.
commands="$(awk '/^```/{in_block = !in_block; next} in_block' <<<"$section" | sed -e ':a' -e '/\\$/N; s/\\\n *//; ta' |
  grep 'bazel-bin/examples/llama/llama ' | sed -E 's|bazel-bin/examples/llama/llama ||; s| --plan_out=[^ ]*||')"
given="$(grep -- '--stage_blocks=5,1' <<<"$commands")" || fail "the page has no --stage_blocks=5,1 command"
auto="$(grep -- '--stage_blocks=auto' <<<"$commands")" || fail "the page has no --stage_blocks=auto command"
expected_line="$(grep -o '# stage cuts (--stage_blocks=auto): .*' <<<"$section" | sed 's/^# //')"
[[ -n "$expected_line" ]] || fail "the page shows no --stage_blocks=auto output"

# shellcheck disable=SC2086
"$LLAMA" $given --plan_out="$DIR/cut.plan" >/dev/null || fail "llama $given exited $?"
inspect="$("$ONEFLOW" inspect "$DIR/cut.plan")"
grep -q '^    blocks: 5 (--stage_blocks=5,1)$' <<<"$inspect" || fail "inspect shows no 'blocks: 5' line for stage 0"
grep -q '^    blocks: 1 (--stage_blocks=5,1)$' <<<"$inspect" || fail "inspect shows no 'blocks: 1' line for stage 1"

# shellcheck disable=SC2086
actual_line="$("$LLAMA" $auto --plan_out="$DIR/auto.plan" | grep '^stage cuts')" || fail "llama $auto printed no stage cuts line"
[[ "$actual_line" == "$expected_line" ]] || fail "the page shows
  $expected_line
but the example prints
  $actual_line"
cmp "$DIR/cut.plan" "$DIR/auto.plan" || fail "--stage_blocks=auto wrote another plan than --stage_blocks=5,1"

# The balanced plan of the same layout trains with the same losses.
balanced="$(sed -E 's/ --stage_blocks=5,1//' <<<"$given")"
# shellcheck disable=SC2086
"$LLAMA" $balanced --plan_out="$DIR/balanced.plan" >/dev/null || fail "llama $balanced exited $?"
if cmp -s "$DIR/cut.plan" "$DIR/balanced.plan"; then fail "--stage_blocks=5,1 wrote the balanced plan"; fi
losses() { "$ONEFLOW" run "$1" --iters=3 | grep -o '"loss": [^,]*'; }
cut_losses="$(losses "$DIR/cut.plan")"
[[ -n "$cut_losses" ]] || fail "the cut plan reported no loss"
[[ "$cut_losses" == "$(losses "$DIR/balanced.plan")" ]] || fail "the cut and the balanced plan trained differently"
echo "--stage_blocks=5,1: blocks per stage in inspect, the balanced losses: $(paste -sd' ' <<<"$cut_losses")"

# The errors the page quotes (its lines joined: a quote may wrap).
prose="$(tr '\n' ' ' <<<"$section" | tr -s ' ')"
for case in "4,1|--stage_blocks=4,1 sums to 5 blocks, but --layers=6; give 2 counts summing to 6" \
            "6|--stage_blocks=6 gives 1 stages, but --pp=2 has 2; give one block count per stage" \
            "6,0|--stage_blocks=6,0: every pipeline stage needs at least one block (got 0)" \
            "4,x|--stage_blocks=4,x: 'x' is not a block count; "; do
  counts="${case%%|*}"
  message="${case#*|}"
  grep -qF -- "${message%; }" <<<"$prose" || fail "the page does not quote: $message"
  # shellcheck disable=SC2086
  if out="$("$LLAMA" $balanced --stage_blocks="$counts" 2>&1)"; then fail "--stage_blocks=$counts was accepted"; fi
  grep -qF -- "llama: error: $message" <<<"$out" || fail "--stage_blocks=$counts printed: $out"
done
echo "the page's errors are the example's"
