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

# The compile flags beyond the layout (docs/graph_text.md, "oneflow compile"): the same
# flags give the same plan from the text as from C++, for recomputation, the pipeline
# schedules and context parallelism.
same_plan gpt_recompute "$PWD/examples/gpt/gpt" "${layout[@]}" --recompute=full
inspected=$("$ONEFLOW" inspect "$DIR/gpt_recompute.text.plan")
[[ "$inspected" == *"recompute (--recompute=full): activations kept for backward "* ]] ||
  fail "no recompute section in: $inspected"
same_plan gpt_selective "$PWD/examples/gpt/gpt" "${layout[@]}" --recompute=selective --communication_streams=one
same_plan gpt_zb "$PWD/examples/gpt/gpt" --devices_per_node=2 --pp=2 --micro_batches=4 --pp_schedule=zb
model_flags=(--layers=4)
same_plan gpt_interleaved "$PWD/examples/gpt/gpt" --devices_per_node=2 --pp=2 --micro_batches=4 \
  --virtual_stages=2 --pp_schedule=interleaved
same_plan gpt_cp_ring "$PWD/examples/gpt/gpt" --devices_per_node=2 --cp=2 --cp_attention=ring
grep -q "ring_shift" "$DIR/gpt_cp_ring.txt" || fail "no ring attention in $(head -n 5 "$DIR/gpt_cp_ring.txt")"
# The zig-zag split: the recipe records --cp_ring_split, so without the flag the text's
# plan differs from the example's in that field alone.
same_plan gpt_cp_zigzag "$PWD/examples/gpt/gpt" --devices_per_node=2 --cp=2 --cp_attention=ring --cp_ring_split=zigzag
"$ONEFLOW" compile "$DIR/gpt_cp_zigzag.txt" --devices_per_node=2 --cp=2 --cp_attention=ring \
  --plan_out="$DIR/zigzag_no_flag.plan" >/dev/null
if cmp -s "$DIR/gpt_cp_zigzag.cpp.plan" "$DIR/zigzag_no_flag.plan"; then fail "--cp_ring_split made no difference"; fi
# --codec_accuracy_bound is recorded in the recipe (an elastic re-plan keeps it), so the
# text compiled without the flag differs from the example's plan compiled with it.
same_plan gpt_bound_off "$PWD/examples/gpt/gpt" "${layout[@]}" --codec_accuracy_bound=off
"$ONEFLOW" compile "$DIR/gpt_bound_off.txt" "${layout[@]}" --plan_out="$DIR/bound_no_flag.plan" >/dev/null
if cmp -s "$DIR/gpt_bound_off.cpp.plan" "$DIR/bound_no_flag.plan"; then fail "--codec_accuracy_bound made no difference"; fi
# --error_feedback: the same flag from the text as from C++, recorded in the recipe; the
# text compiled without it writes another plan (its gradient steps carry none).
ef_layout=(--nodes=2 --devices_per_node=2 --dp=2 --tp=2 --compression=int4)
same_plan gpt_error_feedback "$PWD/examples/gpt/gpt" "${ef_layout[@]}" --error_feedback
"$ONEFLOW" compile "$DIR/gpt_error_feedback.txt" "${ef_layout[@]}" --plan_out="$DIR/ef_no_flag.plan" >/dev/null
if cmp -s "$DIR/gpt_error_feedback.cpp.plan" "$DIR/ef_no_flag.plan"; then fail "--error_feedback made no difference"; fi
if "$PWD/examples/gpt/gpt" --precision=bf16 --plan_out="$DIR/bf16_probe.plan" >/dev/null 2>"$DIR/bf16.err"; then
  same_plan gpt_bf16 "$PWD/examples/gpt/gpt" "${layout[@]}" --precision=bf16
else
  # A CPU without BF16 instructions: compile refuses it as the example does, naming the flag.
  err=$("$ONEFLOW" compile "$DIR/gpt.txt" "${layout[@]}" --precision=bf16 2>&1 >/dev/null) && fail "bf16 accepted"
  [[ "$err" == "oneflow compile: --precision=bf16 needs a CPU with AVX-512 BF16 or AMX-BF16 instructions;"* ]] ||
    fail "$err"
fi
# Bad values name the flag and what is valid; what a text cannot take is refused, saying why.
expect_error() {
  local want="$1"
  shift
  local err
  err=$("$ONEFLOW" compile "$@" 2>&1 >/dev/null) && fail "accepted: $*"
  [[ "$err" == "$want" ]] || fail "oneflow compile $*: got: $err; want: $want"
}
expect_error "oneflow compile: --recompute=some is not one of: none, selective, full" \
  "$DIR/gpt.txt" "${layout[@]}" --recompute=some
expect_error "oneflow compile: --error_feedback acts on compressed gradient reductions, and --compression=off compresses none; use --compression=auto, fp8, int8 or int4 with it" \
  "$DIR/gpt.txt" "${layout[@]}" --compression=off --error_feedback
expect_error "oneflow compile: --pp_schedule=gpipe is not one of: 1f1b, interleaved, zb, auto" \
  "$DIR/gpt.txt" "${layout[@]}" --pp_schedule=gpipe
expect_error "oneflow compile: --precision=fp16 is not one of: fp32, bf16" "$DIR/gpt.txt" "${layout[@]}" --precision=fp16
expect_error "oneflow compile: --cp_attention=flash is not one of: ulysses, ring, auto" \
  "$DIR/gpt_cp_ring.txt" --devices_per_node=2 --cp=2 --cp_attention=flash
expect_error "oneflow compile: --cp_ring_split=spiral is not one of: zigzag, contiguous" \
  "$DIR/gpt_cp_ring.txt" --devices_per_node=2 --cp=2 --cp_attention=ring --cp_ring_split=spiral
expect_error "oneflow compile: --codec_accuracy_bound=-1 is not a choice; valid: a final-loss gap >= 0 as a fraction \
of dense's (0.005 is 0.5%, the default), or off" "$DIR/gpt.txt" "${layout[@]}" --codec_accuracy_bound=-1
expect_error "oneflow compile: --pp_schedule=interleaved needs --virtual_stages >= 2 (got --virtual_stages=1)" \
  "$DIR/gpt_zb.txt" --devices_per_node=2 --pp=2 --micro_batches=4 --pp_schedule=interleaved

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

# `oneflow compile --auto_parallel` (docs/auto_parallel.md): the mlp's text without its
# placement line, searched for 4 devices (its one-device sbp=B hints split nothing, so tp
# layouts get Megatron's split; no blocks, so no pipeline stages; its inputs hold the
# `batch 64` line's rows and every op keeps rows apart up to the loss's mean, so
# micro-batches are searched: dp=4, dp=2 x tp=2 and tp=4 with ZeRO 0-3 (3 also keeping
# forward's gathered copies) and the micro-batches each leaves whole rows on a device, 62
# layouts; ZeRO-3 wins on the model (keeping the copies ties with it in one node):
# its reduce-scatter is one bucketed call and each device updates a quarter of the
# weights), and the flags it refuses. (That the chosen plan is the plan of the chosen
# flags, byte for byte, is //tools/cli:graph_text_auto_parallel_test.)
"$PWD/examples/mlp/mlp" --print_graph | grep -v '^placement ' >"$DIR/mlp_free.txt"
out=$("$ONEFLOW" compile "$DIR/mlp_free.txt" --auto_parallel --devices_per_node=4 --plan_out="$DIR/auto.plan")
[[ "$out" == "auto-parallel: chose --dp=4 --tp=1 --pp=1 --micro_batches=1 --zero=3 --recompute=none among 62 layouts in "* ]] ||
  fail "$out"
[[ "$out" == *$'\npipelines not searched: the graph has 0 block(s) (ops marked block=NAME); pipeline stages cut between blocks\n'* ]] ||
  fail "no pipeline note in: $out"
inspected=$("$ONEFLOW" inspect "$DIR/auto.plan")
[[ "$inspected" == *"auto-parallel decision (62 layouts priced)"* ]] || fail "no decision in: $inspected"
# The gpt's layout-free text (2 blocks, the whole batch of 8) under a memory limit that no
# layout of one stage meets with the greedy per-op SBP (--nosbp_search): the search cuts
# the blocks onto 2 stages with micro-batches under ZB-H1, and the plan trains as the C++
# gpt compiled with the chosen flags (the same losses).
"$PWD/examples/gpt/gpt" --print_graph | grep -v '^placement ' >"$DIR/gpt_free.txt"
out=$("$ONEFLOW" compile "$DIR/gpt_free.txt" --auto_parallel --nosbp_search --devices_per_node=4 \
  --device_memory=6000000 --plan_out="$DIR/gpt_auto.plan")
[[ "$out" == "auto-parallel: chose --dp=1 --tp=2 --pp=2 --pp_schedule=zb --micro_batches=8 --zero=0 --recompute=none among 183 layouts in "* ]] ||
  fail "$out"
[[ "$out" != *"not searched"* ]] || fail "a family left out of the gpt's search: $out"
losses() { grep -o '"loss": [0-9.]*' | tr '\n' ' '; }
searched=$("$ONEFLOW" run "$DIR/gpt_auto.plan" --iters=3 2>&1 | losses)
by_hand=$("$PWD/examples/gpt/gpt" --devices_per_node=4 --tp=2 --pp=2 --pp_schedule=zb --micro_batches=8 --run --iters=3 2>&1 | losses)
[[ -n "$searched" && "$searched" == "$by_hand" ]] || fail "searched text plan losses '$searched' vs the C++ gpt's '$by_hand'"
# By default --auto_parallel searches each probe's per-op SBP too: its tp plans box less
# (each op where its boxing plus kernel seconds are least), and one stage of tp=4 with 8
# micro-batches fits under the same limit (planned 5.12 MiB). It trains as the C++ gpt
# compiled with the chosen flags and --sbp_search.
out=$("$ONEFLOW" compile "$DIR/gpt_free.txt" --auto_parallel --devices_per_node=4 --device_memory=6000000 \
  --plan_out="$DIR/gpt_auto_sbp.plan")
[[ "$out" == "auto-parallel: chose --dp=1 --tp=4 --pp=1 --micro_batches=8 --zero=0 --recompute=none among 183 layouts in "* ]] ||
  fail "$out"
[[ "$("$ONEFLOW" inspect "$DIR/gpt_auto_sbp.plan")" == *"sbp search: "* ]] || fail "no sbp search in the searched plan"
searched=$("$ONEFLOW" run "$DIR/gpt_auto_sbp.plan" --iters=3 2>&1 | losses)
by_hand=$("$PWD/examples/gpt/gpt" --devices_per_node=4 --tp=4 --micro_batches=8 --sbp_search --run --iters=3 2>&1 | losses)
[[ -n "$searched" && "$searched" == "$by_hand" ]] || fail "per-op searched text plan losses '$searched' vs the C++ gpt's '$by_hand'"
# The same text with the flags given by hand (docs/graph_text.md): its blocks staged and its
# batch cut, as the C++ gpt is built for them.
"$ONEFLOW" compile "$DIR/gpt_free.txt" --devices_per_node=2 --pp=2 --micro_batches=4 --plan_out="$DIR/gpt_pp_free.plan" >/dev/null ||
  fail "the layout-free gpt text did not compile with --pp=2 --micro_batches=4"
staged=$("$ONEFLOW" run "$DIR/gpt_pp_free.plan" --iters=3 2>&1 | losses)
built=$("$PWD/examples/gpt/gpt" --devices_per_node=2 --pp=2 --micro_batches=4 --run --iters=3 2>&1 | losses)
[[ -n "$staged" && "$staged" == "$built" ]] || fail "staged text plan losses '$staged' vs the C++ gpt's '$built'"
# Without a `batch` line the inputs are one micro-batch: said, not guessed silently.
grep -v '^batch ' "$DIR/gpt_free.txt" >"$DIR/gpt_nobatch.txt"
err=$("$ONEFLOW" compile "$DIR/gpt_nobatch.txt" --micro_batches=2 --plan_out="$DIR/nobatch.plan" 2>&1 >/dev/null) ||
  fail "a text without a batch line was refused: $err"
[[ "$err" == *"oneflow compile: warning: $DIR/gpt_nobatch.txt has no \`batch N\` line, so its inputs are taken as one micro-batch and an iteration runs --micro_batches=2 of them; write \`batch N\` (N = its inputs' rows) to have them cut into micro-batches instead"* ]] ||
  fail "no warning for a text without a batch line: $err"
# A text of one micro-batch compiled without its micro-batches trains its inputs' rows, not
# its batch: said, with the flag that trains the batch.
"$PWD/examples/gpt/gpt" --print_graph --micro_batches=4 | grep -v '^placement ' >"$DIR/gpt_micro.txt"
err=$("$ONEFLOW" compile "$DIR/gpt_micro.txt" --plan_out="$DIR/micro.plan" 2>&1 >/dev/null) ||
  fail "a text of one micro-batch was refused: $err"
[[ "$err" == *"oneflow compile: warning: $DIR/gpt_micro.txt's inputs hold 2 rows, one of 4 micro-batches of its \`batch 8\` line (as \`--print_graph --micro_batches=4\` writes it); this plan trains 2 rows an iteration: give --micro_batches=4 to train the batch of 8"* ]] ||
  fail "no warning for a text of one micro-batch: $err"
err=$("$ONEFLOW" compile "$DIR/gpt_micro.txt" --micro_batches=4 --plan_out="$DIR/micro.plan" 2>&1 >/dev/null) ||
  fail "a text of one micro-batch was refused with its micro-batches: $err"
[[ "$err" != *"warning"* ]] || fail "a warning for a text compiled with its micro-batches: $err"
# A text's batch that does not split evenly over --dp compiles (the text's batch is its
# own), with what the uneven split costs said and the --dp that split it evenly.
err=$("$ONEFLOW" compile "$DIR/gpt_free.txt" --devices_per_node=3 --dp=3 --plan_out="$DIR/uneven.plan" 2>&1 >/dev/null) ||
  fail "an uneven text batch was refused: $err"
[[ "$err" == "oneflow compile: warning: --batch=8 does not split evenly over --dp=3: the data-parallel devices hold 3, 3, 2 rows, and the model's reshapes of an uneven split need activation boxing (dozens of collectives a step instead of a few gradient reductions); --dp=2, 4, 8 split it evenly" ]] ||
  fail "no warning for an uneven batch: $err"
err=$("$ONEFLOW" compile "$DIR/gpt_free.txt" --devices_per_node=4 --dp=4 --plan_out="$DIR/even.plan" 2>&1 >/dev/null) ||
  fail "an even text batch was refused: $err"
[[ -z "$err" ]] || fail "a warning for an even batch: $err"
# A sum over the batch for the loss cannot be cut into micro-batches: refused naming the op.
sed 's/= reduce_mean(/= reduce_sum(/' "$DIR/mlp_free.txt" >"$DIR/mlp_sum.txt"
err=$("$ONEFLOW" compile "$DIR/mlp_sum.txt" --micro_batches=2 --plan_out="$DIR/sum.plan" 2>&1 >/dev/null) &&
  fail "a summed loss was cut into micro-batches"
[[ "$err" == "oneflow compile: $DIR/mlp_sum.txt: --micro_batches=2: the graph's inputs hold the whole batch of 64 rows, and cutting them into micro-batches is refused: op 'reduce_mean_"*"' (reduce_sum, mlp_model.cc:"*") reads the batch's rows in "* ]] ||
  fail "$err"
[[ ! -e "$DIR/sum.plan" ]] || fail "a refused compile wrote its plan"
err=$("$ONEFLOW" compile "$DIR/mlp_free.txt" --auto_parallel --devices_per_node=4 --dp=2 2>&1 >/dev/null) && fail "--dp accepted"
[[ "$err" == "oneflow compile: --auto_parallel chooses --dp; do not give --dp=2 with it" ]] || fail "$err"
expect_error "oneflow compile: --auto_parallel chooses --recompute; do not give --recompute=full with it" \
  "$DIR/mlp_free.txt" --auto_parallel --devices_per_node=4 --recompute=full
expect_error "oneflow compile: --auto_parallel chooses --pp_schedule; do not give --pp_schedule=zb with it" \
  "$DIR/gpt_free.txt" --auto_parallel --devices_per_node=4 --pp_schedule=zb
expect_error "oneflow compile: --cp=2 is not searched: --auto_parallel on a graph text searches 1F1B and ZB-H1 pipelines of one chunk per stage and --cp=1; compile without --auto_parallel to give it" \
  "$DIR/mlp_free.txt" --auto_parallel --devices_per_node=4 --cp=2
err=$("$ONEFLOW" compile "$DIR/mlp.txt" --auto_parallel --devices_per_node=4 2>&1 >/dev/null) && fail "placement accepted"
[[ "$err" == "oneflow compile: $DIR/mlp.txt: --auto_parallel gives each layout its own placement, but the graph has \`placement "* ]] ||
  fail "$err"
err=$("$ONEFLOW" compile "$DIR/mlp_free.txt" --devices_per_node=4 --dp=4 --device_memory=4096 2>&1 >/dev/null) &&
  fail "--device_memory without --auto_parallel accepted"
[[ "$err" == "oneflow compile: --device_memory=4096 is a limit for --auto_parallel's search or --pp_schedule=auto; add one of them" ]] ||
  fail "$err"
# --zero3_regather=false (docs/zero.md): the text's ZeRO-3 plan sends --zero=0's bytes,
# re-gathering more; by hand only (not in --auto_parallel's cost model), and only at stage 3.
sends() {  # device 0's bytes sent per iteration, from the compile summary
  "$ONEFLOW" compile "$DIR/gpt_free.txt" --devices_per_node=4 --dp=4 "$@" |
    sed -n 's/^device 0:0: .* sends \([0-9]*\) B\/iter.*/\1/p'
}
zero0=$(sends --zero=0)
kept=$(sends --zero=3 --zero3_regather=false)
again=$(sends --zero=3)
[[ -n "$zero0" && -n "$kept" && -n "$again" ]] || fail "no 'sends' in the summaries: '$zero0' '$kept' '$again'"
(( kept * 100 >= zero0 * 98 && kept * 100 <= zero0 * 102 )) || fail "kept copy sends $kept B, --zero=0 $zero0 B"
(( again > kept + zero0 / 5 )) || fail "re-gathering sends $again B, the kept copy $kept B"
# Re-gathering over dp groups that cross nodes is warned about, naming the flag; in one node,
# or keeping the copies, not.
warned() { "$ONEFLOW" compile "$DIR/gpt_free.txt" "$@" --plan_out="$DIR/warned.plan" 2>&1 >/dev/null; }
err=$(warned --nodes=2 --devices_per_node=2 --dp=4 --zero=3)
[[ "$err" == "oneflow compile: warning: --zero=3 gathers every parameter again for backward over data-parallel groups that cross nodes: 1.5x the bytes of --zero=0 on the links between them; --zero3_regather=false keeps forward's gathered copies (--zero=0's bytes, a higher planned peak; docs/zero.md)" ]] ||
  fail "no re-gather warning across nodes: $err"
err=$(warned --nodes=2 --devices_per_node=2 --dp=4 --zero=3 --zero3_regather=false)
[[ -z "$err" ]] || fail "a warning for kept copies: $err"
err=$(warned --devices_per_node=4 --dp=4 --zero=3)
[[ -z "$err" ]] || fail "a warning in one node: $err"
expect_error "oneflow compile: --auto_parallel chooses --zero3_regather; do not give --zero3_regather=false with it" \
  "$DIR/mlp_free.txt" --auto_parallel --devices_per_node=4 --zero3_regather=false
err=$("$ONEFLOW" compile "$DIR/gpt_free.txt" --devices_per_node=4 --dp=4 --zero=1 --zero3_regather=false \
  --plan_out="$DIR/zero1_kept.plan" 2>&1 >/dev/null) && fail "--zero3_regather=false accepted at --zero=1"
[[ "$err" == *"keeps ZeRO-3's gathered parameters for backward; it needs --zero=3 (the optimizer's zero_stage is 1)"* ]] ||
  fail "$err"
[[ ! -e "$DIR/zero1_kept.plan" ]] || fail "a refused compile wrote its plan"
echo "PASS"
