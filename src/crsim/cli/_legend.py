"""What `crsim run` prints under its table: one line per metric shown (what it measures, which way is
better) and the commands a study takes next. Definitions in full: docs/metrics.md."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsim.model.run_folder.files import REPORT

#: Metric name -> what one value measures, in the words of docs/metrics.md.
MEANINGS: dict[str, str] = {
    "success_rate": "share of dialogues in which the user accepted a recommendation",
    "srrr": "successful recommendation rounds / rounds with a recommendation",
    "rdl": "accepted recommendations / dialogue length (turns, or utterances as the label says)",
    "turns": "turns per dialogue (user utterance + CRS reply); read it beside Success",
    "recall": "share of the user's targets in the CRS's list standing at the last turn (top K)",
    "pc": "share of the user's targets recommended at any turn so far (top K), PEPPER's coverage",
    "pcir": "coverage (PC) gained per turn",
    "ndcg": "ranking quality of the targets in the standing list (top K)",
    "mrr": "1 / rank of the first target in the standing list (top K)",
    "jaccard": "how much each recommendation list differs from the one before (1 = all new)",
    "requests_answered": "share of the questions about a recommended item answered with its true value",
    "task_success": "an accepted recommendation with every question about it answered (MultiWOZ's success)",
}

#: A metric's declared direction (`Metric.direction`) as the legend says it.
DIRECTIONS = {
    "higher": "higher is better",
    "lower": "lower is better",
    "none": "no better direction on its own",
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
        meaning = MEANINGS.get(spec.name, f"see `crsim describe {spec.name}`")
        direction = DIRECTIONS.get(str(getattr(metric, "direction", "none")), DIRECTIONS["none"])
        text = f"{meaning}; {direction}"
        lines[metric.label] = f"  {metric.label}: {text}"
    return [lines[label] for label in shown if label in lines]


def next_steps(run_dir: Path) -> list[str]:
    """The commands that take a finished run further."""
    return [
        f"  crsim compare {run_dir}    which CRS is better on each metric, with paired tests",
        f"  crsim report {run_dir} -o {REPORT}    tables, figures and every dialogue in one file",
    ]
