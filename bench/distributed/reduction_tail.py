#!/usr/bin/env python3
"""Which gradient reductions a launched run leaves after backward (issue 24's hidden share).

  reduction_tail.py TRACE INSPECT_JSON [--warmup=W] [--flight=DUMP ...]

TRACE: a launched run's `--trace` file; INSPECT_JSON: `oneflow inspect PLAN --format=json` of
its plan (the buckets' and lone steps' bytes); DUMP: flight recorder dumps of the run's
workers (docs/diagnosis.md; a worker writes one on SIGUSR1), which time each collective act's
setup (a bucket packing its members: enqueue to start) apart from its collective (start to
end). Prints one JSON object:

- per measured iteration (>= W) and device, the end of backward (its last `*_grad*` compute
  act) against the last device's (`backward_end_before_last_ms`);
- per reduction (each collective on the communication threads, in the order of its call's
  last arrival), medians over the measured iterations, in ms from the end of the LAST
  device's backward: `last_arrival_ms` (the latest start of any member's act: the transfer
  can begin), `end_ms` (the latest end), `service_ms` (end minus last arrival on the device
  that arrived last: its pack and the transfer, no waiting), and `exposed_ms_per_device`:
  the part of the transfer (from last arrival to that device's own end) after that
  device's own backward ended, what `oneflow profile` counts as exposed there;
- with dumps, per reduction, the median `pack_ms` (enqueue to start) and `collective_ms`
  (start to end) on each device.
Times in a trace of emulated hosts (netns on one machine) share one clock; so do the dumps.
"""
import argparse
import json
import statistics


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("inspect")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--flight", action="append", default=[])
    args = parser.parse_args()

    plan = json.load(open(args.inspect))
    label = {}  # collective id -> (label, bytes per device)
    for bucket in plan["buckets"]:
        label[bucket["collective_id"]] = ("bucket_%d (%d members: %s .. %s)" % (
            bucket["id"], len(bucket["members"]), bucket["members"][0]["tensor"], bucket["members"][-1]["tensor"]),
            bucket["bytes_per_device"])
    for boxing in plan["boxings"]:
        for step in boxing.get("steps", []):
            cid = step.get("collective_id")
            if cid is not None and cid not in label:
                label[cid] = ("%s %s" % (step["kind"], boxing.get("tensor", "?")), step["bytes_per_device"])

    trace = json.load(open(args.trace))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    # A collective act's id: the flow event at the act's own device, track and start.
    flow = {}
    for e in events:
        if e.get("cat") == "collective" and e.get("ph") in ("s", "f"):
            flow[(e["pid"], e["tid"], e["ts"])] = int(e["name"].split()[1])
    backward_end = {}  # (iteration, device) -> us
    acts = {}  # (collective, iteration) -> {device: (start, end)}
    for e in events:
        if e.get("ph") != "X":
            continue
        iteration, device = e["args"]["iteration"], e["pid"]
        if iteration < args.warmup:
            continue
        if e.get("cat") == "compute" and "_grad" in e["name"]:
            key = (iteration, device)
            backward_end[key] = max(backward_end.get(key, 0.0), e["ts"] + e["dur"])
        cid = flow.get((device, e["tid"], e["ts"]))
        if cid is not None and e["tid"] != 0:
            acts.setdefault((cid, iteration), {})[device] = (e["ts"], e["ts"] + e["dur"])
    iterations = sorted({i for i, _ in backward_end})
    devices = sorted({d for _, d in backward_end})
    last_backward = {i: max(backward_end[(i, d)] for d in devices if (i, d) in backward_end) for i in iterations}

    out = {"iterations": len(iterations), "devices": devices,
           "backward_end_before_last_ms": {
               str(d): median([(last_backward[i] - backward_end[(i, d)]) / 1e3 for i in iterations
                               if (i, d) in backward_end]) for d in devices}}
    rows = []
    for cid in sorted({c for c, _ in acts}):
        per = {"last_arrival_ms": [], "end_ms": [], "service_ms": [], "exposed": {d: [] for d in devices}}
        for i in iterations:
            members = acts.get((cid, i))
            if not members or i not in last_backward:
                continue
            arrival = max(s for s, _ in members.values())
            last = max(members, key=lambda d: members[d][0])
            per["last_arrival_ms"].append((arrival - last_backward[i]) / 1e3)
            per["end_ms"].append((max(e for _, e in members.values()) - last_backward[i]) / 1e3)
            per["service_ms"].append((members[last][1] - arrival) / 1e3)
            for d, (s, e) in members.items():
                own = backward_end.get((i, d))
                if own is not None:
                    per["exposed"][d].append(max(0.0, e - max(arrival, own)) / 1e3)
        name, size = label.get(cid, ("collective %d" % cid, None))
        rows.append({"collective": cid, "reduction": name, "bytes_per_device": size,
                     "last_arrival_ms": median(per["last_arrival_ms"]), "end_ms": median(per["end_ms"]),
                     "service_ms": median(per["service_ms"]),
                     "exposed_ms_per_device": {str(d): median(v) for d, v in per["exposed"].items()}})
    rows.sort(key=lambda r: (r["last_arrival_ms"] is None, r["last_arrival_ms"]))

    if args.flight:
        pack, collective = {}, {}
        for path in args.flight:
            dump = json.load(open(path))
            for ring in dump["devices"]:
                for entry in ring["entries"]:
                    if entry["state"] != "ok" or entry["iteration"] < args.warmup or entry["start_ns"] == 0:
                        continue
                    key = (entry["collective"], ring["device"])
                    pack.setdefault(key, []).append((entry["start_ns"] - entry["enqueue_ns"]) / 1e6)
                    collective.setdefault(key, []).append((entry["end_ns"] - entry["start_ns"]) / 1e6)
        for row in rows:
            row["pack_ms"] = {dev: median(v) for (c, dev), v in sorted(pack.items()) if c == row["collective"]}
            row["collective_ms"] = {dev: median(v) for (c, dev), v in sorted(collective.items())
                                    if c == row["collective"]}
    out["reductions"] = rows
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
