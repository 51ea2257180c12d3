"""`--metrics` the same way in every command: metric names or table labels, comma-separated or repeated.

A value is split at commas outside brackets and quotes, so `Recall@(t,10)` (or `"Recall@(t,10)"`)
stays one label; `name:arg=value,...` takes the rest of its value as that metric's arguments. A label
(`Success`, `Recall@(t,10)`, an `id` from a config) names the metric that writes it: the run's own
metrics first, then every installed metric at its default arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from crsim.core.errors import CrsimError

if TYPE_CHECKING:
    from crsim.core.plugins import ComponentSpec

OPENING, CLOSING, QUOTES = "([{", ")]}", "\"'"


def split_values(values: Iterable[str]) -> list[str]:
    """The items of repeated `--metrics` values, each split at commas outside brackets and quotes,
    with surrounding quotes removed; an item with `name:` keeps the rest of its value (its args)."""
    items: list[str] = []
    for value in values:
        depth, quote, start = 0, "", 0
        for index, char in enumerate(value + ","):
            if quote:
                quote = "" if char == quote else quote
            elif char in QUOTES:
                quote = char
            elif char in OPENING:
                depth += 1
            elif char in CLOSING:
                depth = max(0, depth - 1)
            elif char == ":" and depth == 0:
                items.append(value[start:].strip())
                break
            elif char == "," and depth == 0:
                items.append(value[start:index].strip())
                start = index + 1
        if quote:
            raise CrsimError(f"--metrics {value!r}: a quote is not closed")
    return [_unquoted(item) for item in items if item.strip()]


def _unquoted(item: str) -> str:
    if len(item) >= 2 and item[0] == item[-1] and item[0] in QUOTES:
        return item[1:-1].strip()
    return item


def default_labels(exclude: Iterable[str] = ()) -> dict[str, str]:
    """Label -> metric name for every installed metric built with its defaults (those that need a
    model or fail to build without arguments are left out: they are named by name)."""
    from crsim.core.plugins import ComponentSpec
    from crsim.eval.metrics.base import metric_registry
    from crsim.eval.scores import build_metrics

    labels: dict[str, str] = {}
    skip = set(exclude)
    for name in metric_registry.names():
        if name in skip or getattr(metric_registry.get(name), "needs_llm", False):
            continue
        try:
            (metric,) = build_metrics([ComponentSpec(name=name)])
        except Exception:  # noqa: BLE001  (a metric that cannot be built bare has no default label)
            continue
        labels.setdefault(metric.label, name)
    return labels


def spec_labels(specs: Sequence[Mapping[str, Any]]) -> dict[str, ComponentSpec]:
    """Label -> spec of a run's configured metrics (as its manifest records them)."""
    from crsim.core.plugins import ComponentSpec
    from crsim.eval.scores import build_metrics

    found: dict[str, ComponentSpec] = {}
    for raw in specs:
        try:
            spec = ComponentSpec.model_validate(raw)
            (metric,) = build_metrics([spec])
        except Exception:  # noqa: BLE001  (an uninstalled metric of an old run: only its name works)
            continue
        found[metric.label] = spec
    return found


def metric_specs(values: Sequence[str], run_metrics: Sequence[Mapping[str, Any]] = ()) -> list[ComponentSpec]:
    """`--metrics` of `crsim evaluate`: the metrics to score, from names (`recall`, `recall:k=5,id=R5`)
    or labels (`Recall@(t,10)`, a label of the run's own metrics)."""
    from crsim.cli._support import parse_args
    from crsim.core.plugins import ComponentSpec
    from crsim.eval.metrics.base import metric_registry

    specs: list[ComponentSpec] = []
    own: dict[str, ComponentSpec] | None = None
    defaults: dict[str, str] | None = None
    for item in split_values(values):
        name, sep, rest = item.partition(":")
        if sep and "(" not in name:
            args = parse_args([p for p in rest.split(",") if p.strip()], option=f"--metrics {item!r}:")
            label = args.pop("id", None)
            specs.append(
                ComponentSpec(name=name.strip(), args=args, id=None if label is None else str(label))
            )
            continue
        if item in metric_registry:
            specs.append(ComponentSpec(name=item))
            continue
        own = spec_labels(run_metrics) if own is None else own
        if item in own:
            specs.append(own[item])
            continue
        defaults = default_labels() if defaults is None else defaults
        if item in defaults:
            specs.append(ComponentSpec(name=defaults[item]))
            continue
        known = sorted({*metric_registry.names(), *own, *defaults})
        raise CrsimError(
            f"--metrics: no metric named or labelled {item!r}; expected one of: {', '.join(known)}"
        )
    if not specs:
        raise CrsimError(
            "--metrics: expected metric names or labels, e.g. --metrics success_rate,'Recall@(t,10)'"
        )
    return specs


def metric_labels(
    values: Sequence[str], scored: Sequence[str], run_metrics: Sequence[Mapping[str, Any]] = ()
) -> list[str]:
    """`--metrics` of commands that read scores (`crsim compare`): the labels among `scored` that the
    values name, each a label as written or a metric name (all of the run's labels of that metric);
    a value that names nothing scored is passed on as written, for the comparison to refuse."""
    from crsim.core.plugins import ComponentSpec

    labels: list[str] = []
    by_name: dict[str, list[str]] | None = None
    for item in split_values(values):
        if item in scored:
            labels.append(item)
            continue
        if by_name is None:
            by_name = {}
            for label, spec in spec_labels(run_metrics).items():
                by_name.setdefault(ComponentSpec.model_validate(spec).name, []).append(label)
            for label, name in default_labels().items():
                by_name.setdefault(name, []).append(label)
        found = [label for label in dict.fromkeys(by_name.get(item, [])) if label in scored]
        labels.extend(found or [item])  # an unknown label is named by the comparison's own error
    return list(dict.fromkeys(labels))
