#!/usr/bin/env python3
"""One run of bench/elastic/elastic_netns_bench.sh: a launch, one node lost, timed.

Starts `oneflow launch` (the command after `--`), waits until iteration --kill_after
was printed (and, with --wait_for, until that text is on the launch's stderr), then
SIGKILLs --victim_pid (a daemon, or a worker found by --victim_worker=JOB_ID:NODE) and
times, from the SIGKILL, the first metrics line the next attempt prints. The next
attempt's lines are those printed after the launch announced it on stderr
(--announced): the failed attempt prints no metrics once its failure is seen, and a
new worker needs far longer to start than the launch to print.

Prints one JSON object: kill_to_training_s (the issue's "kill -> next trained
iteration"), the launch's own "recovery" of that line (seconds counted from the moment
it saw the failure; absent for a --max_restarts restart, which reports none), its
"recovered in" timeline (failed attempt ended / daemons probed / new attempt submitted,
seconds after the failure was seen), resumed_at_iteration, newest_iteration_before and
iterations_lost (newest before + 1 - resumed at). Then SIGINTs the launch.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time


def worker_pid(job_id, node):
    """The pid of `oneflow_worker --job_id=JOB --node_rank=NODE`, or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                arguments = f.read().split(b"\0")
        except OSError:
            continue
        if (arguments and arguments[0].endswith(b"oneflow_worker") and f"--job_id={job_id}".encode() in arguments
                and f"--node_rank={node}".encode() in arguments):
            return int(entry)
    return None


class Lines:
    """The lines of one pipe, each with the monotonic time it arrived."""

    def __init__(self, pipe, copy_to):
        self.lines = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(pipe, copy_to), daemon=True)
        self.thread.start()

    def _read(self, pipe, copy_to):
        for raw in pipe:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.lock:
                self.lines.append((time.monotonic(), line))
            copy_to.write(line + "\n")
            copy_to.flush()

    def snapshot(self):
        with self.lock:
            return list(self.lines)


def iteration_of(line):
    match = re.match(r'\{"iter": (\d+)', line)
    return int(match.group(1)) if match else -1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kill_after", type=int, required=True)
    parser.add_argument("--wait_for", default="")
    parser.add_argument("--victim_pid", type=int, default=0)
    parser.add_argument("--victim_worker", default="", help="JOB_ID:NODE")
    parser.add_argument("--announced", required=True)
    parser.add_argument("--log_prefix", required=True, help="PREFIX.out and PREFIX.err get the launch's streams")
    parser.add_argument("--timeout_s", type=float, default=600)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    result = {}
    with open(args.log_prefix + ".out", "w") as out_copy, open(args.log_prefix + ".err", "w") as err_copy:
        started = time.monotonic()
        launch = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = Lines(launch.stdout, out_copy), Lines(launch.stderr, err_copy)
        deadline = time.monotonic() + args.timeout_s
        try:
            while True:
                if launch.poll() is not None:
                    raise RuntimeError(f"the launch ended (exit {launch.returncode}) before iteration {args.kill_after}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"iteration {args.kill_after} not reached in {args.timeout_s} s")
                printed = [iteration_of(line) for _, line in stdout.snapshot()]
                errors = "\n".join(line for _, line in stderr.snapshot())
                if printed and max(printed) >= args.kill_after and args.wait_for in errors:
                    break
                time.sleep(0.01)
            victim = args.victim_pid
            if args.victim_worker:
                job_id, node = args.victim_worker.rsplit(":", 1)
                victim = worker_pid(job_id, int(node))
                if victim is None:
                    raise RuntimeError(f"no worker of job {job_id} node {node}")
            os.kill(victim, signal.SIGKILL)
            killed = time.monotonic()
            announced_at = None
            while time.monotonic() < deadline:
                if announced_at is None:
                    for when, line in stderr.snapshot():
                        if args.announced in line:
                            announced_at = when
                            break
                if announced_at is not None:
                    lines = stdout.snapshot()
                    before = [line for when, line in lines if when < announced_at]
                    after = [(when, line) for when, line in lines if when >= announced_at and iteration_of(line) >= 0]
                    if after:
                        when, line = after[0]
                        newest_before = max([iteration_of(l) for l in before] or [-1])
                        resumed_at = iteration_of(line)
                        first_line = next(t for t, l in lines if iteration_of(l) >= 0)
                        steps_before = sorted(json.loads(l)["step_ms"] for t, l in lines
                                              if t < announced_at and iteration_of(l) >= 1 and '"step_ms"' in l)
                        result.update({
                            "kill_to_training_s": round(when - killed, 3),
                            "resumed_at_iteration": resumed_at,
                            "newest_iteration_before": newest_before,
                            "iterations_lost": max(0, newest_before + 1 - resumed_at),
                            "first_step_ms_after": json.loads(line).get("step_ms"),
                            # References from the same launch: its cold start (launch to its
                            # first metrics line, the same plan from nothing) and its steps.
                            "cold_start_s": round(first_line - started, 3),
                            "median_step_ms_before": steps_before[len(steps_before) // 2] if steps_before else None,
                        })
                        result["kill_to_training_over_cold_start"] = round(
                            result["kill_to_training_s"] / result["cold_start_s"], 3)
                        if '"recovery": ' in line:
                            result["recovery"] = json.loads(line)["recovery"]
                        break
                if launch.poll() is not None:
                    raise RuntimeError(f"the launch ended (exit {launch.returncode}) before training again")
                time.sleep(0.01)
            else:
                raise RuntimeError("no iteration trained again before the timeout")
            # The launch prints its timeline right before that line's metrics; give it a moment.
            time.sleep(0.2)
            for _, line in stderr.snapshot():
                match = re.search(r"recovered in ([\d.]+) s \(failed attempt ended after ([\d.]+) s, daemons probed after "
                                  r"([\d.]+) s, new attempt submitted after ([\d.]+) s", line)
                if match:
                    result["launch_timeline_s"] = {
                        "recovered": float(match.group(1)), "failed_attempt_ended": float(match.group(2)),
                        "daemons_probed": float(match.group(3)), "new_attempt_submitted": float(match.group(4))}
        except RuntimeError as error:
            result["error"] = str(error)
        finally:
            if launch.poll() is None:
                launch.send_signal(signal.SIGINT)
                try:
                    launch.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    launch.kill()
                    launch.wait()
            stdout.thread.join(timeout=5)
            stderr.thread.join(timeout=5)
    print(json.dumps(result), flush=True)
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
