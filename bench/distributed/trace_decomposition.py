#!/usr/bin/env python3
"""Where a launched step's communication time goes (issue 24; docs/benchmarks.md).

Reads a trace of `oneflow launch --trace` of a plan on nodes x devices_per_node devices
laid out as [nodes, devices_per_node] (every case of distributed_bench.sh), and splits the
time of every collective act of the measured iterations into
  - wait:     from the act's start to the latest start of the same act (same actor name,
              same iteration) on the other members of its group, i.e. waiting for the
              slowest member to arrive;
  - transfer: from that last arrival to the act's end: the bytes on the wire (or through
              shared memory) and the reductions between them.
Acts are grouped by thread: the compute thread's boxing acts are local steps (no peer);
a communication thread's group is read from its name: "communication" (stream 0) and
"communication stream K". Which hierarchy axis a stream's collectives run on is given by
--stream_axes (the plan's `oneflow inspect` lists it under "communication streams"); axis 0
groups are the devices at the same position on every node (cross-node), axis 1 the devices
of one node (in-node).

Per stream it prints wait and transfer per iteration and device, the union of the
stream's transfer intervals (time in which at least one transfer of it ran), and for the
cross-node stream: how much of a host's cross-node transfer time had both of its devices
transferring at once (their traffic shares the host's link), and, given
--link_bytes_per_iter and --rate_mbit, the achieved link rate while a transfer ran.
Output: one JSON object on stdout. A benchmark helper: it asserts nothing.

  trace_decomposition.py TRACE.json --nodes=3 --devices_per_node=2 --warmup=2 \
      --stream_axes=1,0 [--link_bytes_per_iter=B --rate_mbit=1000]
"""
import argparse
import collections
import json
import statistics


def union_length(intervals):
    total, end = 0.0, None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def intersect_length(a, b):
    """Length of (union of a) intersected with (union of b)."""
    return union_length(a) + union_length(b) - union_length(a + b)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--devices_per_node", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--stream_axes", default="1,0",
                        help="hierarchy axis of stream 0, 1, ... (comma separated)")
    parser.add_argument("--link_bytes_per_iter", type=float, default=0)
    parser.add_argument("--rate_mbit", type=float, default=0)
    args = parser.parse_args()
    stream_axes = [int(a) for a in args.stream_axes.split(",")]
    dpn = args.devices_per_node

    trace = json.load(open(args.trace))
    events = trace["traceEvents"]
    thread_names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            thread_names[(e["pid"], e["tid"])] = e["args"]["name"]

    def stream_of(pid, tid):
        name = thread_names.get((pid, tid), "")
        if name == "communication":
            return 0
        if name.startswith("communication stream "):
            return int(name.rsplit(" ", 1)[1])
        return None

    def group_of(pid, axis):
        node, local = divmod(pid, dpn)
        return ("axis0", local) if axis == 0 else ("axis1", node)

    acts = [e for e in events if e.get("ph") == "X" and e["args"]["iteration"] >= args.warmup]
    iterations = sorted({e["args"]["iteration"] for e in acts})
    devices = sorted({e["pid"] for e in acts})
    # Last arrival of every (actor name, iteration, group).
    last_start = {}
    comm = []
    for e in acts:
        stream = stream_of(e["pid"], e["tid"])
        if stream is None:
            continue
        axis = stream_axes[stream] if stream < len(stream_axes) else None
        key = (e["name"], e["args"]["iteration"], group_of(e["pid"], axis))
        last_start[key] = max(last_start.get(key, -1e30), e["ts"])
        comm.append((e, stream, key))

    per = collections.defaultdict(lambda: {"acts": 0, "wait_us": 0.0, "transfer_us": 0.0,
                                           "gradient_transfer_us": 0.0})
    transfer_intervals = collections.defaultdict(list)  # (stream, pid) -> [(s, e)]
    compute_intervals = collections.defaultdict(list)   # pid -> [(s, e)]
    bucket_transfer = collections.defaultdict(list)     # (stream, bucket name) -> transfer us
    for e in acts:
        if thread_names.get((e["pid"], e["tid"])) == "compute":
            compute_intervals[e["pid"]].append((e["ts"], e["ts"] + e["dur"]))
    for e, stream, key in comm:
        arrival = min(max(last_start[key], e["ts"]), e["ts"] + e["dur"])
        wait = arrival - e["ts"]
        transfer = e["ts"] + e["dur"] - arrival
        p = per[stream]
        p["acts"] += 1
        p["wait_us"] += wait
        p["transfer_us"] += transfer
        if "bucket_" in e["name"] or "_grad" in e["name"]:
            p["gradient_transfer_us"] += transfer
        transfer_intervals[(stream, e["pid"])].append((arrival, e["ts"] + e["dur"]))
        if e["name"].startswith("bucket_"):
            bucket_transfer[(stream, e["name"])].append(transfer)

    scale = 1.0 / (len(iterations) * len(devices) * 1e3)  # us -> ms per iteration and device
    out = {"trace": args.trace, "iterations": len(iterations), "devices": len(devices), "streams": []}
    for stream in sorted(per):
        p = per[stream]
        unions = [union_length(transfer_intervals[(stream, pid)]) for pid in devices]
        compute_overlap = [intersect_length(transfer_intervals[(stream, pid)], compute_intervals[pid])
                           for pid in devices]
        axis = stream_axes[stream] if stream < len(stream_axes) else None
        line = {"stream": stream, "axis": axis, "crosses_nodes": axis == 0,
                "acts_per_iteration_and_device": round(p["acts"] / (len(iterations) * len(devices)), 1),
                "wait_ms": round(p["wait_us"] * scale, 2),
                "transfer_ms": round(p["transfer_us"] * scale, 2),
                "gradient_transfer_ms": round(p["gradient_transfer_us"] * scale, 2),
                "transfer_union_ms": round(sum(unions) * scale, 2),
                "transfer_under_compute_ms": round(sum(compute_overlap) * scale, 2)}
        if axis == 0 and dpn > 1:
            # Per host: time any of its devices transferred across nodes, and time all did.
            any_ms, all_ms = [], []
            for node in range(args.nodes):
                members = [transfer_intervals[(stream, node * dpn + l)] for l in range(dpn)]
                any_ms.append(union_length(sum(members, [])))
                both = members[0]
                for m in members[1:]:
                    both = [(max(a, c), min(b, d)) for a, b in both for c, d in m if min(b, d) > max(a, c)]
                all_ms.append(union_length(both))
            host_any = sum(any_ms) / (len(iterations) * args.nodes * 1e3)
            host_all = sum(all_ms) / (len(iterations) * args.nodes * 1e3)
            line.update({"host_transfer_ms": round(host_any, 2),
                         "host_all_devices_transferring_ms": round(host_all, 2)})
            if args.link_bytes_per_iter and args.rate_mbit and host_any > 0:
                link_ms = args.link_bytes_per_iter * 8 / (args.rate_mbit * 1e6) * 1e3
                line.update({"link_ms": round(link_ms, 2),
                             "link_busy_while_transferring": round(link_ms / host_any, 3)})
        # Other streams running beside this one's transfers, per device.
        for other in sorted(per):
            if other == stream:
                continue
            beside = [intersect_length(transfer_intervals[(stream, pid)], transfer_intervals[(other, pid)])
                      for pid in devices]
            line["transfer_beside_stream_%d_ms" % other] = round(sum(beside) * scale, 2)
        buckets = {name: round(statistics.median(v) / 1e3, 2)
                   for (s, name), v in sorted(bucket_transfer.items()) if s == stream}
        if buckets:
            line["bucket_transfer_median_ms"] = buckets
        out["streams"].append(line)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
