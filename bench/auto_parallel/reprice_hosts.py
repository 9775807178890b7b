#!/usr/bin/env python3
"""Prices the hand layouts of an earlier prediction_hosts_bench.sh run again, measuring nothing.

  bench/auto_parallel/reprice_hosts.py --run=RUN.jsonl --codecs=CLUSTER.jsonl --bin_dir=DIR > NEW.jsonl
  bench/auto_parallel/prediction_hosts_bench.sh --summarize=NEW.jsonl

Per cluster of the run, the calibration files are rebuilt from the run's calibration line
("auto_parallel_prediction_hosts_calibration": both link levels, the compute rates, the
host line and, in runs since session 45, the pipeline transfer line) with the codec lines of --codecs (the line does not keep the codec throughputs:
take a cluster.jsonl of another run, e.g. a --keep run's) and, for a run recorded without one, the
"memory_cached" compute line of --codecs, the "cluster" file without the
host line and the "shared_host" file with it, both with the machine line when the run's
line has one ("machine_shared") or --machine_cores gives it; with --machine_turns_from_host, a machine line
of more nodes than cores recorded before `oneflow calibrate --nodes` measured the devices' turns on them gets
the run's host line's terms when that line measured one device per node (the same measurement on the same
machine: tools/cli/shared_machine_turns.h); with --machine_from=FILE (a file `oneflow calibrate --nodes` wrote on
this machine, e.g. a --keep run's cluster.jsonl) the machine line of a cluster of that many nodes is that file's, its
turns included (since session 47 measured across one process per node: "processes"), in place of the run's: a new
measurement priced against the run's measured steps, which is only fair when the file measured the same tree's
runtime on the same machine; with --inter_node_link_from=FILE the inter-node link line (latency and bandwidth)
of FILE in place of every cluster's (session 48: the daemons' latency measured 88-314 us within 15 minutes on
the same links). Every hand layout line (searched false) is
compiled again with `gpt --predict_step` and each file, its predicted step read from the
plan's decision record (`oneflow inspect --format=json`), and printed with the run's
measured steps ("measured_ms", "measured_repeats_ms") and the errors recomputed, so the
summary gives the run's figures under the model of DIR's binaries. The "link_rate"
prediction is left as the run recorded it; searched lines are dropped (a search's choice
needs a launch).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def calibration_text(line, codec_lines, with_host, machine):
    out = [l for l in codec_lines if l.startswith('{"codec"')]
    for level in ("intra_node", "inter_node"):
        link = line["link_" + level]
        out.append(json.dumps({"link": level, "latency_seconds": link["latency_seconds"],
                               "bytes_per_second": link["bytes_per_second"], "method": "rebuilt from a run's line"}))
    for kind in ("gemm", "memory"):
        out.append(json.dumps({"compute": kind, "per_second": line["compute_" + kind]["per_second"],
                               "method": "rebuilt from a run's line"}))
    # The GEMM-by-shape model (since session 50; without it every GEMM is priced at the one
    # rate and the reprice does not reproduce the run's predictions).
    if line.get("compute_gemm_shape"):
        out.append(json.dumps(dict({"compute": "gemm_shape"}, **line["compute_gemm_shape"],
                                   method="rebuilt from a run's line")))
    # The cached memory rate (session 47): the run's own, else --codecs' file's (measured on
    # this machine since: runs before session 47 have none).
    if line.get("compute_memory_cached"):
        out.append(json.dumps(dict({"compute": "memory_cached"}, **line["compute_memory_cached"],
                                   method="rebuilt from a run's line")))
    else:
        out.extend(l for l in codec_lines if l.startswith('{"compute": "memory_cached"'))
    if with_host and line.get("host_in_process"):
        host = dict(line["host_in_process"])
        out.append(json.dumps(dict({"host": "in_process"}, **host, method="rebuilt from a run's line")))
    if machine:
        out.append(json.dumps(dict({"machine": "shared"}, **machine, method="rebuilt from a run's line")))
    if line.get("transfer_inter_node"):
        # The pipeline transfer's latency (since session 45; older runs' lines have none).
        out.append(json.dumps(dict({"transfer": "inter_node"}, **line["transfer_inter_node"],
                                   method="rebuilt from a run's line")))
    return "".join(l + "\n" for l in out)


def layout_flags(layout):
    parts = dict(p.split("=", 1) for p in layout.split())
    return ["--dp=" + parts["dp"], "--tp=" + parts["tp"], "--pp=" + parts["pp"],
            "--micro_batches=" + parts["M"], "--zero=" + parts["zero"], "--recompute=" + parts["recompute"],
            "--compression=" + parts.get("compression", "auto")] + (
               ["--pp_schedule=" + parts["pp_schedule"]] if "pp_schedule" in parts else [])


def predicted_ms(bin_dir, gpt_flags, nodes, dpn, layout, calibration, work, sbp_search):
    plan = os.path.join(work, "layout.plan")
    subprocess.run([os.path.join(bin_dir, "examples/gpt/gpt"), "--nodes=%d" % nodes, "--devices_per_node=%d" % dpn]
                   + gpt_flags.split() + layout_flags(layout)
                   + ["--predict_step", "--sbp_search" if sbp_search else "--nosbp_search",
                      "--codec_calibration=" + calibration, "--plan_out=" + plan],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = subprocess.run([os.path.join(bin_dir, "tools/cli/oneflow"), "inspect", plan, "--format=json"],
                          check=True, capture_output=True, text=True).stdout
    chosen = json.loads(text)["auto_parallel"]["chosen"]
    return [round(1e3 * chosen[k], 4) for k in ("step_seconds", "compute_seconds",
                                                "exposed_communication_seconds", "bubble_seconds")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--codecs", required=True)
    parser.add_argument("--bin_dir", required=True)
    parser.add_argument("--machine_cores", type=int, default=0,
                        help="for a run recorded before `oneflow calibrate --nodes` wrote its machine line: add one "
                             "(every node on one machine of this many cores) to both files; 0: only the run's own")
    parser.add_argument("--machine_turns_from_host", action="store_true",
                        help="put the run's host line terms (devices = nodes) on a machine line of more nodes than "
                             "cores that has none, as `oneflow calibrate --nodes` now measures them")
    parser.add_argument("--machine_from", default="",
                        help="a calibration file whose machine line replaces the run's for a cluster of its nodes")
    parser.add_argument("--inter_node_link_from", default="",
                        help="a calibration file (`oneflow calibrate --nodes`, e.g. a --keep run's cluster.jsonl) whose "
                             "inter-node link line (latency and bandwidth) replaces every cluster's of the run: how "
                             "the run prices with another measurement of the same links")
    args = parser.parse_args()
    codec_lines = [l.strip() for l in open(args.codecs)
                   if l.startswith('{"codec"') or l.startswith('{"compute": "memory_cached"')]
    machine_from = None
    if args.machine_from:
        rows = [json.loads(l) for l in open(args.machine_from) if l.strip()]
        machine_from = next(({k: v for k, v in r.items() if k not in ("machine", "method")}
                             for r in rows if "machine" in r), None)
        if machine_from is None:
            sys.exit("--machine_from=%s has no machine line" % args.machine_from)
    inter_node_link = None
    if args.inter_node_link_from:
        rows = [json.loads(l) for l in open(args.inter_node_link_from) if l.strip()]
        inter_node_link = next(({k: r[k] for k in ("latency_seconds", "bytes_per_second")}
                                for r in rows if r.get("link") == "inter_node"), None)
        if inter_node_link is None:
            sys.exit("--inter_node_link_from=%s has no inter-node link line" % args.inter_node_link_from)
    lines = [json.loads(l) for l in open(args.run) if l.strip()]
    config = next(l["config"] for l in lines if "config" in l)
    calibrations = {l["cluster"]: l for l in lines if l.get("bench") == "auto_parallel_prediction_hosts_calibration"}
    with tempfile.TemporaryDirectory() as work:
        files = {}
        for cluster, line in calibrations.items():
            if inter_node_link is not None:
                line = dict(line, link_inter_node=inter_node_link)
                calibrations[cluster] = line
            machine = line.get("machine_shared")
            if machine is None and args.machine_cores > 0:
                machine = {"nodes": int(cluster.split("x")[0]), "cores": args.machine_cores}
            if machine_from is not None and machine_from["nodes"] == int(cluster.split("x")[0]):
                machine = machine_from
                line = dict(line, machine_shared=machine_from)
                calibrations[cluster] = line
            host = line.get("host_in_process")
            if (args.machine_turns_from_host and machine and "devices" not in machine and host
                    and machine["nodes"] > machine["cores"] and host["devices"] == machine["nodes"]):
                machine = dict(machine, **{k: v for k, v in host.items() if k != "cores"})
            for name, with_host in (("cluster", False), ("shared_host", True)):
                path = os.path.join(work, "%s.%s.jsonl" % (cluster, name))
                with open(path, "w") as f:
                    f.write(calibration_text(line, codec_lines, with_host, machine))
                files[cluster, name] = path
        print(json.dumps({"config": dict(config, repriced_from=os.path.basename(args.run),
                                         machine_from=os.path.basename(args.machine_from) or None,
                                         inter_node_link_from=os.path.basename(args.inter_node_link_from) or None)}))
        for line in lines:
            if line.get("bench") == "auto_parallel_prediction_hosts_calibration":
                # With --machine_from or --inter_node_link_from, the lines priced with.
                print(json.dumps(calibrations[line["cluster"]]))
            if line.get("bench") != "auto_parallel_prediction_hosts" or line.get("searched"):
                continue
            cluster = line["cluster"]
            # The hand layouts as the run compiled them: greedy per-op SBP before session 58.
            sbp_search = bool(config.get("hand_sbp_search", 0))
            step, compute, exposed, bubble = predicted_ms(args.bin_dir, config["gpt_flags"], line["nodes"],
                                                          line["devices_per_node"], line["layout"],
                                                          files[cluster, "cluster"], work, sbp_search)
            shared = predicted_ms(args.bin_dir, config["gpt_flags"], line["nodes"], line["devices_per_node"],
                                  line["layout"], files[cluster, "shared_host"], work, sbp_search)[0]
            measured = line["measured_ms"]
            error = lambda p: None if measured is None else round((p - measured) / measured, 4)
            line.update({"predicted_ms": step, "predicted_compute_ms": compute,
                         "predicted_exposed_communication_ms": exposed, "predicted_bubble_ms": bubble,
                         "error": error(step), "shared_host_predicted_ms": shared, "shared_host_error": error(shared)})
            line.pop("launch_summary", None)
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    sys.exit(main())
