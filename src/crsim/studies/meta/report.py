"""The meta-evaluation report: correlations beside the published baselines, and system rankings,
as rich tables, Markdown or JSON.

Tables: one per split and statistic (Pearson r, Spearman rho), evaluators as rows and the seven
aspects as columns; the best value of each column (baselines and the evaluated one together) is
marked, with `*` on the terminal and in bold in Markdown. Below the evaluated row, N (pairs used)
and the number of gold labels without a prediction.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, Field
from rich import box
from rich.console import Group
from rich.markup import escape
from rich.table import Table

from crsim.studies.meta.aspects import ASPECTS, SHORT_TITLES, TITLES
from crsim.studies.meta.baselines import Baselines, Scores
from crsim.studies.meta.correlation import MetaResult
from crsim.studies.meta.gold import SPLIT_TITLES, SPLITS
from crsim.studies.meta.ranking import Agreement, Ranking

Statistic = Literal["pearson", "spearman"]
STATISTICS: tuple[Statistic, ...] = ("pearson", "spearman")
STAT_TITLES = {"pearson": "Pearson r", "spearman": "Spearman ρ"}


class MetaReport(BaseModel):
    """Everything `crsim meta-eval` reports (the `--json` output)."""

    result: MetaResult
    baselines: Baselines = Field(description="Published numbers: split -> evaluator -> aspect -> scores.")
    best: dict[str, dict[str, dict[str, list[str]]]] = Field(
        default_factory=dict, description="split -> statistic -> aspect -> the best evaluator(s)."
    )
    ranking: list[Ranking] | None = None


def our_name(result: MetaResult, baselines: Baselines) -> str:
    """The evaluated row's name, told apart from a baseline of the same name."""
    taken = {name for by_name in baselines.values() for name in by_name}
    return f"{result.evaluator} (this run)" if result.evaluator in taken else result.evaluator


def _rows(report: MetaReport, split: str) -> dict[str, dict[str, Scores]]:
    """Evaluator name -> aspect -> scores for one split: the baselines, then the evaluated one."""
    rows = dict(report.baselines.get(split, {}))
    ours = {}
    for aspect in ASPECTS:
        cell = report.result.cell(split, aspect)
        ours[aspect] = Scores(pearson=cell.pearson, spearman=cell.spearman)
    rows[our_name(report.result, report.baselines)] = ours
    return rows


def best_per_column(result: MetaResult, baselines: Baselines) -> dict[str, dict[str, dict[str, list[str]]]]:
    """split -> statistic -> aspect -> names of the evaluator(s) with the highest value."""
    report = MetaReport(result=result, baselines=baselines)
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for split in SPLITS:
        rows = _rows(report, split)
        out[split] = {}
        for stat in STATISTICS:
            out[split][stat] = {}
            for aspect in ASPECTS:
                values = {
                    name: getattr(scores[aspect], stat)
                    for name, scores in rows.items()
                    if aspect in scores and getattr(scores[aspect], stat) is not None
                }
                top = max(values.values(), default=None)
                out[split][stat][aspect] = [n for n, v in values.items() if top is not None and v == top]
    return out


def build_report(
    result: MetaResult, baselines: Baselines, ranking: list[Ranking] | None = None
) -> MetaReport:
    return MetaReport(
        result=result, baselines=baselines, best=best_per_column(result, baselines), ranking=ranking
    )


def _value(scores: Scores | None, stat: Statistic) -> float | None:
    return None if scores is None else getattr(scores, stat)


def _table_rows(report: MetaReport, split: str, stat: Statistic) -> Iterator[tuple[str, list[str], bool]]:
    """(row name, cells, is the evaluated row) with best values marked by `\0` (formatted later)."""
    best = report.best.get(split, {}).get(stat, {})
    ours = our_name(report.result, report.baselines)
    for name, scores in _rows(report, split).items():
        cells = []
        for aspect in ASPECTS:
            value = _value(scores.get(aspect), stat)
            text = "–" if value is None else f"{value:.3f}"
            if value is None and name == ours and report.result.cell(split, aspect).n:
                text = "undef."
            cells.append(("\0" + text) if name in best.get(aspect, []) else text)
        yield name, cells, name == ours


def _count_rows(report: MetaReport, split: str) -> list[tuple[str, list[str]]]:
    cells = [report.result.cell(split, a) for a in ASPECTS]
    return [("  N", [str(c.n) for c in cells]), ("  missing", [str(c.missing) for c in cells])]


def _title(report: MetaReport, split: str, stat: Statistic) -> str:
    count = report.result.conversations.get(split, 0)
    return f"{SPLIT_TITLES[split]} ({count} conversations): {STAT_TITLES[stat]}, * = best per column"


_LEGEND = ", ".join(
    f"{SHORT_TITLES[a]} = {TITLES[a].lower()}" for a in ASPECTS if SHORT_TITLES[a] != TITLES[a]
)


def correlation_tables(report: MetaReport) -> list[Table]:
    """One rich table per split and statistic."""
    tables = []
    for split in SPLITS:
        for stat in STATISTICS:
            table = Table(
                title=escape(_title(report, split, stat)),
                title_justify="left",
                box=box.SIMPLE,
                pad_edge=False,
                caption=_LEGEND if (split, stat) == (SPLITS[-1], STATISTICS[-1]) else None,
                caption_justify="left",
            )
            table.add_column("evaluator", no_wrap=True)
            for aspect in ASPECTS:
                table.add_column(SHORT_TITLES[aspect], justify="right", no_wrap=True)
            for name, cells, ours in _table_rows(report, split, stat):
                shown = [f"[bold]{escape(c[1:])}*[/bold]" if c.startswith("\0") else escape(c) for c in cells]
                table.add_row(f"[bold]{escape(name)}[/bold]" if ours else escape(name), *shown)
            for name, cells in _count_rows(report, split):
                table.add_row(f"[dim]{name}[/dim]", *(f"[dim]{c}[/dim]" for c in cells))
            tables.append(table)
    return tables


def _rank_cell(value: float, rank: int) -> str:
    return f"{value:.3f} ({rank})"


def _agreement_text(name: str, agreement: Agreement) -> str:
    if agreement.undefined:
        return f"{name}: undefined ({agreement.undefined})"
    return f"{name}: Kendall τ = {agreement.kendall:.3f}, Spearman ρ = {agreement.spearman:.3f}"


def _scope_title(ranking: Ranking) -> str:
    scope = "all systems" if ranking.scope == "all" else SPLIT_TITLES.get(ranking.scope, ranking.scope)
    return (
        f"System ranking by {ranking.aspect}, {scope}: {ranking.dialogues} dialogues"
        f" ({ranking.missing} without an evaluator score left out); mean score or Bradley–Terry"
        " strength (rank)"
    )


_RANK_HEADERS = ("system", "n", "human", "evaluator", "human BT", "evaluator BT")


def _ranking_rows(ranking: Ranking) -> list[list[str]]:
    return [
        [
            row.system,
            str(row.dialogues),
            _rank_cell(row.human_mean, row.human_rank),
            _rank_cell(row.evaluator_mean, row.evaluator_rank),
            _rank_cell(row.human_bt, row.human_bt_rank),
            _rank_cell(row.evaluator_bt, row.evaluator_bt_rank),
        ]
        for row in ranking.systems
    ]


def ranking_tables(rankings: list[Ranking]) -> list[Table]:
    tables = []
    for ranking in rankings:
        caption = "\n".join(
            (
                _agreement_text("mean score", ranking.mean),
                _agreement_text("Bradley–Terry", ranking.bradley_terry),
            )
        )
        table = Table(
            title=escape(_scope_title(ranking)),
            title_justify="left",
            caption=escape(caption),
            caption_justify="left",
            box=box.SIMPLE,
        )
        for header in _RANK_HEADERS:
            table.add_column(header, justify="left" if header == "system" else "right", no_wrap=True)
        for row in _ranking_rows(ranking):
            table.add_row(*(escape(c) for c in row))
        tables.append(table)
    return tables


def notes(report: MetaReport) -> list[str]:
    """Lines on what did not fit: unknown conversations, unpaired predictions, ignored inputs."""
    result = report.result
    lines = []
    if result.excluded:
        lines.append(
            f"a subset: {result.excluded} gold conversation(s) left out (--limit); the baselines were"
            " measured on all conversations, so compare with care"
        )
    if result.unknown_conv_ids:
        shown = ", ".join(result.unknown_conv_ids[:5]) + (" …" if len(result.unknown_conv_ids) > 5 else "")
        lines.append(
            f"{len(result.unknown_conv_ids)} predicted conversation(s) not in the gold data: {shown}"
        )
    lines.extend(
        f"{count} prediction(s) without a gold label: {kind}" for kind, count in result.unmatched.items()
    )
    lines.extend(f"{count} × {note}" for note, count in result.notes.items())
    reasons: dict[str, int] = {}
    for cell in result.cells:
        for reason, count in cell.missing_reasons.items():
            reasons[reason] = reasons.get(reason, 0) + count
    lines.extend(f"{count} gold label(s) missing a prediction: {reason}" for reason, count in reasons.items())
    return lines


def rich_report(report: MetaReport) -> Group:
    """Everything for the terminal."""
    parts: list[Table | str] = [*correlation_tables(report)]
    if report.ranking:
        parts.extend(ranking_tables(report.ranking))
    parts.extend(escape(line) for line in notes(report))
    return Group(*parts)


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    aligns = ["---"] + ["---:"] * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(aligns) + " |"]
    lines.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows)
    return lines


def markdown_report(report: MetaReport) -> str:
    """The same content as Markdown (best values in bold, the evaluated row's name in bold)."""
    out = [f"## Meta-evaluation of {report.result.evaluator} on CRSArena-Eval", ""]
    for split in SPLITS:
        for stat in STATISTICS:
            out += [f"### {_title(report, split, stat).replace('* = ', 'bold = ')}", ""]
            rows = []
            for name, cells, ours in _table_rows(report, split, stat):
                shown = [f"**{c[1:]}**" if c.startswith("\0") else c for c in cells]
                rows.append([f"**{name}**" if ours else name, *shown])
            rows.extend([name.strip(), *cells] for name, cells in _count_rows(report, split))
            out += [*_md_table(["evaluator", *(TITLES[a] for a in ASPECTS)], rows), ""]
    for ranking in report.ranking or []:
        out += [f"### {_scope_title(ranking)}", ""]
        out += [*_md_table(list(_RANK_HEADERS), _ranking_rows(ranking)), ""]
        out += [
            _agreement_text("mean score", ranking.mean) + "  ",
            _agreement_text("Bradley–Terry", ranking.bradley_terry),
            "",
        ]
    lines = notes(report)
    if lines:
        out += ["### Notes", "", *(f"- {line}" for line in lines), ""]
    return "\n".join(out)
