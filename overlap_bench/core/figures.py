"""The figures every plotting tool draws (matplotlib, Agg: never a display): a figure's command line
(`figure_parser`), one colour per mode and per timeline task, and a figure written whole or not at all
(`save_figure`). Imported by what draws, never by what only reads a CSV (ob_csv)."""
import io
import os
import pathlib

import matplotlib

matplotlib.use("Agg")  # never needs a display

import matplotlib.pyplot  # noqa: E402
import PIL.Image  # noqa: E402  (matplotlib's dependency)

from overlap_bench.core import ob_tool  # noqa: E402


def figure_parser(doc, source, source_help, **source_options):
    """The command line every plotting script starts from: its input CSV(s) and -o/--output."""
    parser = ob_tool.ArgumentParser(description=ob_tool.describe(doc))
    parser.add_argument(source, help=source_help, **{"type": ob_tool.input_file, **source_options})
    parser.add_argument("-o", "--output", required=True, type=ob_tool.output_path,
                        help="figure to write (.png, .pdf or .svg)")
    return parser


def save_figure(fig, path):
    """Lays the figure out and saves it under a temporary name, then renames: it is there whole or not at all. A PNG
    is stored with a palette of 256 colours (Pillow, matplotlib's own image library), which holds a plot's few colours
    and its anti-aliasing in about 40 % of the bytes: the published figures stay small."""
    path = pathlib.Path(path)
    fig.tight_layout()
    try:
        with ob_tool.staged(path, f".{path.stem}.{os.getpid()}.tmp{path.suffix}") as temporary:
            if path.suffix.lower() == ".png":
                rendered = io.BytesIO()
                fig.savefig(rendered, dpi=110, format="png")
                with PIL.Image.open(rendered) as image:
                    image.convert("RGB").quantize(256).save(temporary, format="png", optimize=True)
            else:
                fig.savefig(temporary, dpi=110)
    finally:
        matplotlib.pyplot.close(fig)


# One colour per mode and per timeline task, the same in every figure (tab10/tab20 shades).
MODE_COLOURS = {"seq": "#1f77b4", "overlap": "#ff7f0e", "thread": "#2ca02c", "nonblocking": "#d62728",
                "progress": "#bcbd22", "ideal": "#9467bd", "bound": "#8c564b", "bound_ref": "#c49c94",
                "compute": "#e377c2", "comm": "#7f7f7f", "compute-graph": "#f7b6d2"}
TASK_COLOURS = {"forward": "#aec7e8", "backward": "#1f77b4", "update": "#9467bd", "compute": "#1f77b4",
                "allreduce": "#ff7f0e", "iallreduce": "#ff7f0e", "reduce_scatter": "#ffbb78", "alltoall": "#ffbb78",
                "allgather": "#2ca02c", "enqueue": "#c7c7c7", "download": "#17becf", "upload": "#9edae5",
                "wait": "#d62728", "test": "#ff9896", "comm": "#ff7f0e"}


def colour(name, table):
    """`name`'s fixed colour in `table`, or a stable shade of its own (the same name gets the same one everywhere)."""
    if name in table:
        return table[name]
    shades = matplotlib.pyplot.cm.tab20.colors
    return shades[sum(name.encode()) % len(shades)]
