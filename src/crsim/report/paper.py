"""Tables for a paper: the results and the paired comparisons as booktabs LaTeX or GitHub Markdown.

The results table has one row per metric and one column per CRS under each simulator: the mean with
its 95% bootstrap interval, n (evaluable dialogues) in a row of its own, and a cell's own n where the
metric was scored on fewer dialogues. The comparison table has one row per pair of CRSs: the paired
difference A − B with its interval, p, Holm-adjusted p and significance marks, explained in a legend.
Both come from the same numbers as the HTML report (`summary.json`, `crsim.studies.compare`).

A simulator is named by its id: the same simulator in two runs is one simulator. Only when one CRS ×
simulator pairing appears in several runs does the run's label follow the CRS's name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from crsim.model.run_folder.files import part_path
from crsim.model.run_folder.scores import USER_BOOTSTRAP, Aggregate
from crsim.report.compare import TEST_NAMES, number, p_text
from crsim.report.sections import Pairing, ReportContext
from crsim.studies.compare import ALPHA, MetricComparison, PairResult

TableFormat = Literal["latex", "markdown"]
#: File names, in the report's folder, per format: (results, comparisons).
TABLE_FILES: dict[str, tuple[str, str]] = {
    "latex": ("results.tex", "comparisons.tex"),
    "markdown": ("results.md", "comparisons.md"),
}
#: Significance marks on the Holm-adjusted p, strictest first; a mark needs p_Holm below alpha.
MARKS = ((0.001, "***"), (0.01, "**"), (ALPHA, "*"))
MINUS = "\u2212"


# ---------------------------------------------------------------------------------------------
# Names


@dataclass(frozen=True, eq=False)  # one column is one object (its pairing holds a run's data)
class Column:
    """One CRS under one simulator (named as a reader of the paper knows them) and its pairings."""

    simulator: str
    crs: str
    pairing: Pairing


def columns(context: ReportContext) -> list[Column]:
    """Every pairing as a column, grouped by simulator name (in order of first appearance); the run
    follows the CRS's name only when the same CRS × simulator appears in several runs."""
    found = context.pairings
    seen: dict[tuple[str, str], int] = {}
    for p in found:
        key = (p.series.crs, p.series.simulator)
        seen[key] = seen.get(key, 0) + 1
    made = [
        Column(
            p.series.simulator,
            p.series.crs + (f" [{p.view.label}]" if seen[(p.series.crs, p.series.simulator)] > 1 else ""),
            p,
        )
        for p in found
    ]
    order = list(dict.fromkeys(c.simulator for c in made))
    return sorted(made, key=lambda c: order.index(c.simulator))  # stable: CRSs keep report order


def evaluated(pairing: Pairing) -> int:
    summary = pairing.summary
    return summary.n_evaluable if summary.n_evaluable is not None else summary.n_dialogues


def table_number(value: float | None) -> str:
    """A number as the tables print it, with a minus sign; no sign on what rounds to zero."""
    text = number(value)
    if text.startswith("-"):
        return text[1:] if float(text[1:]) == 0 else MINUS + text[1:]
    return text


def cell_text(agg: Aggregate | None, n: int) -> str:
    """'mean [low, high]', '(n = k)' after it when the metric has fewer values than the column's n,
    '†' when the interval resamples users; '–' for a metric the pairing has no value of."""
    if agg is None or agg.mean is None:
        return "–"
    text = table_number(agg.mean)
    if agg.ci_low is not None and agg.ci_high is not None:
        text += f" [{table_number(agg.ci_low)}, {table_number(agg.ci_high)}]"
        if agg.method == USER_BOOTSTRAP:
            text += "†"
    else:
        text += " (no CI)"
    if agg.n != n:
        text += f" (n = {agg.n})"
    return text


def mark(result: PairResult, alpha: float = ALPHA) -> str:
    """'*', '**' or '***' by the Holm-adjusted p (below alpha, 0.01, 0.001); '' when not significant."""
    if not result.significant or result.p_holm is None:
        return ""
    return next((m for limit, m in MARKS if result.p_holm < min(limit, alpha)), "*")


RESULTS_CAPTION = (
    "Mean [95% bootstrap confidence interval] per metric (rows) and CRS under each simulator "
    "(columns); n: evaluable dialogues per CRS and simulator (a metric scored on fewer says its own n)."
)
USER_CAPTION = " †: the interval resamples users, not dialogues."
COMPARISON_LEGEND = (
    "Δ = mean over users of the per-user difference A − B [95% percentile bootstrap interval "
    "resampling users]; p: exact McNemar test for 0/1 metrics with one dialogue per user, else a "
    "sign-flip permutation test (a paired t-test above 1,000 users); p_Holm: Holm-adjusted over the "
    "pairs of one metric and simulator; * p_Holm < 0.05, ** p_Holm < 0.01, *** p_Holm < 0.001; "
    "n: users with a pair."
)


@dataclass
class Table:
    """A table in plain text cells (escaped only when written in a format)."""

    groups: list[tuple[str, int]]  # header spans above the columns: (text, columns)
    header: list[str]
    rows: list[list[str]]
    caption: str
    label: str
    align: str
    sections: list[int]  # row indices before which a rule separates groups of rows
    separator: str = "\\midrule"  # in LaTeX: the rule (or space) between groups of rows


def results_table(context: ReportContext, metrics: Sequence[str]) -> Table:
    """One row per metric (and a row of n), one column per CRS under each simulator."""
    found = columns(context)
    groups: list[tuple[str, int]] = [("", 1)]
    for column in found:
        if groups[-1][0] == column.simulator and len(groups) > 1:
            groups[-1] = (column.simulator, groups[-1][1] + 1)
        else:
            groups.append((column.simulator, 1))
    ns = [evaluated(c.pairing) for c in found]
    rows = [["n", *(str(n) for n in ns)]]
    for label in metrics:
        rows.append(
            [
                label,
                *(cell_text(c.pairing.summary.metrics.get(label), n) for c, n in zip(found, ns, strict=True)),
            ]
        )
    caption = RESULTS_CAPTION
    if any("†" in cell for row in rows for cell in row):
        caption += USER_CAPTION
    return Table(
        groups,
        ["Metric", *(c.crs for c in found)],
        rows,
        caption,
        "tab:crsim-results",
        "l" + "r" * len(found),
        [1],
    )


def comparison_table(compared: Sequence[tuple[str, MetricComparison]], several_runs: bool) -> Table:
    """One row per pair of CRSs under one simulator and metric, metrics separated by rules."""
    rows: list[list[str]] = []
    sections: list[int] = []
    for run, result in compared:
        simulator = result.simulator + (f" [{run}]" if several_runs else "")
        sections.append(len(rows))
        for p in result.pairs:
            diff = table_number(p.difference)
            if p.ci_low is not None and p.ci_high is not None:
                diff += f" [{table_number(p.ci_low)}, {table_number(p.ci_high)}]"
            rows.append(
                [
                    result.metric,
                    simulator,
                    p.crs_a,
                    p.crs_b,
                    diff + mark(p),
                    p_text(p.p_value),
                    p_text(p.p_holm),
                    TEST_NAMES.get(p.test or "", "no test"),
                    str(p.n_users),
                ]
            )
    header = ["Metric", "Simulator", "A", "B", "Δ (A − B) [95% CI]", "p", "p_Holm", "test", "n"]
    return Table(
        [],
        header,
        rows,
        COMPARISON_LEGEND,
        "tab:crsim-comparisons",
        "llllrrrlr",
        sections[1:],
        "\\addlinespace",
    )


# ---------------------------------------------------------------------------------------------
# LaTeX

LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "×": r"$\times$",
    MINUS: r"$-$",
    "–": "--",
    "—": "---",
    "†": r"\dag{}",
    "Δ": r"$\Delta$",
    "…": r"\dots{}",
    "\u00a0": "~",
}


def latex_escape(text: str) -> str:
    """Text as LaTeX prints it: the special characters escaped, ×, −, Δ and † in math or as macros,
    control characters dropped (labels such as "Recall@(t,10)" or "popular × abus" come out as they read)."""
    return "".join(LATEX.get(c, c) for c in text if c.isprintable() or c == "\u00a0")


def _marked(cell: str) -> str:
    """A difference's significance marks as a superscript: '0.2 [0.1, 0.3]$^{**}$'."""
    return re.sub(r"(\d\]?)(\*{1,3})$", r"\1$^{\2}$", cell)


def latex(table: Table) -> str:
    """A `table` float with a booktabs `tabular` (needs `\\usepackage{booktabs}`); the caption
    carries the legend."""
    lines = [
        "% crsim report table; needs \\usepackage{booktabs}",
        "\\begin{table}[tbp]",
        "\\centering",
        "\\small",
        f"\\caption{{{latex_escape(table.caption)}}}",
        f"\\label{{{table.label}}}",
        f"\\begin{{tabular}}{{{table.align}}}",
        "\\toprule",
    ]
    if any(text for text, _ in table.groups):
        spans, rules, start = [], [], 1
        for text, width in table.groups:
            spans.append(
                latex_escape(text) if width == 1 else f"\\multicolumn{{{width}}}{{c}}{{{latex_escape(text)}}}"
            )
            if text:
                rules.append(f"\\cmidrule(lr){{{start}-{start + width - 1}}}")
            start += width
        lines.append(" & ".join(spans) + " \\\\")
        lines.append(" ".join(rules))
    lines.append(" & ".join(latex_escape(h) for h in table.header) + " \\\\")
    lines.append("\\midrule")
    for index, row in enumerate(table.rows):
        if index in table.sections:
            lines.append(table.separator)
        lines.append(" & ".join(_marked(latex_escape(c)) for c in row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Markdown

MARKDOWN = {
    "\\": "\\\\",
    "|": "\\|",
    "*": "\\*",
    "_": "\\_",
    "`": "\\`",
    "<": "&lt;",
    ">": "&gt;",
    "[": "\\[",
    "]": "\\]",
}


def markdown_escape(text: str) -> str:
    """Text for a GitHub table cell: pipes, emphasis, code and link characters and HTML escaped."""
    return "".join(MARKDOWN.get(c, c) for c in text if c.isprintable() or c == "\u00a0")


def markdown(table: Table) -> str:
    """A GitHub Markdown table under its caption; a spanning header (the simulator) joins the column's
    name, since Markdown tables have one header row."""
    names = list(table.header)
    if any(text for text, _ in table.groups):
        at = 0
        for text, width in table.groups:
            for i in range(at, at + width):
                if text:
                    names[i] = f"{names[i]} × {text}"
            at += width
    align = ["---" if a == "l" else "--:" for a in table.align]
    lines = [f"**{markdown_escape(table.caption)}**", ""]
    lines.append("| " + " | ".join(markdown_escape(n) for n in names) + " |")
    lines.append("| " + " | ".join(align) + " |")
    lines += ["| " + " | ".join(markdown_escape(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def write_tables(
    context: ReportContext, metrics: Sequence[str], directory: Path, fmt: TableFormat
) -> list[Path]:
    """The results table and, where CRSs were compared, the comparison table, in `directory`; returns
    the paths written."""
    render = latex if fmt == "latex" else markdown
    results_name, comparisons_name = TABLE_FILES[fmt]
    written = []
    tables = [(results_name, results_table(context, metrics))]
    if context.compared:
        tables.append((comparisons_name, comparison_table(context.compared, len(context.views) > 1)))
    for name, table in tables:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = part_path(path)  # renamed into place when complete, as the HTML report is
        temp.write_text(render(table), encoding="utf-8")
        os.replace(temp, path)
        written.append(path)
    return written
