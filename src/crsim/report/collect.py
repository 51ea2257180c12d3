"""Gather what a report shows from run folders, streaming: one pass over dialogues, one over scores.

Nothing here holds all dialogues at once: per-turn curves are running sums, score distributions are
one float per dialogue and metric in typed arrays (no Python object per dialogue), and only the
dialogues chosen for the browser are kept, as plain JSON-ready dicts.
"""

from __future__ import annotations

import math
import random
from array import array
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crsim.core.plugins import ComponentSpec
from crsim.eval.metrics.base import PerTurnMetric
from crsim.eval.scores import GroupSummary, build_metrics
from crsim.model.acts import format_acts
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.run_folder.folder import RunFolder, count_lines
from crsim.model.run_folder.summary import GroupCurve, MetricInfo

Group = tuple[str, str]  # (crs_id, simulator_id)

#: The participants whose language-model use puts a run's behaviour into the report.
LLM_ROLES = (Role.USER, Role.CRS)

#: Seed of the browser's sample of a run that holds more dialogues than the browser shows.
BROWSER_SEED = 0


def browser_sample(total: int, size: int, seed: int = BROWSER_SEED) -> set[int] | None:
    """Positions (0-based, in the dialogue file) of the dialogues the browser shows: a uniform sample
    of `size` drawn with `random.Random(seed)`, or None for every dialogue when the run holds at most
    `size` (an empty set for `size` 0)."""
    if size <= 0:
        return set()
    if total <= size:
        return None
    return set(random.Random(seed).sample(range(total), size))


@dataclass
class Curves:
    """Running sums (and sums of squares, for the interval) of per-turn values of one metric for one
    group, over turns 1..horizon."""

    sums: np.ndarray
    counts: np.ndarray
    squares: np.ndarray
    #: the means and SDs when the curve was read from `summary.json` rather than summed here
    fixed: list[float | None] | None = None
    fixed_sd: list[float | None] | None = None

    @classmethod
    def empty(cls, horizon: int) -> Curves:
        return cls(np.zeros(horizon), np.zeros(horizon, dtype=int), np.zeros(horizon))

    @classmethod
    def recorded(cls, curve: GroupCurve) -> Curves:
        """A curve as `summary.json` holds it (means and counts per turn)."""
        return cls(
            np.zeros(0), np.array(curve.n, dtype=int), np.zeros(0), fixed=list(curve.mean), fixed_sd=curve.sd
        )

    def add(self, values: list[float | None]) -> None:
        for index, value in enumerate(values):
            if value is not None:
                self.sums[index] += value
                self.squares[index] += value * value
                self.counts[index] += 1

    def intervals(self, turns: int, z: float = 1.959963984540054) -> list[tuple[float, float] | None]:
        """Per turn, the normal 95% interval of the mean (mean ± z·s/√n, s with ddof=1); None below
        two values. Drawn as the curves' bands; the values are proportions, so callers clip to [0, 1]."""
        if self.fixed is not None:  # from summary.json: its means and SDs (none in older summaries)
            sds = self.fixed_sd or [None] * len(self.fixed)
            return [
                None
                if m is None or sd is None or c < 2
                else (m - z * sd / math.sqrt(c), m + z * sd / math.sqrt(c))
                for m, sd, c in zip(self.fixed[:turns], sds[:turns], self.counts[:turns], strict=False)
            ]
        found: list[tuple[float, float] | None] = []
        for s, q, c in zip(self.sums[:turns], self.squares[:turns], self.counts[:turns], strict=True):
            if c < 2:
                found.append(None)
                continue
            mean = s / c
            variance = max(0.0, (q - c * mean * mean) / (c - 1))
            half = z * math.sqrt(variance / c)
            found.append((float(mean - half), float(mean + half)))
        return found

    def means(self, turns: int) -> list[float | None]:
        if self.fixed is not None:
            return self.fixed[:turns]
        return [
            float(s / c) if c else None for s, c in zip(self.sums[:turns], self.counts[:turns], strict=True)
        ]


@dataclass
class RunView:
    """One run as the report sees it."""

    label: str
    folder: RunFolder
    summaries: list[GroupSummary]
    #: metric label -> its metadata from `summary.json` (empty for summaries written before it)
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    total_dialogues: int = 0
    longest: int = 0
    curves: dict[str, dict[Group, Curves]] = field(default_factory=dict)
    #: metric label -> group -> one value per dialogue (turn-level values averaged per dialogue), a
    #: typed array of 8 bytes a value
    values: dict[str, dict[Group, array[float]]] = field(default_factory=dict)
    #: metric labels whose values a language model gave (LLM judges)
    judged: list[str] = field(default_factory=list)
    browser: list[dict[str, Any]] = field(default_factory=list)
    item_ids: set[str] = field(default_factory=set)
    #: the seed of the browser's sample; None when the browser holds every dialogue (or none)
    browser_seed: int | None = None
    #: whether a simulator or a CRS called a language model in some dialogue
    llm_participants: bool = False


def curve_metrics(specs: list[ComponentSpec]) -> list[PerTurnMetric]:
    """For a summary without recorded curves: PC_t@K and Recall@(t,K) with the run's K (from its
    `pc`/`recall` metrics, else 10)."""
    k = 10
    for spec in specs:
        if spec.name in ("pc", "recall"):
            k = int(spec.args.get("k", k))
            break
    built = build_metrics(
        [
            ComponentSpec(name="pc", args={"k": k}, id=f"PC_t@{k}"),
            ComponentSpec(name="recall", args={"k": k}, id=f"Recall@(t,{k})"),
        ]
    )
    return [m for m in built if isinstance(m, PerTurnMetric)]


def collect_run(folder: RunFolder, label: str, max_dialogues: int) -> RunView:
    """Summaries, curves, score values and a seeded uniform sample of at most `max_dialogues`
    dialogues for the browser (every dialogue when the run holds no more)."""
    summary = folder.summary()
    view = RunView(label, folder, summary.groups, dict(summary.metrics or {}))
    total = count_lines(folder.dialogues_path)
    view.total_dialogues = total
    sample = browser_sample(total, max_dialogues)
    if sample:
        view.browser_seed = BROWSER_SEED
    horizon = folder.typed_manifest.max_turns
    # the per-turn curves: recorded by the evaluation; a summary from before crsim recorded them
    # gets PC and Recall computed here, as reports did then
    metrics = curve_metrics(folder.typed_manifest.metrics or []) if summary.metrics is None else []
    for curve in summary.curves:
        group = (curve.crs_id or "", curve.simulator_id or "")
        view.curves.setdefault(curve.metric, {})[group] = Curves.recorded(curve)
    chosen: dict[str, dict[str, Any]] = {}
    for index, dialogue in enumerate(folder.dialogues()):
        group = (dialogue.crs_id or "", dialogue.simulator_id or "")
        view.longest = max(view.longest, dialogue.num_turns)
        if not view.llm_participants and any(role in LLM_ROLES for role in dialogue.llm_usage):
            view.llm_participants = True
        # a dialogue the simulator or the infrastructure broke says nothing about the CRS's curve
        for metric in metrics if dialogue.evaluable else []:
            per_group = view.curves.setdefault(metric.label, {})
            per_group.setdefault(group, Curves.empty(horizon)).add(metric.per_turn(dialogue, horizon))
        if sample is None or index in sample:
            entry = browser_entry(dialogue, label)
            chosen[dialogue.id] = entry
            view.browser.append(entry)
            for utterance in dialogue.utterances:
                view.item_ids.update(
                    utterance.recommended_items, utterance.mentioned_items, utterance.shown_items
                )
            if dialogue.information_need:
                view.item_ids.update(dialogue.information_need.targets)
    _collect_scores(view, chosen)
    return view


def _collect_scores(view: RunView, chosen: dict[str, dict[str, Any]]) -> None:
    """Per-dialogue values of every metric (turn values averaged), and judges' explanations: one
    float per dialogue and metric in typed arrays; the turn values of a dialogue are found together
    by the hash of its id (an integer per record, no object per dialogue)."""
    values: dict[str, dict[Group, array[float]]] = defaultdict(lambda: defaultdict(lambda: array("d")))
    turns = _TurnSums()
    chosen_turns: dict[tuple[str, str], list[float]] = {}
    judged: dict[str, None] = {}
    for record in view.folder.scores():
        group = (record.crs_id or "", record.simulator_id or "")
        entry = chosen.get(record.dialogue_id)
        if record.llm_judged:
            judged.setdefault(record.metric, None)
        if (record.explanation is not None or record.raw is not None) and entry is not None:
            entry["explanations"].append(
                {
                    "metric": record.metric,
                    "turn": record.turn,
                    "value": record.value,
                    "explanation": record.explanation,
                    "error": record.error,
                }
            )
        if record.turn is None:
            if record.value is not None:
                values[record.metric][group].append(record.value)
            if entry is not None:
                entry["scores"][record.metric] = record.value
        elif record.value is not None:
            turns.add(record.dialogue_id, record.metric, group, record.value)
            if entry is not None:
                acc = chosen_turns.setdefault((record.dialogue_id, record.metric), [0.0, 0.0])
                acc[0] += record.value
                acc[1] += 1
    for label, group, means in turns.means():
        values[label][group].frombytes(means.tobytes())
    for (dialogue_id, label), (total, count) in chosen_turns.items():
        chosen[dialogue_id]["scores"][label] = total / count
    view.values = {label: dict(groups) for label, groups in values.items()}
    view.judged = list(judged)


class _TurnSums:
    """Turn-level values, in reading order, until each dialogue's mean can be taken: per record the
    hash of its dialogue's id, codes of its metric and group, and the value (typed arrays)."""

    def __init__(self) -> None:
        self.dialogue, self.metric, self.value = array("q"), array("q"), array("d")
        self.metrics: dict[str, int] = {}
        self.groups: dict[Group, int] = {}
        self.group = array("q")

    def add(self, dialogue_id: str, metric: str, group: Group, value: float) -> None:
        self.dialogue.append(hash(dialogue_id))
        self.metric.append(self.metrics.setdefault(metric, len(self.metrics)))
        self.group.append(self.groups.setdefault(group, len(self.groups)))
        self.value.append(value)

    def means(self) -> Iterator[tuple[str, Group, np.ndarray]]:
        """Per metric and group, each dialogue's mean (its values summed from 0.0 in reading order),
        in the order first read; a dialogue's group is that of its last turn value, as the report
        always took it. Metrics and groups come in the order of their first turn value."""
        if not len(self.value):
            return
        dialogue = np.frombuffer(self.dialogue, dtype=np.int64)
        metric = np.frombuffer(self.metric, dtype=np.int64)
        value = np.frombuffer(self.value, dtype=np.float64)
        reading = np.arange(value.size)
        order = np.lexsort((reading, dialogue, metric))  # each (metric, dialogue) in reading order
        key_metric, key_dialogue = metric[order], dialogue[order]
        starts = np.flatnonzero(
            np.r_[True, (key_metric[1:] != key_metric[:-1]) | (key_dialogue[1:] != key_dialogue[:-1])]
        )
        counts = np.diff(np.append(starts, order.size))
        totals = np.zeros(starts.size)
        for offset in range(int(counts.max())):
            more = counts > offset
            totals[more] += value[order[starts[more] + offset]]
        by_dialogue = np.lexsort((reading, dialogue))
        ends = np.flatnonzero(np.r_[dialogue[by_dialogue][1:] != dialogue[by_dialogue][:-1], True])
        last_of = np.frombuffer(self.group, dtype=np.int64)[by_dialogue[ends]]
        group = last_of[np.searchsorted(dialogue[by_dialogue][ends], key_dialogue[starts])]
        first, key_metric = order[starts], key_metric[starts]
        metrics, groups = list(self.metrics), list(self.groups)
        for code in sorted(np.unique(key_metric), key=lambda c: first[key_metric == c].min()):
            of_metric = np.flatnonzero(key_metric == code)
            for g in sorted(
                np.unique(group[of_metric]), key=lambda g: first[of_metric][group[of_metric] == g].min()
            ):
                at = of_metric[group[of_metric] == g]
                at = at[np.argsort(first[at])]
                yield metrics[code], groups[g], totals[at] / counts[at]


def browser_entry(dialogue: Dialogue, run: str) -> dict[str, Any]:
    """A dialogue as the browser shows it: plain JSON, every text as it was recorded."""
    termination = dialogue.termination
    return {
        "run": run,
        "id": dialogue.id,
        "crs": dialogue.crs_id or "",
        "simulator": dialogue.simulator_id or "",
        "user": dialogue.user_id or "",
        "termination": termination.reason.value if termination else "unknown",
        **({"termination_detail": termination.detail} if termination and termination.detail else {}),
        "error": termination.error.model_dump() if termination and termination.error else None,
        "turns": dialogue.num_turns,
        "need": dialogue.information_need.model_dump(mode="json") if dialogue.information_need else None,
        "profile": dialogue.user_profile.model_dump(mode="json") if dialogue.user_profile else None,
        "metadata": dialogue.metadata,
        "llm_usage": {role: usage.model_dump() for role, usage in dialogue.llm_usage.items()},
        "utterances": [_utterance_view(u) for u in dialogue.utterances],
        "scores": {},
        "explanations": [],
    }


def _utterance_view(u: Utterance) -> dict[str, Any]:
    """One utterance as the dialogue browser shows it; buttons (`options`, and the `chosen` one) only
    when the utterance has them, so reports of runs without buttons stay as they were."""
    view: dict[str, Any] = {
        "role": u.role.value,
        "text": u.text,
        "acts": format_acts(u.acts) if u.acts else "",
        "recommended": u.recommended_items,
        "mentioned": u.mentioned_items,
        "shown": u.shown_items,
        "annotations": u.annotations,
        "llm_calls": len(u.llm_calls),
    }
    if u.options:
        view["options"] = [o.model_dump() for o in u.options]
    if u.chosen_option is not None:
        view["chosen"] = u.chosen_option.model_dump()
    return view
