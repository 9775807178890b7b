#!/usr/bin/python3
"""Our training step next to PyTorch's, case by case; run through vs_pytorch.sh.

For each case: our plan is compiled by examples/mlp, examples/gpt or examples/llama (--plan_out),
summarised by plan_summary (parameters, forward ops) and trained by `oneflow run PLAN
--metrics=FILE`; PyTorch trains the same model with torch_step.py. The two alternate,
`--rounds` times each, never at the same time. A side's figure is the median of its step
times after the first `--warmup` iterations of each run, over its quiet runs (other
processes took <= 0.2 cores), or over all its runs when none was quiet ("noisy": true).
--max_rounds retries a side until it has --rounds quiet runs; --wait_quiet waits before
each run for the machine to go idle.

The models are checked, not assumed, to match: the same trainable parameter count and
sizes, and the same count of each forward compute op (our plan's ops up to the loss
against the nodes of PyTorch's autograd graph): model_match in the output.

stdout: a {"machine": ...} line, then one JSON line per case:
  {"case": "mlp_dp2_record", "ours_ms": 31.2, "pytorch_ms": 40.1, "ratio": 0.778,
   "meets_target": true, "threads": 1, "devices": 2, "params": 3159050,
   "model_match": true, "noisy": false, "ours_runs": [{"median_ms": 31.0,
   "other_load_cores": 0.01}, ...], ...}
ours_runs and pytorch_runs list every run's median and the cores other processes took
meanwhile: on a 2-core machine anything above ~0.2 makes a run's times noise.
gemm_floor_ms is one device's share of the step's products (matmul_gflop_per_iter from
plan_summary) at this core's FMA peak (fma_peak_gflops in the machine line, from
bench/gemm:fma_peak): a bound no implementation of the step beats; gemm_floor_ratio is it
over PyTorch's step.
stderr: what runs, as it runs. Exit status 1 when a model does not match.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_RATIO = 0.8  # The goal: our step time <= 0.8x PyTorch's.
LABEL_FEATURES = 32  # actors/behaviors/synthetic_data.h, kLabelFeatures.

MLP = {"batch": 256, "in_features": 1024, "hidden": 1024, "layers": 4, "classes": 10, "lr": 0.1}
GPT = {"batch": 8, "hidden": 256, "heads": 4, "layers": 2, "seq": 128, "vocab": 1024, "lr": 3e-4}
MLP_CONFIG = "mlp 1024-1024-1024-1024-10, relu, softmax cross-entropy, batch 256, sgd lr 0.1 momentum 0.9"
LLAMA = {"batch": 8, "hidden": 256, "heads": 4, "kv_heads": 2, "layers": 2, "seq": 128, "vocab": 1024, "lr": 3e-4}
LLAMA_CONFIG = ("llama 2 blocks, hidden 256, 4 query heads over 2 kv heads, rope, swiglu 704, rmsnorm, seq 128, "
                "vocab 1024, untied embeddings, batch 8, adamw lr 3e-4 wd 0.01 warmup-cosine")
GPT_CONFIG = ("gpt 2 pre-LN blocks, hidden 256, 4 heads, seq 128, vocab 1024, tied embeddings, batch 8, "
              "adamw lr 3e-4 wd 0.01 warmup-cosine")

# Forward compute ops compared between our plan and PyTorch's autograd graph.
STRUCTURE_KINDS = ["matmul", "relu", "gelu", "layer_norm", "softmax", "embedding", "sparse_softmax_cross_entropy",
                   "silu", "rms_norm"]

# name, model, devices (= dp), data
CASES = [
    ("mlp_1dev_synthetic", "mlp", 1, "synthetic"),
    ("mlp_1dev_record", "mlp", 1, "record"),
    ("mlp_dp2_synthetic", "mlp", 2, "synthetic"),
    ("mlp_dp2_record", "mlp", 2, "record"),
    ("gpt_1dev", "gpt", 1, "synthetic"),
    ("gpt_dp2", "gpt", 2, "synthetic"),
    ("llama_1dev", "llama", 1, "synthetic"),
]

# One compute thread per rank on both sides. Our kernels set OpenBLAS to one thread
# themselves (kernels/cpu/registry.h); the variables make it so from process start.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def log(message):
    print(f"vs_pytorch: {message}", file=sys.stderr, flush=True)


def busy_seconds():
    """CPU seconds the whole machine spent busy (every process), from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal; guest is in user
    return busy / os.sysconf("SC_CLK_TCK")


class OtherLoad:
    """How many cores other processes kept busy while our last command ran: the machine's
    busy time minus the CPU time of our children (and theirs), over the wall time. A
    benchmark on 2 cores is only as good as this is close to 0."""

    def __init__(self):
        self.last = 0.0

    def measure(self, function):
        children = os.times()
        busy, start = busy_seconds(), time.monotonic()
        result = function()
        wall = time.monotonic() - start
        ours = (os.times().children_user - children.children_user) + (
            os.times().children_system - children.children_system)
        self.last = max(0.0, (busy_seconds() - busy - ours) / wall) if wall > 0 else 0.0
        return result


OTHER_LOAD = OtherLoad()
QUIET_CORES = 0.2  # A run during which other processes took more is "noisy".
WAIT_QUIET_S = 0.0  # --wait_quiet


class Runs:
    """One side's timed runs of a case: step times after warm-up and the other load of each."""

    def __init__(self, warmup):
        self.warmup = warmup
        self.runs = []  # (steps_ms after warm-up, other load in cores)

    def add(self, steps_ms):
        self.runs.append((steps_ms[self.warmup:], OTHER_LOAD.last))

    def quiet(self):
        return [run for run in self.runs if run[1] <= QUIET_CORES]

    def used(self):
        """The quiet runs, or every run when none was quiet."""
        return self.quiet() or self.runs

    def median_ms(self):
        return statistics.median(t for steps, _ in self.used() for t in steps)

    def summary(self):
        return [{"median_ms": round(statistics.median(steps), 3), "other_load_cores": round(load, 2)}
                for steps, load in self.runs]


def wait_for_quiet():
    """Up to WAIT_QUIET_S seconds, until the machine has been idle (< 0.2 busy cores) for a second."""
    deadline = time.monotonic() + WAIT_QUIET_S
    while time.monotonic() < deadline:
        busy = busy_seconds()
        time.sleep(1)
        if busy_seconds() - busy < 0.2:
            return
    if WAIT_QUIET_S > 0:
        log(f"the machine did not go quiet in {WAIT_QUIET_S:.0f} s; running anyway")


# OpenBLAS tuning variables of the caller's shell (set for our binaries, or by them when
# they restart themselves: kernels/cpu/blas_core.h) are not passed to the PyTorch peer: its
# OpenBLAS core is this script's choice (PYTORCH_ENV), never an accident of the shell.
PEER_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def run(command, extra_env=None, unset=(), **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(ONE_THREAD, **(extra_env or {}))
    if kwargs.pop("timed", False):
        wait_for_quiet()
    log("$ " + " ".join(command))
    result = OTHER_LOAD.measure(
        lambda: subprocess.run(command, env=env, text=True, capture_output=True, **kwargs))
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"vs_pytorch: '{command[0]}' failed with exit status {result.returncode}")
    return result.stdout


def write_record_file(path, records):
    """Records as actors/behaviors/synthetic_data.h describes them: in_features f32 values
    then the label as an f32 integer; x ~ N(0, 1), labels from a fixed teacher over the
    first 32 features, as our synthetic classification data."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((records, MLP["in_features"]), dtype=np.float32)
    teacher = rng.standard_normal((LABEL_FEATURES, MLP["classes"]), dtype=np.float32)
    labels = np.argmax(x[:, :LABEL_FEATURES] @ teacher, axis=1).astype(np.float32)
    np.hstack([x, labels[:, None]]).astype("<f4").tofile(path)
    log(f"wrote {path}: {records} records of {MLP['in_features'] + 1} f32")


def model_flags(model):
    return {"mlp": MLP, "gpt": GPT, "llama": LLAMA}[model]


def compile_plan(bin_dir, work_dir, case, model, devices, record_file):
    plan = os.path.join(work_dir, f"{case}.plan")
    command = [os.path.join(bin_dir, "examples", model, model), f"--devices_per_node={devices}",
               f"--dp={devices}", f"--plan_out={plan}"]
    command += [f"--{k}={v}" for k, v in model_flags(model).items()]
    if record_file:
        command.append(f"--record_file={record_file}")
    log(run(command).strip().splitlines()[0])
    summary = json.loads(run([os.path.join(bin_dir, "bench", "train", "plan_summary"), plan]))
    return plan, summary


def run_ours(bin_dir, work_dir, case, plan, args, round_index, trace=""):
    metrics = os.path.join(work_dir, f"{case}.{round_index}.metrics.jsonl")
    command = [os.path.join(bin_dir, "tools", "cli", "oneflow"), "run", plan, f"--iters={args.iters}",
               f"--metrics={metrics}"]
    if trace:
        command.append(f"--trace={trace}")
    run(command, timed=not trace)
    with open(metrics) as lines:
        iterations = [json.loads(line) for line in lines if line.strip()]
    return [m["step_ms"] for m in iterations], [m["loss"] for m in iterations]


# Set when PyTorch's OpenBLAS, left alone, would run other kernels than ours: on CPUs
# OpenBLAS does not know, our binaries restart themselves with a better core
# (kernels/cpu/blas_core.h) and PyTorch gets the same core through the same variable.
PYTORCH_ENV = {}


def run_pytorch(model, devices, data, record_file, args):
    command = ["/usr/bin/python3", os.path.join(HERE, "torch_step.py"), f"--model={model}", f"--dp={devices}",
               f"--data={data}", f"--iters={args.iters}", f"--warmup={args.warmup}"]
    command += [f"--{k}={v}" for k, v in model_flags(model).items()]
    if record_file:
        command.append(f"--record_file={record_file}")
    return json.loads(run(command, extra_env=PYTORCH_ENV, unset=PEER_UNSET, timed=True).strip().splitlines()[-1])


def cpu_model():
    """The model name and, since a VM may show only "AMD EPYC", family/model/stepping."""
    with open("/proc/cpuinfo") as cpuinfo:
        text = cpuinfo.read()

    def field(name):
        match = re.search(rf"^{name}\s*:\s*(.*)$", text, re.MULTILINE)
        return match.group(1).strip() if match else "?"

    return f"{field('model name')} (family {field('cpu family')} model {field('model')} stepping {field('stepping')})"


def debian_package_version(package):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Version}", package], text=True,
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def gemm_floor_ms(summary, devices, machine):
    """ms of one device's share of the step's products at the measured FMA peak."""
    return summary["matmul_gflop_per_iter"] / devices / machine["fma_peak_gflops"] * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin_dir", required=True, help="bazel-out/k8-opt/bin of this checkout")
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES),
                        help="comma-separated case names (default: all)")
    parser.add_argument("--iters", type=int, default=60, help="iterations per run")
    parser.add_argument("--warmup", type=int, default=10, help="leading iterations of each run left out")
    parser.add_argument("--rounds", type=int, default=2, help="runs per side, alternating ours and PyTorch's")
    parser.add_argument("--max_rounds", type=int, default=0,
                        help="runs per side at most, to get --rounds quiet ones (default: --rounds, no retry)")
    parser.add_argument("--records", type=int, default=4096, help="records in the mlp record file")
    parser.add_argument("--work_dir", default="", help="plans, metrics, record file (default: a temporary folder)")
    parser.add_argument("--wait_quiet", type=float, default=0,
                        help="before each timed run, wait up to this many seconds for other processes to go idle")
    parser.add_argument("--trace_dir", default="",
                        help="also write a Perfetto trace of ours per case here (an extra, untimed run)")
    args = parser.parse_args()
    global WAIT_QUIET_S
    WAIT_QUIET_S = args.wait_quiet
    known = {c[0]: c for c in CASES}
    chosen = [c for c in args.cases.split(",") if c]
    unknown = [c for c in chosen if c not in known]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; valid: {', '.join(known)}")
    if args.iters <= args.warmup:
        parser.error(f"--iters={args.iters} must be more than --warmup={args.warmup}")
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="vs_pytorch.")
    os.makedirs(work_dir, exist_ok=True)
    if args.trace_dir:
        os.makedirs(args.trace_dir, exist_ok=True)

    record_file = os.path.join(work_dir, "mlp.records")
    if any(known[c][3] == "record" for c in chosen):
        write_record_file(record_file, args.records)

    start = time.time()
    plans = {}
    for name in chosen:
        _, model, devices, data = known[name]
        plans[name] = compile_plan(args.bin_dir, work_dir, name, model, devices,
                                   record_file if data == "record" else "")
    facts_command = ["/usr/bin/python3", os.path.join(HERE, "torch_step.py"), "--facts"]
    torch_facts = json.loads(run(facts_command, unset=PEER_UNSET))
    ours_core = plans[chosen[0]][1]["openblas_core"]
    if torch_facts["openblas_core"] not in (None, ours_core):
        log(f"PyTorch's OpenBLAS picked {torch_facts['openblas_core']}, ours runs {ours_core}: "
            f"PyTorch runs with OPENBLAS_CORETYPE={ours_core} too")
        PYTORCH_ENV["OPENBLAS_CORETYPE"] = ours_core
        torch_facts = json.loads(run(facts_command, extra_env=PYTORCH_ENV, unset=PEER_UNSET))
    machine = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "ours_openblas_core": ours_core,
        "pytorch_openblas_core": torch_facts["openblas_core"],
        "torch": torch_facts["torch"],
        "torch_package": debian_package_version("python3-torch"),
        "torch_blas": torch_facts["blas"],
        "python": platform.python_version(),
        "loadavg_at_start": loadavg(),
        # One core's FMA throughput (bench/gemm:fma_peak), for each case's GEMM floor.
        "fma_peak_gflops": json.loads(run([os.path.join(args.bin_dir, "bench", "gemm", "fma_peak")]))["gflops"],
    }
    print(json.dumps({"machine": machine}), flush=True)
    lines = []
    all_match = True
    for name in chosen:
        _, model, devices, data = known[name]
        records = record_file if data == "record" else ""
        plan, summary = plans[name]
        ours, pytorch = Runs(args.warmup), Runs(args.warmup)
        # Alternate until each side has --rounds quiet runs, at most --max_rounds runs each.
        for round_index in range(max(args.max_rounds, args.rounds)):
            ours_done, pytorch_done = len(ours.quiet()) >= args.rounds, len(pytorch.quiet()) >= args.rounds
            if ours_done and pytorch_done or round_index >= args.rounds and not args.max_rounds:
                break
            if not ours_done:
                steps, losses = run_ours(args.bin_dir, work_dir, name, plan, args, round_index)
                ours.add(steps)
            if not pytorch_done:
                torch_run = run_pytorch(model, devices, data, records, args)
                pytorch.add(torch_run["steps_ms"])
        if args.trace_dir:  # An extra run, not timed: recording every act costs a little.
            run_ours(args.bin_dir, work_dir, name, plan, args, "trace",
                     trace=os.path.join(args.trace_dir, f"{name}.trace.json"))
        ours_structure = {kind: summary["forward_op_types"].get(kind, 0) for kind in STRUCTURE_KINDS}
        # llama's loss is the vocab-parallel cross-entropy (reduce_max, vocab_cross_entropy,
        # log, sub): one cross-entropy, as PyTorch's.
        ours_structure["sparse_softmax_cross_entropy"] += summary["forward_op_types"].get("vocab_cross_entropy", 0)
        pytorch_structure = {kind: torch_run["forward_ops"].get(kind, 0) for kind in STRUCTURE_KINDS}
        match = (summary["params"] == torch_run["params"] and summary["param_sizes"] == torch_run["param_sizes"]
                 and ours_structure == pytorch_structure)
        all_match &= match
        ours_ms, pytorch_ms = ours.median_ms(), pytorch.median_ms()
        noisy = not ours.quiet() or not pytorch.quiet()
        line = {
            "case": name,
            "config": {"mlp": MLP_CONFIG, "gpt": GPT_CONFIG, "llama": LLAMA_CONFIG}[model],
            "devices": devices,
            "peer": "1 process" if devices == 1 else f"DDP over gloo, {devices} processes",
            "data": "record file" if data == "record" else "synthetic, made inside the step",
            "threads": 1,
            "ours_ms": round(ours_ms, 3),
            "pytorch_ms": round(pytorch_ms, 3),
            "ratio": round(ours_ms / pytorch_ms, 3),
            "meets_target": ours_ms <= TARGET_RATIO * pytorch_ms,
            # The step's products (matmul_gflop_per_iter, split evenly over the devices)
            # at the core's FMA peak: no step of this model on these cores is faster. When
            # gemm_floor_ratio (floor / PyTorch's step) is near 0.8, meeting the target
            # takes GEMMs near 100% of peak and nothing else.
            "matmul_gflop_per_iter": summary["matmul_gflop_per_iter"],
            "gemm_floor_ms": round(gemm_floor_ms(summary, devices, machine), 3),
            "gemm_floor_ratio": round(gemm_floor_ms(summary, devices, machine) / pytorch_ms, 3),
            "noisy": noisy,
            "ours_runs": ours.summary(),
            "pytorch_runs": pytorch.summary(),
            "params": summary["params"],
            "model_match": match,
            "forward_ops": ours_structure,
            "ours_plan_ops": summary["ops"],
            "ours_loss_first_last": [round(losses[0], 4), round(losses[-1], 4)],
            "pytorch_loss_first_last": [torch_run["first_loss"], torch_run["last_loss"]],
            "iters": args.iters,
            "warmup": args.warmup,
        }
        if not match:
            line["pytorch_forward_ops"] = pytorch_structure
            line["pytorch_params"] = torch_run["params"]
            line["ours_param_sizes"] = summary["param_sizes"]
            line["pytorch_param_sizes"] = torch_run["param_sizes"]
        print(json.dumps(line), flush=True)
        lines.append(line)
        if noisy:
            log(f"{name}: other processes took more than {QUIET_CORES} cores during every run of a side: "
                "its times are not trustworthy (run again on a quiet machine, or with --wait_quiet)")
    log(f"{len(lines)} case(s) in {time.time() - start:.0f} s")
    if args.work_dir:
        log(f"plans, metrics and the record file are in {work_dir}")
    else:
        shutil.rmtree(work_dir, ignore_errors=True)
    if not all_match:
        log("a PyTorch model does not match ours (see model_match)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
