"""Rich tables of evaluation summaries: one row per CRS × simulator, mean [95% CI] per metric."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from crsim.eval.scores import GroupSummary
from crsim.eval.stats import USER_BOOTSTRAP, Aggregate

#: Marks an interval from the cluster bootstrap over users (users hold several dialogues).
USER_MARK = "†"
USER_NOTE = f"{USER_MARK} interval resamples users, not dialogues (users hold several dialogues)"
TITLE = "Results: mean [95% bootstrap CI]"


#: What a wide table's `n=` says (it stands in for "(k missing)" there, to keep the columns narrow).
N_NOTE = "n=: dialogues the metric applies to (the rest: not applicable, or failed)"


def format_aggregate(agg: Aggregate, compact: bool = False) -> str:
    """'mean [low, high]' and the missing values: '(k missing)', or with `compact` the values present
    ('n=53'), which is shorter."""
    if agg.mean is None:
        return "n/a"
    text = f"{agg.mean:.3f}"
    if agg.ci_low is not None and agg.ci_high is not None:
        text += f" [{agg.ci_low:.3f}, {agg.ci_high:.3f}]"
        if agg.method == USER_BOOTSTRAP:
            text += USER_MARK
    else:
        text += f" (n={agg.n}, no CI)"
    if agg.missing and not (compact and "n=" in text):
        text += f" n={agg.n}" if compact else f" ({agg.missing} missing)"
    return text


def evaluable_text(summary: GroupSummary) -> str:
    """'evaluable / all' dialogues; '? / all' for a summary written before crsim counted them."""
    evaluable = "?" if summary.n_evaluable is None else str(summary.n_evaluable)
    return f"{evaluable} / {summary.n_dialogues}"


def users_text(summary: GroupSummary) -> str:
    """Distinct simulated users, '?' when the summary does not know them."""
    return "?" if summary.n_users is None else str(summary.n_users)


def ambiguous_text(summary: GroupSummary) -> str:
    """Titles linked ambiguously in the CRS's text, '?' when the summary does not know them."""
    return "?" if summary.ambiguous_links is None else str(summary.ambiguous_links)


def failures(summary: GroupSummary) -> int:
    """Dialogues that did not end normally (errors and timeouts, whoever's fault)."""
    if summary.faults:
        return sum(summary.faults.values())
    return summary.terminations.get("error", 0)  # a summary written before faults were recorded


def failures_text(summary: GroupSummary) -> str:
    """'0', or the failures with whose fault they were: '3 (crs 1, user 2)'."""
    total = failures(summary)
    if not total or not summary.faults:
        return str(total)
    return f"{total} ({', '.join(f'{fault} {n}' for fault, n in summary.faults.items())})"


def _labels(summaries: Sequence[GroupSummary]) -> list[str]:
    labels: list[str] = []
    for summary in summaries:
        labels.extend(label for label in summary.metrics if label not in labels)
    return labels


def _caption(summaries: Sequence[GroupSummary], compact: bool = False) -> str | None:
    notes = []
    if any(a.method == USER_BOOTSTRAP for s in summaries for a in s.metrics.values()):
        notes.append(USER_NOTE)
    if compact and any(a.missing and a.mean is not None for s in summaries for a in s.metrics.values()):
        notes.append(N_NOTE)
    return "\n".join(notes) or None


def _errors_cell(summary: GroupSummary) -> str:
    return f"[red]{escape(failures_text(summary))}[/red]" if failures(summary) else "0"


def pairing(summary: GroupSummary) -> str:
    """The CRS × simulator pairing a summary describes, as tables and plots name it."""
    return f"{summary.crs_id} × {summary.simulator_id}"


#: Follows the name of a pairing the run did not test (`crsim.runner.outcome.failed_pairings`).
FAILED_MARK = "FAILED"


def _name(summary: GroupSummary, failed: frozenset[str]) -> str:
    name = escape(pairing(summary))
    return f"{name} [red]{FAILED_MARK}[/red]" if pairing(summary) in failed else name


def wide_table(
    summaries: Sequence[GroupSummary], title: str = TITLE, failed: frozenset[str] = frozenset()
) -> Table:
    """Metrics as rows and CRS × simulator pairings as columns: the layout for a few pairings.
    Pairings named in `failed` (as `pairing` names them) are marked FAILED."""
    caption = _caption(summaries, compact=True)
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("metric", style="bold", no_wrap=True)
    for summary in summaries:
        table.add_column(_name(summary, failed), justify="right")
    table.add_row("dialogues", *(str(s.n_dialogues) for s in summaries))
    table.add_row("evaluable", *(evaluable_text(s) for s in summaries))
    table.add_row("users", *(users_text(s) for s in summaries))
    for label in _labels(summaries):
        cells = (format_aggregate(s.metrics[label], True) if label in s.metrics else "" for s in summaries)
        table.add_row(escape(label), *cells)
    table.add_row("errors", *(_errors_cell(s) for s in summaries))
    table.add_row("ambiguous links", *(ambiguous_text(s) for s in summaries))
    return table


def counts_table(summaries: Sequence[GroupSummary], failed: frozenset[str] = frozenset()) -> Table:
    """One row per pairing: dialogues, evaluable, distinct users, errors, ambiguous links (the long layout's
    first part)."""
    table = Table(title="Dialogues per CRS × simulator", title_justify="left")
    table.add_column("CRS × simulator", ratio=1, min_width=12, overflow="fold")
    for name in ("dialogues", "evaluable", "users", "errors", "ambiguous links"):
        table.add_column(name, justify="right", no_wrap=True)
    for s in summaries:
        cells = (str(s.n_dialogues), evaluable_text(s), users_text(s), _errors_cell(s), ambiguous_text(s))
        table.add_row(_name(s, failed), *cells)
    return table


def long_table(
    summaries: Sequence[GroupSummary], title: str = TITLE, failed: frozenset[str] = frozenset()
) -> Table:
    """One block of rows per metric, one row per pairing: as many pairings as needed fit in 80 columns,
    and a mean with its interval is never wrapped (the names wrap at the ×, or fold, instead)."""
    table = Table(title=title, title_justify="left", caption=_caption(summaries), caption_justify="left")
    table.add_column("metric", style="bold", ratio=1, min_width=6, overflow="fold")
    table.add_column("CRS × simulator", ratio=2, min_width=12, overflow="fold")
    table.add_column("mean [95% CI]", justify="right", no_wrap=True)
    for label in _labels(summaries):
        present = [s for s in summaries if label in s.metrics]
        for index, s in enumerate(present):
            last = index == len(present) - 1
            name = escape(label) if index == 0 else ""
            table.add_row(name, _name(s, failed), format_aggregate(s.metrics[label]), end_section=last)
    return table


@dataclass
class SummaryTables:
    """The results of an evaluation at whatever width the terminal has.

    The wide layout (metrics as rows, pairings as columns) when it fits; otherwise the long layout:
    a table of dialogue counts per pairing, then one block of rows per metric with one row per
    pairing, so headers are never cut to `retriev… × abus-im…` and intervals never wrap.
    """

    summaries: Sequence[GroupSummary]
    title: str = TITLE
    #: Pairings (as `pairing` names them) the run did not test, marked FAILED.
    failed: frozenset[str] = frozenset()

    def fits(self, console: Console, width: int) -> bool:
        """Whether the wide layout, at its natural width, fits in `width` columns."""
        wide = wide_table(self.summaries, self.title, self.failed)
        return Measurement.get(console, console.options.update_width(10_000), wide).maximum <= width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.fits(console, options.max_width):
            yield wide_table(self.summaries, self.title, self.failed)
            return
        yield counts_table(self.summaries, self.failed)
        yield long_table(self.summaries, self.title, self.failed)


def summary_table(
    summaries: Sequence[GroupSummary], title: str = TITLE, failed: frozenset[str] = frozenset()
) -> SummaryTables:
    """The results table for a console: see `SummaryTables` for the two layouts and when each is used.

    `evaluable` counts the dialogues the metrics use (those the simulator or the infrastructure broke
    are left out); `users` the distinct simulated users; `errors` the dialogues that ended in an error
    or a timeout, by fault; pairings named in `failed` are marked FAILED.
    """
    return SummaryTables(summaries, title, failed)
