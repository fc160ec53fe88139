"""ob-probe-suite: the suite's own DDP and FSDP2 jobs (bench_ddp, its every option) under the probe
(overlap_bench.probe), each held against the truth bench_ddp measures in the same process without the probe or the
profiler (its wrapped step's iterations and its compute-only step's, each step synchronised, the slowest rank's).
Each wrapped run is probed on a freshly wrapped model into PROBE/<config>-<ddp|fsdp><setting>/: the probe's files
and truth.json, as examples/probe_ddp.py --truth writes them (ob-probe-table reads both):

  torchrun --nproc_per_node=2 -m overlap_bench.probe_suite --configs 4096,16,512 --csv ddp.csv --probe probes/
"""
import json
import pathlib
import sys

from overlap_bench.core import ob_tool
from overlap_bench.ddp import bench_ddp


def probe_runs(args, work, rank, world, step, compute_ms, runs):
    """Probes every wrapped run of `work`: `runs` as [(kind, setting, {mode: the slowest rank's times}, buckets)],
    `compute_ms` the compute-only step's times, the truth's baseline. (torch imported here: --help needs none.)"""
    import torch

    from overlap_bench.ddp.ddp_steps import fresh_model, optimizer_options, wrap
    from overlap_bench.probe.state import truth_check, truth_sentence
    from overlap_bench.probe import Probe

    for kind, setting, modes, _ in runs:
        wrapped, _ = wrap(work, kind, setting, not args.default, fresh_model(args, work))
        optimizer = torch.optim.SGD(wrapped.parameters(), **optimizer_options(args))
        folder = pathlib.Path(args.probe) / f"{work.tag}-{kind}{setting:g}"
        probe = Probe(wrapped, optimizer, out=folder, allow_one_rank=world == 1, verbose=rank == 0)
        job = step.of(wrapped, optimizer)
        while not probe.done:
            with probe.step():
                job()
        result = probe.finish()
        check = truth_check(modes["overlap"], compute_ms, result["added_ms"])
        if rank == 0:
            ob_tool.write_text_atomic(folder / "truth.json", json.dumps(check, indent=2) + "\n")
            print(f"ob-probe-suite {work.label} {kind} {setting:g}: {truth_sentence(check)}", file=sys.stderr,
                  flush=True)
        del probe, job, optimizer, wrapped
        torch.cuda.empty_cache()


def cli():
    """The console command: bench_ddp with --probe; usage errors exit 2, I/O failures 3 (ob_tool.main_guard)."""
    raise SystemExit(ob_tool.main_guard(lambda: bench_ddp.main(after_runs=probe_runs)))


if __name__ == "__main__":
    cli()
