#!/usr/bin/env python3
"""A contender for ob-compare's tests: writes an overlap-bench summary CSV whose overlap row takes --ms, moved by up
to --jitter (a fraction) from a generator seeded by the CSV's name (so rounds differ but reruns repeat); --exit ends
it with that code instead, as a failing or skipped binary would; --sleep S (in round --sleep-round only, if given)
waits first, its pid written to --pid-file, as a slow or hung run would. --case NAME=MS (repeatable) writes a row
pair per case instead, told apart by the column `case`, as one process running many contenders does; --background
leaves a child running after it exits (its pid in --pid-file)."""
import argparse
import os
import random
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--ms", type=float, required=True)
parser.add_argument("--jitter", type=float, default=0.0)
parser.add_argument("--csv", required=True)
parser.add_argument("--exit", type=int, default=0)
parser.add_argument("--seed-from-round", action="store_true", help="a wide, round-dependent spread")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--sleep-round", type=int)
parser.add_argument("--pid-file")
parser.add_argument("--case", action="append", default=[], metavar="NAME=MS")
parser.add_argument("--background", action="store_true")
args = parser.parse_args()
round_index = int(args.csv.rsplit("/r", 1)[-1].split("-")[0])
if args.sleep and args.sleep_round in (None, round_index):
    if args.pid_file:
        with open(args.pid_file, "w") as out:
            out.write(f"{os.getpid()}\n")
    time.sleep(args.sleep)
if args.exit:
    print(f"fake contender: exiting {args.exit}", file=sys.stderr)
    sys.exit(args.exit)
if args.background:
    child = os.fork()
    if child == 0:
        time.sleep(300)
        os._exit(0)
    with open(args.pid_file, "w") as out:
        out.write(f"{child}\n")
generator = random.Random(os.path.basename(args.csv))  # the run's name: reruns repeat wherever it is written
factor = 1 + args.jitter * (2 * generator.random() - 1)
if args.seed_from_round:
    factor = 1 + args.jitter * (round_index % 3 - 1)
cases = [tuple(c.split("=")) for c in args.case] or [("", args.ms)]
header = "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max,case"
with open(args.csv, "w") as out:
    out.write(header + "\n")
    for case, case_ms in cases:
        ms = float(case_ms) * factor
        out.write(f"fake,phase4,overlap,1,1,5,{ms},{ms},{ms},{ms},{case}\n")
        out.write(f"fake,phase4,compute,1,1,5,{ms / 2},{ms / 2},{ms / 2},{ms / 2},{case}\n")
