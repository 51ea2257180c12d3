"""Counterfactual sensitivity: would a simulator and a metric notice if a CRS got worse?

Every CRS of a config gets degraded twins (`crsim.crs.degraded`: random, stale, deaf, eager, mute,
garbled), all in one run, so the original and its twins meet the same simulated users and are paired
by user as `crsim compare` pairs CRSs (`crsim.studies.compare`). Per simulator × metric × CRS ×
degradation the study reports:

- the paired difference original − twin over users, with its bootstrap interval and paired test
  (`crsim.studies.compare.compare_pair`);
- the pairwise accuracy at n = 10, 30, 100: the share of `resamples` draws of n users (with
  replacement, seeded) whose mean difference ranks the original above the twin (a tie counts half)
  by the metric's declared direction (`Metric.direction` as the run's summary records it: higher or
  lower is better); for a metric without one ("none", e.g. Jaccard) "above" means on the side of the
  full study's difference;
- the users needed for 80% power to detect the observed difference (`users_needed`);
- a verdict: `blind` when every user's value is the same for both (the metric cannot see the
  degradation), `reversed` when the twin scores better by the metric's direction, `detected`
  when the accuracy at n = 30 reaches `DETECTED_ACCURACY`, `weak` otherwise.

The study folder is a run folder (resumable like any run) plus `sensitivity.json`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.crs.degraded import DEGRADATIONS
from crsim.model.run_folder.summary import Direction
from crsim.runner.config import ExperimentConfig
from crsim.studies.compare import ComparisonOptions, Observation, compare_pair, users_needed

#: The file a sensitivity study writes into its run folder.
SENSITIVITY_FILE = "sensitivity.json"

#: Dialogues (users) at which the pairwise accuracy is reported.
SIZES = (10, 30, 100)

#: Accuracy at n = 30 from which a degradation counts as detected (the issue's goal).
DETECTED_ACCURACY = 0.95
DETECTED_AT = 30

#: Separates a CRS's label from the degradation in a twin's label: `retrieval~random`.
TWIN_MARK = "~"

Verdict = Literal["detected", "weak", "blind", "reversed", "too few users"]


def twin_label(crs: str, kind: str) -> str:
    return f"{crs}{TWIN_MARK}{kind}"


def with_twins(config: ExperimentConfig, kinds: Sequence[str] = DEGRADATIONS) -> ExperimentConfig:
    """The config with a degraded twin of each CRS per kind, after the originals."""
    if not kinds:
        raise ConfigError("--kinds: name at least one degradation")
    unknown = [k for k in kinds if k not in DEGRADATIONS]
    if unknown:
        raise ConfigError(
            f"--kinds: unknown degradation {unknown[0]!r}; expected some of: {', '.join(DEGRADATIONS)}"
        )
    originals = list(config.crss)
    if any(spec.name == "degraded" for spec in originals):
        raise ConfigError("crss: a sensitivity study makes the degraded twins itself; list only originals")
    twins = [
        ComponentSpec(
            name="degraded",
            id=twin_label(spec.label, kind),
            args={"of": spec.model_dump(mode="json", exclude_none=True), "kind": kind},
        )
        for spec in originals
        for kind in kinds
    ]
    return config.model_copy(update={"crss": [*originals, *twins]})


class SensitivityOptions(BaseModel):
    sizes: list[int] = Field(default_factory=lambda: list(SIZES), description="n for pairwise accuracy.")
    resamples: int = Field(2000, ge=100, description="Draws of n users per accuracy.")
    seed: int = 0
    metrics: list[str] | None = Field(None, description="Metric labels (default: every one scored).")


class SensitivityRow(BaseModel):
    """The original CRS against one degraded twin on one metric under one simulator."""

    simulator: str
    metric: str
    crs: str
    degradation: str
    n_users: int
    mean_original: float | None
    mean_twin: float | None
    difference: float | None = Field(description="Mean over users of original − twin.")
    ci_low: float | None
    ci_high: float | None
    p_value: float | None = Field(description="The paired test of crsim compare, uncorrected.")
    direction: Direction = Field(
        description="The metric's declared direction: higher or lower values are better; none: no "
        "better direction (accuracy is measured against the side of the full study's difference)."
    )
    direction_recorded: bool = Field(
        True, description="False when the run did not record the metric's direction (read as higher)."
    )
    accuracy: dict[int, float | None] = Field(
        description="n -> share of draws of n users ranking the original above the twin."
    )
    users_for_power: int | None = Field(description="Users for 80% power at the observed difference.")
    verdict: Verdict


class Sensitivity(BaseModel):
    options: SensitivityOptions
    crss: list[str]
    degradations: list[str]
    rows: list[SensitivityRow]


def pairwise_accuracy(
    differences: np.ndarray, n: int, *, sign: float, resamples: int, seed: int
) -> float | None:
    """The share of `resamples` draws of n per-user differences (with replacement) whose mean lies
    on the side `sign` (ties count half); None without differences."""
    if differences.size == 0 or sign == 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.choice(differences, size=(resamples, n), replace=True).mean(axis=1) * sign
    return float(np.mean(np.where(np.isclose(draws, 0.0, atol=1e-12), 0.5, draws > 0)))


def _sign(direction: Direction, difference: float) -> float:
    """+1 when a positive original − twin difference means the original is better, −1 when a
    negative one does; for a metric without a direction, the side of the observed difference."""
    if direction == "higher":
        return 1.0
    if direction == "lower":
        return -1.0
    return float(np.sign(difference))


def _verdict(row: dict[str, Any], differences: np.ndarray, direction: Direction) -> Verdict:
    if differences.size < 2:
        return "too few users"
    if np.allclose(differences, 0.0, atol=1e-12):
        return "blind"
    difference = row["difference"] or 0.0
    if direction != "none" and _sign(direction, difference) * difference < 0:
        return "reversed"
    accuracy = row["accuracy"].get(DETECTED_AT)
    return "detected" if accuracy is not None and accuracy >= DETECTED_ACCURACY else "weak"


def analyse(
    observations: Iterable[Observation],
    originals: Sequence[str],
    options: SensitivityOptions | None = None,
    directions: Mapping[str, Direction] | None = None,
) -> Sensitivity:
    """The sensitivity rows of a study's observations; `originals` are the undegraded CRS labels;
    `directions`: metric label -> which way is better, as the run's summary records it (a label not
    in it is read as higher better, and the row says so)."""
    options = options or SensitivityOptions()
    cells: dict[tuple[str, str], dict[str, list[Observation]]] = defaultdict(lambda: defaultdict(list))
    metrics: dict[str, None] = {}
    for o in observations:
        cells[(o.simulator, o.metric)][o.crs].append(o)
        metrics.setdefault(o.metric)
    wanted = options.metrics if options.metrics is not None else list(metrics)
    unknown = [m for m in wanted if m not in metrics]
    if unknown:
        raise ConfigError(
            f"--metrics: no scores for {', '.join(unknown)}; the study has {', '.join(metrics)}"
        )
    compare_options = ComparisonOptions(seed=options.seed)
    order: dict[str, int] = {k: i for i, k in enumerate(DEGRADATIONS)}
    rows: list[SensitivityRow] = []
    kinds: dict[str, None] = {}
    for simulator in sorted({s for s, _ in cells}):
        for metric in wanted:
            by_crs = cells.get((simulator, metric), {})
            for crs in originals:
                twins = [c[len(crs) + len(TWIN_MARK) :] for c in by_crs if c.startswith(crs + TWIN_MARK)]
                for kind in sorted(twins, key=lambda k: (order.get(k, len(order)), k)):
                    kinds.setdefault(kind)
                    twin = by_crs[twin_label(crs, kind)]
                    rows.append(
                        _row(
                            (simulator, metric, crs, kind),
                            by_crs.get(crs, []),
                            twin,
                            _declared(directions or {}, metric),
                            options,
                            compare_options,
                        )
                    )
    return Sensitivity(
        options=options,
        crss=list(originals),
        degradations=sorted(kinds, key=lambda k: order.get(k, len(order))),
        rows=rows,
    )


def _declared(directions: Mapping[str, Direction], metric: str) -> Direction | None:
    """The recorded direction of a metric label; an evaluator's aspect (`label/aspect`) has its
    evaluator's."""
    return directions.get(metric, directions.get(metric.split("/", 1)[0]))


def _row(
    cell: tuple[str, str, str, str],
    original: Sequence[Observation],
    twin: Sequence[Observation],
    declared: Direction | None,
    options: SensitivityOptions,
    compare_options: ComparisonOptions,
) -> SensitivityRow:
    simulator, metric, crs, kind = cell
    result, sample = compare_pair(
        (simulator, metric, crs, twin_label(crs, kind)), original, twin, compare_options
    )
    d = sample.differences
    direction: Direction = declared or "higher"
    sign = _sign(direction, result.difference or 0.0)
    accuracy = {
        n: pairwise_accuracy(d, n, sign=sign, resamples=options.resamples, seed=options.seed + n)
        for n in options.sizes
    }
    fields: dict[str, Any] = {
        "simulator": simulator,
        "metric": metric,
        "crs": crs,
        "degradation": kind,
        "n_users": result.n_users,
        "mean_original": result.mean_a,
        "mean_twin": result.mean_b,
        "difference": result.difference,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "p_value": result.p_value,
        "direction": direction,
        "direction_recorded": declared is not None,
        "accuracy": accuracy,
        "users_for_power": users_needed(result.difference or 0.0, result.sd),
    }
    return SensitivityRow(**fields, verdict=_verdict(fields, d, direction))


# ---------------------------------------------------------------------------------------------
# Text


#: What the text table adds to a verdict for each direction.
DIRECTION_NOTE: dict[str, str] = {
    "higher": "",
    "lower": " (lower is better)",
    "none": " (no better direction)",
}


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def table_lines(study: Sensitivity) -> list[str]:
    """The study as text: one block per simulator × CRS, a line per metric × degradation."""
    sizes = study.options.sizes
    lines: list[str] = []
    blocks: dict[tuple[str, str], list[SensitivityRow]] = defaultdict(list)
    for row in study.rows:
        blocks[(row.simulator, row.crs)].append(row)
    for (simulator, crs), rows in blocks.items():
        title = f"{crs} against its degraded twins · simulator {simulator} · n = {rows[0].n_users} users"
        lines += [title, "-" * min(len(title), 100)]
        head = f"  {'metric':<14} {'twin':<8} {'orig−twin [95% CI]':<28} " + " ".join(
            f"{'acc@' + str(n):>7}" for n in sizes
        )
        lines.append(head + f" {'n@80%':>6}  verdict")
        for row in rows:
            interval = _num(row.difference)
            if row.ci_low is not None and row.ci_high is not None:
                interval += f" [{_num(row.ci_low)}, {_num(row.ci_high)}]"
            accuracy = " ".join(f"{_num(row.accuracy.get(n), 2):>7}" for n in sizes)
            needed = "-" if row.users_for_power is None else str(row.users_for_power)
            verdict = row.verdict + DIRECTION_NOTE[row.direction]
            if not row.direction_recorded:
                verdict += " (direction not recorded: read as higher)"
            lines.append(
                f"  {row.metric[:14]:<14} {row.degradation:<8} {interval:<28} {accuracy} "
                f"{needed:>6}  {verdict}"
            )
        lines.append("")
    lines.append(
        f"acc@n: share of {study.options.resamples} draws of n users ranking the original above the twin; "
        f"detected: acc@{DETECTED_AT} >= {DETECTED_ACCURACY}; blind: the metric gave every user the same "
        "value with both (it cannot see the degradation)."
    )
    return lines
