#!/usr/bin/env bash
# Compile from text = compile from C++ (issue 30): for each example, `oneflow compile` of
# the graph text that `--print_graph` writes, with the same layout flags, must write a plan
# byte-identical to the example's own `--plan_out`. The text carries each tensor's and
# op's source location (loc="FILE:LINE", docs/graph_text.md), so not one byte differs.
set -euo pipefail
ONEFLOW="$PWD/tools/cli/oneflow"
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

# same_plan NAME BINARY LAYOUT...: the C++ plan and the text plan, byte for byte. The
# model's own flags (model_flags) go to the example binary only: the text holds the model.
model_flags=()
same_plan() {
  local name="$1" binary="$2"
  shift 2
  "$binary" "$@" "${model_flags[@]}" --print_graph >"$DIR/$name.txt" || fail "$name --print_graph exited $?"
  "$binary" "$@" "${model_flags[@]}" --plan_out="$DIR/$name.cpp.plan" >/dev/null || fail "$name exited $?"
  "$ONEFLOW" compile "$DIR/$name.txt" "$@" --plan_out="$DIR/$name.text.plan" >/dev/null ||
    fail "oneflow compile of $name's text exited $?"
  [[ -s "$DIR/$name.cpp.plan" ]] || fail "$name wrote an empty plan"
  cmp "$DIR/$name.cpp.plan" "$DIR/$name.text.plan" ||
    fail "$name ($*): the plan compiled from text differs from the C++ plan"
  echo "$name $*: $(wc -c <"$DIR/$name.cpp.plan") bytes, identical"
}

layout=(--devices_per_node=4 --dp=2 --tp=2)
same_plan mlp "$PWD/examples/mlp/mlp" "${layout[@]}"
same_plan gpt "$PWD/examples/gpt/gpt" "${layout[@]}"
# Pipeline stages and micro-batches; a text data file given by a relative path (the text
# holds the absolute path, as the C++ job does after ResolveDataFiles).
printf 'first hour of a model of my own\n%.0s' {1..40} >"$DIR/corpus.txt"
model_flags=(--text_file=corpus.txt)
(cd "$DIR" && same_plan gpt_pp "$OLDPWD/examples/gpt/gpt" --devices_per_node=4 --tp=2 --pp=2 --micro_batches=2)
model_flags=()
grep -q "source .* text_file path=\"$DIR/corpus.txt\"" "$DIR/gpt_pp.txt" || fail "$(head -n 5 "$DIR/gpt_pp.txt")"

# The comparison sees one location: the text without its loc= fields (locations then name
# the text's lines), or with one line number moved, compiles to another plan.
grep -q ' loc="gpt_model.cc:[0-9]*"$' "$DIR/gpt.txt" || fail "no loc= in $(head -n 8 "$DIR/gpt.txt")"
sed 's/ loc="[^"]*"$//' "$DIR/gpt.txt" >"$DIR/gpt_no_loc.txt"
"$ONEFLOW" compile "$DIR/gpt_no_loc.txt" "${layout[@]}" --plan_out="$DIR/no_loc.plan" >/dev/null
if cmp -s "$DIR/gpt.cpp.plan" "$DIR/no_loc.plan"; then fail "the plan without loc= equals the C++ plan"; fi
first=$(awk '/ loc="/ { print NR; exit }' "$DIR/gpt.txt")
sed -E "${first}s/ loc=\"([^:]*):([0-9]+)\"$/ loc=\"\\1:9\\2\"/" "$DIR/gpt.txt" >"$DIR/gpt_moved.txt"
[[ "$(diff "$DIR/gpt.txt" "$DIR/gpt_moved.txt" | grep -c '^>')" == 1 ]] || fail "sed moved no line"
"$ONEFLOW" compile "$DIR/gpt_moved.txt" "${layout[@]}" --plan_out="$DIR/moved.plan" >/dev/null
if cmp -s "$DIR/gpt.cpp.plan" "$DIR/moved.plan"; then fail "a moved loc= gives the C++ plan"; fi
echo "PASS"
