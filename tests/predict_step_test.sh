#!/bin/bash
# The examples' --predict_step: a hand layout priced by --auto_parallel's cost model. The
# layouts a search records (its choice and its alternatives), each compiled by hand with
# --predict_step, get the search's own prediction to the bit; the plan carries it as a
# record of one layout; `oneflow run` prints it beside the measured step; the flags it
# cannot price are refused naming them.
set -euo pipefail
gpt="$1"
oneflow="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

model=(--layers=2 --hidden=32 --heads=4 --seq=8 --batch=8 --vocab=64 --nodes=2 --devices_per_node=2
       --inter_node_bandwidth=1.25e8)
"$gpt" "${model[@]}" --auto_parallel --plan_out="$dir/auto.plan" > "$dir/auto.out" || fail "search: $(cat "$dir/auto.out")"
"$oneflow" inspect "$dir/auto.plan" --format=json > "$dir/auto.json"
# Every layout the search recorded, as flags and its predicted step in seconds.
python3 - "$dir/auto.json" > "$dir/layouts" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))["auto_parallel"]
for p in [d["chosen"]] + d["alternatives"]:
    l = p["layout"]
    schedule = " --pp_schedule=%s" % l["pp_schedule"] if l["pp_schedule"] != "1f1b" else ""
    kept = " --zero3_regather=false" if not l["zero3_regather"] else ""
    print("--dp=%d --tp=%d --pp=%d%s --micro_batches=%d --zero=%d%s --recompute=%s|%r" % (
        l["dp"], l["tp"], l["pp"], schedule, l["micro_batches"], l["zero"], kept, l["recompute"], p["step_seconds"]))
PYEOF
# --auto_parallel searched the per-op SBP too (not given: on with it), and not with --nosbp_search.
python3 -c 'import json,sys; assert "sbp_search" in json.load(open(sys.argv[1])), "no sbp_search record"' "$dir/auto.json" ||
  fail "--auto_parallel did not search per-op SBP"
"$gpt" "${model[@]}" --auto_parallel --nosbp_search --plan_out="$dir/greedy.plan" > /dev/null || fail "search --nosbp_search"
"$oneflow" inspect "$dir/greedy.plan" --format=json |
  python3 -c 'import json,sys; assert "sbp_search" not in json.load(sys.stdin)' || fail "--nosbp_search searched per-op SBP"
[[ "$(wc -l < "$dir/layouts")" -ge 3 ]] || fail "the search recorded fewer than 3 layouts: $(cat "$dir/layouts")"
i=0
while IFS='|' read -r flags step; do
  # --sbp_search as --auto_parallel sets it by default, so the probes are compiled alike.
  # shellcheck disable=SC2086
  "$gpt" "${model[@]}" $flags --sbp_search --predict_step --plan_out="$dir/hand$i.plan" > "$dir/hand$i.out" ||
    fail "--predict_step $flags: $(cat "$dir/hand$i.out")"
  grep -q "^auto-parallel: priced the given $flags (--predict_step, not searched)" "$dir/hand$i.out" ||
    fail "no summary line for $flags: $(cat "$dir/hand$i.out")"
  "$oneflow" inspect "$dir/hand$i.plan" --format=json > "$dir/hand$i.json"
  python3 - "$dir/hand$i.json" "$step" "$flags" <<'PYEOF' || fail "the record of $flags"
import json, sys
d = json.load(open(sys.argv[1]))["auto_parallel"]
assert d["candidates"] == 1 and d["alternatives"] == [] and d["refused"] == [], d
assert repr(d["chosen"]["step_seconds"]) == sys.argv[2], (d["chosen"]["step_seconds"], sys.argv[2], sys.argv[3])
assert d["planned_peak_bytes"] > 0, d
PYEOF
  i=$((i + 1))
done < "$dir/layouts"

# The run summary sets the recorded prediction beside the measured step.
"$oneflow" run "$dir/hand1.plan" --iters=3 > "$dir/run.out" 2>&1 || fail "run: $(cat "$dir/run.out")"
grep -q "auto-parallel: predicted step [0-9.]* ms .*host terms: none), measured [0-9.]* ms (mean of 2 iterations after the first)" \
  "$dir/run.out" || fail "no predicted-vs-measured line: $(cat "$dir/run.out")"

# ZB-H1 is priced: the same pipeline's compute, its bubble below 1F1B's.
small=(--layers=2 --hidden=32 --heads=4 --seq=8 --batch=8 --vocab=64 --devices_per_node=2 --pp=2 --micro_batches=4)
for schedule in 1f1b zb; do
  "$gpt" "${small[@]}" --pp_schedule=$schedule --predict_step --plan_out="$dir/$schedule.plan" > "$dir/$schedule.out" ||
    fail "--pp_schedule=$schedule --predict_step: $(cat "$dir/$schedule.out")"
  "$oneflow" inspect "$dir/$schedule.plan" --format=json > "$dir/$schedule.json"
done
grep -q "^auto-parallel: priced the given --dp=1 --tp=1 --pp=2 --pp_schedule=zb --micro_batches=4 " "$dir/zb.out" ||
  fail "no zb summary line: $(cat "$dir/zb.out")"
python3 - "$dir/1f1b.json" "$dir/zb.json" <<'PYEOF' || fail "zb against 1f1b"
import json, sys
one, zb = (json.load(open(f))["auto_parallel"]["chosen"] for f in sys.argv[1:3])
assert one["layout"]["pp_schedule"] == "1f1b" and zb["layout"]["pp_schedule"] == "zb", (one, zb)
assert zb["compute_seconds"] == one["compute_seconds"], (one, zb)
assert 0 < zb["bubble_seconds"] < one["bubble_seconds"], (one, zb)
PYEOF

# What it cannot price, refused naming the flag.
expect_error() {  # expected text, then the flags
  local expected="$1"
  shift
  if "$gpt" "$@" > "$dir/err.out" 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$expected" "$dir/err.out" || fail "for $*: expected '$expected', got: $(cat "$dir/err.out")"
}
expect_error "--cp=2 is not in the cost model" --layers=2 --hidden=32 --heads=4 --seq=8 --batch=8 --vocab=64 \
  --devices_per_node=2 --cp=2 --predict_step
expect_error "--pp_schedule=auto is not in the cost model" --layers=2 --hidden=32 --heads=4 --seq=8 --batch=8 \
  --vocab=64 --devices_per_node=2 --pp=2 --micro_batches=4 --pp_schedule=auto --predict_step
expect_error "drop --predict_step" "${model[@]}" --auto_parallel --predict_step
expect_error "--auto_parallel chooses --pp_schedule; do not give --pp_schedule=zb with it" "${model[@]}" --auto_parallel \
  --pp_schedule=zb
# --zero3_regather=false is priced: across the 2 nodes backward waits on no re-gather, so
# ZeRO-3 keeping forward's copies is predicted faster than re-gathering, with a higher
# peak (every gathered parameter held to backward). The search chooses it itself, and
# only for --zero=3.
predicted() {  # flags -> "step_ms peak_bytes" from the summary line
  "$gpt" "${model[@]}" --dp=4 --zero=3 "$@" --predict_step |
    sed -n 's/^auto-parallel: .*predicted step \([0-9.]*\) ms .*predicted peak [^(]*(\([0-9]*\) B).*/\1 \2/p'
}
read -r regather_ms regather_peak <<< "$(predicted)"
read -r kept_ms kept_peak <<< "$(predicted --zero3_regather=false)"
[[ -n "$regather_ms" && -n "$kept_ms" ]] || fail "no predicted step: '$regather_ms' '$kept_ms'"
python3 -c "import sys; a, b, c, d = map(float, sys.argv[1:]); assert b < a and d > c, sys.argv[1:]" \
  "$regather_ms" "$kept_ms" "$regather_peak" "$kept_peak" ||
  fail "kept copies: step $kept_ms ms (re-gathering $regather_ms), peak $kept_peak B (re-gathering $regather_peak)"
expect_error "--auto_parallel chooses --zero3_regather; do not give --zero3_regather=false with it" "${model[@]}" \
  --auto_parallel --zero3_regather=false
expect_error "keeps ZeRO-3's gathered parameters for backward; it needs --zero=3 (the optimizer's zero_stage is 2)" \
  --layers=2 --hidden=32 --heads=4 --seq=8 --batch=8 --vocab=64 --devices_per_node=2 --dp=2 --zero=2 \
  --zero3_regather=false --predict_step
expect_error "keeps ZeRO-3's gathered parameters for backward; it needs --zero=3 (the optimizer's zero_stage is 2)" \
  --layers=2 --hidden=32 --heads=4 --seq=8 --batch=8 --vocab=64 --devices_per_node=2 --dp=2 --zero=2 \
  --zero3_regather=false
echo PASS
