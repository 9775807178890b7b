#!/usr/bin/env python3
"""Each collective call of a launched trace, timed from its last member's arrival, by kind and size.

  oneflow inspect PLAN --format=json > plan.json
  bench/auto_parallel/collective_calls.py plan.json TRACE.json [--first=3 --last=17] [--calibration=cluster.jsonl]

A boxing act on a communication thread lasts from its own device's arrival to the call's end,
so on hosts that share cores it holds the wait for slower members; the call itself is what
runs after the last member arrived. Per call (one actor's act in one iteration, on every member
of its group), this takes the last member's start to the last member's end, and groups the calls
by the plan's boxing step: kind, codec ("none": dense) and bytes per device
(BoxingStepDef.bytes_per_device: what the busiest member receives, the cost model's wire bytes,
sbp/collective_cost.h). Gradient buckets are grouped by bucket. Only calls whose every member's
act is in the trace count; iterations --first..--last (the warm-up and the last ones left out).

Prints one JSON line per group: {"kind", "codec", "bytes_per_device", "calls", "p25_ms",
"median_ms"}, then with --calibration the file's inter-node link line (alpha, bytes/s) as
{"link": "inter_node", ...} to set beside them: a one-round dense call (an all-gather or a
reduce-scatter across processes) is priced alpha + bytes_per_device / (bytes/s) by the model,
plus the machine line's collective call cost per call on shared cores (docs/auto_parallel.md).
docs/auto_parallel_measurements.md, "Session 48: c48cache", uses it on 3 emulated hosts.
"""
import argparse
import json
import re
import statistics
import sys
from collections import defaultdict

# A boxing actor's name ends in ".../boxing_<boxing id>/<kind>" (compiler/passes/boxing_pass),
# a bucket's in "bucket_<bucket id>/<kind>".
BOXING = re.compile(r"(?:^|/)boxing_(\d+)/(\w+)$")
BUCKET = re.compile(r"(?:^|/)bucket_(\d+)/(\w+)$")


def groups_of(plan, trace, first, last):
    steps = {}
    for boxing in plan.get("boxings", []):
        for index, step in enumerate(boxing.get("steps", [])):
            steps[(boxing["id"], index)] = step
    buckets = {bucket["id"]: bucket for bucket in plan.get("buckets", [])}
    acts = defaultdict(list)  # (actor name, iteration) -> its acts, one per member
    for event in trace.get("traceEvents", []):
        # Boxing acts on a communication track (tid 0 is the compute thread, whose boxing acts
        # are local steps: slices, no call).
        if event.get("ph") != "X" or event.get("cat") != "boxing" or event.get("tid", 0) == 0:
            continue
        iteration = event.get("args", {}).get("iteration", -1)
        if first <= iteration <= last:
            acts[(event["name"], iteration)].append(event)
    groups = defaultdict(list)
    for (name, _), events in acts.items():
        boxing, bucket = BOXING.search(name), BUCKET.search(name)
        if boxing:
            # Every step of a boxing is an actor of the same name stem; the pass names the
            # step's actor by its kind, and a multi-step boxing's steps differ in kind.
            candidates = [s for (b, _), s in sorted(steps.items()) if b == int(boxing.group(1))
                          and s.get("kind") == boxing.group(2)]
            if not candidates:
                continue
            step = candidates[0]
            members = members_of(plan_placement(plan, int(boxing.group(1))), "boxing " + boxing.group(1))
            codec = (step.get("compression") or {}).get("codec") or "none"
            key = (step["kind"], codec, int(step.get("bytes_per_device", 0)))
        elif bucket and int(bucket.group(1)) in buckets:
            b = buckets[int(bucket.group(1))]
            members = members_of(b.get("placement"), "bucket " + bucket.group(1))
            key = ("bucket " + b.get("kind", bucket.group(2)), b.get("codec") or "none",
                   int(b.get("bytes_per_device", 0)))
        else:
            continue
        if len(events) != members:
            continue  # a call with a member's act outside the trace's iterations
        start = max(e["ts"] for e in events)
        end = max(e["ts"] + e["dur"] for e in events)
        groups[key].append((end - start) / 1e3)
    return groups


def plan_placement(plan, boxing_id):
    """The placement a boxing's group spans (its source's; a collective's source and
    destination placements are one)."""
    for boxing in plan.get("boxings", []):
        if boxing["id"] == boxing_id:
            return boxing.get("src_placement")
    return None


def members_of(placement, what):
    """Devices of a placement as inspect prints it ("cpu{0:0, 1:0, 2:0}"), every one a member of
    the call of `what` (a boxing or a bucket). A placement with a hierarchy of more than one axis
    ("cpu{0:0-1, 1:0-1}[2, 2]") has several groups whose calls share an actor name, which this
    cannot tell apart: an error."""
    if not placement or "{" not in placement:
        raise ValueError("%s has no placement in the plan's JSON" % what)
    hierarchy = placement[placement.index("}") + 1:]
    if hierarchy.count(",") > 0:
        raise ValueError("%s: placement %s has a hierarchy of more than one axis: its groups' calls share "
                         "an actor name; this counts one group per placement (one device per node, or one "
                         "axis)" % (what, placement))
    inside = placement[placement.index("{") + 1:placement.index("}")]
    count = 0
    for part in inside.split(","):
        part = part.strip()
        if ":" not in part:
            continue
        devices = part.split(":", 1)[1]
        if "-" in devices:
            low, high = devices.split("-")
            count += int(high) - int(low) + 1
        else:
            count += 1
    return count


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan_json", help="oneflow inspect PLAN --format=json")
    parser.add_argument("trace", help="the trace of `oneflow launch PLAN --trace=FILE` (or `oneflow run`)")
    parser.add_argument("--first", type=int, default=3, help="first iteration counted [3]")
    parser.add_argument("--last", type=int, default=17, help="last iteration counted [17]")
    parser.add_argument("--calibration", help="a calibration file (oneflow calibrate --out): prints its inter-node link")
    args = parser.parse_args(argv)
    if args.first > args.last:
        parser.error("--first=%d is after --last=%d" % (args.first, args.last))
    with open(args.plan_json) as f:
        plan = json.load(f)
    with open(args.trace) as f:
        trace = json.load(f)
    try:
        groups = groups_of(plan, trace, args.first, args.last)
    except ValueError as error:
        sys.exit("collective_calls.py: '%s': %s" % (args.plan_json, error))
    if not groups:
        sys.exit("collective_calls.py: no collective call with every member's act in iterations %d..%d of '%s'"
                 % (args.first, args.last, args.trace))
    for (kind, codec, size), times in sorted(groups.items()):
        times.sort()
        print(json.dumps({"kind": kind, "codec": codec, "bytes_per_device": size, "calls": len(times),
                          "p25_ms": round(times[len(times) // 4], 4),
                          "median_ms": round(statistics.median(times), 4)}))
    if args.calibration:
        with open(args.calibration) as f:
            for text in f:
                row = json.loads(text)
                if row.get("link") == "inter_node":
                    print(json.dumps({"link": "inter_node", "latency_seconds": row["latency_seconds"],
                                      "bytes_per_second": row["bytes_per_second"]}))


if __name__ == "__main__":
    main(sys.argv[1:])
