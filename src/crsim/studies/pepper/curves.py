"""PEPPER's curves over a run: the per-turn PC_t@K and Recall@(t,K) of every CRS × simulator pair,
Table 3 (PC on the selected and residual targets and their gap) and a PNG plot of the curves.

A study over a whole run, built on the metrics of `crsim.eval.pepper` (`target_split`,
`subset_curve`) and `crsim.eval.curves.turn_curves`; `crsim pepper curves` writes its output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsim.eval.curves import TurnCurve, turn_curves
from crsim.eval.metrics.base import NotApplicable, PerTurnMetric
from crsim.eval.metrics.coverage import PreferenceCoverage
from crsim.eval.metrics.recommendation import Recall
from crsim.eval.pepper import subset_curve
from crsim.model.dialogue import Dialogue


@dataclass(frozen=True)
class GroupCurve:
    """The population curve of one metric for one CRS × simulator pair."""

    crs_id: str
    simulator_id: str
    curve: TurnCurve

    def as_record(self) -> dict[str, Any]:
        return {
            "crs_id": self.crs_id,
            "simulator_id": self.simulator_id,
            "metric": self.curve.metric,
            "mean": self.curve.mean,
            "n": self.curve.n,
        }


def _groups(dialogues: Iterable[Dialogue]) -> dict[tuple[str, str], list[Dialogue]]:
    groups: dict[tuple[str, str], list[Dialogue]] = {}
    for dialogue in dialogues:
        groups.setdefault((dialogue.crs_id or "?", dialogue.simulator_id or "?"), []).append(dialogue)
    return dict(sorted(groups.items()))


def pepper_curves(
    dialogues: Iterable[Dialogue],
    ks: Iterable[int] = (5, 10, 20, 50),
    max_turns: int | None = None,
    metrics: Iterable[str] = ("pc", "recall"),
) -> list[GroupCurve]:
    """PC_t@K and Recall@(t,K) at turns 1..max_turns (default: the longest dialogue) per CRS ×
    simulator and K: the data of PEPPER's coverage plots, for reports and `crsim pepper curves`."""
    groups = _groups(dialogues)
    horizon = max_turns or max((d.num_turns for ds in groups.values() for d in ds), default=1)
    out = []
    for (crs_id, simulator_id), members in groups.items():
        for name in metrics:
            for k in ks:
                scorer: PerTurnMetric = (
                    PreferenceCoverage(PreferenceCoverage.Params(k=k))
                    if name == "pc"
                    else Recall(Recall.Params(k=k))
                )
                out.append(GroupCurve(crs_id, simulator_id, turn_curves(members, scorer, max(1, horizon))))
    return out


@dataclass(frozen=True)
class SplitRow:
    """PC on the selected and residual targets of one CRS × simulator pair, and the gap."""

    crs_id: str
    simulator_id: str
    n: int  #: dialogues with both subsets non-empty
    selected: float | None
    residual: float | None

    @property
    def gap(self) -> float | None:
        return None if self.selected is None or self.residual is None else self.residual - self.selected


def split_table(dialogues: Iterable[Dialogue], k: int = 50, turn: int | None = None) -> list[SplitRow]:
    """PEPPER Table 3: mean PC_sel@K and PC_res@K over the dialogues where both are defined."""
    rows = []
    for (crs_id, simulator_id), members in _groups(dialogues).items():
        pairs = []
        for dialogue in members:
            try:
                pairs.append(
                    tuple(
                        trace.at(curve, turn)
                        for trace, curve in (subset_curve(dialogue, s, k) for s in ("selected", "residual"))
                    )
                )
            except NotApplicable:
                continue
        n = len(pairs)
        rows.append(
            SplitRow(
                crs_id,
                simulator_id,
                n,
                sum(p[0] for p in pairs) / n if n else None,
                sum(p[1] for p in pairs) / n if n else None,
            )
        )
    return rows


def plot_curves(curves: list[GroupCurve], metric: str, path: Path, title: str = "") -> Path:
    """One line per CRS × simulator for the curves labelled `metric` (e.g. "PC@10"); a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    chosen = [c for c in curves if c.curve.metric == metric]
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for group in chosen:
        turns = [t for t, v in enumerate(group.curve.mean, start=1) if v is not None]
        values = [v for v in group.curve.mean if v is not None]
        axes.plot(turns, values, marker="o", markersize=3, label=f"{group.crs_id} / {group.simulator_id}")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("turn t")
    axes.set_ylabel(metric)
    axes.set_title(title or f"{metric} per turn")
    axes.grid(alpha=0.3)
    if chosen:
        axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


#: Cut-offs every `curves_of_run` computes, besides the one asked for.
CURVE_KS = (5, 10, 20, 50)


@dataclass(frozen=True)
class RunCurves:
    """What `curves_of_run` computed and wrote: the curves, the selected/residual table, the JSON
    record (`pepper_curves.json`) and the two plots."""

    ks: list[int]
    curves: list[GroupCurve]
    split: list[SplitRow]
    record: dict[str, Any]
    pc_png: Path
    recall_png: Path
    json_path: Path


def curves_of_run(run: Path, k: int = 10, split_k: int = 50, out: Path | None = None) -> RunCurves:
    """PC_t@K and Recall@(t,K) curves of a run folder (or dialogue file) for K in 5, 10, 20, 50 and
    `k`, the selected/residual table at `split_k`; writes pepper_curves.json and the PC and Recall
    plots at `k` into `out` (default: the run folder, or the file's folder). `crsim pepper curves`."""
    from crsim.core.atomic_files import atomic_output
    from crsim.core.errors import DataError
    from crsim.model.io import iter_dialogues
    from crsim.model.run_folder.files import DIALOGUES
    from crsim.model.run_folder.folder import dialogues_file

    path = dialogues_file(run)
    if not path.is_file():
        raise DataError(
            f"not found; expected a run folder with {DIALOGUES} or a dialogue JSONL file", path=str(path)
        )
    dialogues = list(iter_dialogues(path))
    if not dialogues:
        raise DataError("holds no dialogues", path=str(path))
    ks = sorted({*CURVE_KS, k})
    curves = pepper_curves(dialogues, ks)
    rows = split_table(dialogues, split_k)
    folder = out or (run if run.is_dir() else run.parent)
    record = {"curves": [c.as_record() for c in curves], "split": [_split_record(r, split_k) for r in rows]}
    json_path = folder / "pepper_curves.json"
    with atomic_output(json_path) as handle:
        json.dump(record, handle, indent=1)
    pc_png = plot_curves(curves, f"PC@{k}", folder / f"pc_curve_at{k}.png")
    recall_png = plot_curves(curves, f"Recall@(t,{k})", folder / f"recall_curve_at{k}.png")
    return RunCurves(ks, curves, rows, record, pc_png, recall_png, json_path)


def _split_record(row: SplitRow, k: int) -> dict[str, Any]:
    return {
        "crs_id": row.crs_id,
        "simulator_id": row.simulator_id,
        "n": row.n,
        "k": k,
        "pc_selected": row.selected,
        "pc_residual": row.residual,
        "gap": row.gap,
    }
