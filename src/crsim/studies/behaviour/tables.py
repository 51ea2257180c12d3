"""Rich tables of the behaviour report: one per kind (simulators, CRSs, judges), measures as rows and
subjects as columns; a cell is "k/n  share [95% Wilson interval]"."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from crsim.studies.behaviour.observation import MEASURES, Kind
from crsim.studies.behaviour.report import BehaviourReport, Row

#: The heading of each kind's table.
KIND_TITLES = {Kind.SIMULATOR: "Simulators", Kind.CRS: "CRSs", Kind.JUDGE: "Judges"}


def cell_text(row: Row) -> str:
    """ "k/n share [low, high]" (and the units that could not be evaluated), or "n = 0"."""
    if row.value is None or row.ci_low is None or row.ci_high is None:
        text = "n = 0"
    else:
        text = f"{row.k}/{row.n} {row.value:.0%} [{row.ci_low:.0%}, {row.ci_high:.0%}]"
    if row.not_evaluable:
        text += f" ({row.not_evaluable} n/e)"
    return text


def kind_table(report: BehaviourReport, kind: Kind) -> Table | None:
    """The table of one kind, or None when the run has nothing of it."""
    rows = report.rows_of(kind)
    if not rows:
        return None
    subjects = list(dict.fromkeys(r.subject for r in rows))
    table = Table(title=f"{KIND_TITLES[kind]}: behaviour ({report.run}, {report.dialogues} dialogues)")
    table.add_column("measure (unit)")
    for subject in subjects:
        table.add_column(escape(subject))
    cells = {(r.measure, r.subject): r for r in rows}
    for name in dict.fromkeys(r.measure for r in rows):
        label = f"{name} ({MEASURES[name].unit})"
        if MEASURES[name].status == "experimental":
            label += " [dim]experimental[/dim]"
        table.add_row(label, *(cell_text(cells[(name, s)]) if (name, s) in cells else "–" for s in subjects))
    if kind is Kind.JUDGE:
        spread = {r.subject: r.detail for r in rows if r.measure == "score_at_max"}
        table.add_row("scores per level", *(escape(spread.get(s, "")) for s in subjects))
    return table


def behaviour_tables(report: BehaviourReport) -> list[Table]:
    """The tables of the kinds the run has."""
    return [t for kind in Kind if (t := kind_table(report, kind)) is not None]


def examples_text(report: BehaviourReport) -> list[str]:
    """One line per row with examples: where each measure fired (or, when firing is wanted, missed)."""
    lines = []
    for row in report.rows:
        if row.examples:
            what = "missed" if MEASURES[row.measure].wanted else "fired"
            lines.append(f"{row.subject} {row.measure} {what}: " + " | ".join(row.examples))
    return lines
