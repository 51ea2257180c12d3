"""Rating consistency (RecUserSim §4.2): the same dialogues scored by two judge configurations.

Both inputs are scores.jsonl files written by `crsim evaluate`. Per metric label (aspect) in
both, each dialogue gets one value per file (turn-level values averaged per dialogue first, the
rule `crsim evaluate` summaries use); dialogues with a value in both files are paired, and the
pairs are correlated (Pearson r and Spearman rho with their p-values). RecUserSim correlates
system-level means (one per CRS); `groups` does the same over the (CRS, simulator) groups of
the paired dialogues. Pairs missing on either side are counted, never filled in.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

from crsim.core.errors import DataError
from crsim.eval.scores import ScoreRecord, read_scores
from crsim.eval.summaries import dialogue_value
from crsim.model.run_folder.files import SCORES

GroupKey = tuple[str | None, str | None]


class Correlation(BaseModel):
    """Correlation of paired values; statistics are None (with `note`) when they are undefined."""

    n: int = Field(description="Pairs correlated.")
    pearson_r: float | None = None
    pearson_p: float | None = None
    spearman_rho: float | None = None
    spearman_p: float | None = None
    note: str | None = None


class MetricConsistency(BaseModel):
    metric: str
    paired: int = Field(description="Dialogues with a value in both files.")
    missing_a: int = Field(description="Dialogues with a value in B only (none in A: absent or unreadable).")
    missing_b: int = Field(description="Dialogues with a value in A only.")
    missing_both: int = Field(
        description="Dialogues listed in a file for this metric but with no value in either."
    )
    mean_a: float | None = None
    mean_b: float | None = None
    dialogues: Correlation = Field(description="Over paired dialogues.")
    groups: Correlation = Field(description="Over (CRS, simulator) groups: means of their paired dialogues.")


class ConsistencyReport(BaseModel):
    scores_a: str
    scores_b: str
    metrics: list[MetricConsistency]
    only_in_a: list[str] = Field(description="Metric labels found only in A.")
    only_in_b: list[str] = Field(description="Metric labels found only in B.")


def dialogue_values(records: Sequence[ScoreRecord]) -> dict[str, dict[str, tuple[float | None, GroupKey]]]:
    """Metric -> dialogue -> (value, (crs_id, simulator_id)). A single dialogue-level record gives its
    value; otherwise the mean of the dialogue's present values (None when there are none)."""
    grouped: dict[str, dict[str, list[ScoreRecord]]] = defaultdict(dict)
    for record in records:
        grouped[record.metric].setdefault(record.dialogue_id, []).append(record)
    values: dict[str, dict[str, tuple[float | None, GroupKey]]] = {}
    for metric, by_dialogue in grouped.items():
        values[metric] = {}
        for dialogue_id, group in by_dialogue.items():
            value, _ = dialogue_value(group)
            values[metric][dialogue_id] = (value, (group[0].crs_id, group[0].simulator_id))
    return values


def correlate(a: Sequence[float], b: Sequence[float]) -> Correlation:
    """Pearson and Spearman of paired values; undefined for fewer than 3 pairs or a constant side."""
    n = len(a)
    if n < 3:
        return Correlation(n=n, note="fewer than 3 pairs")
    constant = [name for name, xs in (("A", a), ("B", b)) if len(set(xs)) == 1]
    if constant:
        return Correlation(n=n, note=f"constant values in {' and '.join(constant)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        pearson = stats.pearsonr(a, b)
        spearman = stats.spearmanr(a, b)
    return Correlation(
        n=n,
        pearson_r=_finite(pearson.statistic),
        pearson_p=_finite(pearson.pvalue),
        spearman_rho=_finite(spearman.statistic),
        spearman_p=_finite(spearman.pvalue),
    )


def _finite(x: float) -> float | None:
    value = float(x)
    return value if np.isfinite(value) else None


def compare_metric(
    metric: str,
    a: dict[str, tuple[float | None, GroupKey]],
    b: dict[str, tuple[float | None, GroupKey]],
) -> MetricConsistency:
    pairs: list[tuple[float, float, GroupKey]] = []
    missing_a = missing_b = missing_both = 0
    for dialogue_id in dict.fromkeys([*a, *b]):
        va, key = a.get(dialogue_id, (None, (None, None)))
        vb, key_b = b.get(dialogue_id, (None, (None, None)))
        if va is not None and vb is not None:
            pairs.append((va, vb, key if dialogue_id in a else key_b))
        elif va is not None:
            missing_b += 1
        elif vb is not None:
            missing_a += 1
        else:
            missing_both += 1
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    by_group: dict[GroupKey, list[tuple[float, float]]] = defaultdict(list)
    for x, y, key in pairs:
        by_group[key].append((x, y))
    ordered = sorted(by_group, key=lambda k: (k[0] or "", k[1] or ""))
    group_a = [float(np.mean([x for x, _ in by_group[k]])) for k in ordered]
    group_b = [float(np.mean([y for _, y in by_group[k]])) for k in ordered]
    return MetricConsistency(
        metric=metric,
        paired=len(pairs),
        missing_a=missing_a,
        missing_b=missing_b,
        missing_both=missing_both,
        mean_a=float(np.mean(xs)) if xs else None,
        mean_b=float(np.mean(ys)) if ys else None,
        dialogues=correlate(xs, ys),
        groups=correlate(group_a, group_b),
    )


def consistency(
    records_a: Sequence[ScoreRecord], records_b: Sequence[ScoreRecord]
) -> list[MetricConsistency]:
    """One comparison per metric label present in both record lists, in A's order."""
    a, b = dialogue_values(records_a), dialogue_values(records_b)
    return [compare_metric(metric, a[metric], b[metric]) for metric in a if metric in b]


def consistency_report(path_a: str | Path, path_b: str | Path) -> ConsistencyReport:
    """Read two scores.jsonl files (a bad record is a DataError naming file, line and field)."""
    path_a = Path(path_a)
    path_b = Path(path_b)
    for path in (path_a, path_b):
        if not path.is_file():
            raise DataError(f"file not found; expected {SCORES} written by `crsim evaluate`", path=str(path))
    records_a, records_b = read_scores(path_a), read_scores(path_b)
    labels_a = list(dict.fromkeys(r.metric for r in records_a))
    labels_b = list(dict.fromkeys(r.metric for r in records_b))
    return ConsistencyReport(
        scores_a=str(path_a),
        scores_b=str(path_b),
        metrics=consistency(records_a, records_b),
        only_in_a=[m for m in labels_a if m not in labels_b],
        only_in_b=[m for m in labels_b if m not in labels_a],
    )
