#!/usr/bin/env bash
# The whole-process compile of issue 29: `gpt` compiling the 48-block GPT for 8 nodes x 8
# devices (dp=8, tp=8, hidden 1024, 16 heads, sequence 512, vocabulary 32000) and writing
# the plan with --plan_out, timed as a user runs it: the process from start to exit (flag
# parsing, building the model, the compile, the summary, the atomic fsync'd write, exit).
# Prints one JSON line per run (stdout):
#   {"bench":"compile_process","run":1,"binary":"this","wall_seconds":..,"cpu_seconds":..,
#    "plan_bytes":..,"goal_seconds":3.0,"ratio_to_goal":..[,"reference_cpu_seconds":..,
#    "reference_wall_seconds":..,"cpu_ratio_to_reference":..]}
# cpu_seconds (user + system) is the figure to compare on a shared machine: the wall clock
# grows with whatever else runs. With --reference_bin=PATH (e.g. the gpt of the commit
# before a change), each run also times that binary right after this one, on the same
# flags, and reports the ratio this / reference; the first run of each is the cold one.
#
#   bench/compile_process/compile_process_bench.sh
#   bench/compile_process/compile_process_bench.sh --bin=bazel-bin/examples/gpt/gpt \
#     --reference_bin=/path/to/old/gpt --runs=3
#
# Flags [defaults]: --bin=PATH [built here with -c opt] --reference_bin=PATH [none]
# --runs=N [3] --work_dir=DIR [mktemp] --gpt_flags="..." [the issue's model]. A benchmark,
# not a test: it asserts nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN=""
REFERENCE_BIN=""
RUNS=3
WORK_DIR=""
GPT_FLAGS="--nodes=8 --devices_per_node=8 --dp=8 --tp=8 --layers=48 --hidden=1024 --heads=16 --seq=512 --vocab=32000"
for arg in "$@"; do
  case "$arg" in
    --bin=*) BIN="${arg#*=}" ;;
    --reference_bin=*) REFERENCE_BIN="${arg#*=}" ;;
    --runs=*) RUNS="${arg#*=}" ;;
    --work_dir=*) WORK_DIR="${arg#*=}" ;;
    --gpt_flags=*) GPT_FLAGS="${arg#*=}" ;;
    *) echo "compile_process_bench: unknown flag $arg" >&2; exit 2 ;;
  esac
done

RUN="${WORK_DIR:-$(mktemp -d /tmp/compile_process_bench.XXXXXX)}"
mkdir -p "$RUN"
trap 'rm -f "$RUN"/*.plan' EXIT
if [[ -z "$BIN" ]]; then
  # -c opt, with its own convenience symlinks so the tree's bazel-bin stays as it was.
  (cd "$ROOT" && bazel build -c opt --jobs=2 --symlink_prefix="$RUN/bazel-" //examples/gpt >&2)
  BIN="$RUN/bazel-bin/examples/gpt/gpt"
fi

# Runs "$@" with --plan_out=$RUN/<tag>.plan; sets WALL and CPU (user + system seconds)
# from bash's `time`, and BYTES to the plan's size.
time_compile() {
  local tag="$1"; shift
  local timing
  # shellcheck disable=SC2086
  timing="$( { TIMEFORMAT='%R %U %S'; time "$@" $GPT_FLAGS --plan_out="$RUN/$tag.plan" >/dev/null; } 2>&1 | tail -1)"
  read -r WALL user system <<<"$timing"
  CPU="$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.3f", u + s }')"
  BYTES="$(stat -c %s "$RUN/$tag.plan")"
  rm -f "$RUN/$tag.plan"
}

for ((run = 1; run <= RUNS; ++run)); do
  time_compile this "$BIN"
  line="$(printf '{"bench":"compile_process","run":%d,"binary":"this","wall_seconds":%s,"cpu_seconds":%s,"plan_bytes":%s,"goal_seconds":3.0,"ratio_to_goal":%s' \
    "$run" "$WALL" "$CPU" "$BYTES" "$(awk -v w="$WALL" 'BEGIN { printf "%.3f", w / 3.0 }')")"
  if [[ -n "$REFERENCE_BIN" ]]; then
    this_cpu="$CPU"
    time_compile reference "$REFERENCE_BIN"
    line+="$(printf ',"reference_wall_seconds":%s,"reference_cpu_seconds":%s,"reference_plan_bytes":%s,"cpu_ratio_to_reference":%s' \
      "$WALL" "$CPU" "$BYTES" "$(awk -v a="$this_cpu" -v b="$CPU" 'BEGIN { printf "%.3f", a / b }')")"
  fi
  echo "$line}"
done
