#!/usr/bin/env bash
# docs/compiler.md, "SBP search (`--sbp_search`)": its example runs as written and prints
# the record the page shows, and `oneflow compile --sbp_search` of the gpt's graph text
# writes the plan the example's own --sbp_search writes, byte for byte (the flag reaches
# the compiler by both paths).
set -euo pipefail
ONEFLOW="$PWD/tools/cli/oneflow"
GPT="$PWD/examples/gpt/gpt"
PAGE="$PWD/docs/compiler.md"
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The page's block: the example's flags and the inspect output it shows (the comment
# lines after the inspect command, joined).
block="$(awk '/^### SBP search/{in_section=1} in_section && /^```sh$/{in_block=1; next} in_block && /^```$/{exit} in_block{print}' "$PAGE")"
[[ -n "$block" ]] || fail "no sh block under '### SBP search' in docs/compiler.md"
flags="$(grep -o 'bazel-bin/examples/gpt/gpt .*' <<<"$block" | sed -E 's|bazel-bin/examples/gpt/gpt ||; s| --plan_out=[^ ]*||')"
[[ "$flags" == *--sbp_search* ]] || fail "the page's gpt command has no --sbp_search: $flags"
expected="$(grep '^#' <<<"$block" | sed -E 's/^# *//' | paste -sd' ')"
[[ -n "$expected" ]] || fail "the page shows no output"

# shellcheck disable=SC2086
"$GPT" $flags --plan_out="$DIR/searched.plan" >/dev/null || fail "gpt $flags exited $?"
actual="$("$ONEFLOW" inspect "$DIR/searched.plan" | grep 'sbp search')"
[[ "$actual" == "$expected" ]] || fail "the page shows
  $expected
but inspect prints
  $actual"
echo "docs/compiler.md's example prints: $actual"

# The same through graph text: `oneflow compile --sbp_search` of the printed model.
layout="$(sed -E 's/ --sbp_search//' <<<"$flags")"
# shellcheck disable=SC2086
"$GPT" $layout --print_graph >"$DIR/gpt.txt" || fail "gpt --print_graph exited $?"
# shellcheck disable=SC2086
"$ONEFLOW" compile "$DIR/gpt.txt" $layout --sbp_search --plan_out="$DIR/text.plan" >/dev/null ||
  fail "oneflow compile --sbp_search exited $?"
cmp "$DIR/searched.plan" "$DIR/text.plan" || fail "oneflow compile --sbp_search wrote another plan than gpt --sbp_search"
# And without the flag, neither searches.
# shellcheck disable=SC2086
"$ONEFLOW" compile "$DIR/gpt.txt" $layout --plan_out="$DIR/greedy.plan" >/dev/null || fail "oneflow compile exited $?"
if "$ONEFLOW" inspect "$DIR/greedy.plan" | grep -q 'sbp search'; then fail "a plan compiled without --sbp_search has a search record"; fi
echo "oneflow compile --sbp_search: the same plan bytes; without it, no record"
