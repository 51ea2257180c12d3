"""Scores from multisets, per dialogue and over a corpus.

Precision, recall and F1 follow the reference: TP is the size of the multiset intersection,
precision is 1.0 with an empty hypothesis, recall 1.0 with an empty reference, F1 0 when both are
0. A dialogue has a score per domain that has a reference or a hypothesis, and `combined` (all
domains pooled); with neither anywhere the metric is "NA". Corpus figures are means of the
per-dialogue values, each domain over the dialogues whose goal has it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from crsim.studies.gcdf1.behaviour import Event, EventLog
from crsim.studies.gcdf1.canonical import CanonicalMap, ValueCanonicaliser
from crsim.studies.gcdf1.config import Gcdf1Config
from crsim.studies.gcdf1.constraints import ConstraintScorer, Counts
from crsim.studies.gcdf1.dialogue import MULTIWOZ, GoalDialogue, Ontology
from crsim.studies.gcdf1.requests import RequestScorer
from crsim.studies.gcdf1.rules import Rules
from crsim.studies.gcdf1.turns import DialogueView

NA = "NA"
COMBINED = "combined"
#: Output keys, spelled as the reference writes them (note `rcgd_recall`).
INFORM_KEYS = ("igcd_f1", "igcd_precision", "igcd_recall")
REQUEST_KEYS = ("rgcd_f1", "rgcd_precision", "rcgd_recall")
METRIC_KEYS = INFORM_KEYS + REQUEST_KEYS


@dataclass(frozen=True, slots=True)
class PRF:
    f1: float
    precision: float
    recall: float


def prf(reference: Iterable[Hashable], hypothesis: Iterable[Hashable]) -> PRF:
    """Multiset precision, recall and F1 (see the module docstring for the empty cases)."""
    ref, hyp = Counter(reference), Counter(hypothesis)
    true, positive = sum(ref.values()), sum(hyp.values())
    hits = sum((ref & hyp).values())
    precision = hits / positive if positive else 1.0
    recall = hits / true if true else 1.0
    f1 = 2.0 * precision * recall / (precision + recall) if precision + recall > 0.0 else 0.0
    return PRF(f1=f1, precision=precision, recall=recall)


def _scores(counts: Counts) -> dict[str, PRF]:
    out = {domain: prf(ref, hyp) for domain, (ref, hyp) in counts.domains.items()}
    if counts.reference or counts.hypothesis:
        out[COMBINED] = prf(counts.reference, counts.hypothesis)
    return out


@dataclass
class DialogueScores:
    """I-GCDF1 (`inform`) and R-GCDF1 (`request`) per domain and combined; empty means "NA"."""

    dialogue_id: str
    goal_domains: tuple[str, ...]
    inform: dict[str, PRF] = field(default_factory=dict)
    request: dict[str, PRF] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The reference's per-dialogue shape: metric -> domain -> value, or "NA"."""
        out: dict[str, Any] = {}
        for keys, table in ((INFORM_KEYS, self.inform), (REQUEST_KEYS, self.request)):
            for key, attr in zip(keys, ("f1", "precision", "recall"), strict=True):
                out[key] = {d: getattr(v, attr) for d, v in sorted(table.items())} if table else NA
        return out


class Gcdf1Scorer:
    """Scores dialogues with one configuration; holds the memoised value canonicaliser.

    `memoise=False` turns off the caches (value matching, repeated action lists): the benchmark
    uses it as an in-run baseline.
    """

    def __init__(
        self,
        config: Gcdf1Config | None = None,
        canonical_map: CanonicalMap | None = None,
        ontology: Ontology = MULTIWOZ,
        *,
        memoise: bool = True,
    ) -> None:
        self.config = config if config is not None else Gcdf1Config()
        matching = self.config.igcd_f1.value_matching
        self.ontology = ontology
        self.memoise = memoise
        self.rules = Rules(ontology)
        self.canonicaliser: ValueCanonicaliser | None = None
        if matching.use_fuzzy_match:
            use_map = canonical_map if matching.use_canonical_map else None
            self.canonicaliser = ValueCanonicaliser(
                use_map, matching.fuzzy_match_threshold, ontology.coreference_values, memoise=memoise
            )

    def view(self, dialogue: GoalDialogue) -> DialogueView:
        return DialogueView(
            dialogue,
            self.ontology,
            self.canonicaliser,
            lowercase=self.config.use_lowercase,
            merge_values=self.config.igcd_f1.multiple_values_for_slot_in_turn.merge,
            memoise=self.memoise,
        )

    def score(self, dialogue: GoalDialogue) -> DialogueScores:
        """Both metrics for one dialogue, with its behaviour log."""
        view = self.view(dialogue)
        log = EventLog()
        informs = ConstraintScorer(view, self.rules, self.config.igcd_f1, log).count()
        requests = RequestScorer(view, self.rules, self.config.rgcd_f1, log, informs.failed_domains).count()
        return DialogueScores(
            dialogue_id=dialogue.dialogue_id,
            goal_domains=tuple(dialogue.goal),
            inform=_scores(informs),
            request=_scores(requests),
            events=list(log),
        )


@dataclass
class ScoringFailure:
    """A dialogue the scorer raised on; the others are still scored."""

    dialogue_id: str
    error: str


def score_dialogues(
    scorer: Gcdf1Scorer, dialogues: Iterable[GoalDialogue]
) -> tuple[list[DialogueScores], list[ScoringFailure]]:
    """Score every dialogue; one that raises becomes a `ScoringFailure` instead of stopping the run."""
    scored: list[DialogueScores] = []
    failures: list[ScoringFailure] = []
    for dialogue in dialogues:
        try:
            scored.append(scorer.score(dialogue))
        except Exception as exc:  # noqa: BLE001 - a bug on one dialogue must not lose the others
            failures.append(ScoringFailure(dialogue.dialogue_id, f"{type(exc).__name__}: {exc}"))
    return scored, failures


@dataclass(frozen=True)
class CorpusMean:
    value: float
    n: int


def corpus_means(scores: Sequence[DialogueScores]) -> dict[str, dict[str, CorpusMean]]:
    """Metric key -> domain (and `combined`) -> mean over dialogues; a domain's mean covers only
    dialogues whose goal has that domain, and "NA" values are left out."""
    sums: dict[str, dict[str, list[float]]] = {key: {} for key in METRIC_KEYS}
    for dialogue in scores:
        goal = set(dialogue.goal_domains) | {COMBINED}
        for keys, table in ((INFORM_KEYS, dialogue.inform), (REQUEST_KEYS, dialogue.request)):
            for domain, value in table.items():
                if domain not in goal:
                    continue
                for key, number in zip(keys, (value.f1, value.precision, value.recall), strict=True):
                    sums[key].setdefault(domain, []).append(number)
    return {
        key: {d: CorpusMean(sum(v) / len(v), len(v)) for d, v in sorted(by_domain.items())}
        for key, by_domain in sums.items()
    }
