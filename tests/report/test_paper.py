"""Paper output of `crsim report`: booktabs LaTeX and Markdown tables, vector figures at print sizes,
simulators named alike across runs, and the HTML plots' bands and whole turns."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from typer.testing import CliRunner

from crsim.cli import app
from crsim.eval.run_scoring import evaluate_path
from crsim.report import plots
from crsim.report.export_figures import print_figures
from crsim.report.figures import Palette, Series
from crsim.report.html import build_report, report_context, report_metrics
from crsim.report.kinds import Scale, metric_kinds
from crsim.report.paper import (
    columns,
    comparison_table,
    latex,
    latex_escape,
    markdown,
    markdown_escape,
    results_table,
    table_number,
)
from crsim.report.paper_style import DOUBLE, FONT, SINGLE, PrintPalette, print_style
from crsim.report.titles import open_run
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig

runner = CliRunner()
#: Ids with the characters LaTeX and Markdown treat specially.
CRS_IDS = ("pop_ular", "retrieval 50% & more")
SIMULATORS = ("abus", "abus_p1")


def _run(run_dir: Path, users: int, simulators: tuple[str, ...] = SIMULATORS) -> Path:
    """A real evaluated run: two CRSs (popular, retrieval) under abus with patience 3 and 1."""
    config: dict[str, Any] = {
        "name": "paper-test",
        "users": {"size": users},
        "simulators": [
            {"name": "abus", "args": {"patience": 3 if i == 0 else 1}, "id": sid}
            for i, sid in enumerate(simulators)
        ],
        "crss": [{"name": "popular", "id": CRS_IDS[0]}, {"name": "retrieval", "id": CRS_IDS[1]}],
        "max_turns": 8,
    }
    asyncio.run(run_batch(build_experiment(ExperimentConfig.model_validate(config)), run_dir))
    evaluate_path(run_dir)
    return run_dir


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("paper") / "run", users=8)


@pytest.fixture(scope="module")
def context(run: Path) -> Any:
    return report_context([open_run(run)], max_dialogues=0)


# ---------------------------------------------------------------------------------------------
# Tables


def test_latex_and_markdown_escape_labels() -> None:
    assert latex_escape("Recall@(t,10)") == "Recall@(t,10)"
    assert latex_escape("popular × abus") == r"popular $\times$ abus"
    assert latex_escape("a_b 50% & c#$") == r"a\_b 50\% \& c\#\$"
    assert latex_escape("{x}~^\\") == r"\{x\}\textasciitilde{}\textasciicircum{}\textbackslash{}"
    assert latex_escape("bell\x07") == "bell"
    assert [table_number(v) for v in (-0.0001, -0.25, 0.5)] == [
        "0.000",
        "\u22120.250",
        "0.500",
    ]  # no "−0.000"
    assert markdown_escape("a|b_c*d") == r"a\|b\_c\*d"
    assert markdown_escape("<b>") == "&lt;b&gt;"


def _body(tex: str) -> list[str]:
    """The rows between the header's \\midrule rules and \\bottomrule, without rules."""
    lines = tex.splitlines()
    start = lines.index(r"\midrule") + 1
    end = lines.index(r"\bottomrule")
    return [line for line in lines[start:end] if not line.startswith(("\\midrule", "\\addlinespace"))]


def _cells(row: str) -> list[str]:
    assert row.endswith(r" \\")
    return re.split(r"(?<!\\)&", row[: -len(r" \\")])


def test_results_table_is_booktabs_with_one_row_per_metric(context: Any) -> None:
    metrics = report_metrics(context)
    tex = latex(results_table(context, metrics))
    assert tex.count(r"\toprule") == 1 and tex.count(r"\bottomrule") == 1
    assert r"\begin{tabular}{lrrrr}" in tex  # the metric, then 2 CRSs x 2 simulators
    assert r"\multicolumn{2}{c}{abus}" in tex and r"\multicolumn{2}{c}{abus\_p1}" in tex
    assert r"\cmidrule(lr){2-3} \cmidrule(lr){4-5}" in tex
    assert r"Metric & pop\_ular & retrieval 50\% \& more & pop\_ular & retrieval 50\% \& more \\" in tex
    rows = _body(tex)
    assert rows[0].startswith("n & ")
    assert [_cells(r)[0].strip() for r in rows[1:]] == [latex_escape(m) for m in metrics]
    assert "Recall@(t,10)" in metrics and "Turns" in metrics
    assert all(len(_cells(r)) == 5 for r in rows)
    summary = context.views[0].summaries[0]
    turns = summary.metrics["Turns"]
    expected = f"{turns.mean:.3f} [{turns.ci_low:.3f}, {turns.ci_high:.3f}]"
    first = [c.strip() for c in _cells(rows[1 + metrics.index("Turns")])]
    assert expected in first  # the numbers of summary.json, as the HTML table shows them
    assert r"95\% bootstrap confidence interval" in tex


def test_comparison_table_marks_holm_significance_with_a_legend(context: Any) -> None:
    table = comparison_table(context.compared, several_runs=False)
    tex = latex(table)
    assert r"* p\_Holm \textless{} 0.05, ** p\_Holm \textless{} 0.01, *** p\_Holm \textless{} 0.001" in tex
    rows = _body(tex)
    pairs = [(run, result, p) for run, result in context.compared for p in result.pairs]
    assert len(rows) == len(pairs) == 2 * len(report_metrics(context))  # one pair per simulator and metric
    for row, (_, result, pair) in zip(rows, pairs, strict=True):
        cells = [c.strip() for c in _cells(row)]
        assert cells[0] == latex_escape(result.metric) and cells[2] == latex_escape(pair.crs_a)
        stars = re.search(r"\d\]?(?:\$\^\{(\*+)\}\$)?$", cells[4])  # marks as a superscript
        assert stars is not None, cells[4]
        expected = (
            ""
            if not pair.significant
            else "***"
            if pair.p_holm < 0.001
            else "**"
            if pair.p_holm < 0.01
            else "*"
        )
        assert (stars.group(1) or "") == expected
    turns = [r for r, (_, result, _) in zip(rows, pairs, strict=True) if result.metric == "Turns"]
    assert any(row.count("*") >= 1 for row in turns)  # impatient and patient runs differ in length


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine (pdflatex) installed")
def test_the_latex_tables_compile(context: Any, tmp_path: Path) -> None:
    body = latex(results_table(context, report_metrics(context))) + latex(
        comparison_table(context.compared, several_runs=False)
    )
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n"
        "\\usepackage[margin=1cm,landscape]{geometry}\n\\begin{document}\n" + body + "\\end{document}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "paper.pdf").read_bytes().startswith(b"%PDF")


def test_markdown_tables_are_github_tables(context: Any) -> None:
    metrics = report_metrics(context)
    text = markdown(results_table(context, metrics))
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0].startswith(r"| Metric | pop\_ular × abus | retrieval 50% & more × abus |")
    assert lines[1] == "| --- | --: | --: | --: | --: |"
    assert len(lines) == 2 + 1 + len(metrics)  # header, rule, n, one row per metric
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 6 for line in lines)
    comparisons = markdown(comparison_table(context.compared, several_runs=False))
    assert r"\* p\_Holm &lt; 0.05" in comparisons


# ---------------------------------------------------------------------------------------------
# Figures


def _texts(figure: Figure) -> list[Text]:
    return [t for t in figure.findobj(Text) if t.get_text().strip() and t.get_visible()]


def test_metric_kinds(context: Any) -> None:
    values = {label: groups.values() for label, groups in context.views[0].values.items()}
    kinds = metric_kinds(context.views, values)
    assert kinds["Success"] is Scale.BINARY
    assert kinds["Turns"] is Scale.DISCRETE
    assert kinds["SRRR"] is Scale.CONTINUOUS


def test_print_figures_at_print_sizes_fonts_and_whole_turns(context: Any) -> None:
    with print_style():
        figures = dict(print_figures(context, "Success"))
        assert {"curves", "proportions", "ranks"} <= set(figures)
        assert any(stem.startswith("distributions") for stem in figures)
        for stem, figure in figures.items():
            width, height = figure.get_size_inches()
            assert width in (SINGLE, DOUBLE) and 1.0 < height < 9.5, stem
            figure.draw_without_rendering()
            small = [(t.get_text(), t.get_fontsize()) for t in _texts(figure) if t.get_fontsize() < FONT]
            assert not small, (stem, small)
        curves = figures["curves"]
        for axes in curves.axes:
            low, high = axes.get_xlim()
            ticks = [t for t in axes.get_xticks() if low <= t <= high]
            assert ticks and all(float(t).is_integer() for t in ticks)
            bands = [c for c in axes.collections if isinstance(c, PolyCollection)]
            assert len(bands) == 4  # a band per pairing
        ranks = figures["ranks"]
        assert [t.get_text() for t in ranks.axes[0].get_xticklabels()] == list(SIMULATORS)


def test_distributions_draw_a_box_only_where_it_says_something(context: Any) -> None:
    with print_style():
        figures = dict(print_figures(context, None))
    panels = {
        a.get_title(): a for stem, f in figures.items() if stem.startswith("distributions") for a in f.axes
    }
    turns = panels["Turns"]
    assert not turns.patches and all(len(line.get_xdata()) <= 2 for line in turns.get_lines())  # no box
    assert len(turns.collections) == 4  # a strip of points per pairing
    low, high = turns.get_xlim()
    assert all(float(t).is_integer() for t in turns.get_xticks() if low <= t <= high)
    proportions = figures["proportions"]
    assert {a.get_title() for a in proportions.axes if a.get_visible()} >= {"Success"}
    assert all(re.fullmatch(r"\d+/\d+", t.get_text()) for a in proportions.axes for t in a.texts)


def test_write_figures_svg_and_pdf(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.html"
    result = runner.invoke(
        app,
        ["report", str(run), "-o", str(out), "--tables", "latex", "--figures", "svg", "--max-dialogues", "2"],
    )
    assert result.exit_code == 0, result.output
    svgs = sorted((out.parent / "figures").glob("*.svg"))
    assert {p.stem for p in svgs} >= {"curves", "proportions", "ranks"}
    for path in svgs:
        assert str(path) in result.output.replace("\n", "")
        root = ET.parse(path).getroot()
        assert root.tag.endswith("svg")
        width = float(root.attrib["width"].removesuffix("pt"))
        assert width in (SINGLE * 72, DOUBLE * 72), path
    assert (out.parent / "results.tex").is_file() and (out.parent / "comparisons.tex").is_file()
    result = runner.invoke(
        app,
        [
            "report",
            str(run),
            "-o",
            str(out),
            "--tables",
            "markdown",
            "--figures",
            "pdf",
            "--max-dialogues",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    pdfs = sorted((out.parent / "figures").glob("*.pdf"))
    assert len(pdfs) == len(svgs)
    for path in pdfs:
        data = path.read_bytes()
        assert data.startswith(b"%PDF")
        box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", data)
        assert box is not None and float(box.group(1)) in (SINGLE * 72, DOUBLE * 72)
    assert (out.parent / "results.md").read_text(encoding="utf-8").count("| Turns |") == 1


def test_one_simulator_in_two_runs_is_one_simulator(run: Path, tmp_path: Path) -> None:
    other = _run(tmp_path / "other", users=4)
    context = report_context([open_run(run), open_run(other)], max_dialogues=0)
    found = columns(context)
    assert [c.simulator for c in found] == ["abus"] * 4 + ["abus_p1"] * 4
    assert found[0].crs == "pop_ular [run]" and found[2].crs == "pop_ular [other]"
    palette = PrintPalette(found)
    assert palette.look(found[0]).marker == palette.look(found[2]).marker  # abus in both runs
    assert palette.look(found[0]).marker != palette.look(found[4]).marker
    assert palette.look(found[0]).colour != palette.look(found[2]).colour  # one CRS, two runs: two shades
    tex = latex(results_table(context, report_metrics(context)))
    assert tex.count(r"\multicolumn{4}{c}{abus}") == 1
    with print_style():
        ranks = dict(print_figures(context, "Success"))["ranks"]
    assert [t.get_text() for t in ranks.axes[0].get_xticklabels()] == list(SIMULATORS)
    (legend,) = ranks.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        f"{crs} [{run}]" for run in ("run", "other") for crs in CRS_IDS
    ]


# ---------------------------------------------------------------------------------------------
# The HTML report's plots


def test_html_curves_have_bands_and_whole_turns_and_simulators_keep_their_marker() -> None:
    series = [Series(c, "abus", r) for r in ("one", "two") for c in ("popular", "retrieval")]
    palette = Palette(series)
    names = [s.name for s in series]
    assert len({palette.marker(n) for n in names}) == 1  # one simulator, one marker, in both runs
    means = {n: [0.1 * t for t in range(1, 4)] for n in names}  # three turns: auto ticks would be 1.25, 1.5…
    bands = {"PC_t@10": {n: [(0.1 * t - 0.05, 0.1 * t + 0.05) for t in range(1, 4)] for n in names}}
    figure = plots.turn_curves([("PC_t@10", means)], palette, dict.fromkeys(names, 20), bands)
    axes = figure.axes[0]
    assert len([c for c in axes.collections if isinstance(c, PolyCollection)]) == len(names)
    figure.draw_without_rendering()
    low, high = axes.get_xlim()
    ticks = [t for t in axes.get_xticks() if low <= t <= high]
    assert ticks == [1.0, 2.0, 3.0]
    shares = plots.proportions({"Success": {n: (3, 10) for n in names}}, palette)
    assert all(t.get_fontsize() >= 10 for t in _texts(shares))


def test_the_report_carries_a_print_stylesheet(run: Path, context: Any) -> None:
    """Structure only; tests/report/test_report_browser.py checks it in Chromium's print mode."""
    html = build_report([open_run(run)], context=context)
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    assert style is not None
    printed = re.search(r"@media print \{(.*)\}", style.group(1), re.S)
    assert printed is not None
    rules = printed.group(1)
    hidden = re.search(r"\n\s*([^{}]*)\{\s*display: none", rules)
    assert hidden is not None and {"header nav", ".filters", "#browser"} <= {
        s.strip() for s in hidden.group(1).split(",")
    }
    assert re.search(r"section ~ section \{ break-before: page; \}", rules)
    assert re.search(r"table[^{]*\{ break-inside: avoid; \}", rules)
