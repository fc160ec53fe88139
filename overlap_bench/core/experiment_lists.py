"""The lists the suite declares once, in experiments/headline.toml, read by every tool, figure and script that needs
one (issue 85): `strategies` (phase 4's strategies the headline runs: ob-gate's default, the figures' colour order),
`planned_syncs` (those its planner chooses among: run_all.sh's --plan-syncs), `configs` (the six HxLxB). Nothing
else types such a list (tests/python/test_structure.py holds it). Outside a checkout (an installed package without
its experiments/), each list is empty and its users say so or fall back to their own order.

Usage (a script's one line, comma-separated):  python3 -m overlap_bench.core.experiment_lists planned_syncs
"""
import pathlib

from overlap_bench.core import ob_tool

# The checkout's experiment; outside a checkout (an installed package) --experiment names one: no other default.
EXPERIMENT = ob_tool.REPO / "experiments" / "headline.toml"
KEYS = ("strategies", "planned_syncs", "configs")


def headline_list(key, path=EXPERIMENT):
    """A list the headline experiment declares once, its `key` (one of KEYS); [] where the file is not there."""
    if not pathlib.Path(path).is_file():
        return []
    found = ob_tool.load_toml(path, "--experiment").get(key)
    return [str(v) for v in found] if isinstance(found, list) else []


# The figures' colours, taken in the order of the strategies list (matplotlib's tab10 in an order that keeps each
# strategy's colour of the figures made before it was read from the list); a line no strategy names takes the next.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#ff7f0e", "#17becf", "#bcbd22", "#e377c2",
           "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a"]


def strategy_colours(path=EXPERIMENT):
    """{strategy: colour}: the headline's strategies, coloured from PALETTE in their declared order."""
    return dict(zip(headline_list("strategies", path), PALETTE))


def main(argv=None):
    parser = ob_tool.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("key", choices=KEYS, help="the list to print, comma-separated, on one line")
    args = parser.parse_args(argv)
    print(",".join(headline_list(args.key)))
    return 0


if __name__ == "__main__":
    raise SystemExit(ob_tool.main_guard(main))
