#!/usr/bin/env python3
"""The JSON lines of bench/slow_links/slow_link_bench.sh, from the files a run left.

  report.py config  KEY=VALUE ...                                   the run's conditions
  report.py link    --run_dir=D --rate_mbit=R                       the link's reference line
  report.py modes   --run_dir=D --rate_mbit=R --modes=off,auto,...  one line per mode
                    --warmup=W [--latency_ms=L]
  report.py unshaped --run_dir=D --modes=off --warmup=W             the same plans, no tc

Layout of D/rate<R>/ (written by the shell script): link.json (net_probe.py's answer),
<mode>.inspect.json (`oneflow inspect --format=json` of the mode's plan) and
<mode>.r<k>.metrics (the metrics lines of round k of `oneflow launch`).

Every figure is read, never assumed: plan wire bytes are the plan's per-device
`bytes_sent_per_iter` (the compiler counts a compressed step's encoded bytes there), the
dense reference is the `off` plan of the same rate, and measured wire bytes are reported
only when the metrics lines carry a "compression" object with "wire_bytes" in it.
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

# Goals of issue 11 ("Benchmarks"): step time of auto vs dense, wire bytes per codec.
SPEEDUP_GOAL = {"auto": 1.5}
WIRE_REDUCTION_GOAL = {"fp8": 3.7, "int4": 6.0}
NOISY_LOAD = 0.2


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_metrics(path):
    lines = []
    with open(path) as f:
        for text in f:
            text = text.strip()
            if not text.startswith("{"):
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                continue
            if "iter" in line and "step_ms" in line:
                lines.append(line)
    lines.sort(key=lambda m: m["iter"])
    return lines


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    pos = (len(values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def sum_key(obj, key):
    """Sum of every number stored under `key` anywhere inside obj (None: no such key)."""
    total, found = 0.0, False
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key and isinstance(v, (int, float)) and not isinstance(v, bool):
                total, found = total + v, True
            elif isinstance(v, (dict, list)):
                sub = sum_key(v, key)
                if sub is not None:
                    total, found = total + sub, True
    elif isinstance(obj, list):
        for v in obj:
            sub = sum_key(v, key)
            if sub is not None:
                total, found = total + sub, True
    if not found:
        return None
    return int(total) if float(total).is_integer() else total


def plan_figures(inspect):
    devices = inspect.get("devices", [])
    sent = [d.get("bytes_sent_per_iter", 0) for d in devices]
    codecs = {}
    for boxing in inspect.get("boxings", []):
        for step in boxing.get("steps", []):
            if step.get("collective_id") is None:
                continue
            codec = (step.get("compression") or {}).get("codec", "none")
            codecs[codec] = codecs.get(codec, 0) + 1
    return {
        "num_devices": inspect.get("num_devices") or len(devices),
        "wire_per_device": max(sent) if sent else None,
        "boxing_bytes_per_iter": inspect.get("boxing_bytes_per_iter"),
        "codecs": dict(sorted(codecs.items())),
    }


def round_files(rate_dir, mode):
    return sorted(glob.glob(os.path.join(rate_dir, f"{mode}.r*.metrics")))


def other_load(metrics_path):
    """Cores other processes kept busy during a launch (the shell script's .load file)."""
    path = metrics_path[:-len(".metrics")] + ".load"
    try:
        load = read_json(path)
    except (OSError, ValueError):
        return None
    seconds = load["wall_ms"] / 1e3
    if seconds <= 0:
        return None
    return round(max(0.0, (load["busy_ticks"] - load["our_ticks"]) / load["hz"] / seconds), 3)


def run_figures(files, warmup):
    steps, finals, means, measured_wire, measured_dense, last_compression = [], [], [], [], [], None
    rel_l2 = {}
    iterations = 0
    runs = []
    for path in files:
        lines = read_metrics(path)
        if not lines:
            continue
        iterations = max(iterations, len(lines))
        load = other_load(path)
        runs.append({"median_ms": round(statistics.median(m["step_ms"] for m in lines if m["iter"] >= warmup), 3),
                     "other_load_cores": load,
                     "steps": [m["step_ms"] for m in lines if m["iter"] >= warmup]})
        finals.append(lines[-1]["loss"])
        means.append(statistics.fmean(m["loss"] for m in lines))
        for m in lines:
            if m["iter"] < warmup or not isinstance(m.get("compression"), (dict, list)):
                continue
            last_compression = m["compression"]
            wire = sum_key(m["compression"], "wire_bytes")
            dense = sum_key(m["compression"], "dense_bytes")
            if wire is not None:
                measured_wire.append(wire)
            if dense is not None:
                measured_dense.append(dense)
            if isinstance(m["compression"], dict):
                for codec, figures in m["compression"].items():
                    if isinstance(figures, dict) and isinstance(figures.get("rel_l2"), (int, float)):
                        rel_l2.setdefault(codec, []).append(figures["rel_l2"])
    # As bench/train/vs_pytorch.py: a launch during which other processes kept more than
    # NOISY_LOAD cores busy counts only when every launch of the mode was like that.
    quiet = [r for r in runs if r["other_load_cores"] is not None and r["other_load_cores"] <= NOISY_LOAD]
    unknown = [r for r in runs if r["other_load_cores"] is None]
    used = quiet + unknown or runs
    for r in used:
        steps += r["steps"]
    return {
        "iterations": iterations,
        "rounds": len(finals),
        "steps": steps,
        "runs": [{k: v for k, v in r.items() if k != "steps"} for r in runs],
        "noisy": bool(runs) and not (quiet or unknown),
        "final_loss": finals[0] if finals else None,
        "mean_loss": means[0] if means else None,
        "measured_wire": statistics.median(measured_wire) if measured_wire else None,
        "measured_dense": statistics.median(measured_dense) if measured_dense else None,
        "last_compression": last_compression,
        "rel_l2": {codec: statistics.median(v) for codec, v in sorted(rel_l2.items())} or None,
    }


def ratio(a, b, digits=3):
    if a is None or b is None or b == 0:
        return None
    return round(a / b, digits)


def rel_diff(value, reference):
    if value is None or reference is None or reference == 0:
        return None
    return round((value - reference) / abs(reference), 6)


def emit(line):
    print(json.dumps(line), flush=True)


def cmd_link(args):
    rate_dir = os.path.join(args.run_dir, f"rate{args.rate_mbit}")
    probe = read_json(os.path.join(rate_dir, "link.json"))
    tc_bytes = args.rate_mbit * 1e6 / 8
    emit({
        "bench": "slow_links", "kind": "link", "rate_mbit": args.rate_mbit,
        "latency_ms": args.latency_ms,
        "tc_rate_bytes_per_s": tc_bytes,
        "measured_bytes_per_s": round(probe["bytes_per_s"]) if probe.get("bytes_per_s") else None,
        "measured_over_tc_rate": ratio(probe.get("bytes_per_s"), tc_bytes),
        "probe_bytes": probe.get("bytes"),
        "rtt_ms_median": probe.get("rtt_ms_median"),
    })


def cmd_modes(args, unshaped=False):
    rate_dir = os.path.join(args.run_dir, "unshaped" if unshaped else f"rate{args.rate_mbit}")
    plan_dir = os.path.join(args.run_dir, f"rate{args.rate_mbit}")
    modes = args.modes.split(",")
    link_bytes = None if unshaped else args.rate_mbit * 1e6 / 8
    reference_plan = plan_figures(read_json(os.path.join(plan_dir, "off.inspect.json")))
    reference_run = run_figures(round_files(rate_dir, "off"), args.warmup)
    reference_step = statistics.median(reference_run["steps"]) if reference_run["steps"] else None
    dense_wire = reference_plan["wire_per_device"]
    failures = 0
    for mode in modes:
        plan = plan_figures(read_json(os.path.join(plan_dir, f"{mode}.inspect.json")))
        run = run_figures(round_files(rate_dir, mode), args.warmup)
        median = statistics.median(run["steps"]) if run["steps"] else None
        line = {
            "bench": "slow_links", "kind": "unshaped" if unshaped else "mode", "mode": mode,
            "rate_mbit": None if unshaped else args.rate_mbit,
            "plan_link_mbit": args.rate_mbit,
            "iterations": run["iterations"], "warmup": args.warmup, "rounds": run["rounds"],
            "step_ms_median": round(median, 3) if median is not None else None,
            "step_ms_p25": round(percentile(run["steps"], 0.25), 3) if run["steps"] else None,
            "step_ms_p75": round(percentile(run["steps"], 0.75), 3) if run["steps"] else None,
            "speedup_vs_off": ratio(reference_step, median),
            "noisy": run["noisy"],
            "runs": run["runs"],
            "plan_dense_bytes_per_iter_per_device": dense_wire,
            "plan_wire_bytes_per_iter_per_device": plan["wire_per_device"],
            "plan_wire_reduction_vs_off": ratio(dense_wire, plan["wire_per_device"]),
            "plan_codec_steps": plan["codecs"],
            "modelled_link_ms_per_iter": (round(plan["wire_per_device"] / link_bytes * 1e3, 3)
                                          if link_bytes and plan["wire_per_device"] is not None else None),
            # As the metrics line reports them: the compressed exchanges only, summed over
            # every device of every node (the launcher adds the nodes' figures).
            "measured_wire_bytes_per_iter": run["measured_wire"],
            "measured_dense_bytes_per_iter": run["measured_dense"],
            "measured_wire_bytes_per_iter_per_device": (
                round(run["measured_wire"] / plan["num_devices"]) if run["measured_wire"] is not None
                and plan["num_devices"] else None),
            "measured_wire_reduction": ratio(run["measured_dense"], run["measured_wire"]),
            "measured_rel_l2": run["rel_l2"],
            "measured_compression_last_iter": run["last_compression"],
            "final_loss": run["final_loss"],
            "final_loss_rel_diff_vs_off": rel_diff(run["final_loss"], reference_run["final_loss"]),
            "mean_loss_rel_diff_vs_off": rel_diff(run["mean_loss"], reference_run["mean_loss"]),
        }
        if not unshaped and mode in SPEEDUP_GOAL:
            line["goal_speedup"] = SPEEDUP_GOAL[mode]
            line["meets_speedup_goal"] = (line["speedup_vs_off"] is not None
                                          and line["speedup_vs_off"] >= SPEEDUP_GOAL[mode])
        if mode in WIRE_REDUCTION_GOAL:
            line["goal_wire_reduction"] = WIRE_REDUCTION_GOAL[mode]
            line["meets_wire_goal"] = (line["plan_wire_reduction_vs_off"] is not None
                                       and line["plan_wire_reduction_vs_off"] >= WIRE_REDUCTION_GOAL[mode])
        if median is None:
            failures += 1
        emit(line)
    return 1 if failures else 0


def cmd_config(pairs):
    line = {"bench": "slow_links", "kind": "config"}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            line[key] = json.loads(value)
        except json.JSONDecodeError:
            line[key] = value
    emit(line)
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "config":
        return cmd_config(sys.argv[2:])
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["link", "modes", "unshaped"])
    parser.add_argument("--run_dir", required=True)
    parser.add_argument("--rate_mbit", type=int, default=1000)
    parser.add_argument("--latency_ms", type=float, default=0)
    parser.add_argument("--modes", default="off")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    if args.command == "link":
        cmd_link(args)
        return 0
    return cmd_modes(args, unshaped=args.command == "unshaped")


if __name__ == "__main__":
    sys.exit(main())
