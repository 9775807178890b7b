#!/usr/bin/env python3
"""The hand layouts of prediction_hosts_bench.sh for one cluster of NODES x DEVICES_PER_NODE.

Prints one line per layout, "name|gpt flags|megatron" (megatron: 1 for the textbook layout,
tensor parallelism inside a node and data parallelism across nodes), in a fixed order:
families of data parallelism (micro-batches, ZeRO 1-3, full recomputation, no codecs),
Megatron's layout and its variants, tensor parallelism over every device, pipelines across
nodes with data or tensor parallelism inside them, a stage per device, tensor parallelism
across nodes, and (since session 65) dense Megatron with ZeRO-3 re-gathering and keeping
forward's gathered copies (`--zero3_regather=false`).
With one device per node (2 x 1, 3 x 1) those families collapse (Megatron's layout is pure
dp, and there is no inside of a node), so such a cluster sweeps its own: data parallelism
across the hosts with micro-batches 1/2/4, ZeRO 1-3 (3 also keeping forward's gathered
copies, with and without codecs, since session 65), selective and full recomputation and
each --compression mode (off, auto, int8, int4), tensor parallelism across the hosts, a
pipeline stage per host with 2/4/6/8 micro-batches (4 and 8 also with ZB-H1, `--pp_schedule=zb`:
two layouts since session 57), and combinations of them: 25 layouts (23 before session
65), four
fewer than through session 47 (dense dp with 2 micro-batches, dense ZeRO-3, tp with 2
micro-batches, a dense pipeline: each the neighbour of a layout kept, and three of them the
slowest of the sweep), so that 4 interleaved rounds of every layout fit one bench-lock hold.
A layout the gpt cannot take is left out: rows of a micro-batch that do not split evenly
over dp, heads or hidden not divisible by tp, fewer blocks than stages, ZeRO without dp.

  prediction_hosts_layouts.py NODES DEVICES_PER_NODE --batch=B --layers=L --heads=H --hidden=W
"""
import argparse
import sys


def layouts(nodes, per_node, batch, layers, heads, hidden):
    devices = nodes * per_node
    n, p, d = nodes, per_node, devices
    # (dp, tp, pp, micro_batches, zero, recompute, compression)
    families = [
        (d, 1, 1, 1, 0, "none", "auto"),
        (d, 1, 1, 1, 0, "none", "off"),
        (d, 1, 1, 2, 0, "none", "auto"),
        (d, 1, 1, 1, 1, "none", "auto"),
        (d, 1, 1, 1, 2, "none", "auto"),
        (d, 1, 1, 1, 3, "none", "auto"),
        (d, 1, 1, 1, 0, "full", "auto"),
        (n, p, 1, 1, 0, "none", "auto"),  # Megatron: tp inside a node, dp across nodes
        (n, p, 1, 1, 0, "none", "off"),
        (n, p, 1, 2, 0, "none", "auto"),
        (n, p, 1, 4, 0, "none", "auto"),
        (n, p, 1, 1, 1, "none", "auto"),
        (n, p, 1, 1, 0, "selective", "auto"),
        (1, d, 1, 1, 0, "none", "auto"),
        (1, d, 1, 1, 0, "none", "off"),
        (p, 1, n, 2, 0, "none", "auto"),  # a stage per node, dp inside it
        (p, 1, n, 4, 0, "none", "auto"),
        (p, 1, n, 4, 1, "none", "auto"),
        (1, p, n, 2, 0, "none", "auto"),  # a stage per node, tp inside it
        (1, p, n, 4, 0, "none", "auto"),
        (1, 1, d, 2, 0, "none", "auto"),  # a stage per device
        (1, 1, d, 4, 0, "none", "auto"),
        (n, 1, p, 2, 0, "none", "auto"),  # stages of n consecutive devices
        (p, n, 1, 1, 0, "none", "auto"),  # tp of n consecutive devices: across nodes when p < n
        (p, n, 1, 1, 0, "none", "off"),
        # ZeRO-3 keeping forward's gathered copies (--zero3_regather=false) beside re-gathering.
        (n, p, 1, 1, 3, "none", "off", "1f1b", True),
        (n, p, 1, 1, 3, "none", "off"),
    ]
    if per_node == 1:
        families = [
            (d, 1, 1, 1, 0, "none", "auto"),  # dp across the hosts (Megatron's layout here)
            (d, 1, 1, 1, 0, "none", "off"),
            (d, 1, 1, 1, 0, "none", "int8"),
            (d, 1, 1, 1, 0, "none", "int4"),
            (d, 1, 1, 2, 0, "none", "auto"),
            (d, 1, 1, 4, 0, "none", "auto"),
            (d, 1, 1, 1, 1, "none", "auto"),
            (d, 1, 1, 1, 2, "none", "auto"),
            (d, 1, 1, 1, 3, "none", "auto"),
            (d, 1, 1, 1, 3, "none", "auto", "1f1b", True),  # --zero3_regather=false
            (d, 1, 1, 1, 3, "none", "off", "1f1b", True),
            (d, 1, 1, 2, 1, "none", "auto"),
            (d, 1, 1, 1, 0, "selective", "auto"),
            (d, 1, 1, 1, 0, "full", "auto"),
            (d, 1, 1, 2, 2, "full", "auto"),
            (1, d, 1, 1, 0, "none", "auto"),  # tp across the hosts
            (1, d, 1, 1, 0, "none", "off"),
            (1, d, 1, 1, 0, "selective", "auto"),
            (1, 1, d, 2, 0, "none", "auto"),  # a pipeline stage per host
            (1, 1, d, 4, 0, "none", "auto"),
            (1, 1, d, 6, 0, "none", "auto"),
            (1, 1, d, 8, 0, "none", "auto"),
            (1, 1, d, 4, 0, "full", "auto"),
            # ZB-H1 beside 1F1B: the schedule alone changes (the search prices both).
            (1, 1, d, 4, 0, "none", "auto", "zb"),
            (1, 1, d, 8, 0, "none", "auto", "zb"),
        ]
    seen = set()
    out = []
    for family in families:
        dp, tp, pp, micro, zero, recompute, compression = family[:7]
        schedule = family[7] if len(family) > 7 else "1f1b"
        kept = len(family) > 8 and family[8]
        if dp * tp * pp != devices:
            continue
        if batch % micro != 0 or (batch // micro) % dp != 0:
            continue
        if heads % tp != 0 or hidden % tp != 0 or layers < pp or (zero > 0 and dp < 2):
            continue
        flags = (f"--dp={dp} --tp={tp} --pp={pp} --micro_batches={micro} --zero={zero} "
                 f"--recompute={recompute} --compression={compression}")
        # The name the bench gives the launched plan (prediction_hosts_predicted.py, then
        # " compression=..."), so that a compile failure's line names it alike.
        name = (f"dp={dp} tp={tp} pp={pp} M={micro} zero={zero}" + (" zero3_regather=false" if kept else "") +
                f" recompute={recompute}" + (f" pp_schedule={schedule}" if schedule != "1f1b" else "") +
                f" compression={compression}")
        if schedule != "1f1b":
            flags += f" --pp_schedule={schedule}"
        if kept:
            flags += " --zero3_regather=false"
        if flags in seen:
            continue
        seen.add(flags)
        megatron = int((dp, tp, pp, micro, zero, recompute, compression, schedule) ==
                       (n, p, 1, 1, 0, "none", "auto", "1f1b"))
        out.append(f"{name}|{flags}|{megatron}")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nodes", type=int)
    parser.add_argument("devices_per_node", type=int)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--hidden", type=int, required=True)
    args = parser.parse_args()
    if args.nodes < 1 or args.devices_per_node < 1:
        sys.exit(f"prediction_hosts_layouts.py: nodes {args.nodes} x devices_per_node {args.devices_per_node}: "
                 "both must be >= 1")
    for line in layouts(args.nodes, args.devices_per_node, args.batch, args.layers, args.heads, args.hidden):
        print(line)


if __name__ == "__main__":
    main()
