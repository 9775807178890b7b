#!/usr/bin/env bash
# Pipeline cuts (docs/pipeline.md, "Where the stages cut"): for each case, the plan cut
# by block count against the plan cut where the cost model's DP over the cuts puts them
# (--stage_blocks=auto), both compiled with --predict_step and run by `oneflow run` in one
# process, in alternating rounds. One JSON line per case: the cut chosen, the predicted
# and measured steps of both, and the ratios cut / balanced (the reference is the
# balanced plan measured in the same run). The losses of both must be equal (the cut
# moves work between devices, not math): "same_losses".
#
# Not a test: bench/pipeline/stage_cuts_bench.sh [--rounds=3] [--iters=20]
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=3
ITERS=20
for arg in "$@"; do
  case "$arg" in
    --rounds=*) ROUNDS="${arg#--rounds=}" ;;
    --iters=*) ITERS="${arg#--iters=}" ;;
    *) echo "stage_cuts_bench: unknown argument '$arg'; valid: --rounds=N --iters=N" >&2; exit 2 ;;
  esac
done

bazel build --jobs=2 //examples/gpt:gpt //examples/llama:llama //tools/cli:oneflow >&2
BIN="$(bazel info bazel-bin 2>/dev/null)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# name | binary | model flags | devices (= pp) | micro-batches
CASES=(
  "llama_v8192_l6_pp2|examples/llama/llama|--layers=6 --vocab=8192 --hidden=128|2|4"
  "gpt_v8192_l6_pp2|examples/gpt/gpt|--layers=6 --vocab=8192 --hidden=128|2|4"
  "llama_v8192_l8_pp4|examples/llama/llama|--layers=8 --vocab=8192 --hidden=128|4|8"
)

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for case in "${CASES[@]}"; do
  IFS='|' read -r name binary model devices micro <<<"$case"
  common=(--devices_per_node="$devices" --pp="$devices" --micro_batches="$micro" --predict_step)
  # shellcheck disable=SC2086
  "$BIN/$binary" $model "${common[@]}" --plan_out="$WORK/balanced.plan" >"$WORK/balanced.out"
  # shellcheck disable=SC2086
  "$BIN/$binary" $model "${common[@]}" --stage_blocks=auto --plan_out="$WORK/cut.plan" >"$WORK/cut.out"
  cut="$(sed -n 's/^stage cuts (--stage_blocks=auto): --stage_blocks=\([0-9,]*\),.*/\1/p' "$WORK/cut.out")"
  cut="${cut:-balanced}"
  : >"$WORK/balanced.ms"
  : >"$WORK/cut.ms"
  for ((round = 0; round < ROUNDS; ++round)); do
    for which in balanced cut; do
      "$BIN/tools/cli/oneflow" run "$WORK/$which.plan" --iters="$ITERS" >"$WORK/$which.run" 2>&1
      sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p' "$WORK/$which.run" >>"$WORK/$which.ms"
      grep '"loss"' "$WORK/$which.run" | sed 's/.*"loss": \([^,]*\),.*/\1/' >"$WORK/$which.losses"
    done
  done
  predicted_balanced="$(sed -n 's/.*predicted step \([0-9.]*\) ms (compute.*/\1/p' "$WORK/balanced.run" | head -1)"
  predicted_cut="$(sed -n 's/.*predicted step \([0-9.]*\) ms (compute.*/\1/p' "$WORK/cut.run" | head -1)"
  measured_balanced="$(median <"$WORK/balanced.ms")"
  measured_cut="$(median <"$WORK/cut.ms")"
  same_losses=false
  cmp -s "$WORK/balanced.losses" "$WORK/cut.losses" && same_losses=true
  awk -v name="$name" -v cut="$cut" -v pb="$predicted_balanced" -v pc="$predicted_cut" -v mb="$measured_balanced" \
      -v mc="$measured_cut" -v rounds="$ROUNDS" -v iters="$ITERS" -v same="$same_losses" -v devices="$devices" \
      -v micro="$micro" 'BEGIN {
    printf "{\"bench\":\"stage_cuts\",\"case\":\"%s\",\"devices\":%d,\"pp\":%d,\"micro_batches\":%d,", name, devices, devices, micro
    printf "\"stage_blocks\":\"%s\",\"predicted_balanced_ms\":%.3f,\"predicted_cut_ms\":%.3f,", cut, pb, pc
    printf "\"predicted_ratio\":%.3f,\"reference\":\"balanced cut, same run\",", (pb > 0 ? pc / pb : 0)
    printf "\"measured_balanced_ms\":%.3f,\"measured_cut_ms\":%.3f,\"measured_ratio\":%.3f,", mb, mc, (mb > 0 ? mc / mb : 0)
    printf "\"rounds\":%d,\"iters\":%d,\"same_losses\":%s}\n", rounds, iters, same
  }'
done
