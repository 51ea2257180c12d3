"""Rich tables of evaluation summaries: one row per CRS × simulator, mean [95% CI] per metric."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from crsim.eval.evaluate import GroupSummary
from crsim.eval.stats import USER_BOOTSTRAP, Aggregate

#: Marks an interval from the cluster bootstrap over users (users hold several dialogues).
USER_MARK = "†"
USER_NOTE = f"{USER_MARK} interval resamples users, not dialogues (users hold several dialogues)"


def format_aggregate(agg: Aggregate) -> str:
    if agg.mean is None:
        return "n/a"
    text = f"{agg.mean:.3f}"
    if agg.ci_low is not None and agg.ci_high is not None:
        text += f" [{agg.ci_low:.3f}, {agg.ci_high:.3f}]"
        if agg.method == USER_BOOTSTRAP:
            text += USER_MARK
    else:
        text += f" (n={agg.n}, no CI)"
    if agg.missing:
        text += f" ({agg.missing} missing)"
    return text


def evaluable_text(summary: GroupSummary) -> str:
    """'evaluable / all' dialogues; '? / all' for a summary written before crsim counted them."""
    evaluable = "?" if summary.n_evaluable is None else str(summary.n_evaluable)
    return f"{evaluable} / {summary.n_dialogues}"


def users_text(summary: GroupSummary) -> str:
    """Distinct simulated users, '?' when the summary does not know them."""
    return "?" if summary.n_users is None else str(summary.n_users)


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


def summary_table(
    summaries: Sequence[GroupSummary], title: str = "Results: mean [95% bootstrap CI]"
) -> Table:
    """Metrics as rows and CRS × simulator pairs as columns, which stays readable in 80 columns.

    `evaluable` counts the dialogues the metrics use (those the simulator or the infrastructure broke
    are left out); `users` the distinct simulated users; `errors` the dialogues that ended in an error
    or a timeout, by fault.
    """
    labels: list[str] = []
    for summary in summaries:
        labels.extend(label for label in summary.metrics if label not in labels)
    caption = None
    if any(a.method == USER_BOOTSTRAP for s in summaries for a in s.metrics.values()):
        caption = USER_NOTE
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("metric", style="bold", no_wrap=True)
    for summary in summaries:
        table.add_column(escape(f"{summary.crs_id} × {summary.simulator_id}"), justify="right")
    table.add_row("dialogues", *(str(s.n_dialogues) for s in summaries))
    table.add_row("evaluable", *(evaluable_text(s) for s in summaries))
    table.add_row("users", *(users_text(s) for s in summaries))
    for label in labels:
        cells = (format_aggregate(s.metrics[label]) if label in s.metrics else "" for s in summaries)
        table.add_row(escape(label), *cells)
    table.add_row(
        "errors", *(f"[red]{escape(failures_text(s))}[/red]" if failures(s) else "0" for s in summaries)
    )
    return table
