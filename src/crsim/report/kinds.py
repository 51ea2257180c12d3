"""What kind of values a metric has, as the paper figures need it: 0/1, whole numbers or continuous.

`metric_kinds` is the one place the paper outputs ask: the `binary` declarations `summary.json` records
(for a summary written before it recorded them, the run's metrics are built to ask them), else the
values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import Enum

from crsim.report.collect import RunView
from crsim.report.figures import binary_metrics, declared_binary


class Scale(Enum):
    """How a metric's per-dialogue values are drawn."""

    BINARY = "binary"  # 0/1: a proportion with its Wilson interval
    DISCRETE = "discrete"  # whole numbers (Turns, judge scores): a strip of the values
    CONTINUOUS = "continuous"  # anything else: a strip, and a box where the box says something


def metric_kinds(
    views: Sequence[RunView], values: Mapping[str, Iterable[Sequence[float]]]
) -> dict[str, Scale]:
    """Metric label -> its scale, for the labels in `values` (per pairing, the per-dialogue values)."""
    declared: dict[str, bool] = {}
    for view in views:
        specs = view.folder.typed_manifest.metrics or []
        declared.update(declared_binary(view.metrics or None, specs))
    groups = {label: [list(g) for g in found] for label, found in values.items()}
    binary = set(binary_metrics(groups, declared))
    kinds: dict[str, Scale] = {}
    for label, found in groups.items():
        seen = [v for group in found for v in group]
        if label in binary:
            kinds[label] = Scale.BINARY
        elif seen and all(float(v).is_integer() for v in seen):
            kinds[label] = Scale.DISCRETE
        else:
            kinds[label] = Scale.CONTINUOUS
    return kinds
