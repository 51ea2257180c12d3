"""What `crsim run` prints under its table: one line per metric shown (what it measures, which way is
better) and the commands a study takes next. Definitions in full: docs/metrics.md."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Metric name -> (what one value measures, which way is better), in the words of docs/metrics.md.
MEANINGS: dict[str, tuple[str, str]] = {
    "success_rate": ("share of dialogues in which the user accepted a recommendation", "higher is better"),
    "srrr": ("successful recommendation rounds / rounds with a recommendation", "higher is better"),
    "rdl": (
        "accepted recommendations / dialogue length (turns, or utterances as the label says)",
        "higher is better",
    ),
    "turns": ("turns per dialogue (user utterance + CRS reply)", "no better direction on its own"),
    "recall": (
        "share of the user's targets in the CRS's list standing at the last turn (top K)",
        "higher is better",
    ),
    "pc": (
        "share of the user's targets recommended at any turn so far (top K), PEPPER's coverage",
        "higher is better",
    ),
    "pcir": ("coverage (PC) gained per turn", "higher is better"),
    "ndcg": ("ranking quality of the targets in the standing list (top K)", "higher is better"),
    "mrr": ("1 / rank of the first target in the standing list (top K)", "higher is better"),
    "jaccard": (
        "how much each recommendation list differs from the one before (1 = all new)",
        "higher explores more; no better direction on its own",
    ),
}


def legend_lines(specs: Sequence[Any], shown: Sequence[str]) -> list[str]:
    """`Label: meaning; direction` for each metric in `specs` whose label is among `shown` (the
    table's columns), in table order; metrics without a known meaning point to their docs."""
    from crsim.eval.scores import build_metrics

    lines: dict[str, str] = {}
    for spec in specs:
        try:
            (metric,) = build_metrics([spec])
        except Exception:  # noqa: BLE001  (built already for the run; a legend never fails a run)
            continue
        if metric.label not in shown:
            continue
        meaning = MEANINGS.get(spec.name)
        text = f"{meaning[0]}; {meaning[1]}" if meaning else f"see `crsim describe {spec.name}`"
        lines[metric.label] = f"  {metric.label}: {text}"
    return [lines[label] for label in shown if label in lines]


def next_steps(run_dir: Path) -> list[str]:
    """The commands that take a finished run further."""
    return [
        f"  crsim compare {run_dir}    which CRS is better on each metric, with paired tests",
        f"  crsim report {run_dir} -o report.html    tables, figures and every dialogue in one file",
    ]
