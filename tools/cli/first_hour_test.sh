#!/usr/bin/env bash
# What a new user meets in the first hour (issue 30), through the real binaries:
# `oneflow compile` of an example's --print_graph text (the C++ plan's figures, the same
# losses), per-subcommand help, "did you mean" for a mistyped flag, --version, the
# examples' --help, data paths made absolute and directories refused, degenerate layouts
# named, and every pipeline stage in the compile summary. Every message exactly.
set -euo pipefail
ONEFLOW="$PWD/tools/cli/oneflow"
MLP="$PWD/examples/mlp/mlp"
GPT="$PWD/examples/gpt/gpt"
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
run() {
  set +e
  out="$("$@" 2>"$DIR/stderr")"
  rc=$?
  set -e
  err="$(cat "$DIR/stderr")"
}
# The summary's figures without the compile time.
figures() { sed -n "s/^\(compiled '[a-z_]*' for .*\) in [0-9.]* s: \(.*\)$/\1: \2/p"; }

# ---- oneflow compile: the mlp's text gives the C++ plan's figures and losses ----------
layout=(--devices_per_node=4 --dp=2 --tp=2)
run "$MLP" "${layout[@]}" --batch=16 --hidden=32 --print_graph
[[ $rc -eq 0 ]] || fail "print_graph exited $rc: $err"
printf '%s\n' "$out" >"$DIR/mlp.txt"
head -n 3 "$DIR/mlp.txt" | grep -qx "placement cpu{0:0-3}\[2, 2\]" || fail "$(head -n 5 "$DIR/mlp.txt")"
run "$MLP" "${layout[@]}" --batch=16 --hidden=32 --plan_out="$DIR/cpp.plan"
[[ $rc -eq 0 ]] || fail "mlp exited $rc: $err"
cpp_figures="$(figures <<<"$out")"
[[ -n "$cpp_figures" ]] || fail "no summary: $out"
run "$ONEFLOW" compile "$DIR/mlp.txt" "${layout[@]}" --plan_out="$DIR/text.plan"
[[ $rc -eq 0 ]] || fail "compile exited $rc: $err"
[[ "$(figures <<<"$out")" == "$cpp_figures" ]] || fail "text: $out; C++: $cpp_figures"
grep -qx "wrote $DIR/text.plan (inspect it with: oneflow inspect $DIR/text.plan)" <<<"$out" || fail "$out"
"$ONEFLOW" run "$DIR/cpp.plan" --iters=3 >"$DIR/cpp.jsonl"
"$ONEFLOW" run "$DIR/text.plan" --iters=3 >"$DIR/text.jsonl"
losses() { sed 's/"step_ms".*//' "$1"; }
[[ "$(losses "$DIR/cpp.jsonl")" == "$(losses "$DIR/text.jsonl")" ]] || fail "$(cat "$DIR/cpp.jsonl" "$DIR/text.jsonl")"
[[ $(wc -l <"$DIR/text.jsonl") -eq 3 ]] || fail "$(cat "$DIR/text.jsonl")"

# Errors: the file and the line; the layout's placement; --nodes as a count; a directory.
sed 's/= matmul(/= matmull(/' "$DIR/mlp.txt" >"$DIR/bad.txt"
line=$(grep -n "matmull(" "$DIR/bad.txt" | head -n 1 | cut -d: -f1)
run "$ONEFLOW" compile "$DIR/bad.txt" "${layout[@]}"
[[ $rc -eq 1 ]] || fail "bad op exited $rc"
[[ "$err" == "oneflow compile: $DIR/bad.txt: line $line: unknown op type 'matmull'; known: "* ]] || fail "$err"
run "$ONEFLOW" compile "$DIR/mlp.txt" --devices_per_node=2 --dp=2
[[ $rc -eq 1 ]] || fail "other layout exited $rc"
[[ "$err" == "oneflow compile: $DIR/mlp.txt: the graph's placement cpu{0:0-3}[2, 2] is not the layout's cpu{0:0-1} (from --nodes=1 --devices_per_node=2 --dp=2 --tp=1); give the flags it was written for, or remove its \`placement\` line and its sbp hints" ]] || fail "$err"
run "$ONEFLOW" compile "$DIR/mlp.txt" --nodes=127.0.0.1:5001 "${layout[@]}"
[[ $rc -eq 1 ]] || fail "--nodes=HOST exited $rc"
[[ "$err" == "oneflow compile: --nodes=127.0.0.1:5001 is not a number of nodes; compile takes a count (--nodes=2), launch the daemons' HOST:PORT list" ]] || fail "$err"
run "$ONEFLOW" compile "$DIR"
[[ $rc -eq 1 && "$err" == "oneflow compile: $DIR: is a directory; give a graph text file" ]] || fail "$rc $err"
run "$ONEFLOW" compile "$DIR/missing.txt"
[[ $rc -eq 1 && "$err" == "oneflow compile: $DIR/missing.txt: cannot open the graph file" ]] || fail "$rc $err"

# ---- help: one subcommand's flags, with its own descriptions --------------------------
run "$ONEFLOW" help run
[[ $rc -eq 0 ]] || fail "help run exited $rc"
help_run="$out"
[[ "$(head -n 1 <<<"$out")" == "usage: oneflow run PLAN [--iters=N] [--metrics=FILE] [--trace=FILE.json] [--threads_per_device=N] [--checkpoint_dir=DIR --checkpoint_every=N [--checkpoint_sync] [--keep_checkpoints=K] [--keep_checkpoint_every=N]] [--resume_from=DIR] [--communication_priority_levels=N]" ]] || fail "$out"
grep -qx "  --iters (default: 10)" <<<"$out" || fail "$out"
grep -qx "      Write a Chrome/Perfetto trace (JSON) of every act here (ui.perfetto.dev)." <<<"$out" || fail "$out"
if grep -q -- "--format\|--nodes\|--devices_per_node" <<<"$out"; then fail "help run shows other subcommands' flags: $out"; fi
run "$ONEFLOW" run --help
[[ $rc -eq 0 && "$out" == "$help_run" ]] || fail "run --help differs from help run: $out"
run "$ONEFLOW" help list
grep -qx "  --format (default: text)" <<<"$out" || fail "$out"
grep -qx "      text (for people) or json (one object)." <<<"$out" || fail "$out"
if grep -q "dot\|html" <<<"$out"; then fail "list advertises dot/html: $out"; fi
run "$ONEFLOW" help compile
grep -qx "      Nodes of the cluster (a count; default 1)." <<<"$out" || fail "$out"
run "$ONEFLOW" help frobnicate
[[ $rc -eq 2 ]] || fail "help of an unknown subcommand exited $rc"
run "$ONEFLOW" help
[[ $rc -eq 0 && $(wc -l <<<"$out") -lt 45 ]] || fail "the overview is $(wc -l <<<"$out") lines: $out"
grep -qx "  compile  compile a model written in the graph text format (docs/graph_text.md) into a plan" <<<"$out" || fail "$out"

# ---- a mistyped flag or subcommand: the nearest valid one -----------------------------
run "$ONEFLOW" run "$DIR/cpp.plan" --iter=3
[[ $rc -eq 2 ]] || fail "--iter exited $rc"
[[ "$err" == "oneflow run: unknown flag --iter; did you mean --iters?"$'\n'"usage: oneflow run PLAN [--iters=N] [--metrics=FILE] [--trace=FILE.json] [--threads_per_device=N] [--checkpoint_dir=DIR --checkpoint_every=N [--checkpoint_sync] [--keep_checkpoints=K] [--keep_checkpoint_every=N]] [--resume_from=DIR] [--communication_priority_levels=N]" ]] || fail "$err"
run "$ONEFLOW" inspect "$DIR/cpp.plan" --formt=json
[[ $rc -eq 2 && "$(head -n 1 <<<"$err")" == "oneflow inspect: unknown flag --formt; did you mean --format?" ]] || fail "$rc $err"
run "$ONEFLOW" inspekt "$DIR/cpp.plan"
[[ $rc -eq 2 && "$(head -n 1 <<<"$err")" == "oneflow: unknown subcommand 'inspekt'; did you mean 'inspect'? valid: inspect, run, launch, status, list, cancel, checkpoint, profile, report, calibrate, diagnose, compile, help" ]] || fail "$rc $err"

# ---- versions ------------------------------------------------------------------------
run "$ONEFLOW" --version
[[ $rc -eq 0 && "$out" == "oneflow $(head -n 1 VERSION)" ]] || fail "$rc $out"
run "$MLP" --version
[[ $rc -eq 0 && "$out" == "$("$ONEFLOW" --version)" ]] || fail "$rc $out"

# ---- the examples' --help shows the layout flags --------------------------------------
run "$MLP" --help
for flag in nodes devices_per_node dp tp pp micro_batches zero compression plan_out run print_graph batch hidden; do
  grep -q -- "-$flag (" <<<"$out" || fail "mlp --help lacks --$flag: $out"
done

# ---- data paths: absolute in the plan, directories refused ---------------------------
mkdir -p "$DIR/data" "$DIR/elsewhere"
head -c $((65 * 4 * 16)) /dev/zero >"$DIR/data/records.bin"   # 16 records: 64 features and a label
(cd "$DIR/data" && "$MLP" --batch=16 --hidden=32 --record_file=records.bin --plan_out="$DIR/rec.plan" >/dev/null)
(cd "$DIR/elsewhere" && "$ONEFLOW" run "$DIR/rec.plan" --iters=1 >"$DIR/rec.jsonl") || fail "run from another directory failed"
grep -q '"iter": 0' "$DIR/rec.jsonl" || fail "$(cat "$DIR/rec.jsonl")"
run "$MLP" --record_file="$DIR/data"
[[ $rc -eq 2 && "$err" == "mlp: error: record_file '$DIR/data' of data source 'data' is a directory; give a regular file" ]] || fail "$rc $err"
run "$GPT" --text_file="$DIR/data"
[[ $rc -eq 2 && "$err" == "gpt: error: text_file '$DIR/data' of data source 'data' is a directory; give a regular file" ]] || fail "$rc $err"
cd "$DIR/data"
run "$GPT" --text_file=nothing.txt
cd - >/dev/null
[[ $rc -eq 1 && "$err" == "gpt: error: text_file 'nothing.txt' of data source 'data' ($DIR/data/nothing.txt) does not exist" ]] || fail "missing text file: $rc $err"

# ---- degenerate layouts: they train (the sweep checks their losses), with a warning ------
run "$GPT" --devices_per_node=8 --tp=8 --heads=4 --hidden=32 --vocab=32 --seq=8
[[ $rc -eq 0 && "$err" == "gpt: warning: --tp=8 is more than --heads=4: heads are split across tensor-parallel devices, so attention needs boxings that whole heads per device avoid (Megatron refuses this layout); use a --tp that divides --heads" ]] || fail "$rc $err"
run "$GPT" --devices_per_node=4 --tp=4 --heads=6 --hidden=48 --vocab=32 --seq=8
[[ $rc -eq 0 && "$err" == "gpt: warning: --heads=6 is not divisible by --tp=4: heads are split across tensor-parallel devices, so attention needs boxings that whole heads per device avoid (Megatron refuses this layout); use a --tp that divides --heads" ]] || fail "$rc $err"
run "$GPT" --devices_per_node=4 --tp=4 --heads=4 --hidden=32 --vocab=32 --seq=8
[[ $rc -eq 0 && -z "$err" ]] || fail "a Megatron layout warned: $rc $err"
run "$MLP" --devices_per_node=4 --dp=4 --batch=2 --hidden=32 --run --iters=2
[[ $rc -eq 0 && "$err" == "mlp: warning: --batch=2, fewer rows than --dp=4: 2 of the 4 data-parallel devices get no rows and only wait for the others; use --batch >= 4" ]] || fail "$rc $err"
grep -q '"iter": 1' <<<"$out" || fail "$out"
run "$MLP" --devices_per_node=2 --dp=2 --batch=4 --micro_batches=4 --hidden=32
[[ $rc -eq 0 && "$err" == "mlp: warning: --batch=4 is 1 rows per micro-batch (--micro_batches=4), fewer rows than --dp=2: 1 of the 2 data-parallel devices get no rows and only wait for the others; use --batch >= 8" ]] || fail "$rc $err"

# ---- the summary names every pipeline stage -------------------------------------------
run "$GPT" --devices_per_node=4 --dp=2 --pp=2 --layers=2 --hidden=32 --heads=2 --vocab=32 --seq=8 --batch=4
[[ $rc -eq 0 ]] || fail "gpt pp=2 exited $rc: $err"
grep -q "^compiled 'gpt' for 2 pipeline stages (stage 0: cpu{0:0-1}, stage 1: cpu{0:2-3}) in " <<<"$out" || fail "$out"
grep -q "^stage 0 device 0:0: " <<<"$out" || fail "$out"
grep -q "^stage 1 device 0:2: " <<<"$out" || fail "$out"

# ---- --resume_from names a file as what it is -------------------------------------------
run "$ONEFLOW" run "$DIR/cpp.plan" --iters=2 --resume_from="$DIR/text.plan"
[[ $rc -eq 1 ]] || fail "resume_from=FILE exited $rc"
[[ "$err" == "oneflow run: checkpoint directory '$DIR/text.plan' is not a directory; give a checkpoint (DIR/iter-N) or the --checkpoint_dir holding them" ]] || fail "$err"
echo PASS
