"""The probe: your own data-parallel job measured, and tuned, from inside its own training loop, with torch alone
(api.py: Probe; state.py: the state it restores and its clocks; wrappers.py with one row a wrapper: ddp_row.py,
fsdp2_row.py; tune.py: the tuner; suite.py: ob-probe-suite, the suite's own jobs under it).

    from overlap_bench.probe import Probe
"""
from overlap_bench.probe.api import COMPUTE, TRAINS, TRIALS, Probe, ProbeError, plan  # noqa: F401
from overlap_bench.probe.result import sentences  # noqa: F401
