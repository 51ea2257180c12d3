"""The look of the print figures (`crsim report --figures`): a paper's widths and smallest font,
matplotlib's settings while they are drawn, and the palette that gives a CRS one hue and a simulator
one marker and line style in every figure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.typing import RcKeyType

from crsim.report.figures import shade
from crsim.report.paper import Column

#: Widths in inches: one column and the full page of a two-column paper.
SINGLE = 3.5
DOUBLE = 7.0
#: The smallest text in a figure, in points.
FONT = 8.0
#: Colour-blind-safe hues (Okabe and Ito), one per CRS; markers and line styles, one per simulator.
HUES = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
DASHES = ["-", "--", ":", "-."]

RC: dict[RcKeyType, Any] = {
    "font.size": FONT,
    "axes.titlesize": FONT,
    "axes.labelsize": FONT,
    "xtick.labelsize": FONT,
    "ytick.labelsize": FONT,
    "legend.fontsize": FONT,
    "legend.title_fontsize": FONT,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "pdf.fonttype": 42,  # TrueType in the PDF, as publishers ask
    "svg.hashsalt": "crsim",  # the same ids in every SVG of the same figure
}


@contextmanager
def print_style() -> Iterator[None]:
    """Matplotlib's settings for print while figures are built and saved (then restored)."""
    with matplotlib.rc_context(RC):
        yield


@dataclass(frozen=True)
class Look:
    """The colour, marker and line style of one pairing."""

    colour: str
    marker: str
    dash: str


class PrintPalette:
    """One hue per CRS and one marker per simulator, by name (a simulator in two runs is one); a CRS
    found in several runs takes a darker or lighter shade of its hue per run."""

    def __init__(self, found: Sequence[Column]) -> None:
        crss = list(dict.fromkeys(c.pairing.series.crs for c in found))
        simulators = list(dict.fromkeys(c.simulator for c in found))
        self.crs = {name: HUES[i % len(HUES)] for i, name in enumerate(crss)}
        self.simulator = {name: i for i, name in enumerate(simulators)}
        self.runs = {
            crs: list(dict.fromkeys(c.pairing.view.label for c in found if c.pairing.series.crs == crs))
            for crs in crss
        }

    def look(self, column: Column) -> Look:
        crs = column.pairing.series.crs
        runs = self.runs[crs]
        colour = shade(self.crs[crs], runs.index(column.pairing.view.label), len(runs))
        index = self.simulator[column.simulator]
        return Look(colour, MARKERS[index % len(MARKERS)], DASHES[index % len(DASHES)])


def name(column: Column) -> str:
    return f"{column.crs} × {column.simulator}"
