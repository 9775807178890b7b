# Reading a run's metrics file (sourced, not run): the JSON lines `oneflow launch` and
# `oneflow run` write with --metrics, one per iteration with its "step_ms".

# median_step METRICS WARMUP: the median step_ms after the first WARMUP iterations, or null
# when fewer than 2 remain or the file cannot be read (a launch that failed or stopped
# early). Uses $PY when the caller sets it, else python3.
median_step() {
  "${PY:-python3}" - "$1" "$2" <<'PYEOF'
import json, statistics, sys
try:
    steps = [json.loads(l)["step_ms"] for l in open(sys.argv[1]) if l.startswith("{") and '"step_ms"' in l]
except OSError:
    steps = []
steps = steps[int(sys.argv[2]):]
print(round(statistics.median(steps), 3) if len(steps) >= 2 else "null")
PYEOF
}
