"""Rich tables of the analysis reports, laid out to stay readable in 80 columns: categories as
rows, simulators (or persona levels) as columns, as in the evaluation summary table."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from crsim.studies.language.consistency import ConsistencyReport, Correlation
from crsim.studies.language.diversity import ControllabilityReport, Distribution, DiversityReport, PatternTest
from crsim.studies.language.measures import CATEGORIES, Measure


def _number(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _share(dist: Distribution, category: str) -> str:
    share = dist.proportions.get(category)
    return "–" if share is None else f"{share:.0%} ({dist.counts[category]})"


def _distribution_rows(table: Table, measure: Measure, columns: list[Distribution], *, mean: str) -> None:
    """One row per category (share and count per column), then entropy, the mean or median, errors."""
    for index, category in enumerate(CATEGORIES[measure]):
        label = f"{measure.value}: {category}" if index == 0 else f"  {category}"
        table.add_row(label, *(_share(d, category) for d in columns))
    table.add_row("  entropy", *(_number(d.entropy) for d in columns))
    values = [d.mean if mean == "mean" else d.median for d in columns]
    table.add_row(f"  {mean}", *(_number(v, 1) for v in values))
    errors = [d.errors for d in columns]
    table.add_row("  errors", *(f"[red]{n}[/red]" if n else "0" for n in errors), end_section=True)


def diversity_table(report: DiversityReport) -> Table:
    """Categories as rows, simulator groups as columns: share of utterances (count), normalised
    entropy (1 = uniform), mean (words, key points, formality -1..1) and unreadable answers."""
    table = Table(title=f"Diversity ({report.method}): user utterances per category", title_justify="left")
    table.add_column("measure", style="bold", no_wrap=True)
    for group in report.groups:
        table.add_column(escape(group.group), justify="right")
    table.add_row("utterances", *(str(g.utterances) for g in report.groups))
    table.add_row("dialogues", *(str(g.dialogues) for g in report.groups), end_section=True)
    for measure in Measure:
        _distribution_rows(
            table, measure, [g.distributions[measure.value] for g in report.groups], mean="mean"
        )
    return table


def test_summary(test: PatternTest, alpha: float) -> str:
    """One line: the direction, the Mann-Whitney and chi-square results."""
    if test.direction == "not testable":
        text = f"not testable: {test.note}"
    else:
        text = f"{test.direction} ({test.high} vs {test.low}, α={alpha:g})"
        if test.p_value is not None:
            text += f": Mann-Whitney p={_p(test.p_value)}, r={_number(test.effect)}"
    if test.chi2_p is not None:
        text += f"; χ² p={_p(test.chi2_p)}, V={_number(test.cramers_v)}"
    return text


def controllability_tables(report: ControllabilityReport) -> list[Table]:
    """One table per group and pattern: categories as rows, persona levels as columns, the tests
    in the caption."""
    tables = []
    for result in report.results:
        title = f"{result.group}: {result.measure.value} by persona {result.pattern} ({report.method})"
        caption = test_summary(result.test, report.alpha) + f"; Mann-Whitney unit: {report.unit}"
        if result.unspecified:
            caption += f"; {result.unspecified} dialogues without {result.pattern}"
        table = Table(
            title=escape(title), title_justify="left", caption=escape(caption), caption_justify="left"
        )
        table.add_column("category", style="bold", no_wrap=True)
        for level in result.levels:
            table.add_column(escape(level), justify="right")
        table.add_row("dialogues", *(str(n) for n in result.dialogues.values()))
        table.add_row("utterances", *(str(d.n) for d in result.levels.values()), end_section=True)
        _distribution_rows(table, result.measure, list(result.levels.values()), mean="median")
        tables.append(table)
    return tables


def _correlation_cells(c: Correlation) -> list[str]:
    if c.note:
        return [str(c.n), escape(c.note), "", "", ""]
    return [str(c.n), _number(c.pearson_r), _p(c.pearson_p), _number(c.spearman_rho), _p(c.spearman_p)]


def consistency_table(report: ConsistencyReport) -> Table:
    """Per metric, a row over paired dialogues and a row over (CRS, simulator) group means."""
    table = Table(title="Consistency of two judge configurations (A vs B)", title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("missing A/B/both", justify="right")
    table.add_column("n", justify="right")
    for name in ("Pearson r", "p", "Spearman ρ", "p"):
        table.add_column(name, justify="right")
    for m in report.metrics:
        table.add_row(
            escape(m.metric),
            f"{m.missing_a}/{m.missing_b}/{m.missing_both}",
            *_correlation_cells(m.dialogues),
        )
        table.add_row("  groups", "", *_correlation_cells(m.groups), end_section=True)
    return table
