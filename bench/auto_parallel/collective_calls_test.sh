#!/usr/bin/env bash
# collective_calls.py on a plan and a trace written by hand: each call timed from its last
# member's arrival (the latest start of its three members' acts to the latest end), grouped by
# the plan's boxing step (kind, codec, bytes per device) or bucket, with the answers worked out
# below; compute-thread boxing acts (local steps), iterations outside --first..--last and calls
# missing a member are left out; a placement of two axes is refused with its name.
set -euo pipefail
TOOL=bench/auto_parallel/collective_calls.py
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3)"

cat > "$DIR/plan.json" <<'JSON'
{"boxings": [
  {"id": 7, "src_placement": "cpu{0:0, 1:0, 2:0}", "steps": [{"kind": "all_gather", "bytes_per_device": 24576}]},
  {"id": 9, "src_placement": "cpu{0:0, 1:0, 2:0}", "steps": [{"kind": "all_gather", "bytes_per_device": 24576}]},
  {"id": 8, "src_placement": "cpu{0:0, 1:0, 2:0}", "steps": [{"kind": "reduce_scatter", "bytes_per_device": 196608,
                                                            "compression": {"codec": "int8"}}]}],
 "buckets": [{"id": 1, "kind": "all_reduce", "placement": "cpu{0:0-0, 1:0, 2:0}", "bytes_per_device": 1000, "codec": "int8"}]}
JSON
# act NAME PID ITERATION TS DUR [TID]: one trace slice (microseconds).
act() { echo "{\"ph\": \"X\", \"cat\": \"boxing\", \"name\": \"$1\", \"pid\": $2, \"tid\": ${6:-1}, \"ts\": $4, \"dur\": $5, \"args\": {\"iteration\": $3}},"; }
{
  echo '{"traceEvents": ['
  # boxing_7 in iteration 3: starts 100, 300, 250; ends 500, 600, 550 -> last arrival 300 to 600: 0.3 ms.
  act "w/boxing_7/all_gather" 0 3 100 400; act "w/boxing_7/all_gather" 1 3 300 300; act "w/boxing_7/all_gather" 2 3 250 300
  # boxing_9 (the same step) in iteration 4: 1000..1100 from the last start 1000: 0.1 ms;
  # in iteration 5: 2000 to 2500: 0.5 ms. Median of 0.3, 0.1, 0.5: 0.3; p25 (index 0 of 3): 0.1.
  act "v/boxing_9/all_gather" 0 4 900 200; act "v/boxing_9/all_gather" 1 4 1000 100; act "v/boxing_9/all_gather" 2 4 950 120
  act "v/boxing_9/all_gather" 0 5 2000 500; act "v/boxing_9/all_gather" 1 5 1900 550; act "v/boxing_9/all_gather" 2 5 1950 400
  # boxing_9 in iteration 6 with a member missing: left out.
  act "v/boxing_9/all_gather" 0 6 3000 10; act "v/boxing_9/all_gather" 1 6 3000 10
  # boxing_9 in iteration 20, past --last=17: left out.
  act "v/boxing_9/all_gather" 0 20 9000 5; act "v/boxing_9/all_gather" 1 20 9000 5; act "v/boxing_9/all_gather" 2 20 9000 5
  # boxing_8 (int8 reduce-scatter), iteration 3: last start 4000, last end 4800: 0.8 ms.
  act "a/boxing_8/reduce_scatter" 0 3 3500 1300; act "a/boxing_8/reduce_scatter" 1 3 4000 700; act "a/boxing_8/reduce_scatter" 2 3 3900 900
  # bucket_1 on communication stream 1 (tid 11), iteration 3: 5000..7000 from the last start: 2 ms.
  act "bucket_1/all_reduce" 0 3 5000 2000 11; act "bucket_1/all_reduce" 1 3 4000 2500 11; act "bucket_1/all_reduce" 2 3 4500 2000 11
  # A local step on the compute thread (tid 0): no call.
  act "w/boxing_7/all_gather" 0 4 100 50 0; act "w/boxing_7/all_gather" 1 4 100 50 0; act "w/boxing_7/all_gather" 2 4 100 50 0
  echo '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "device 0:0"}}]}'
} > "$DIR/trace.json"
echo '{"link": "inter_node", "latency_seconds": 0.00025, "bytes_per_second": 1.2e8, "method": "m"}' > "$DIR/cluster.jsonl"

"$PY" "$TOOL" "$DIR/plan.json" "$DIR/trace.json" --calibration="$DIR/cluster.jsonl" > "$DIR/out.jsonl"
cat > "$DIR/expected.jsonl" <<'JSON'
{"kind": "all_gather", "codec": "none", "bytes_per_device": 24576, "calls": 3, "p25_ms": 0.1, "median_ms": 0.3}
{"kind": "bucket all_reduce", "codec": "int8", "bytes_per_device": 1000, "calls": 1, "p25_ms": 2.0, "median_ms": 2.0}
{"kind": "reduce_scatter", "codec": "int8", "bytes_per_device": 196608, "calls": 1, "p25_ms": 0.8, "median_ms": 0.8}
{"link": "inter_node", "latency_seconds": 0.00025, "bytes_per_second": 120000000.0}
JSON
diff "$DIR/expected.jsonl" "$DIR/out.jsonl" || fail "collective_calls.py output differs from the hand-worked lines"

# --first / --last: iteration 20 alone holds boxing_9's three acts of 5 us each (0.005 ms).
"$PY" "$TOOL" "$DIR/plan.json" "$DIR/trace.json" --first=20 --last=20 > "$DIR/late.jsonl"
grep -q '"bytes_per_device": 24576, "calls": 1, "p25_ms": 0.005, "median_ms": 0.005' "$DIR/late.jsonl" ||
  fail "--first=20 --last=20: $(cat "$DIR/late.jsonl")"

# Nothing in range: an error naming the range and the trace.
if "$PY" "$TOOL" "$DIR/plan.json" "$DIR/trace.json" --first=30 --last=40 2> "$DIR/err"; then fail "no calls: exit 0"; fi
grep -q "no collective call with every member's act in iterations 30..40 of '$DIR/trace.json'" "$DIR/err" ||
  fail "no calls: $(cat "$DIR/err")"

# Two hierarchy axes: refused, naming the placement.
sed 's/"cpu{0:0, 1:0, 2:0}", "steps": \[{"kind": "all_gather", "bytes_per_device": 24576}\]},$/"cpu{0:0-1, 1:0-1}[2, 2]", "steps": [{"kind": "all_gather", "bytes_per_device": 24576}]},/' \
  "$DIR/plan.json" > "$DIR/plan2.json"
grep -q '\[2, 2\]' "$DIR/plan2.json" || fail "test setup: the two-axis placement was not written"
if "$PY" "$TOOL" "$DIR/plan2.json" "$DIR/trace.json" 2> "$DIR/err2"; then fail "two axes: exit 0"; fi
grep -q "placement cpu{0:0-1, 1:0-1}\[2, 2\] has a hierarchy of more than one axis" "$DIR/err2" ||
  fail "two axes: $(cat "$DIR/err2")"
echo PASS
