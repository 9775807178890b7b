#!/usr/bin/env python3
"""The prediction of one plan for prediction_hosts_bench.sh, from its decision record.

Reads `oneflow inspect PLAN --format=json` on stdin and prints
  "STEP_MS COMPUTE_MS EXPOSED_MS BUBBLE_MS dp=D tp=T pp=P M=K zero=Z[ zero3_regather=false] recompute=R[ pp_schedule=S]"
the chosen layout named as prediction_hosts_layouts.py names the hand layouts, so that
--summarize tells every measured layout apart: a ZB-H1 pipeline from its 1F1B twin and
ZeRO-3 keeping forward's gathered copies from re-gathering (before session 65 the names
left both out, and the summary merged each such pair into one row).
"""
import json
import sys


def line(decision):
    chosen = decision["chosen"]
    layout = chosen["layout"]
    kept = "" if layout.get("zero3_regather", True) else " zero3_regather=false"
    schedule = "" if layout.get("pp_schedule", "1f1b") == "1f1b" else " pp_schedule=" + layout["pp_schedule"]
    return "%.4f %.4f %.4f %.4f dp=%d tp=%d pp=%d M=%d zero=%d%s recompute=%s%s" % (
        1e3 * chosen["step_seconds"], 1e3 * chosen["compute_seconds"],
        1e3 * chosen["exposed_communication_seconds"], 1e3 * chosen["bubble_seconds"], layout["dp"],
        layout["tp"], layout["pp"], layout["micro_batches"], layout["zero"], kept, layout["recompute"], schedule)


if __name__ == "__main__":
    print(line(json.load(sys.stdin)["auto_parallel"]))
