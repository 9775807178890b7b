#!/usr/bin/env python3
"""The plans of prediction_hosts_bench.sh's confirming round, chosen from the sweep's launches.

  prediction_hosts_confirm.py DIR COUNT ENTRY...

ENTRY is one compiled plan of the sweep, "index|flags|megatron|searched|calibration"
(run_cluster's own list); DIR/layout<index>.repeats holds its launches, one "STEP LOAD LOG"
line each (STEP "null" when the launch failed). Prints, one index a line:
  - the COUNT hand layouts (searched 0) of the lowest median step, ties in the sweep's order;
  - the hand layout of the lowest median step without a forced codec (--compression auto,
    the gpt's default, or off), when it is not among them: --auto_parallel's `auto` admits a
    codec only where its error bound holds, so this is the best the search could choose;
  - every searched layout (searched 1) with a launch that ran.
Nothing with COUNT 0. A plan whose launches all failed is left out.
"""
import statistics
import sys


def median_step(directory, index):
    """The median of a plan's launches that ran, or None."""
    with open("%s/layout%s.repeats" % (directory, index)) as launches:
        steps = [float(fields[0]) for fields in (line.split() for line in launches)
                 if fields and fields[0] != "null"]
    return statistics.median(steps) if steps else None


def compression_of(flags):
    return flags.split("--compression=")[1].split()[0] if "--compression=" in flags else "auto"


def candidates(directory, count, entries):
    if count == 0:
        return []
    hand, searched = [], []
    for entry in entries:
        index, flags, _, is_searched, _ = entry.split("|")
        step = median_step(directory, index)
        if step is None:
            continue
        (searched if is_searched == "1" else hand).append((step, index, compression_of(flags)))
    hand.sort(key=lambda row: row[0])  # a stable sort: ties keep the sweep's order
    chosen = hand[:count]
    admissible = [row for row in hand if row[2] in ("auto", "off")]
    if admissible and admissible[0] not in chosen:
        chosen.append(admissible[0])
    return [row[1] for row in chosen + searched]


def main():
    if len(sys.argv) < 3 or not sys.argv[2].isdigit():
        sys.exit("usage: prediction_hosts_confirm.py DIR COUNT ENTRY...")
    for index in candidates(sys.argv[1], int(sys.argv[2]), sys.argv[3:]):
        print(index)


if __name__ == "__main__":
    main()
