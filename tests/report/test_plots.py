"""The report's plots: one colour per pairing, 0/1 metrics as proportions, judge scales, ties, many
pairings and many metrics, legends clear of the lines (checked on the drawn matplotlib figures)."""

from __future__ import annotations

import json
import math

import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure

from crsim.core.plugins import ComponentSpec
from crsim.eval.stats import aggregate
from crsim.model.run_folder.summary import MetricInfo
from crsim.report import plots
from crsim.report.figures import (
    Palette,
    Series,
    binary_metrics,
    declared_binary,
    judge_scale,
    wilson,
)

SERIES = [
    Series(c, s, r)
    for r in ("one", "two")
    for c in ("popular", "retrieval", "llm")
    for s in ("abus", "abus-impatient")
]
NAMES = [s.name for s in SERIES]


def _intersects(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_one_colour_per_pairing_and_a_hue_per_crs() -> None:
    palette = Palette(SERIES)
    colours = [palette.colour(n) for n in NAMES]
    assert len(set(colours)) == len(NAMES)  # twelve pairings, twelve colours
    assert len(set(palette.crs_colours.values())) == 3
    # the same palette, built again from the same pairings, gives the same colours (every plot agrees)
    assert [Palette(SERIES).colour(n) for n in NAMES] == colours


def test_every_plot_draws_a_pairing_in_its_palette_colour() -> None:
    palette = Palette(SERIES)
    curves = plots.turn_curves(
        [("PC_t@10", {n: [0.1 * i, 0.2 * i] for i, n in enumerate(NAMES)})], palette, dict.fromkeys(NAMES, 30)
    )
    drawn = {line.get_label().split(" (n = ")[0]: line.get_color() for line in curves.axes[0].get_lines()}
    assert drawn == {n: palette.colour(n) for n in NAMES}
    shares = plots.proportions({"Success": {n: (i, 12) for i, n in enumerate(NAMES)}}, palette)
    point_colours = [line.get_color() for line in shares.axes[0].get_lines() if len(line.get_xdata()) == 1]
    assert point_colours == [palette.colour(n) for n in NAMES]


def test_wilson_interval() -> None:
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)  # not zero-width at 0 of n
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    with pytest.raises(ValueError):
        wilson(0, 0)


def test_binary_from_the_declaration_else_from_the_values() -> None:
    specs = [ComponentSpec(name="success_rate"), ComponentSpec(name="jaccard", args={"k": 10})]
    declared = declared_binary(None, specs)  # a summary without metadata: the metrics are asked
    assert declared == {"Success": True, "Jaccard@10": False}
    recorded = {
        "Success": MetricInfo(label="Success", name="success_rate", binary=True),
        "Judge": MetricInfo(label="Judge", name="judge"),
    }
    assert declared_binary(recorded, specs) == {"Success": True}  # the metadata, nothing built
    values = {
        "Success": [[1.0, 0.0, 1.0]],
        "Jaccard@10": [[1.0, 1.0]],  # all 1 by chance: declared not 0/1, so not a proportion
        "my/hit": [[0.0, 1.0], [1.0]],  # declares nothing: the values decide
        "my/score": [[0.0, 0.5]],
    }
    assert binary_metrics(values, declared) == ["Success", "my/hit"]


def test_judge_scale_from_the_rubric_and_no_interval_at_tiny_n() -> None:
    assert judge_scale("quality5/fluency") == (1.0, 5.0)
    assert judge_scale("nosuchrubric/x") is None
    palette = Palette(SERIES[:2])
    few = [4.0, 4.0, 5.0]
    agg = aggregate(few)
    many = [float(1 + i % 5) for i in range(40)]
    big = aggregate(many)
    figure = plots.judge_scores(
        {
            "quality5/fluency": {
                NAMES[0]: (few, (agg.mean, agg.ci_low, agg.ci_high, agg.n)),
                NAMES[1]: (many, (big.mean, big.ci_low, big.ci_high, big.n)),
            }
        },
        {"quality5/fluency": (1.0, 5.0)},
        palette,
    )
    axes = figure.axes[0]
    assert axes.get_xlim()[0] > 0.5 and axes.get_xlim()[1] < 5.5  # the 1-5 scale, not from 0
    horizontal = [ln for ln in axes.get_lines() if len(set(ln.get_ydata())) == 1 and len(ln.get_xdata()) == 2]
    assert [set(ln.get_ydata()) for ln in horizontal] == [{1}]  # an interval only for n = 40
    assert all(ln.get_xdata()[1] > ln.get_xdata()[0] for ln in horizontal)
    (points,) = [c for c in axes.collections if isinstance(c, PathCollection)]
    offsets = points.get_offsets()
    assert len(offsets) == 3 and len({(x, y) for x, y in offsets}) == 3  # equal scores side by side
    notes = [t.get_text() for t in axes.texts]
    assert notes == ["n = 3 (no CI)", "n = 40"]


def _boxes(figure: Figure) -> dict[str, list[list[float]]]:
    loaded: dict[str, list[list[float]]] = json.loads(plots.draw(figure).boxes)
    return loaded


def test_twelve_pairings_keep_whole_horizontal_labels_inside_the_image() -> None:
    palette = Palette(SERIES)
    values = {
        label: {n: [float(i + j % 3) for j in range(8)] for i, n in enumerate(NAMES)} for label in ("A", "B")
    }
    figure = plots.distributions(values, palette)
    labels = [t for t in figure.axes[0].get_yticklabels() if t.get_text()]
    assert len(labels) == len(NAMES)
    for name, label in zip(NAMES, labels, strict=True):
        assert label.get_rotation() == 0 and "…" not in label.get_text()
        text = label.get_text().replace("\n", " ").replace("\u00a0", " ")
        assert text.startswith(name) and text.endswith("n = 8")
    for box in _boxes(figure)["labels"]:
        assert min(box) >= 0 and max(box) <= 1  # nothing cut at the image's edge


def test_the_curve_legend_sits_clear_of_the_lines() -> None:
    palette = Palette(SERIES)
    curves = {n: [0.05 * i + 0.01 * t for t in range(10)] for i, n in enumerate(NAMES)}
    figure = plots.turn_curves(
        [("PC_t@10", curves), ("Recall@(t,10)", curves)], palette, dict.fromkeys(NAMES, 30)
    )
    boxes = _boxes(figure)
    (legend,) = boxes["legends"]
    assert len(boxes["lines"]) == 2 * len(NAMES)
    assert not any(_intersects(legend, box) for box in boxes["lines"] + boxes["axes"])


def test_tied_crss_are_drawn_apart_with_shared_places() -> None:
    cells = {
        "abus": {
            "popular": plots.RankCell(0.5, 0.3, 0.7, 30, 1, 2),
            "retrieval": plots.RankCell(0.5, 0.3, 0.7, 30, 1, 2),
        },
        "abus-impatient": {
            "popular": plots.RankCell(0.2, 0.1, 0.3, 30, 2, 2),
            "retrieval": plots.RankCell(0.6, 0.5, 0.7, 30, 1, 1),
        },
    }
    palette = Palette([Series(c, s) for s in cells for c in cells[s]])
    colours = {(s, c): palette.colour(Series(c, s).name) for s in cells for c in cells[s]}
    figure = plots.disagreement(list(cells), cells, palette.crs_colours, colours, "Success")
    axes = figure.axes[0]
    dots = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in axes.get_lines() if len(ln.get_xdata()) == 1]
    assert len(dots) == 4 and len(set(dots)) == 4  # equal means, two dots
    assert sorted(t.get_text() for t in axes.texts) == ["1", "1–2", "1–2", "2"]
    assert "n = 30" in axes.get_ylabel()


def test_many_metrics_make_one_compact_figure() -> None:
    palette = Palette(SERIES[:4])
    labels = [f"PC@{k}" for k in (5, 10, 20, 50)] + [f"Recall@(t,{k})" for k in (5, 10, 20, 50)] + ["gap"]
    means = {label: {n: (0.1, 0.05, 0.15, 20) for n in NAMES[:4]} for label in labels}
    figure = plots.means_grid(means, palette)
    visible = [a for a in figure.axes if a.get_visible()]
    assert len(visible) == len(labels)
    width, height = figure.get_size_inches()
    assert height <= 3 * (0.4 * 4 + 1.0) + 0.5 and not math.isnan(width)  # three rows of small panels
