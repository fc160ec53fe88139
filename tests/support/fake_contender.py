#!/usr/bin/env python3
"""A contender for ob-compare's tests: writes an overlap-bench summary CSV whose overlap row takes --ms, moved by up
to --jitter (a fraction) from a generator seeded by the CSV's name (so rounds differ but reruns repeat); --exit ends
it with that code instead, as a failing or skipped binary would; --sleep S (in round --sleep-round only, if given)
waits first, its pid written to --pid-file, as a slow or hung run would."""
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
generator = random.Random(args.csv)
factor = 1 + args.jitter * (2 * generator.random() - 1)
if args.seed_from_round:
    factor = 1 + args.jitter * (round_index % 3 - 1)
ms = args.ms * factor
header = "system,phase,mode,ranks,chunks,iters,time_ms_p50,time_ms_p95,time_ms_min,time_ms_max"
with open(args.csv, "w") as out:
    out.write(header + "\n")
    out.write(f"fake,phase4,overlap,1,1,5,{ms},{ms},{ms},{ms}\n")
    out.write(f"fake,phase4,compute,1,1,5,{ms / 2},{ms / 2},{ms / 2},{ms / 2}\n")
