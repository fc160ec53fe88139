#!/usr/bin/env python3
"""A rank that dies or hangs, end to end: runs an MPI binary under mpirun with --inject-fault RANK:STEP:KIND and
--timeout-s T, and asserts that every process of the job ends within T + 30 s, that the exit code is non-zero, that
the output names the failing rank (and, for a hang, the watchdog's abort), and that no output file (summary,
timeline, trace, metadata, power, or a temporary of one) is left. STEP start-up: before the ranks agree on their
options (a hang there is caught by the other ranks' watchdogs, inside that agreement). Exit 77 when the binary skips
(no GPU).

  fault_test.py --np 2 --rank 1 --step 3 --kind hang --timeout-s 5 -- mpirun [flags] BINARY [ARGS...]
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile
import time


def step_value(text):
    if text != "start-up" and not text.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number or start-up")
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--step", type=step_value, required=True, help="a whole number, or start-up")
    parser.add_argument("--kind", choices=["exit", "hang"], required=True)
    parser.add_argument("--timeout-s", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- mpirun ... BINARY ARGS")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    with tempfile.TemporaryDirectory() as work:
        out = pathlib.Path(work)
        full = command + ["--inject-fault", f"{args.rank}:{args.step}:{args.kind}", "--timeout-s", str(args.timeout_s),
                          "--csv", str(out / "fault.csv")]
        print("$ " + " ".join(full), flush=True)
        start = time.monotonic()
        limit = args.timeout_s + 30
        try:
            result = subprocess.run(full, capture_output=True, text=True, timeout=limit + 60)
        except subprocess.TimeoutExpired:
            print(f"FAIL: the job was still running {limit + 60:.0f} s after it started", flush=True)
            return 1
        seconds = time.monotonic() - start
        output = result.stdout + result.stderr
        print(output[-4000:], flush=True)
        if result.returncode == 77 or (result.returncode == 0 and "needs one GPU per rank" in output):
            print("SKIP: the binary skipped (no GPU for every rank)")
            return 77
        left = sorted(p.name for p in out.iterdir())
        failures = []
        if seconds > limit:
            failures.append(f"the job took {seconds:.1f} s, more than --timeout-s + 30 = {limit:.0f} s")
        if result.returncode == 0:
            failures.append("the job exited 0")
        if f"rank {args.rank}: injected fault: {args.kind}" not in output:
            failures.append(f"no line names rank {args.rank} as the one that failed")
        if args.kind == "hang" and "no progress for" not in output:
            failures.append("no watchdog message")
        agreement = "in start-up (the ranks' option agreement)"
        if args.kind == "hang" and args.step == "start-up" and agreement not in output:
            failures.append("no watchdog names the option agreement as where a rank stalled")
        if left:
            failures.append(f"files left behind: {left}")
        for failure in failures:
            print("FAIL: " + failure)
        if not failures:
            print(f"PASS: {args.kind} of rank {args.rank} at step {args.step}: the job ended after {seconds:.1f} s "
                  f"with exit code {result.returncode}, the failing rank named, no file left")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
