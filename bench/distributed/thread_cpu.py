#!/usr/bin/env python3
"""Where the CPU of a launched run went, per thread (distributed_bench.sh --thread_cpu).

  thread_cpu.py sample OUT.jsonl       samples every oneflow_worker and oneflowd thread every
                                       --interval_ms until SIGTERM/SIGINT
  thread_cpu.py summarize OUT.jsonl    one JSON object: per worker (node rank), its compute
                                       thread's run and run-queue wait, its other threads' run,
                                       the daemons' run, all per second of the workers' life

Each sample reads, per thread, /proc/PID/task/TID/schedstat (run ns, run-queue wait ns: time it
was runnable and did not run) and stat (name, nice, state). A compute thread that is runnable
all through forward and backward runs at most `run / (run + wait)` of the time it wanted a
core: the share the scheduler gave it. The sampler itself runs nice 19 so it takes CPU only
where nothing else wants it.

The compute thread of a worker: the thread named "of-compute*" (actors/engine.cc names its
threads), else, for binaries that do not name them, the thread of the highest nice value
(the engine runs communication threads above compute, actors/thread_priority.h) that ran
longest.
"""
import json
import os
import signal
import sys
import time

PROCESS_NAMES = ("oneflow_worker", "oneflowd")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def task_line(pid, tid):
    stat = read("/proc/%d/task/%d/stat" % (pid, tid))
    schedstat = read("/proc/%d/task/%d/schedstat" % (pid, tid))
    if not stat or not schedstat:
        return None
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    rest = stat[stat.rindex(")") + 2:].split()
    run_ns, wait_ns, _ = (int(v) for v in schedstat.split())
    # rest[0] is field 3 (state); nice is field 19, the last CPU field 39.
    return [tid, name, int(rest[16]), rest[0], run_ns, wait_ns, int(rest[36])]


def processes():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        comm = (read("/proc/%s/comm" % entry) or "").strip()
        if comm in PROCESS_NAMES:
            found.append((int(entry), comm))
    return found


def node_rank(pid):
    args = (read("/proc/%d/cmdline" % pid) or "").split("\0")
    for arg in args:
        if arg.startswith("--node_rank="):
            return int(arg.split("=", 1)[1])
    return None


def sample(out_path, interval_s):
    os.nice(19)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    ranks = {}
    with open(out_path, "w") as out:
        while not stop:
            now = time.monotonic_ns()
            record = {"t_ns": now, "processes": []}
            for pid, comm in processes():
                if comm == "oneflow_worker" and pid not in ranks:
                    ranks[pid] = node_rank(pid)
                tasks = []
                try:
                    tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
                except OSError:
                    continue
                for tid in tids:
                    line = task_line(pid, tid)
                    if line:
                        tasks.append(line)
                record["processes"].append({"pid": pid, "comm": comm, "rank": ranks.get(pid), "tasks": tasks})
            out.write(json.dumps(record) + "\n")
            time.sleep(interval_s)


def summarize(path):
    samples = [json.loads(l) for l in open(path) if l.strip()]
    # Per (pid, tid): first and last (t, run, wait), name and nice as last seen.
    first, last, info, life = {}, {}, {}, {}
    for s in samples:
        for p in s["processes"]:
            key_p = p["pid"]
            life.setdefault(key_p, [s["t_ns"], s["t_ns"], p["comm"], p["rank"]])[1] = s["t_ns"]
            for tid, name, nice, state, run, wait, cpu in p["tasks"]:
                key = (key_p, tid)
                first.setdefault(key, (s["t_ns"], run, wait))
                last[key] = (s["t_ns"], run, wait)
                info[key] = (name, nice)
    workers = {pid: v for pid, v in life.items() if v[2] == "oneflow_worker"}
    if not workers:
        return {"thread_cpu": "no oneflow_worker sampled"}
    start = min(v[0] for v in workers.values())
    end = max(v[1] for v in workers.values())
    seconds = max((end - start) / 1e9, 1e-9)

    def delta(key):
        return (last[key][1] - first[key][1]) / 1e6, (last[key][2] - first[key][2]) / 1e6

    result = {"thread_cpu_window_s": round(seconds, 3), "workers": []}
    for pid, (_, _, _, rank) in sorted(workers.items(), key=lambda kv: (kv[1][3] is None, kv[1][3])):
        keys = [k for k in last if k[0] == pid]
        named = [k for k in keys if info[k][0].startswith("of-compute")]
        if named:
            compute = named
        else:
            highest = max(info[k][1] for k in keys)
            compute = [max((k for k in keys if info[k][1] == highest), key=lambda k: delta(k)[0])]
        run = sum(delta(k)[0] for k in compute)
        wait = sum(delta(k)[1] for k in compute)
        others = [k for k in keys if k not in compute]
        busiest = sorted(others, key=lambda k: -delta(k)[0])[:3]
        result["workers"].append({
            "rank": rank,
            "compute_run_ms_per_s": round(run / seconds, 1),
            "compute_wait_ms_per_s": round(wait / seconds, 1),
            "compute_share_when_runnable": round(run / (run + wait), 3) if run + wait > 0 else None,
            "other_threads_run_ms_per_s": round(sum(delta(k)[0] for k in others) / seconds, 1),
            "other_threads_wait_ms_per_s": round(sum(delta(k)[1] for k in others) / seconds, 1),
            "busiest_other_threads": [{"name": info[k][0], "nice": info[k][1],
                                       "run_ms_per_s": round(delta(k)[0] / seconds, 1)} for k in busiest],
        })
    daemons = [k for k in last if life[k[0]][2] == "oneflowd"]
    result["daemons_run_ms_per_s"] = round(sum(delta(k)[0] for k in daemons) / seconds, 1)
    return result


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "sample":
        interval_ms = 20
        for arg in sys.argv[3:]:
            if arg.startswith("--interval_ms="):
                interval_ms = int(arg.split("=", 1)[1])
        sample(sys.argv[2], interval_ms / 1e3)
    elif len(sys.argv) == 3 and sys.argv[1] == "summarize":
        print(json.dumps(summarize(sys.argv[2])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
