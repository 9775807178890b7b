#!/usr/bin/env python3
"""Where the CPU of a distributed_bench.sh run goes, launched against in one process.

Two parts, used together over one run of distributed_bench.sh (which runs each plan
first in one process, `oneflow run`, then launched through the daemons):

    bench/distributed/cpu_accounting.py sample --out=threads.json --exe_prefix=W/bin &
    perf record -a -g -F 999 -o run.data -- bench/distributed/distributed_bench.sh --work_dir=W ...
    kill -INT %1; perf script -i run.data -F comm,pid,tid,time,ip,sym > run.txt
    bench/distributed/cpu_accounting.py report run.txt --threads=threads.json

`sample` reads utime + stime and the nice value of every thread of the oneflow,
oneflow_worker and oneflowd processes whose binary is the bench's private copy (under
--exe_prefix: not another user's daemons or workers) from /proc until interrupted, then
writes them; `report` counts perf samples of those processes only. A
thread's role comes from its nice value: the engine runs communication threads
`communication_priority_levels` below compute threads (actors/thread_priority.h), so the
lowest nice value of a process is its communication threads'; every other thread (the
compute threads, and the main, gRPC and UCX helper threads, which keep the process's
value) is "compute_and_other" (when every thread has the same value the role is "all").

`report` prints one JSON line per process kind: milliseconds of CPU per second of the
run's steady middle, per thread role, from /proc ("proc_ms_per_s": exact ticks) and per
category of what perf's samples were doing ("perf_ms_per_s"). Process kinds: "in_process"
(the `oneflow` process with the most CPU: `oneflow run`), "workers" (every
`oneflow_worker`), "daemons" (`oneflowd`), "launch_client" (the other `oneflow`
processes); everything else (other users of the machine) is reported as a total over
each window. The steady middle of a kind is the span of its samples less the first
trim_head and the last trim_tail of it (start-up: plan loading, wire-up; the end: metrics,
teardown), so the rates compare the steps, not the starts. The launch client and the
daemons are measured over the workers' middle.

A sample's category is the first rule that matches (the codec by its leaf functions, as
opt binaries have no frame pointers and a user-space stack is often its leaf alone):
  codec_encode, codec_decode, codec_hadamard, codec_meter_error (AddEncodingError: the
      metering's error sums)
  cma_copy      the kernel's cross-memory-attach copies (process_vm_readv/writev)
  user_copy     memcpy/memmove in user space
  ucx_progress  ucp_/uct_/ucs_ frames (progress, spin, matching)
  poll_wake     blocking and waking: ppoll, poll, futex, epoll, schedule, nanosleep
  grpc          gRPC and protobuf
  kernel_other  other kernel frames (syscalls, page faults, interrupts)
  compute       everything else (kernels of the plan, the engine)
"""
import argparse
import collections
import json
import re
import sys

# The codec's passes by their leaf functions (opt binaries have no frame pointers, so the
# user-space part of a stack is often the leaf alone): encode (quantize, scales), decode
# (dequantize, emit), the Hadamard rotation (both), and the metering's error sum.
CODEC = [
    ("codec_meter_error", re.compile(r"AddEncodingError")),
    ("codec_encode", re.compile(r"Quantize(Int|Fp)|FloatsToFp8|EncodeBf16|MeasureGroup|ScaleFor|oneflow::Encode\b|Compensate|KeepResidual")),
    ("codec_decode", re.compile(r"Dequantize|Fp8ToFloats|DecodeBf16|EmitValues|EmitScaled|oneflow::Decode")),
    ("codec_hadamard", re.compile(r"Hadamard")),
]
RULES = [
    ("cma_copy", re.compile(r"process_vm_r|process_vm_w|_copy_to_iter|_copy_from_iter|process_vm_rw")),
    ("user_copy", re.compile(r"__mem(move|cpy)|^memcpy|^memmove")),
    ("ucx_progress", re.compile(r"^(ucp|uct|ucs)_")),
    ("poll_wake", re.compile(r"ppoll|do_sys_poll|futex|epoll|^schedule|nanosleep|do_nanosleep")),
    ("grpc", re.compile(r"grpc|google::protobuf")),
]
KERNEL_FRAME = re.compile(r"\[kernel\.kallsyms\]|^(entry_|do_syscall|__x64_sys|asm_|exc_)")


def parse(path):
    """Yields (comm, pid, tid, time_s, frames leaf first)."""
    header = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+(\d+\.\d+):")
    sample = None
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                if sample:
                    yield sample
                sample = None
                continue
            if not line[0].isspace():
                if sample:
                    yield sample
                m = header.match(line)
                sample = (m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)), []) if m else None
                continue
            if sample is not None:
                parts = line.split(None, 1)
                sym = parts[1].strip() if len(parts) > 1 else "?"
                sample[4].append(re.sub(r"\+0x[0-9a-f]+", "", sym))
    if sample:
        yield sample


def category(frames):
    for frame in frames[:3]:
        for name, pattern in CODEC:
            if pattern.search(frame):
                return name
    for name, pattern in RULES:
        if any(pattern.search(f) for f in frames[:12]):
            return name
    if frames and KERNEL_FRAME.search(frames[0]):
        return "kernel_other"
    return "compute"


NAMES = ("oneflow", "oneflow_worker", "oneflowd")


def sample(out, interval, exe_prefix):
    """Every `interval` s: (time, ticks, nice) per thread of NAMES' processes whose binary
    is under `exe_prefix` (the bench's private copies: not another user's), until SIGINT."""
    import glob, os, signal, time
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    threads = {}  # "pid/tid" -> {"comm", "nice", "series": [[t, ticks], ...]}
    while not stop:
        now = time.time()
        for path in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
            try:
                text = open(path).read()
            except OSError:
                continue
            pid = path.split("/")[2]
            comm = open("/proc/%s/comm" % pid).read().strip() if os.path.exists("/proc/%s/comm" % pid) else ""
            if comm not in NAMES:
                continue
            try:
                if not os.readlink("/proc/%s/exe" % pid).startswith(exe_prefix):
                    continue
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
            nice = int(fields[16])  # field 19
            key = "%s/%s" % (pid, path.split("/")[4])
            try:
                thread = open(path[:-len("stat")] + "comm").read().strip()
            except OSError:
                thread = ""
            entry = threads.setdefault(key, {"comm": comm, "thread": thread, "nice": nice, "series": []})
            entry["nice"] = min(entry["nice"], nice)
            if not entry["series"] or entry["series"][-1][1] != ticks:
                entry["series"].append([round(now, 3), ticks])
            elif len(entry["series"]) == 1:
                entry["series"].append([round(now, 3), ticks])
            else:
                entry["series"][-1][0] = round(now, 3)
        time.sleep(interval)
    json.dump({"hz": os.sysconf("SC_CLK_TCK"), "threads": threads}, open(out, "w"))


def ticks_in(series, lo, hi):
    """Ticks of a cumulative series between times lo and hi (linear between samples)."""
    def at(t):
        if t <= series[0][0]:
            return series[0][1]
        for (t0, v0), (t1, v1) in zip(series, series[1:]):
            if t0 <= t <= t1:
                return v0 + (v1 - v0) * (t - t0) / max(t1 - t0, 1e-9)
        return series[-1][1]
    return at(hi) - at(lo)


def report(args):
    samples = list(parse(args.perf_script))
    threads = json.load(open(args.threads)) if args.threads else {"hz": 100, "threads": {}}
    hz = threads["hz"]
    # distributed_bench.sh runs each mode in one process (`oneflow run`), then launches it
    # (`oneflow launch`, whose workers the daemons start): the `oneflow` processes alternate
    # run, launch, run, ... Round N (--round) is the N-th pair and the workers that ran
    # during its launch; the daemons serve every round.
    first_seen, last_seen, ticks = {}, {}, collections.Counter()
    for key, t in threads["threads"].items():
        pid = int(key.split("/")[0])
        first_seen[pid] = min(first_seen.get(pid, t["series"][0][0]), t["series"][0][0])
        last_seen[pid] = max(last_seen.get(pid, 0), t["series"][-1][0])
        ticks[pid] += t["series"][-1][1] - t["series"][0][1]
    comm_of = {int(key.split("/")[0]): t["comm"] for key, t in threads["threads"].items()}
    workers = [p for p, c in comm_of.items() if c == "oneflow_worker"]

    def starts_workers(cli):
        return any(first_seen[cli] <= first_seen[w] <= last_seen[cli] for w in workers)

    # The bench's other `oneflow` processes (`calibrate`, which starts workers through the
    # daemons too, `inspect`, `profile`) are told apart from the pairs: an in-process run
    # starts no workers and is one of the busy ones; its launch is the first client after it
    # that starts workers.
    clis = sorted((p for p, c in comm_of.items() if c == "oneflow"), key=lambda p: first_seen[p])
    alone = [p for p in clis if not starts_workers(p)]
    busiest = max((ticks[p] for p in alone), default=0)
    runs = [p for p in alone if ticks[p] >= 0.1 * busiest and busiest > 0]
    rounds = len(runs)
    if not 1 <= args.round <= max(rounds, 1):
        sys.exit("--round=%d: the run has %d round(s)" % (args.round, rounds))
    in_process = runs[args.round - 1] if rounds else None
    client = next((p for p in clis if in_process is not None and p not in alone and
                   first_seen[p] >= last_seen[in_process]), None)
    ours = {p for p, c in comm_of.items() if c == "oneflowd" or p in (in_process, client) or
            (c == "oneflow_worker" and client is not None and
             first_seen[client] <= first_seen[p] <= last_seen[client])}
    for key in [k for k in threads["threads"] if int(k.split("/")[0]) not in ours]:
        del threads["threads"][key]

    def kind(comm, pid):
        # By the process, not the thread: gRPC and UCX rename their threads.
        if pid == 0:
            # The idle task: not CPU anyone used, and perf's default event (cycles) does
            # not count a halted CPU, so its samples do not measure idle time either.
            return "idle"
        if pid not in ours:
            return "other"
        comm = comm_of[pid]
        if comm == "oneflow":
            return "in_process" if pid == in_process else "launch_client"
        if comm.startswith("oneflow_worke"):
            return "workers"
        if comm == "oneflowd":
            return "daemons"
        return "other"

    # Roles: by the thread's name where the engine named it (actors/engine.cc: of-comm-D,
    # of-transfer-D, of-compute-D); else per process, the lowest nice value is its
    # communication threads' (engines before the names, or kernels without per-thread
    # slices, actors/thread_priority.h).
    def role_by_name(thread):
        if thread.startswith(("of-comm", "of-transfer")):
            return "communication"
        if thread.startswith("of-compute"):
            return "compute"
        return None

    lowest = {}
    for key, t in threads["threads"].items():
        pid = key.split("/")[0]
        lowest.setdefault(pid, set()).add(t["nice"])
    named = any(role_by_name(t.get("thread", "")) for t in threads["threads"].values())
    role_of = {}
    for key, t in threads["threads"].items():
        pid, tid = key.split("/")
        nices = lowest[pid]
        if named:
            role_of[int(tid)] = role_by_name(t.get("thread", "")) or "other"
        else:
            role_of[int(tid)] = "all" if len(nices) == 1 else (
                "communication" if t["nice"] == min(nices) else "compute_and_other")

    spans = {}
    for s in samples:
        k = kind(s[0], s[1])
        if k in ("other", "idle"):
            continue
        lo, hi = spans.get(k, (s[3], s[3]))
        spans[k] = (min(lo, s[3]), max(hi, s[3]))
    windows = {}
    for k, (lo, hi) in spans.items():
        width = hi - lo
        windows[k] = (lo + args.trim_head * width, hi - args.trim_tail * width)
    for k in ("launch_client", "daemons"):
        if "workers" in windows:
            windows[k] = windows["workers"]
    if "in_process" in windows:
        windows["other_during_in_process"] = windows["in_process"]
    if "workers" in windows:
        windows["other_during_launched"] = windows["workers"]

    counts = collections.defaultdict(collections.Counter)
    leaves = collections.defaultdict(collections.Counter)
    for s in samples:
        k = kind(s[0], s[1])
        if k == "idle":
            continue
        targets = [k] if k != "other" else ["other_during_in_process", "other_during_launched"]
        for t in targets:
            if t not in windows or not windows[t][0] <= s[3] <= windows[t][1]:
                continue
            role = role_of.get(s[2], "all") if t in ("in_process", "workers") else "all"
            counts[t][(role, category(s[4]))] += 1
            leaves[(t, role)][s[4][0] if s[4] else "?"] += 1

    proc = collections.defaultdict(collections.Counter)
    proc_windows = {}
    by_kind = collections.defaultdict(list)
    for key, t in threads["threads"].items():
        by_kind[kind(t["comm"], int(key.split("/")[0]))].append((key, t))
    for k, entries in by_kind.items():
        # A kind's active span: from the first to the last time any of its threads gained ticks.
        moving = [p for _, t in entries for a, p in zip(t["series"], t["series"][1:]) if p[1] > a[1]]
        if not moving:
            continue
        lo, hi = min(p[0] for p in moving), max(p[0] for p in moving)
        width = hi - lo
        proc_windows[k] = (lo + args.trim_head * width, hi - args.trim_tail * width)
    for k in ("launch_client", "daemons"):
        if "workers" in proc_windows:
            proc_windows[k] = proc_windows["workers"]
    for k, entries in by_kind.items():
        if k not in proc_windows:
            continue
        lo, hi = proc_windows[k]
        for key, t in entries:
            role = role_of[int(key.split("/")[1])] if k in ("in_process", "workers") else "all"
            proc[k][role] += ticks_in(t["series"], lo, hi)

    ms_per_sample = 1000.0 / args.frequency
    for k in ("in_process", "workers", "launch_client", "daemons", "other_during_in_process",
              "other_during_launched"):
        if k not in counts and k not in proc:
            continue
        line = {"kind": k}
        if k in proc:
            lo, hi = proc_windows[k]
            seconds = max(hi - lo, 1e-9)
            line["proc_window_s"] = round(seconds, 2)
            line["proc_ms_per_s"] = {role: round(v * 1000.0 / hz / seconds, 1) for role, v in sorted(proc[k].items())}
            line["proc_ms_per_s"]["total"] = round(sum(proc[k].values()) * 1000.0 / hz / seconds, 1)
        if k in counts:
            lo, hi = windows[k]
            seconds = max(hi - lo, 1e-9)
            table = collections.defaultdict(dict)
            for (role, cat), n in sorted(counts[k].items()):
                table[role][cat] = round(n * ms_per_sample / seconds, 1)
            for role in table:
                table[role]["all"] = round(sum(table[role].values()), 1)
            line["perf_window_s"] = round(seconds, 2)
            line["perf_ms_per_s"] = table
            line["perf_total_ms_per_s"] = round(sum(counts[k].values()) * ms_per_sample / seconds, 1)
            if args.top:
                line["top_leaves_ms_per_s"] = {
                    role: [[leaf, round(n * ms_per_sample / seconds, 1)] for leaf, n in c.most_common(args.top)]
                    for (kk, role), c in sorted(leaves.items()) if kk == k}
        print(json.dumps(line))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--out", required=True)
    s.add_argument("--interval", type=float, default=0.2)
    s.add_argument("--exe_prefix", required=True,
                   help="only processes whose binary is under this path (distributed_bench.sh's work_dir)")
    r = sub.add_parser("report")
    r.add_argument("perf_script")
    r.add_argument("--threads", help="what `sample` wrote")
    r.add_argument("--trim_head", type=float, default=0.2)
    r.add_argument("--trim_tail", type=float, default=0.05)
    r.add_argument("--frequency", type=float, default=999.0, help="perf record -F")
    r.add_argument("--round", type=int, default=1,
                   help="which mode of the run: its N-th in-process run and launch (1: the first)")
    r.add_argument("--top", type=int, default=0, help="also list each role's N busiest leaf functions")
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.out, args.interval, args.exe_prefix)
    else:
        report(args)


if __name__ == "__main__":
    sys.exit(main())
