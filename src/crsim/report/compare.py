"""Paired comparisons of run folders (`crsim compare`, the report's Comparisons section,
`crsim.report.dataframes.comparisons_df`): reading the folders and presenting `crsim.studies.compare` results.

Text is laid out for an 80-column terminal; names recorded by CRSs and runs are cut to fit and
stripped of control characters.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from crsim.core.errors import DataError
from crsim.model.run_folder.folder import RunFolder
from crsim.model.run_folder.summary import Direction
from crsim.studies.compare import (
    Comparison,
    ComparisonOptions,
    MetricComparison,
    PairResult,
    RankEntry,
    Verdict,
    compare,
    read_columns,
)

WIDTH = 80
NAME = 36


@dataclass
class FolderComparison:
    """A comparison and what the reader should know about how its runs were paired."""

    comparison: Comparison
    notes: list[str] = field(default_factory=list)


def run_labels(folders: Sequence[RunFolder]) -> list[str]:
    """Folder names, numbered when two runs share one."""
    labels: list[str] = []
    for folder in folders:
        label, n = folder.name, 2
        while label in labels:
            label, n = f"{folder.name} ({n})", n + 1
        labels.append(label)
    return labels


def compare_folders(
    folders: Sequence[RunFolder], options: ComparisonOptions | None = None
) -> FolderComparison:
    """Compare the CRSs of evaluated run folders; with several runs, CRS names get " [run]" and
    pairs are made across runs by simulator, user, trial and occurrence."""
    several = len(folders) > 1
    for folder in folders:
        if not folder.scores_path.is_file():
            raise DataError("file not found; run `crsim evaluate` first", path=str(folder.scores_path))
    found = read_columns(
        (folder.dialogues_path, folder.scores_path, f" [{label}]" if several else "")
        for folder, label in zip(folders, run_labels(folders), strict=True)
    )
    directions: dict[str, Direction] = {}
    unrecorded = []
    for folder in folders:
        recorded = folder.metric_metadata()
        if recorded is None:
            unrecorded.append(folder.name)
        for label, info in (recorded or {}).items():
            directions.setdefault(label, info.direction)
    notes = []
    if unrecorded:
        notes.append(
            f"{', '.join(unrecorded)}: the summary does not record which way each metric is better (an "
            "older crsim evaluated it): its metrics are ranked higher-first; `crsim evaluate` records it"
        )
    draws = {(repr(f.typed_manifest.users), f.typed_manifest.seed) for f in folders}
    if len(draws) > 1:
        notes.append(
            "the runs drew their users with different settings or seeds: pairs are made by user id, "
            "so check that the ids name the same simulated users"
        )
    return FolderComparison(compare(found, options, _with_aspects(directions, found.metrics)), notes)


def _with_aspects(directions: dict[str, Direction], labels: Sequence[str]) -> dict[str, Direction]:
    """`directions` with an evaluator's aspect labels (`label/aspect`) given their evaluator's."""
    full = dict(directions)
    for label in labels:
        head = label.split("/", 1)[0]
        if label not in full and head in directions:
            full[label] = directions[head]
    return full


# ---------------------------------------------------------------------------------------------
# Text


def clean(text: str, width: int = NAME) -> str:
    """A recorded name for the terminal: printable characters only, cut to `width`."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def number(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:.4g}"


def p_text(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def interval(result: PairResult) -> str:
    text = number(result.difference)
    if result.ci_low is not None and result.ci_high is not None:
        text += f" [{number(result.ci_low)}, {number(result.ci_high)}]"
    return text


DIRECTION_TEXT = {
    "higher": "higher is better",
    "lower": "lower is better",
    "none": "no better direction: ordered by value, no winner",
}


def verdict_lines(verdict: Verdict) -> list[str]:
    """One pair of CRSs across the metrics: wins, ties, losses and the tests behind each."""
    a, b = clean(verdict.crs_a, 30), clean(verdict.crs_b, 30)
    head = (
        f"{a} vs {b} · simulator {clean(verdict.simulator, 20)}: {a} wins {verdict.wins_a}, "
        f"{b} wins {verdict.wins_b}, ties {verdict.ties}"
        + (f", {verdict.undirected} without direction" if verdict.undirected else "")
    )
    lines = textwrap.wrap(head, WIDTH, break_on_hyphens=False)
    for entry in verdict.metrics:
        outcome = (
            "no direction"
            if entry.direction == "none"
            else (f"{clean(entry.winner, 18)} better" if entry.winner else "tie")
        )
        lines.append(
            f"  {clean(entry.metric, 20):<20} {outcome:<25} p Holm {p_text(entry.p_holm):<6} "
            f"{TEST_NAMES.get(entry.test or '', 'no test')}"
        )
    return lines


TEST_NAMES = {"mcnemar": "exact McNemar", "permutation": "permutation", "t": "paired t"}


def metric_lines(found: MetricComparison, options: ComparisonOptions) -> list[str]:
    """One simulator × metric: the ranking with letter groups, then each pair."""
    pairs = len(found.pairs)
    title = (
        f"{clean(found.metric, 30)} · simulator {clean(found.simulator, 20)} · "
        f"Holm over {pairs} pair{'s' if pairs != 1 else ''}"
    )
    lines = [title, "-" * min(WIDTH, len(title)), f"  {DIRECTION_TEXT[found.direction]}"]
    spread = any(entry.trial_sd is not None for entry in found.ranking)
    sd_head = f"  {'trial SD':>8}" if spread else ""
    lines.append(f"  {'rank':>4}  {'CRS':<{NAME}}  {'mean':>9}  {'users':>6}{sd_head}  group")
    for entry in found.ranking:
        sd = f"  {number(entry.trial_sd):>8}" if spread else ""
        lines.append(
            f"  {entry.rank:>4}  {clean(entry.crs):<{NAME}}  {number(entry.mean):>9}  "
            f"{entry.n_users:>6}{sd}  {entry.group or '-'}"
        )
    for result in found.pairs:
        lines.append("")
        lines.extend(pair_lines(result, options))
    return lines


def _dropped(result: PairResult) -> str:
    """'2 pairs dropped (1 not evaluable, 1 without value)', or 'no pair dropped'."""
    total = result.dropped_not_evaluable + result.dropped_missing
    if not total:
        return "no pair dropped"
    why = []
    if result.dropped_not_evaluable:
        why.append(f"{result.dropped_not_evaluable} not evaluable")
    if result.dropped_missing:
        why.append(f"{result.dropped_missing} without value")
    return f"{total} pair{'s' if total != 1 else ''} dropped ({', '.join(why)})"


def pair_lines(result: PairResult, options: ComparisonOptions) -> list[str]:
    """One pair: the difference with its interval and tests, then n, drops and power."""
    mark = " *" if result.significant else ""
    test = TEST_NAMES.get(result.test or "", "no test")
    won = f"  → {clean(result.winner, 30)} better" if result.winner else ""
    lines = [
        f"  {clean(result.crs_a, 36)} − {clean(result.crs_b, 36)}{won}",
        f"      diff {interval(result)}  p {p_text(result.p_value)}  "
        f"p Holm {p_text(result.p_holm)}{mark}  {test}",
        f"      {result.n_users} users, {_dropped(result)}, MDE {options.power:.0%} "
        f"{number(result.min_detectable)}",
    ]
    needs = []
    if result.users_for_observed is not None:
        needs.append(f"{result.users_for_observed} users to detect this difference")
    if options.detect is not None and result.users_for_target is not None:
        needs.append(f"{result.users_for_target} to detect {options.detect:g}")
    if needs:
        lines.append("      " + ", ".join(needs))
    return lines


LEGEND = (
    "diff: mean over users of the per-user difference A − B (a user's trials averaged); CI: "
    "percentile bootstrap resampling users; p: exact McNemar for 0/1 metrics with one pair per user, "
    "else a sign-flip permutation test (a paired t-test above 1,000 users); p Holm: Holm-corrected "
    "over the pairs of one metric and simulator (* below alpha); MDE 80%: smallest difference "
    "this many users detect with 80% power "
    "(alpha, two-sided); trial SD (runs with --trials): the standard deviation over trials of a CRS's "
    "mean, the run-to-run spread; dropped: pairs left out because a dialogue was not evaluable "
    "(broken by the simulator or the infrastructure) or had no value. CRSs that share a group letter are not "
    "significantly different. See docs/compare.md."
)


def comparison_lines(found: FolderComparison) -> list[str]:
    """The whole comparison as lines of at most 80 characters."""
    options = found.comparison.options
    lines: list[str] = []
    for metric in found.comparison.results:
        lines.extend(metric_lines(metric, options))
        lines.append("")
    if not found.comparison.results:
        lines.append("nothing to compare: no simulator talked to two or more CRSs with scored dialogues")
    if found.comparison.verdicts:
        lines.append("Verdicts across metrics (a win: better by its direction, p Holm < alpha)")
        lines.append("-" * 78)
        for verdict in found.comparison.verdicts:
            lines.extend(verdict_lines(verdict))
        lines.append("")
    power = f"{options.power:.0%}"
    legend = LEGEND.replace("80%", power).replace("(alpha,", f"(alpha {options.alpha:g},")
    lines.extend(textwrap.wrap(legend, WIDTH, break_on_hyphens=False))
    for note in found.notes:
        lines.extend(textwrap.wrap(f"note: {note}", WIDTH, break_on_hyphens=False))
    return lines


# ---------------------------------------------------------------------------------------------
# HTML (the report's Comparisons section; Jinja autoescapes every string)


def run_comparisons(
    folders: Sequence[RunFolder], labels: Sequence[str]
) -> tuple[list[tuple[str, MetricComparison]], list[tuple[str, Verdict]]]:
    """Per run (CRSs are compared within a run, where they met the same users): its label with each
    simulator × metric comparison, and with each verdict across metrics; runs without scores are
    left out."""
    found: list[tuple[str, MetricComparison]] = []
    verdicts: list[tuple[str, Verdict]] = []
    for folder, label in zip(folders, labels, strict=True):
        if folder.scores_path.is_file():
            comparison = compare_folders([folder]).comparison
            found.extend((label, result) for result in comparison.results)
            verdicts.extend((label, verdict) for verdict in comparison.verdicts)
    return found, verdicts


def html_verdicts(found: Sequence[tuple[str, Verdict]]) -> list[dict[str, object]]:
    """Each `run_comparisons` verdict as display strings: counts, then each metric's outcome."""
    return [
        {
            "run": label,
            "simulator": v.simulator,
            "a": v.crs_a,
            "b": v.crs_b,
            "wins_a": v.wins_a,
            "wins_b": v.wins_b,
            "ties": v.ties,
            "undirected": v.undirected,
            "metrics": [
                {
                    "metric": e.metric,
                    "outcome": "no direction"
                    if e.direction == "none"
                    else (f"{e.winner} better" if e.winner else "tie"),
                    "p_holm": p_text(e.p_holm),
                    "test": TEST_NAMES.get(e.test or "", "no test"),
                }
                for e in v.metrics
            ],
        }
        for label, v in found
    ]


def html_comparisons(found: Sequence[tuple[str, MetricComparison]]) -> list[dict[str, object]]:
    """The ranking with letter groups and the pairs of each `run_comparisons` entry, as display strings."""
    return [
        {
            "run": label,
            "simulator": result.simulator,
            "metric": result.metric,
            "direction": DIRECTION_TEXT[result.direction],
            "ranking": [_html_rank(e) for e in result.ranking],
            "pairs": [_html_pair(p) for p in result.pairs],
        }
        for label, result in found
    ]


def _html_rank(entry: RankEntry) -> dict[str, object]:
    return {"rank": entry.rank, "crs": entry.crs, "mean": number(entry.mean), "n": entry.n_users,
            "group": entry.group}  # fmt: skip


def _html_pair(result: PairResult) -> dict[str, object]:
    return {
        "a": result.crs_a,
        "b": result.crs_b,
        "diff": interval(result),
        "p": p_text(result.p_value),
        "p_holm": p_text(result.p_holm),
        "significant": result.significant,
        "winner": result.winner or "",
        "test": TEST_NAMES.get(result.test or "", "no test"),
        "n": result.n_users,
        "dropped": result.dropped_not_evaluable + result.dropped_missing,
        "mde": number(result.min_detectable),
        "needed": "" if result.users_for_observed is None else str(result.users_for_observed),
    }
