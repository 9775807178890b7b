#!/usr/bin/env bash
# Flight recorder dumps of a launched run's workers, for bench/distributed/reduction_tail.py
# (docs/benchmarks.md, "dp3_h512: reductions hidden (session 47)").
#
#   bench/distributed/flight_dumps.sh WORK_DIR PID
#
# While process PID (e.g. a distributed_bench.sh run with --work_dir=WORK_DIR --keep) lives,
# sends SIGUSR1 once a second to every oneflow_worker whose working directory lies under
# WORK_DIR; each writes its flight recorder's ring (the last 256 collectives per device,
# docs/diagnosis.md) to flight-nodeN.json in its node directory, so the last dump before
# the run ends holds its last iterations. A worker is signalled only once its SigCgt shows
# that it catches SIGUSR1 (before that the signal would kill it). Processes outside
# WORK_DIR are never signalled.
set -u
[[ $# -eq 2 && -d "$1" && "$2" =~ ^[0-9]+$ ]] || { echo "usage: flight_dumps.sh WORK_DIR PID" >&2; exit 2; }
WORK="$(cd "$1" && pwd)"
WATCHED="$2"
while kill -0 "$WATCHED" 2> /dev/null; do
  for pid in $(pgrep -x oneflow_worker); do
    cwd="$(readlink "/proc/$pid/cwd" 2> /dev/null)" || continue
    [[ "$cwd" == "$WORK"/* ]] || continue
    caught="$(awk '/^SigCgt/ {print $2}' "/proc/$pid/status" 2> /dev/null)"
    [[ -n "$caught" ]] || continue
    (( (0x$caught >> 9) & 1 )) && kill -USR1 "$pid" 2> /dev/null  # SIGUSR1 = 10: bit 9
  done
  sleep 1
done
