#!/usr/bin/env bash
# Runs the real `oneflow` binary as a user would: on a plan file written by the
# test-only write_sample_plan, and on files that are not plans. Checks exit codes
# (0 ok, 1 failure, 2 usage) and the one-line messages.
set -euo pipefail
ONEFLOW=tools/cli/oneflow
WRITE=tools/cli/write_sample_plan
GPT=examples/gpt/gpt
MLP=examples/mlp/mlp
DIR="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Runs "$@", capturing stdout in $out, stderr in $err and the exit code in $rc.
run() {
  set +e
  out="$("$@" 2>"$DIR/stderr")"
  rc=$?
  set -e
  err="$(cat "$DIR/stderr")"
}

"$WRITE" "$DIR/a.plan"

run "$ONEFLOW" inspect "$DIR/a.plan"
[[ $rc -eq 0 ]] || fail "text exited $rc: $err"
grep -qx "plan 'matmul_dp' (format version 2)" <<<"$out" || fail "$out"
grep -qx "  boxing 0: w_grad \[32, 16\] f32, mm_grad -> sgd, P -> B on cpu{0:0-1}" <<<"$out" || fail "$out"
# Per device: w persistent (2048 B) + an arena of 2 slot copies of 14336 B = 30720 B.
grep -qx "    registers: 7, 30.00 KiB (30720 B)" <<<"$out" || fail "$out"
grep -qx "    memory: peak 30.00 KiB (30720 B), lower bound 20.00 KiB (20480 B), ratio 1.50" <<<"$out" || fail "$out"
grep -qx "    persistent: 2.00 KiB (2048 B) (variables and optimizer state)" <<<"$out" || fail "$out"
[[ $(grep -c "^    memory: peak 30.00 KiB (30720 B)," <<<"$out") -eq 2 ]] || fail "$out"

run "$ONEFLOW" inspect "$DIR/a.plan" --format=json --device=0:1
[[ $rc -eq 0 ]] || fail "json exited $rc: $err"
[[ "${out:0:1}" == "{" && "${out: -1}" == "}" ]] || fail "not one object: $out"
grep -q '"device": "0:1"' <<<"$out" || fail "$out"
if grep -q '"device": "0:0"' <<<"$out"; then fail "--device=0:1 kept device 0: $out"; fi

run "$ONEFLOW" inspect --format dot "$DIR/a.plan"
[[ $rc -eq 0 ]] || fail "dot exited $rc: $err"
grep -qF '"op:mm_grad" -> "boxing:0"' <<<"$out" || fail "$out"

run "$ONEFLOW" inspect "$DIR/a.plan" --format=dot --device=1
[[ $rc -eq 0 ]] || fail "device dot exited $rc: $err"
grep -qF 'digraph "device 1 (0:1)"' <<<"$out" || fail "$out"

# Files that are not plans: exit 1, one line naming the file and the problem.
head -c 300 "$ONEFLOW" >"$DIR/garbage.plan"  # ELF bytes: deterministic garbage
printf '\xff\xd8\xff\xe0\x00\x10JFIF\x00' >"$DIR/photo.jpg"
head -c 1000 "$DIR/a.plan" >"$DIR/truncated.plan"
for bad in garbage.plan photo.jpg truncated.plan; do
  run "$ONEFLOW" inspect "$DIR/$bad"
  [[ $rc -eq 1 ]] || fail "$bad exited $rc"
  [[ -z "$out" ]] || fail "$bad printed to stdout: $out"
  [[ "$err" == "oneflow inspect: plan file '$DIR/$bad': does not parse as a plan (truncated, damaged, or not a plan file)" ]] || fail "$bad: $err"
done

printf '0101' >"$DIR/notes.txt"  # parses as unknown fields; the version gives it away
run "$ONEFLOW" inspect "$DIR/notes.txt"
[[ $rc -eq 1 ]] || fail "text file exited $rc"
[[ "$err" == "oneflow inspect: plan file '$DIR/notes.txt': format_version is 0 (unset): not a plan, or a damaged one; this build reads version 2" ]] || fail "$err"

# A plan damaged after it was written (one bit of the job name: matmul_dp -> matmul_dq)
# still parses, and only its checksum gives it away. The stored checksum is the file's
# last 4 bytes (little-endian, after the tag of field 10); the contents' is the CRC-32 of
# the rest, which gzip's trailer carries (also little-endian).
offset=$(grep -obUa matmul_dp "$DIR/a.plan" | cut -d: -f1)
[[ "$offset" =~ ^[0-9]+$ ]] || fail "job name not once in the file: $offset"
cp "$DIR/a.plan" "$DIR/damaged.plan"
printf 'q' | dd of="$DIR/damaged.plan" bs=1 seek=$((offset + 8)) conv=notrunc status=none
size=$(wc -c <"$DIR/damaged.plan")
stored=$(od -An -tx4 -j $((size - 4)) "$DIR/damaged.plan" | tr -d ' ')
contents=$(head -c $((size - 5)) "$DIR/damaged.plan" | gzip -c | tail -c 8 | od -An -tx4 -N4 | tr -d ' ')
[[ ${#stored} -eq 8 && ${#contents} -eq 8 && "$stored" != "$contents" ]] || fail "checksums: $stored $contents"
run "$ONEFLOW" inspect "$DIR/damaged.plan"
[[ $rc -eq 1 ]] || fail "damaged plan exited $rc"
[[ -z "$out" ]] || fail "damaged plan printed to stdout: $out"
[[ "$err" == "oneflow inspect: plan file '$DIR/damaged.plan': refused by the plan verifier: plan checksum 0x$stored does not match its contents (0x$contents): the plan was damaged or edited after it was compiled" ]] || fail "$err"

run "$ONEFLOW" inspect "$DIR/missing.plan"
[[ $rc -eq 1 ]] || fail "missing file exited $rc"
[[ "$err" == "oneflow inspect: plan file '$DIR/missing.plan': cannot open: No such file or directory" ]] || fail "$err"

run "$ONEFLOW" inspect "$DIR/a.plan" --format=xml
[[ $rc -eq 1 ]] || fail "bad --format exited $rc"
[[ "$err" == "oneflow inspect: --format='xml' is not a format; valid: text, json, dot, html" ]] || fail "$err"

run "$ONEFLOW" inspect "$DIR/a.plan" --device=7
[[ $rc -eq 1 ]] || fail "bad --device exited $rc"
[[ "$err" == "oneflow inspect: --device='7' is out of range; valid: 0..1 (or a node:device id: 0:0, 0:1)" ]] || fail "$err"

# Usage errors: exit 2.
run "$ONEFLOW"
[[ $rc -eq 2 ]] || fail "no subcommand exited $rc"
run "$ONEFLOW" inspect
[[ $rc -eq 2 ]] || fail "no PLAN exited $rc"
[[ "$err" == "oneflow inspect: expected PLAN, got no arguments"$'\n'"usage: oneflow inspect PLAN [--format=text|json|dot|html] [--device=K] [--trace=FILE.json]" ]] || fail "$err"
run "$ONEFLOW" frobnicate
[[ $rc -eq 2 ]] || fail "unknown subcommand exited $rc"
grep -q "unknown subcommand 'frobnicate'; valid: inspect, run, launch, status, list, cancel, checkpoint, profile, report, calibrate, diagnose, compile, help" <<<"$err" || fail "$err"
run "$ONEFLOW" calibrate extra
[[ $rc -eq 2 ]] || fail "calibrate with an argument exited $rc"
[[ "$err" == "oneflow calibrate: expected no arguments, got 1 argument: extra"$'\n'"usage: oneflow calibrate [--out=FILE] [--host_devices=N,...] [--nodes=HOST:PORT,... --token_file=F [--tls_ca=F] [--transport=ucx|gloo]]" ]] || fail "$err"

# calibrate -> file -> the compiler: one JSON line per codec the compiler can pick, read
# back by the examples' --codec_calibration; the same file gives the same plan bytes.
run "$ONEFLOW" calibrate --out="$DIR/codecs.jsonl" --host_devices=2
[[ $rc -eq 0 && -z "$out" ]] || fail "calibrate exited $rc: $err $out"
# 7 codecs (bf16 among them), 2 link levels, a transfer between the 2 processes, 2 compute
# rates and the GEMM shape model, the runtime's costs for 2 devices in one process; and
# where the kernel lists the core's caches, the rate of a copy that stays in one
# (sbp/compute_cost.h's cache term).
[[ $(grep -vc '^{"compute": "memory_cached"' "$DIR/codecs.jsonl") -eq 14 ]] || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"compute": "gemm_shape", "per_second": [0-9.e+]*, "operand_bytes_per_second": [0-9.e+]*, "call_seconds": [0-9.e+-]*, "method": "runtime sgemm over 21 shapes (square 64-512, projections, per-head batched), 1 thread, fitted; median |error| [0-9.]*%"}$' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
if [[ -e /sys/devices/system/cpu/cpu0/cache/index0/size ]]; then
  grep -q '^{"compute": "memory_cached", "per_second": [0-9.e+]*, "bytes": [1-9][0-9]*, "method": "memcpy [0-9]* KiB into [0-9]* KiB, in a [0-9]* KiB core cache, 1 thread, bytes read + written"}$' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
fi
# The host line: act cost and core share from the act-count probe (a small gpt at dp=2
# with 1, 2, 4 and 8 micro-batches, 6 pairs of runs; at tp=2 with 1, 2, 4, 3 pairs more,
# which give the boxing act its own cost), the collective call from the tp mlp.
grep -q '^{"host": "in_process", "devices": 2, "act_seconds": [0-9.e+-]*, "collective_call_seconds": [0-9.e+-]*, "cores": [1-9][0-9]*, "core_share": [0-9.e+-]*, "boxing_act_seconds": [0-9.e+-]*, "method": "gpt of 2 blocks (hidden 64, seq 16) in one process, dp=2, 1/2/4/8 micro-batches, least CPU of 2 rounds: .*; act: Theil-Sen slope of CPU over acts (9 pairs); boxing act: two-kind fit with tp=2 dp=1, 1/2/4 micro-batches ([1-9][0-9]* solutions); core share: median CPU over wall at dp=2; collective call: mlp of 8 1-wide layers, tp=2 ' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"codec": "fp8e4m3", "group_size": 128, "hadamard": true, "bytes_per_second": [0-9.e+]*, "encode_bytes_per_second": [0-9.e+]*, "decode_bytes_per_second": [0-9.e+]*, "encode_measured_bytes_per_second": [0-9.e+]*, "elements": 1048576, "repetitions": 7}$' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"link": "intra_node", "latency_seconds": [0-9.e+-]*, "bytes_per_second": [0-9.e+]*, "method": "in-process all_reduce' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"link": "inter_node", "latency_seconds": [0-9.e+-]*, "bytes_per_second": [0-9.e+]*, "method": "ucx all_reduce, 2 processes, over TCP on 127.0.0.1' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"transfer": "inter_node", "latency_seconds": [0-9.e+-]*, "round_trip_seconds": [0-9.e+-]*, "bytes": 64, "method": "ucx send_recv round trips, 2 processes, over TCP on 127.0.0.1, 64 B each way"}$' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"compute": "gemm", "per_second": [0-9.e+]*, ' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
# int4 has both slower encoders (sbp/codec_throughput.h EncoderVariant), int8 stochastic
# rounding only.
grep -q '^{"codec": "int4", "group_size": 128, "hadamard": true, .*"encode_measured_bytes_per_second": [0-9.e+]*, "encode_fitted_bytes_per_second": [0-9.e+]*, "encode_stochastic_bytes_per_second": [0-9.e+]*, "elements"' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"codec": "int8", "group_size": 512, "hadamard": true, .*"encode_measured_bytes_per_second": [0-9.e+]*, "encode_stochastic_bytes_per_second": [0-9.e+]*, "elements"' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
grep -q '^{"codec": "bf16", "group_size": 1, "hadamard": false, ' "$DIR/codecs.jsonl" || fail "$(cat "$DIR/codecs.jsonl")"
[[ -z "$(ls "$DIR" | grep '\.tmp\.')" ]] || fail "calibrate left a temporary file: $(ls "$DIR")"
# Latency 0 given on the command line wins over the file's: these gradients are small
# enough that two calls' latency would keep every one of them dense.
gpt_slow=("$GPT" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 --layers=1 --hidden=32 --heads=2 --vocab=32 --seq=8
          --batch=4 --inter_node_bandwidth=1.25e8 --inter_node_latency=0 --intra_node_latency=0
          --codec_calibration="$DIR/codecs.jsonl")
run "${gpt_slow[@]}" --plan_out="$DIR/calibrated1.plan"
[[ $rc -eq 0 ]] || fail "gpt with a calibration exited $rc: $err"
run "${gpt_slow[@]}" --plan_out="$DIR/calibrated2.plan"
cmp -s "$DIR/calibrated1.plan" "$DIR/calibrated2.plan" || fail "the same calibration gave two plans"
# Codecs measured at 1 kB/s never pay for themselves: nothing compresses.
sed -E '/"codec"/ s/"(encode_|decode_|encode_measured_|encode_fitted_|encode_stochastic_)?bytes_per_second": [0-9.e+]*/"\1bytes_per_second": 1e3/g' "$DIR/codecs.jsonl" >"$DIR/slow_codecs.jsonl"
run "${gpt_slow[@]:0:${#gpt_slow[@]}-1}" --codec_calibration="$DIR/slow_codecs.jsonl" --plan_out="$DIR/slow.plan"
[[ $rc -eq 0 ]] || fail "gpt with slow codecs exited $rc: $err"
run "$ONEFLOW" inspect "$DIR/slow.plan"
if grep -q "compressed:" <<<"$out"; then fail "codecs at 1e3 B/s still compressed: $out"; fi
run "$ONEFLOW" inspect "$DIR/calibrated1.plan"
# The gpt trains with AdamW, where int4 gradients are outside auto's accuracy bound
# (sbp/codec_accuracy.h): they cross nodes as int8 G=128, and the decision says why.
grep -q "compressed: int8 (group 128)" <<<"$out" || fail "no gradient compressed with a slow link: $out"
grep -q "accuracy: not int4 G=128 hadamard on gradients under adaptive (AdamW)" <<<"$out" ||
  fail "no decision says why the gradients are not int4: $out"
grep -q "^predicted step time: [0-9.e+-]* ms (device " <<<"$out" || fail "no predicted step time: $out"
# The file's latencies reach the plan when no flag overrides them, its transfer line too.
run "$GPT" --nodes=2 --devices_per_node=2 --dp=2 --tp=2 --layers=1 --hidden=32 --heads=2 --vocab=32 --seq=8 \
  --batch=4 --inter_node_bandwidth=1.25e8 --codec_calibration="$DIR/codecs.jsonl" --plan_out="$DIR/latency.plan"
[[ $rc -eq 0 ]] || fail "gpt with calibrated latencies exited $rc: $err"
run "$ONEFLOW" inspect "$DIR/latency.plan"
grep -q "^links: intra-node .*; latency intra-node [0-9.e+-]* us, inter-node [0-9.e+-]* us; pipeline transfer between nodes [0-9.e+-]* us$" <<<"$out" || fail "$out"

# A bad --out: exit 1, the flag and the path named, nothing left behind.
run "$ONEFLOW" calibrate --host_devices= --out="$DIR/no/such/dir/codecs.jsonl"
[[ $rc -eq 1 ]] || fail "bad --out exited $rc"
[[ "$err" == "oneflow calibrate: --out='$DIR/no/such/dir/codecs.jsonl': cannot create a temporary file in '$DIR/no/such/dir': No such file or directory" ]] || fail "$err"
[[ ! -e "$DIR/no" ]] || fail "bad --out left $DIR/no"

run "$ONEFLOW" calibrate --host_devices=4,0
[[ $rc -eq 1 && "$err" == "oneflow calibrate: --host_devices=4,0: '0' is not a device count (1..4096)" ]] || fail "$rc $err"
# The host line prices --auto_parallel: the plan records it, inspect and the run summary name it.
run "$GPT" --devices_per_node=2 --layers=1 --hidden=32 --heads=2 --vocab=32 --seq=8 --batch=4 --auto_parallel \
  --codec_calibration="$DIR/codecs.jsonl" --plan_out="$DIR/auto.plan"
[[ $rc -eq 0 ]] || fail "gpt --auto_parallel with host terms exited $rc: $err"
grep -q "^  host terms: act [0-9.e+-]* us, boxing act [0-9.e+-]* us, collective call [0-9.e+-]* us, [0-9]* host cores, core share [0-9.e+-]* (measured for 2 devices, $DIR/codecs.jsonl)$" <<<"$out" || fail "$out"
run "$ONEFLOW" run "$DIR/auto.plan" --iters=3
[[ $rc -eq 0 ]] || fail "run of the auto plan exited $rc: $err"
grep -q "^auto-parallel: predicted step [0-9.]* ms (.*; host terms: act [0-9.e+-]* us, collective call [0-9.e+-]* us, [0-9]* host cores, core share [0-9.e+-]*), measured [0-9.]* ms (mean of 2 iterations after the first)" <<<"$err" || fail "$err"

# Malformed calibration files and a bad --compression: the examples exit 2 naming the flag.
printf '{"codec": "int4", "group_size": 128, "hadamard": false, "bytes_per_second": 2e9}\nnot json\n' >"$DIR/bad.jsonl"
run "${gpt_slow[@]:0:${#gpt_slow[@]}-1}" --codec_calibration="$DIR/bad.jsonl"
[[ $rc -eq 2 ]] || fail "a malformed calibration exited $rc"
[[ "$err" == "gpt: error: --codec_calibration: codec calibration file '$DIR/bad.jsonl' line 2: column 1: expected '{' to start a JSON object" ]] || fail "$err"
run "$GPT" --compression=fp9
[[ $rc -eq 2 ]] || fail "--compression=fp9 exited $rc"
[[ "$err" == "gpt: error: --compression=fp9 is not a choice; valid: off, auto, fp8, int8, int4" ]] || fail "$err"

# Pipeline stages: a 2-stage gpt with 4 micro-batches, its stages section, and the bubble
# measured from a trace of `oneflow run`.
gpt_pp=("$GPT" --devices_per_node=2 --pp=2 --micro_batches=4 --layers=2 --hidden=32 --heads=2 --vocab=32 --seq=8
        --batch=8)
run "${gpt_pp[@]}" --plan_out="$DIR/pp2.plan"
[[ $rc -eq 0 ]] || fail "gpt --pp=2 exited $rc: $err"
run "$ONEFLOW" run "$DIR/pp2.plan" --iters=3 --metrics="$DIR/pp2.jsonl" --trace="$DIR/pp2.json"
[[ $rc -eq 0 ]] || fail "run --trace exited $rc: $err"
run "$ONEFLOW" inspect "$DIR/pp2.plan" --trace="$DIR/pp2.json"
[[ $rc -eq 0 ]] || fail "inspect --trace exited $rc: $err"
grep -qx "micro-batches: 4 per iteration" <<<"$out" || fail "$out"
grep -qx "pipeline stages (2), 4 micro-batches per iteration; 1F1B bubble (S - 1) / (M + S - 1) = 1 / 5 = 0.200" <<<"$out" || fail "$out"
# Inspect wraps lines past 200 characters (tools/cli/text_wrap.h), as this one is when the
# test's directory is long: compare with line breaks and indents squeezed to one space.
squeezed="$(tr '\n' ' ' <<<"$out" | tr -s ' ')"
grep -q " measured from trace '$DIR/pp2.json': iterations 1\.\.2 (iteration 0 is warm-up), [0-9.]* ms wall time stage 0: " <<<"$squeezed" || fail "$out"
grep -qx "  stage 1: cpu{0:1}" <<<"$out" || fail "$out"
[[ $(grep -c "^    bubble: modelled 0.200, measured [01]\.[0-9][0-9][0-9]$" <<<"$out") -eq 2 ]] || fail "$out"
run "$ONEFLOW" inspect "$DIR/pp2.plan" --trace="$DIR/pp2.json" --format=json
python3 -c 'import json, sys; p = json.loads(sys.argv[1])["pipeline"]; assert p["num_stages"] == 2 and p["trace"]["last_iteration"] == 2, p; assert all(0 <= s["measured_bubble"] <= 1 for s in p["stages"]), p' "$out" || fail "$out"
# A missing trace, and a trace of another plan: exit 1 naming the file.
run "$ONEFLOW" inspect "$DIR/pp2.plan" --trace="$DIR/missing.json"
[[ $rc -eq 1 && "$err" == "oneflow inspect: trace file '$DIR/missing.json': cannot open: No such file or directory" ]] || fail "$rc $err"
run "${gpt_pp[@]:0:${#gpt_pp[@]}-1}" --batch=4 --plan_out="$DIR/pp2_small.plan"
run "$ONEFLOW" inspect "$DIR/pp2_small.plan" --trace="$DIR/pp2.json"
[[ $rc -eq 1 ]] || fail "a trace of another plan exited $rc"
[[ "$err" =~ ^"oneflow inspect: trace file '$DIR/pp2.json': written for plan 'gpt' (checksum 0x"[0-9a-f]{8}"), not for this plan 'gpt' (checksum 0x"[0-9a-f]{8}")"$ ]] || fail "$err"

# profile: a dp=2 gpt run with --trace, then where its step went (text and JSON), and the
# errors naming the file.
run "$GPT" --devices_per_node=2 --dp=2 --layers=1 --hidden=32 --heads=2 --vocab=32 --seq=8 --batch=4 \
    --plan_out="$DIR/dp2.plan"
[[ $rc -eq 0 ]] || fail "gpt --dp=2 exited $rc: $err"
run "$ONEFLOW" run "$DIR/dp2.plan" --iters=4 --metrics="$DIR/dp2.jsonl" --trace="$DIR/dp2.json"
[[ $rc -eq 0 ]] || fail "run --trace exited $rc: $err"
# Every op type (--top=100): which ones make a top 3 depends on this run's timings.
run "$ONEFLOW" profile "$DIR/dp2.plan" "$DIR/dp2.json" --top=100
[[ $rc -eq 0 ]] || fail "profile exited $rc: $err"
grep -qx "profile of plan 'gpt' from trace '$DIR/dp2.json': iterations 1..3 (iteration 0 is warm-up)" <<<"$out" || fail "$out"
grep -qx "op types, per iteration and device (top [0-9]* of [0-9]*; share: of the step on that thread of every device)" <<<"$out" || fail "$out"
grep -q "^  bucket_all_reduce  *communication  .* GB/s$" <<<"$out" || fail "$out"
grep -q "^critical path of iteration [1-3] (the median of 3): " <<<"$out" || fail "$out"
# The trace carries its plan: the trace alone gives the same profile.
with_plan="$out"
run "$ONEFLOW" profile "$DIR/dp2.json" --top=100
[[ $rc -eq 0 && "$out" == "$with_plan" ]] || fail "profile TRACE differs from profile PLAN TRACE ($rc): $err"
run "$ONEFLOW" profile "$DIR/dp2.plan" "$DIR/dp2.json" --format=json --top=0
[[ $rc -eq 0 ]] || fail "profile --format=json exited $rc: $err"
python3 -c '
import json, sys
p = json.load(sys.stdin)
assert p["last_iteration"] == 3 and len(p["op_types"]) == p["op_type_count"], p.keys()
for t in p["threads"]:
    assert abs(t["compute_ms"] + t["communication_ms"] + t["idle_ms"] - p["step_ms"]) <= 0.02 * p["step_ms"], t
c = p["critical_path"]
total = sum(s["path_ms"] + s["wait_ms"] for s in c["steps"])
assert abs(total - c["wall_ms"]) <= 0.02 * c["wall_ms"], (total, c["wall_ms"])
' <<<"$out" || fail "profile JSON does not add up: $(head -c 2000 <<<"$out")"
run "$ONEFLOW" profile "$DIR/dp2.plan" "$DIR/missing.json"
[[ $rc -eq 1 && "$err" == "oneflow profile: trace file '$DIR/missing.json': cannot open: No such file or directory" ]] || fail "$rc $err"
run "$ONEFLOW" profile "$DIR/pp2.plan" "$DIR/dp2.json"
[[ $rc -eq 1 && "$err" =~ ^"oneflow profile: trace file '$DIR/dp2.json': written for plan 'gpt' (checksum 0x" ]] || fail "$rc $err"
run "$ONEFLOW" run "$DIR/dp2.plan" --iters=1 --trace="$DIR/dp2_warmup.json"
run "$ONEFLOW" profile "$DIR/dp2.plan" "$DIR/dp2_warmup.json"
[[ $rc -eq 1 && "$err" == "oneflow profile: trace file '$DIR/dp2_warmup.json': the trace has acts of iterations 0..0 only; the first 1 are warm-up: run at least 2 iterations (--iters)" ]] || fail "$rc $err"
run "$ONEFLOW" profile "$DIR/missing.plan" "$DIR/dp2.json"
[[ $rc -eq 1 && "$err" == "oneflow profile: plan file '$DIR/missing.plan': cannot open: No such file or directory" ]] || fail "$rc $err"
run "$ONEFLOW" profile "$DIR/dp2.plan" "$DIR/dp2.json" --format=dot
[[ $rc -eq 1 && "$err" == "oneflow profile: --format='dot' is not a format; valid: text, json" ]] || fail "$rc $err"
run "$ONEFLOW" profile "$DIR/dp2.plan"
# A plan without a trace: named as such, not quoted as a trace that is not JSON.
[[ $rc -eq 1 && "$err" == "oneflow profile: '$DIR/dp2.plan' is a plan, not a trace; profile reads a trace of a run: \`oneflow run $DIR/dp2.plan --trace=FILE.json\`, then \`oneflow profile FILE.json\`" ]] || fail "$rc $err"
run "$ONEFLOW" profile
[[ $rc -eq 2 ]] || fail "profile without a trace exited $rc"

# report: a tiny mlp run with --metrics and --trace drawn as one HTML page, without and
# with the profile; nothing on it points outside the file.
run "$MLP" --devices_per_node=2 --dp=2 --layers=2 --hidden=16 --in_features=8 --batch=8 --plan_out="$DIR/mlp.plan"
[[ $rc -eq 0 ]] || fail "mlp exited $rc: $err"
run "$ONEFLOW" run "$DIR/mlp.plan" --iters=4 --metrics="$DIR/mlp.jsonl" --trace="$DIR/mlp.json"
[[ $rc -eq 0 ]] || fail "run mlp exited $rc: $err"
run "$ONEFLOW" report "$DIR/mlp.jsonl"
[[ $rc -eq 0 ]] || fail "report exited $rc: $err"
[[ "$out" == "<!DOCTYPE html>"* && "$out" == *"</html>" ]] || fail "not a page: ${out:0:200}"
[[ $(grep -c "<svg " <<<"$out") -eq 2 ]] || fail "not two charts: $out"
grep -q "<tr><th>iterations</th><td>0..3 (4 lines)</td></tr>" <<<"$out" || fail "$out"
grep -q "<tr><th>median step time</th><td>[0-9.]* ms</td></tr>" <<<"$out" || fail "$out"
if grep -qi "http\|<script" <<<"$out"; then fail "the page points outside itself: $out"; fi
if grep -q "<h2>Profile</h2>" <<<"$out"; then fail "a profile without --plan/--trace: $out"; fi
run "$ONEFLOW" report "$DIR/mlp.jsonl" --plan="$DIR/mlp.plan" --trace="$DIR/mlp.json"
[[ $rc -eq 0 ]] || fail "report --plan --trace exited $rc: $err"
grep -q "<h2>Profile</h2>" <<<"$out" || fail "$out"
grep -q "<p>profile of plan &#39;mlp&#39; from trace &#39;$DIR/mlp.json&#39;: iterations 1..3 (iteration 0 is warm-up)</p>" <<<"$out" || fail "$out"
grep -q "<thead><tr><th>op type</th><th>thread</th><th>time</th><th>share</th><th>calls</th><th>bytes</th><th>bandwidth</th></tr></thead>" <<<"$out" || fail "$out"
grep -q "<tr><td>matmul</td><td>compute</td>" <<<"$out" || fail "$out"
if grep -qi "http\|<script" <<<"$out"; then fail "the page points outside itself: $out"; fi
run "$ONEFLOW" report "$DIR/missing.jsonl"
[[ $rc -eq 1 && "$err" == "oneflow report: metrics file '$DIR/missing.jsonl': cannot open: No such file or directory" ]] || fail "$rc $err"
: >"$DIR/empty.jsonl"
run "$ONEFLOW" report "$DIR/empty.jsonl"
[[ $rc -eq 1 && "$err" == "oneflow report: metrics file '$DIR/empty.jsonl': the file is empty (no metrics lines); write one with \`oneflow run PLAN --metrics=FILE\`" ]] || fail "$rc $err"
{ head -n 1 "$DIR/mlp.jsonl"; echo "loss went down"; } >"$DIR/bad.jsonl"
run "$ONEFLOW" report "$DIR/bad.jsonl"
[[ $rc -eq 1 && "$err" == "oneflow report: metrics file '$DIR/bad.jsonl': line 2 is not a metrics line of \`oneflow run --metrics\` (not a JSON object): loss went down" ]] || fail "$rc $err"
run "$ONEFLOW" report "$DIR/mlp.jsonl" --trace="$DIR/mlp.json"
[[ $rc -eq 0 ]] || fail "report --trace exited $rc: $err"
grep -q "<p>profile of plan &#39;mlp&#39; from trace &#39;$DIR/mlp.json&#39;: iterations 1..3 (iteration 0 is warm-up)</p>" <<<"$out" || fail "$out"
run "$ONEFLOW" report "$DIR/mlp.jsonl" --plan="$DIR/mlp.plan"
[[ $rc -eq 1 && "$err" == "oneflow report: --plan without --trace: the profile is of a trace (--trace=FILE.json, which carries its plan; --plan names the plan only for a trace written without it)" ]] || fail "$rc $err"
run "$ONEFLOW" report
[[ $rc -eq 2 ]] || fail "report without a file exited $rc"

run "$ONEFLOW" help
[[ $rc -eq 0 ]] || fail "help exited $rc"
grep -q "oneflow inspect PLAN \[--format=text|json|dot|html\] \[--device=K\] \[--trace=FILE.json\]" <<<"$out" || fail "$out"
grep -qx "    oneflow profile \[PLAN\] TRACE.json \[--top=N\] \[--format=text|json\]" <<<"$out" || fail "$out"
grep -qx "    oneflow report METRICS.jsonl \[--trace=FILE.json \[--plan=PLAN\]\] > run.html" <<<"$out" || fail "$out"
grep -qx "    oneflow status JOB --nodes=HOST:PORT,... --token_file=F \[--tls_ca=F\] \[--format=text|json\]" <<<"$out" || fail "$out"
grep -qx "    oneflow list --nodes=HOST:PORT,... --token_file=F \[--tls_ca=F\] \[--format=text|json\]" <<<"$out" || fail "$out"
grep -qx "    oneflow cancel JOB --nodes=HOST:PORT,... --token_file=F \[--tls_ca=F\]" <<<"$out" || fail "$out"
echo PASS
