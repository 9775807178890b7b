#!/usr/bin/env bash
# The script logic of prediction_hosts_bench.sh that runs without netns or root: the
# summary (median |error|, Spearman with tied ranks, chosen / best, Megatron / best,
# failed launches; a layout's launches merged: a --repeats run's, several runs of one sweep;
# the confirming round's plans and figures, its rounds paired)
# computed from fixed layout lines with answers worked out by hand, through the bench's own
# --summarize; the check of --repeats; the order of the rounds; and the hand layouts each
# cluster sweeps.
set -euo pipefail
BENCH=bench/auto_parallel/prediction_hosts_bench.sh
LAYOUTS=bench/auto_parallel/prediction_hosts_layouts.py
CONFIRM=bench/auto_parallel/prediction_hosts_confirm.py
ROUNDS=bench/auto_parallel/prediction_hosts_rounds.py
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

row() {  # cluster layout predicted measured [extra json fields]
  echo "{\"bench\": \"auto_parallel_prediction_hosts\", \"cluster\": \"$1\", \"nodes\": ${1%x*}, \"devices_per_node\": ${1#*x}, \"rate_mbit\": 1000, \"layout\": \"$2\", \"predicted_ms\": $3, \"measured_ms\": $4, \"load_avg_1m\": 2.5${5:+, $5}}"
}
{
  echo '{"config": {"bench": "auto_parallel_prediction_hosts"}}'
  # measured 10..50, predicted 12 10 33 40 45: errors 0.2 0.5 0.1 0 0.1 (median 0.1);
  # ranks of the predictions 2 1 3 4 5 against 1..5: Spearman 1 - 6 * 2 / (5 * 24) = 0.9.
  row 3x2 a 12 10 '"shared_host_predicted_ms": 10'
  row 3x2 b 10 20 '"shared_host_predicted_ms": 20, "megatron": true'
  row 3x2 c 33 30 '"shared_host_predicted_ms": 30'
  row 3x2 d 40 40 '"shared_host_predicted_ms": 40'
  row 3x2 e 45 50 '"shared_host_predicted_ms": 60'
  row 3x2 f 5 null '"error": "compile failed"'
  row 3x2 searched 9 21 '"searched": true'
  row 3x2 searched_shared 9 12 '"searched": true, "calibration": "shared_host"'
  row 3x2 searched_rate 9 15 '"searched": true, "calibration": "link_rate"'
  echo '{"bench": "auto_parallel_prediction_hosts_calibration", "cluster": "3x2"}'
  # measured 10 10 20 (ranks 1.5 1.5 3) against predicted 1 2 3: Spearman 1.5 / sqrt(1.5 * 2);
  # errors 0.9 0.8 0.85.
  row 2x2 x 1 10
  row 2x2 y 2 10
  row 2x2 z 3 20
} > "$DIR/lines.jsonl"
# Three runs of one sweep summarized together: each layout once, the medians of its runs.
# p: predicted 10 12 11, measured 10 14 12 -> 11 against 12, spread (14 - 10) / 12;
# q: predicted 20 22, measured 20 18 -> 21 against 19, spread 2 / 19 (measured twice);
# the searched layout measured 15 and 17 (two runs chose two layouts) -> 16 / best 12.
{
  row 2x1 p 10 10
  row 2x1 q 20 20
  row 2x1 s1 9 15 '"searched": true'
} > "$DIR/run_a.jsonl"
{
  row 2x1 p 12 14
  row 2x1 q 22 18
  row 2x1 s2 9 17 '"searched": true'
} > "$DIR/run_b.jsonl"
row 2x1 p 11 12 > "$DIR/run_c.jsonl"
"$BENCH" --summarize="$DIR/run_a.jsonl,$DIR/run_b.jsonl,$DIR/run_c.jsonl" > "$DIR/repeats.jsonl" ||
  fail "--summarize of three runs exited $?"
python3 - "$DIR/repeats.jsonl" <<'PYEOF' || fail "summary of repeated runs"
import json, sys
[s] = [json.loads(l) for l in open(sys.argv[1])]
def near(key, value):
    assert s[key] is not None and abs(s[key] - value) < 1e-9, (key, s[key], value)
assert s["layouts"] == 2 and s["runs_per_layout"] == 2, s
near("median_abs_error", round((1 / 12 + 2 / 19) / 2, 4))
near("spearman", 1.0)
near("run_spread", round((4 / 12 + 2 / 19) / 2, 4))
assert s["best_layout"] == "p" and s["best_measured_ms"] == 12, s
near("chosen_over_best", round(16 / 12, 3))
assert s["chosen_layout"] == "s1 | s2", s
PYEOF

# A --repeats=3 run: each line holds its launches ("measured_repeats_ms", null where one
# failed) and their median. u: launches 12 11 (one failed) -> 11.5; v: 19 25 18 -> 19; the
# searched layout 15 16 14 -> 15. Predicted 10 and 20: errors 1.5 / 11.5 and 1 / 19,
# ranks alike; spreads (12 - 11) / 11.5 and (25 - 18) / 19; fewest launches that ran 2.
{
  row 2x1 u 10 11.5 '"measured_repeats_ms": [12, 11, null], "repeat_spread": 0.087'
  row 2x1 v 20 19 '"measured_repeats_ms": [19, 25, 18], "repeat_spread": 0.3684'
  row 2x1 s 9 15 '"searched": true, "measured_repeats_ms": [15, 16, 14]'
} > "$DIR/repeats_run.jsonl"
# A later single-launch run of u (13) pools with them: u's launches 12 11 13 -> 12.
row 2x1 u 10 13 > "$DIR/repeats_later.jsonl"
"$BENCH" --summarize="$DIR/repeats_run.jsonl" > "$DIR/repeats_one.jsonl" || fail "--summarize of a --repeats run exited $?"
"$BENCH" --summarize="$DIR/repeats_run.jsonl,$DIR/repeats_later.jsonl" > "$DIR/repeats_pooled.jsonl" ||
  fail "--summarize of a --repeats run and a later one exited $?"
python3 - "$DIR/repeats_one.jsonl" "$DIR/repeats_pooled.jsonl" <<'PYEOF' || fail "summary of --repeats lines"
import json, sys
[one] = [json.loads(l) for l in open(sys.argv[1])]
[pooled] = [json.loads(l) for l in open(sys.argv[2])]
def near(s, key, value):
    assert s[key] is not None and abs(s[key] - value) < 1e-9, (key, s[key], value)
assert one["layouts"] == 2 and one["failed"] == 0 and one["runs_per_layout"] == 2, one
near(one, "median_abs_error", round((1.5 / 11.5 + 1 / 19) / 2, 4))
near(one, "spearman", 1.0)
near(one, "run_spread", round((1 / 11.5 + 7 / 19) / 2, 4))
assert one["best_layout"] == "u" and one["best_measured_ms"] == 11.5, one
near(one, "chosen_over_best", round(15 / 11.5, 3))
assert pooled["layouts"] == 2 and pooled["runs_per_layout"] == 3, pooled
assert pooled["best_measured_ms"] == 12, pooled
near(pooled, "median_abs_error", round((2 / 12 + 1 / 19) / 2, 4))
near(pooled, "run_spread", round((2 / 12 + 7 / 19) / 2, 4))
near(pooled, "chosen_over_best", round(15 / 12, 3))
PYEOF
# The measurement against itself: each layout's odd launches' median ranked against its even
# launches'. a: 10 | 20, b: 20 | 10, c: 30 | 30 -> ranks 1 2 3 against 2 1 3:
# 1 - 6 * (1 + 1) / (3 * 8) = 0.5. A single launch of a layout leaves it out (null).
{
  row 2x1 a 10 15 '"measured_repeats_ms": [10, 20]'
  row 2x1 b 20 15 '"measured_repeats_ms": [20, 10]'
  row 2x1 c 30 30 '"measured_repeats_ms": [30, 30]'
} > "$DIR/halves.jsonl"
row 2x1 d 40 40 > "$DIR/halves_single.jsonl"
"$BENCH" --summarize="$DIR/halves.jsonl" > "$DIR/halves_summary.jsonl" || fail "--summarize of halves exited $?"
"$BENCH" --summarize="$DIR/halves.jsonl,$DIR/halves_single.jsonl" > "$DIR/halves_single_summary.jsonl" ||
  fail "--summarize of halves and a single launch exited $?"
python3 - "$DIR/halves_summary.jsonl" "$DIR/halves_single_summary.jsonl" "$DIR/repeats_one.jsonl" <<'PYEOF' ||
import json, sys
[halves], [single], [one] = ([json.loads(l) for l in open(path)] for path in sys.argv[1:])
assert abs(halves["repeatability_spearman"] - 0.5) < 1e-9, halves
assert "repeatability_spearman" not in single, single
# u: 12 | 11, v: median(19, 18) | 25: the halves rank u before v alike.
assert one["repeatability_spearman"] == 1.0, one
PYEOF
  fail "repeatability_spearman"
# A forced codec's layout is the best measured, but the search's --compression=auto may not
# pick it: the searched layout (12.6) over the best (int4, 10) is 1.26, over the best without a
# forced codec (auto, 12) 1.05.
{
  row 2x1 "dp=2 compression=int4" 9 10
  row 2x1 "dp=2 compression=auto" 11 12
  row 2x1 "dp=2 compression=off" 14 15
  row 2x1 searched 11 12.6 '"searched": true'
} > "$DIR/forced.jsonl"
"$BENCH" --summarize="$DIR/forced.jsonl" > "$DIR/forced_summary.jsonl" || fail "--summarize of forced codecs exited $?"
python3 - "$DIR/forced_summary.jsonl" <<'PYEOF' || fail "chosen_over_best_admissible"
import json, sys
[s] = [json.loads(l) for l in open(sys.argv[1])]
assert s["chosen_over_best"] == 1.26 and s["chosen_over_best_admissible"] == 1.05, s
assert s["best_admissible_layout"] == "dp=2 compression=auto", s
PYEOF
# The confirming round. Its plans (prediction_hosts_confirm.py, from the sweep's launches): the
# 2 fastest hand layouts (int4 10.5, int8 11), the fastest without a forced codec (auto 12),
# the searched layouts that ran (13; the shared-host one failed every launch): 0 3 1 5.
mkdir -p "$DIR/confirm"
printf '10 1.0 a\n11 1.0 a\n' > "$DIR/confirm/layout0.repeats"
printf '12 1.0 a\nnull 1.0 a\n' > "$DIR/confirm/layout1.repeats"
printf '15 1.0 a\n' > "$DIR/confirm/layout2.repeats"
printf '11 1.0 a\n' > "$DIR/confirm/layout3.repeats"
printf 'null 1.0 a\n' > "$DIR/confirm/layout4.repeats"
printf '13 1.0 a\n' > "$DIR/confirm/layoutsearched_cluster.repeats"
printf 'null 1.0 a\n' > "$DIR/confirm/layoutsearched_shared_host.repeats"
entries=("0|--dp=2 --compression=int4|0|0|cluster" "1|--dp=2|1|0|cluster" "2|--dp=2 --compression=off|0|0|cluster"
  "3|--dp=2 --compression=int8|0|0|cluster" "4|--dp=2 --zero=1|0|0|cluster" "searched_cluster||0|1|cluster"
  "searched_shared_host||0|1|shared_host")
[[ "$(python3 "$CONFIRM" "$DIR/confirm" 2 "${entries[@]}" | tr '\n' ' ')" == "0 3 1 searched_cluster " ]] ||
  fail "confirming plans: $(python3 "$CONFIRM" "$DIR/confirm" 2 "${entries[@]}" | tr '\n' ' ')"
# With 3, auto is among the fastest already: not listed twice. With 0: none.
[[ "$(python3 "$CONFIRM" "$DIR/confirm" 3 "${entries[@]}" | tr '\n' ' ')" == "0 3 1 searched_cluster " ]] ||
  fail "confirming plans of 3"
[[ -z "$(python3 "$CONFIRM" "$DIR/confirm" 0 "${entries[@]}")" ]] || fail "--confirm=0 confirmed plans"
# Its lines: the sweep picked int4 (10) and the searched layout measured 1.26 x it; confirmed,
# int4's launches 12 11.5 12.5 -> 12, auto's 12.4 12.8 -> 12.6, the searched layout's 12.2 12.6
# 12.4 -> 12.4: 12.4 / 12 and 12.4 / 12.6 (the best without a forced codec). The prediction
# (9 11 14 against 10 12 15: median |error| 1 / 12, ranks alike) meets its goals, so
# met_confirmed holds where met (the sweep's 1.26) does not.
confirm_row() {  # layout measured launches [extra json fields]
  echo "{\"bench\": \"auto_parallel_prediction_hosts_confirm\", \"cluster\": \"2x1\", \"nodes\": 2, \"devices_per_node\": 1, \"layout\": \"$1\", \"predicted_ms\": 9, \"measured_ms\": $2, \"measured_repeats_ms\": $3${4:+, $4}}"
}
{
  row 2x1 "dp=2 compression=int4" 9 10
  row 2x1 "dp=2 compression=auto" 11 12
  row 2x1 "dp=2 compression=off" 14 15
  row 2x1 searched 11 12.6 '"searched": true'
  confirm_row "dp=2 compression=int4" 12 "[12, 11.5, 12.5]"
  confirm_row "dp=2 compression=auto" 12.6 "[12.4, 12.8]"
  confirm_row searched 12.4 "[12.2, 12.6, 12.4]" '"searched": true'
  confirm_row "dp=2 compression=off" null "[null]"
} > "$DIR/confirmed.jsonl"
"$BENCH" --summarize="$DIR/confirmed.jsonl" > "$DIR/confirmed_summary.jsonl" || fail "--summarize of a confirming round exited $?"
python3 - "$DIR/confirmed_summary.jsonl" "$DIR/forced_summary.jsonl" <<'PYEOF' || fail "confirmed_chosen_over_best"
import json, sys
[s], [forced] = ([json.loads(l) for l in open(path)] for path in sys.argv[1:])
assert s["chosen_over_best"] == 1.26 and s["met"] is False, s
assert s["confirmed_layouts"] == 2 and s["confirmed_best_layout"] == "dp=2 compression=int4", s
assert s["confirmed_best_measured_ms"] == 12 and s["confirm_runs_per_layout"] == 2, s
assert s["confirmed_chosen_over_best"] == round(12.4 / 12, 3), s
assert s["confirmed_chosen_over_best_admissible"] == round(12.4 / 12.6, 3), s
# Round by round against the sweep's best (int4): 12.2 / 12, 12.6 / 11.5, 12.4 / 12.5, median
# 12.2 / 12; auto's 2 launches do not line up with the searched layout's 3: no "_admissible".
assert s["confirmed_paired_ratios"] == [round(12.2 / 12, 3), round(12.6 / 11.5, 3), round(12.4 / 12.5, 3)], s
assert s["confirmed_paired_median"] == round(12.2 / 12, 3), s
assert s["confirmed_paired_range"] == [round(12.4 / 12.5, 3), round(12.6 / 11.5, 3)], s
assert "confirmed_paired_median_admissible" not in s, s
assert s["met_confirmed"] is True, s
# The prediction figures come from the sweep's lines only.
assert s["layouts"] == 3 and abs(s["median_abs_error"] - round(1 / 12, 4)) < 1e-9, s
assert "confirmed_chosen_over_best" not in forced and "met_confirmed" not in forced, forced
PYEOF
# Paired rounds decide met_confirmed: the searched layout's confirming median (12.3) is 1.021 x
# the best's (12.05), but round by round it ran 11.9 / 11, 12.3 / 12, 12.8 / 12.1 and 13 / 12.4 (a
# failed launch of the best in round 5 pairs nothing): median (1.0484 + 1.0579) / 2 > 1.05.
{
  row 2x1 "dp=2 compression=auto" 11 12
  row 2x1 "dp=2 compression=off" 14 15
  row 2x1 searched 11 12.6 '"searched": true'
  confirm_row "dp=2 compression=auto" 12 "[11, 12, 12.1, 12.4, null]"
  confirm_row searched 12.3 "[11.9, 12.3, 12.8, 13, 11]" '"searched": true'
} > "$DIR/paired.jsonl"
"$BENCH" --summarize="$DIR/paired.jsonl" > "$DIR/paired_summary.jsonl" || fail "--summarize of paired rounds exited $?"
python3 - "$DIR/paired_summary.jsonl" <<'PYEOF' || fail "confirmed_paired_median"
import json, statistics, sys
[s] = [json.loads(l) for l in open(sys.argv[1])]
ratios = [11.9 / 11, 12.3 / 12, 12.8 / 12.1, 13 / 12.4]
assert s["confirmed_paired_ratios"] == [round(r, 3) for r in ratios], s
assert s["confirmed_paired_median"] == round(statistics.median(ratios), 3) == 1.053, s
assert s["confirmed_paired_range"] == [round(12.3 / 12, 3), round(11.9 / 11, 3)], s
assert s["confirmed_chosen_over_best"] == round(12.3 / 12.05, 3) and s["met_confirmed"] is False, s
PYEOF
# With a forced codec the sweep's best (int4) and the best without one (auto) both pair with the
# searched layout: against int4 11.9 / 10.5, 12.3 / 11, 12.8 / 11.2 (median 11.9 / 10.5), against
# auto 11.9 / 12, 12.3 / 12.3, 12.8 / 12.2 (median 1).
{
  row 2x1 "dp=2 compression=int4" 9 10
  row 2x1 "dp=2 compression=auto" 11 12
  row 2x1 searched 11 12.6 '"searched": true'
  confirm_row "dp=2 compression=int4" 11 "[10.5, 11, 11.2]"
  confirm_row "dp=2 compression=auto" 12.2 "[12, 12.3, 12.2]"
  confirm_row searched 12.4 "[11.9, 12.3, 12.8]" '"searched": true'
} > "$DIR/paired_admissible.jsonl"
"$BENCH" --summarize="$DIR/paired_admissible.jsonl" > "$DIR/paired_admissible_summary.jsonl" ||
  fail "--summarize of paired rounds with a forced codec exited $?"
python3 - "$DIR/paired_admissible_summary.jsonl" <<'PYEOF' || fail "confirmed_paired_median_admissible"
import json, sys
[s] = [json.loads(l) for l in open(sys.argv[1])]
assert s["best_layout"] == "dp=2 compression=int4" and s["best_admissible_layout"] == "dp=2 compression=auto", s
assert s["confirmed_paired_ratios"] == [round(11.9 / 10.5, 3), round(12.3 / 11, 3), round(12.8 / 11.2, 3)], s
assert s["confirmed_paired_median"] == round(11.9 / 10.5, 3), s
assert s["confirmed_paired_ratios_admissible"] == [round(11.9 / 12, 3), round(12.3 / 12.3, 3), round(12.8 / 12.2, 3)], s
assert s["confirmed_paired_median_admissible"] == round(12.3 / 12.3, 3), s
assert s["confirmed_paired_range_admissible"] == [round(11.9 / 12, 3), round(12.8 / 12.2, 3)], s
PYEOF
"$BENCH" --confirm=-1 2> "$DIR/err" && fail "--confirm=-1 was accepted"
grep -q -- "--confirm=-1: give a whole number >= 0" "$DIR/err" || fail "the error does not name --confirm=-1: $(cat "$DIR/err")"
"$BENCH" --confirm_repeats=0 2> "$DIR/err" && fail "--confirm_repeats=0 was accepted"
grep -q -- "--confirm_repeats=0: give a whole number >= 1" "$DIR/err" || fail "the error does not name --confirm_repeats=0"
"$BENCH" --searched_calibrations=cluster,measured 2> "$DIR/err" && fail "--searched_calibrations=measured was accepted"
grep -q -- "--searched_calibrations: 'measured' is not a calibration (valid: cluster, shared_host, link_rate)" "$DIR/err" ||
  fail "the error does not name 'measured': $(cat "$DIR/err")"
# --repeats takes a whole number >= 1, checked before anything is made.
"$BENCH" --repeats=0 2> "$DIR/err" && fail "--repeats=0 was accepted"
grep -q -- "--repeats=0: give a whole number >= 1" "$DIR/err" || fail "the error does not name --repeats=0: $(cat "$DIR/err")"

"$BENCH" --summarize="$DIR/lines.jsonl" > "$DIR/summary.jsonl" || fail "--summarize exited $?"
python3 - "$DIR/summary.jsonl" <<'PYEOF' || fail "summary values"
import json, math, sys
s = {l["cluster"]: l for l in map(json.loads, open(sys.argv[1]))}
assert set(s) == {"3x2", "2x2"}, s.keys()
a = s["3x2"]
def near(key, value):
    assert a[key] is not None and abs(a[key] - value) < 1e-9, (key, a[key], value)
assert a["layouts"] == 5 and a["failed"] == 1, a
near("median_abs_error", 0.1)
near("spearman", 0.9)
# shared host: errors 0 0 0 0 0.2, ranks identical
near("shared_host_median_abs_error", 0.0)
near("shared_host_spearman", 1.0)
assert a["best_layout"] == "a" and a["best_measured_ms"] == 10, a
near("chosen_over_best", 2.1)
near("shared_host_chosen_over_best", 1.2)
near("link_rate_chosen_over_best", 1.5)
assert a["link_rate_median_abs_error"] is None and a["link_rate_spearman"] is None, a
near("megatron_over_best", 2.0)
near("chosen_over_megatron", 1.05)
assert a["predicted_fastest_layout"] == "b", a
near("predicted_fastest_over_best", 2.0)
assert a["met"] is False and a["load_avg_1m"] == [2.5, 2.5], a
assert a["runs_per_layout"] == 1 and "run_spread" not in a, a
b = s["2x2"]
assert abs(b["spearman"] - round(1.5 / math.sqrt(3.0), 4)) < 1e-9, b
assert b["median_abs_error"] == 0.85 and b["shared_host_spearman"] is None, b
assert "chosen_over_best" not in b and b["met"] is False, b
PYEOF

# The sweep: >= 20 layouts on 3 x 2, 2 x 2, 2 x 1 and 3 x 1, each using every device, one
# Megatron layout (tp inside a node, dp across nodes: pure dp with one device a node), every
# family the issue names.
for cluster in 3x2 2x2 2x1 3x1; do
  python3 "$LAYOUTS" "${cluster%x*}" "${cluster#*x}" --batch=24 --layers=6 --heads=12 --hidden=96 > "$DIR/$cluster.txt"
  python3 - "$DIR/$cluster.txt" "${cluster%x*}" "${cluster#*x}" <<'PYEOF' || fail "layouts of $cluster"
import re, sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
nodes, per_node = int(sys.argv[2]), int(sys.argv[3])
assert len(lines) >= 20, len(lines)
assert len(set(lines)) == len(lines)
megatron = [l for l in lines if l.endswith("|1")]
assert len(megatron) == 1 and f"--dp={nodes} --tp={per_node} --pp=1 --micro_batches=1 --zero=0" in megatron[0], megatron
seen = set()
for line in lines:
    name, flags, _ = line.split("|")
    v = dict(re.findall(r"--(\w+)=(\w+)", flags))
    dp, tp, pp, m = (int(v[k]) for k in ("dp", "tp", "pp", "micro_batches"))
    assert dp * tp * pp == nodes * per_node, line
    assert (24 // m) % dp == 0 and 12 % tp == 0 and pp <= 6, line
    seen.update({"dp" if dp > 1 else "", "tp" if tp > 1 else "", "pp" if pp > 1 else "", "M" if m > 1 else "",
                 "zero" if v["zero"] != "0" else "", "off" if v["compression"] == "off" else "",
                 "recompute" if v["recompute"] != "none" else ""})
assert {"dp", "tp", "pp", "M", "zero", "off", "recompute"} <= seen, seen
if per_node == 1:
    # One device a host: the families that stay distinct, each with its variants.
    rows = [dict(re.findall(r"--(\w+)=(\w+)", line.split("|")[1])) for line in lines]
    def values(key, **where):
        return {r[key] for r in rows if all(r.get(k) == str(v) for k, v in where.items())}
    assert values("micro_batches", dp=nodes, zero=0, recompute="none", compression="auto") == {"1", "2", "4"}, rows
    assert values("zero", dp=nodes) == {"0", "1", "2", "3"}, rows
    assert values("compression", dp=nodes, zero=3, zero3_regather="false") == {"auto", "off"}, rows
    assert values("recompute", dp=nodes) == {"none", "selective", "full"}, rows
    assert values("compression", dp=nodes, micro_batches=1, zero=0, recompute="none") == {"auto", "off", "int8", "int4"}, rows
    assert values("compression", tp=nodes) == {"auto", "off"}, rows
    assert values("micro_batches", pp=nodes, recompute="none", compression="auto") == {"2", "4", "6", "8"}, rows
    # ZB-H1 twins of the 4- and 8-micro-batch pipelines.
    assert {r["micro_batches"] for r in rows if r.get("pp_schedule") == "zb"} == {"4", "8"}, rows
else:
    assert all("pp_schedule" not in line for line in lines), lines
    kept = [l for l in lines if "--zero3_regather=false" in l]
    assert len(kept) == 1 and f"--dp={nodes} --tp={per_node} --pp=1 --micro_batches=1 --zero=3" in kept[0], kept
PYEOF
done
# The launched plans' names (prediction_hosts_predicted.py, from `oneflow inspect`'s
# decision record, then the compression): each hand layout's, so a ZB-H1 pipeline and ZeRO-3
# keeping its gathered copies stay apart from their twins in the summary (before session
# 65 both were named as the twin and merged with it).
python3 - "$DIR/2x1.txt" "$DIR/3x2.txt" "$PWD/bench/auto_parallel" <<'PYEOF' || fail "the launched plans' names"
import re, sys
sys.path.insert(0, sys.argv[3])
import prediction_hosts_predicted as predicted
names = set()
for path in sys.argv[1:3]:
    for entry in open(path).read().split("\n")[:-1]:
        name, flags, _ = entry.split("|")
        v = dict(re.findall(r"--(\w+)=(\w+)", flags))
        layout = {"dp": int(v["dp"]), "tp": int(v["tp"]), "pp": int(v["pp"]), "micro_batches": int(v["micro_batches"]),
                  "zero": int(v["zero"]), "zero3_regather": v.get("zero3_regather") != "false",
                  "recompute": v["recompute"], "pp_schedule": v.get("pp_schedule", "1f1b")}
        decision = {"chosen": {"layout": layout, "step_seconds": 0.04, "compute_seconds": 0.03,
                               "exposed_communication_seconds": 0.01, "bubble_seconds": 0}}
        step, compute, exposed, bubble, *parts = predicted.line(decision).split()
        assert (step, compute, exposed, bubble) == ("40.0000", "30.0000", "10.0000", "0.0000"), step
        launched = " ".join(parts) + " compression=" + v["compression"]
        assert launched == name, (launched, name)
        names.add((path, launched))
# Every layout a name of its own, the twins included.
assert len(names) == sum(len(open(p).read().split("\n")[:-1]) for p in sys.argv[1:3]), names
assert any("pp_schedule=zb" in n for _, n in names) and any("zero3_regather=false" in n for _, n in names), names
PYEOF
# The clusters of several devices a node sweep what runs 1-4 swept (25 and 22 layouts) and
# dense Megatron's ZeRO-3 both ways (since session 65).
[[ "$(wc -l < "$DIR/3x2.txt") $(wc -l < "$DIR/2x2.txt")" == "27 24" ]] || fail "3x2 / 2x2 sweeps changed"
# A layout the gpt cannot take is left out: 5 heads allow no tp of 2 or 3.
python3 "$LAYOUTS" 3 2 --batch=24 --layers=4 --heads=5 --hidden=95 | grep -q -- '--tp=[236]' && fail "tp kept with 5 heads"
# The launch order: every round launches every plan once; the sweep's round r starts
# r * plans / rounds in (22 plans, 4 rounds: 0, 5, 11, 16), so no plan keeps its place in a
# round; the confirming round turns by one, so two plans alternate which goes first.
python3 "$ROUNDS" 22 4 spread > "$DIR/rounds.txt" || fail "prediction_hosts_rounds.py exited $?"
python3 - "$DIR/rounds.txt" <<'PYEOF' || fail "the sweep's round order"
import sys
rounds = [list(map(int, line.split())) for line in open(sys.argv[1])]
assert len(rounds) == 4 and all(sorted(r) == list(range(22)) for r in rounds), rounds
assert [r[0] for r in rounds] == [0, 5, 11, 16], rounds
assert all(len({r.index(p) for r in rounds}) == 4 for p in range(22)), rounds
PYEOF
[[ "$(python3 "$ROUNDS" 2 4 one | tr '\n' ';')" == "0 1;1 0;0 1;1 0;" ]] || fail "confirming rounds: $(python3 "$ROUNDS" 2 4 one)"
[[ "$(python3 "$ROUNDS" 3 3 one | tr '\n' ';')" == "0 1 2;1 2 0;2 0 1;" ]] || fail "confirming rounds of 3 plans"
python3 "$ROUNDS" 3 2 sideways 2> "$DIR/err" && fail "an unknown step was accepted"
grep -q "usage: prediction_hosts_rounds.py" "$DIR/err" || fail "no usage for a bad step: $(cat "$DIR/err")"
# The pipelines' error against their handoffs, 2 (pp - 1) M an iteration: pp=2 M=2 (4
# handoffs, measured - predicted +1 ms), pp=2 M=4 and pp=3 M=2 (8 each, +3 ms); the dp
# layout has none and is left out. Least squares: mean handoffs 20/3, mean excess 7/3,
# slope (8/3 * 4/3 + 2 * 4/3 * 2/3) / (64/9 + 2 * 16/9) = 0.5 ms per handoff, intercept
# 7/3 - 0.5 * 20/3 = -1 ms.
{
  row 2x1 "dp=2 tp=1 pp=1 M=1 zero=0" 30 40
  row 2x1 "dp=1 tp=1 pp=2 M=2 zero=0" 40 41
  row 2x1 "dp=1 tp=1 pp=2 M=4 zero=0" 35 38
  row 2x1 "dp=1 tp=1 pp=3 M=2 zero=0" 36 39
} > "$DIR/handoffs.jsonl"
"$BENCH" --summarize="$DIR/handoffs.jsonl" > "$DIR/handoffs_summary.jsonl" || fail "--summarize of pipelines exited $?"
python3 - "$DIR/handoffs_summary.jsonl" <<'PYEOF' || fail "pipeline_handoff_excess_ms"
import json, sys
[s] = [json.loads(l) for l in open(sys.argv[1])]
assert abs(s["pipeline_handoff_excess_ms"] - 0.5) < 1e-9, s
assert abs(s["pipeline_handoff_intercept_ms"] + 1.0) < 1e-9, s
assert s["pipelines"] == 3, s
PYEOF
# One handoff count fits no line: the fields are left out.
row 2x1 "dp=1 tp=1 pp=2 M=2 zero=0" 40 41 > "$DIR/one_pipeline.jsonl"
"$BENCH" --summarize="$DIR/one_pipeline.jsonl" | grep -q pipeline_handoff && fail "a line fitted through one handoff count"
"$BENCH" --summarize="$DIR/missing.jsonl" 2> "$DIR/err" && fail "a missing file was summarized"
grep -q "cannot read '$DIR/missing.jsonl'" "$DIR/err" || fail "the error does not name the file: $(cat "$DIR/err")"
echo PASS
