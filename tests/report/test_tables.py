"""The terminal results table (`crsim run`, `crsim evaluate`) at 80 columns, with few and many pairings."""

from __future__ import annotations

from rich.console import Console

from crsim.eval.stats import aggregate
from crsim.model.run_folder.scores import GroupSummary
from crsim.report.tables import format_aggregate, summary_table

CRSS = ["popular", "retrieval", "retrieval-noexplain"]
SIMULATORS = ["abus", "abus-impatient", "abus-picky"]


def _summary(crs: str, simulator: str, offset: int) -> GroupSummary:
    """A summary with distinct values per pairing, so every interval text is unique to its cell."""
    success = [float((i + offset) % 3 == 0) for i in range(30)]
    turns = [3.0 + ((i * 7 + offset) % 5) for i in range(30)]
    return GroupSummary(
        crs_id=crs,
        simulator_id=simulator,
        n_dialogues=30,
        n_evaluable=30,
        n_users=30,
        terminations={"user_ended": 30},
        metrics={
            "Success": aggregate(success, seed=offset),
            "Turns": aggregate(turns, seed=offset),
            "Recall@(t,10)": aggregate([v / 10 for v in turns], seed=offset),
        },
    )


def _render(summaries: list[GroupSummary], width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(summary_table(summaries))
    return console.export_text()


def test_nine_pairings_stay_readable_at_80_columns() -> None:
    summaries = [_summary(c, s, i) for i, (c, s) in enumerate((c, s) for c in CRSS for s in SIMULATORS)]
    text = _render(summaries)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text  # no name cut to `retriev… × abus-im…`
    for summary in summaries:
        for label, agg in summary.metrics.items():
            cell = format_aggregate(agg)
            # every mean with its interval whole on one line, on the row of its pairing
            rows = [line for line in lines if cell in line]
            assert rows, f"{label} of {summary.crs_id} × {summary.simulator_id} wrapped: {cell}"
    for crs in CRSS:
        for simulator in SIMULATORS:
            assert any(f"{crs} × {simulator}" in line for line in lines)  # whole, in the metric blocks


def test_six_pairings_put_each_pairing_on_its_own_row_with_its_counts() -> None:
    summaries = [_summary(c, s, i) for i, (c, s) in enumerate((c, s) for c in CRSS for s in SIMULATORS[:2])]
    text = _render(summaries)
    assert "Dialogues per CRS × simulator" in text
    counts = [line for line in text.splitlines() if "30 / 30" in line]
    assert len(counts) == 6  # one row per pairing, not one column each
    assert max(len(line) for line in text.splitlines()) <= 80


def test_few_pairings_keep_the_wide_layout() -> None:
    """Two pairings (the quickstart) fit: metrics as rows, pairings as columns, as before."""
    summaries = [_summary("popular", "abus", 0), _summary("retrieval", "abus", 1)]
    text = _render(summaries)
    header = next(line for line in text.splitlines() if "metric" in line)
    assert "popular × abus" in header and "retrieval × abus" in header
    assert "Dialogues per CRS × simulator" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
