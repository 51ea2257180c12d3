"""Fidelity of simulated users to human users: the same measures on a run's user turns and on the
seekers of a human corpus, with a human-vs-human control from two halves of the corpus.

Both sides are read with the same instruments: every utterance is (re-)annotated by the rule
annotator (`crsim.eval.annotators.rules`), recommendation rounds are cut as the metrics cut them
(`crsim.eval.metrics.structure.recommends`) and a round's reaction is the user's last `accept` or
`reject` in it, as the metrics read acceptance. Each measure is compared as a distribution, by the
Jensen-Shannon distance (base 2, in [0, 1]); proportions are two-outcome distributions. The summary
distance of a simulator is the mean of those distances over the measures both sides have; the
indistinguishability score is the AUC of a classifier of human vs simulated user turns under
cross-validation grouped by dialogue (0.5: indistinguishable). docs/fidelity.md defines each measure.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from crsim.core.errors import CrsimError
from crsim.core.seeding import derive_seed
from crsim.eval.annotators.base import ActAnnotator
from crsim.eval.metrics.structure import recommends
from crsim.model.acts import Intent
from crsim.model.dialogue import Dialogue, Role

#: Corpora `--against` names: converted on the fly with the dataset reader of that name.
CORPORA = ("redial", "crsarena_dial", "inspired")
#: Words per user utterance: the upper bound of each bin (the last bin is open).
LENGTH_BINS = (0, 2, 5, 10, 20, 40)
#: User turns per dialogue: the upper bound of each bin (the last bin is open).
TURN_BINS = (1, 2, 3, 5, 8, 12, 20)
#: How many random orders of the utterances distinct-n is averaged over.
DISTINCT_DRAWS = 5
#: Outcomes of a recommendation round.
ACCEPTED, REJECTED, NO_REACTION = "accepted", "rejected", "neither"

#: A distribution as counts or weights per outcome.
Table = Mapping[str, float]

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased words: runs of letters or digits with inner apostrophes or hyphens."""
    return [w.lower() for w in _WORD.findall(text)]


def is_question(text: str) -> bool:
    """A user utterance asks something when it contains a question mark."""
    return "?" in text


@dataclass
class UserSide:
    """What the measures need from a set of annotated dialogues (simulated or human)."""

    dialogues: int = 0
    #: (dialogue id, text) of every non-empty user utterance.
    utterances: list[tuple[str, str]] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    questions: list[bool] = field(default_factory=list)
    #: One outcome per recommendation round: ACCEPTED, REJECTED or NO_REACTION.
    reactions: list[str] = field(default_factory=list)
    intents: Counter[str] = field(default_factory=Counter)
    turns: list[int] = field(default_factory=list)
    #: The words of each utterance (as `utterances`), and which copy of its dialogue it is in: 0, or
    #: k for the k-th repeat of a dialogue a bootstrap resample drew more than once (`merged`).
    tokens: list[list[str]] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)
    #: Per utterance, the number of its dialogue among the side's (`merged`: among the parts').
    origins: list[int] = field(default_factory=list)
    #: n -> the n-grams of each utterance (n = 1, 2), made once: the bootstrap reads them many times.
    ngrams: dict[int, list[list[tuple[str, ...]]]] = field(default_factory=lambda: {1: [], 2: []})
    #: Each dialogue on its own, in the order added: what the bootstrap resamples.
    parts: list[UserSide] = field(default_factory=list)

    def add(self, dialogue: Dialogue, key: str = "") -> None:
        """Add one dialogue whose utterances carry acts; `key` keeps dialogue ids of two sides apart."""
        part = UserSide(dialogues=1)
        users = [u for u in dialogue.utterances if u.role is Role.USER and u.text.strip()]
        part.turns.append(len(users))
        for utterance in users:
            said = words(utterance.text)
            part.utterances.append((key + dialogue.id, utterance.text))
            part.tokens.append(said)
            for n, grams in part.ngrams.items():
                grams.append(ngrams(said, n))
            part.copies.append(0)
            part.lengths.append(len(said))
            part.questions.append(is_question(utterance.text))
            part.intents.update(a.intent for a in utterance.acts)
        part.reactions.extend(reactions(dialogue))
        self._extend(part, 0, len(self.parts))
        self.parts.append(part)

    def _extend(self, part: UserSide, copy: int, origin: int) -> None:
        self.dialogues += part.dialogues
        self.origins.extend([origin] * len(part.tokens))
        self.utterances.extend(part.utterances)
        self.tokens.extend(part.tokens)
        for n, grams in self.ngrams.items():
            grams.extend(part.ngrams[n])
        self.copies.extend([copy] * len(part.tokens))
        self.lengths.extend(part.lengths)
        self.questions.extend(part.questions)
        self.intents.update(part.intents)
        self.reactions.extend(part.reactions)
        self.turns.extend(part.turns)


def ngrams(said: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(said[i : i + n]) for i in range(len(said) - n + 1)]


def merged(parts: Sequence[UserSide], picks: Iterable[int]) -> UserSide:
    """The side made of the dialogues `parts[i]` for i in `picks` (a bootstrap resample: an index may
    repeat). A repeated dialogue's utterances carry their copy number, so distinct-n does not count a
    copy's n-grams as repeats of its original (a new dialogue would not repeat it word for word)."""
    side = UserSide()
    seen: Counter[int] = Counter()
    for index in picks:
        side._extend(parts[index], seen[index], int(index))
        seen[index] += 1
    return side


def reactions(dialogue: Dialogue) -> list[str]:
    """The outcome of each recommendation round (a recommending CRS utterance up to the next): the
    user's last `accept` or `reject` in it (an utterance with both counts as an acceptance, as the
    metrics read it), else NO_REACTION."""
    out: list[str] = []
    current: str | None = None
    for utterance in dialogue.utterances:
        if recommends(utterance):
            if current is not None:
                out.append(current)
            current = NO_REACTION
        elif current is not None and utterance.role is Role.USER:
            intents = {a.intent for a in utterance.acts}
            if Intent.ACCEPT.value in intents:
                current = ACCEPTED
            elif Intent.REJECT.value in intents:
                current = REJECTED
    if current is not None:
        out.append(current)
    return out


def side_of(dialogues: Iterable[Dialogue], key: str = "") -> UserSide:
    side = UserSide()
    for dialogue in dialogues:
        side.add(dialogue, key)
    return side


# --- distributions and distances ------------------------------------------------------------------


def binned(values: Sequence[int], bounds: Sequence[int]) -> Counter[str]:
    """Counts per bin; a bin is named by its range ("3-5", "41+")."""
    counts: Counter[str] = Counter()
    for value in values:
        low = 0
        for bound in bounds:
            if value <= bound:
                counts[str(bound) if low == bound else f"{low}-{bound}"] += 1
                break
            low = bound + 1
        else:
            counts[f"{low}+"] += 1
    return counts


def bernoulli(p: float | None) -> Table | None:
    """A proportion as a two-outcome distribution (None stays None)."""
    return None if p is None else {"yes": p, "no": 1.0 - p}


def js_distance(p: Table | None, q: Table | None) -> float | None:
    """Jensen-Shannon distance (square root of the divergence, base 2) between two count or weight
    tables; 0 for equal distributions, 1 for disjoint ones; None when either side is empty."""
    if p is None or q is None:
        return None
    p_total, q_total = sum(p.values()), sum(q.values())
    if p_total <= 0 or q_total <= 0:
        return None
    divergence = 0.0
    for key in set(p) | set(q):
        a, b = p.get(key, 0) / p_total, q.get(key, 0) / q_total
        m = (a + b) / 2
        if a > 0:
            divergence += a / 2 * math.log2(a / m)
        if b > 0:
            divergence += b / 2 * math.log2(b / m)
    return math.sqrt(max(divergence, 0.0))


def share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def tokens(side: UserSide) -> int:
    return sum(side.lengths)


def distinct(side: UserSide, n: int, budget: int, seed: int, draws: int = DISTINCT_DRAWS) -> float | None:
    """Distinct-n at a fixed budget of words: the utterances in a random order, cut after `budget`
    words; distinct n-grams (within an utterance) over all n-grams, averaged over `draws` orders.
    Comparing at one budget matters: distinct-n falls as a sample grows.

    In a bootstrap resample (`merged`) a dialogue may be there twice; a new dialogue would not repeat
    it word for word, so an n-gram found in no other dialogue of the cut sample counts once per copy,
    while an n-gram other dialogues share counts once, as it would in a sample without repeats."""
    if budget < n:
        return None
    texts = side.tokens
    repeated = any(side.copies)
    values = []
    for draw in range(draws):
        order = list(range(len(texts)))
        random.Random(derive_seed(seed, "distinct", draw)).shuffle(order)
        left = budget
        grams: list[tuple[str, ...]] = []
        owners: list[int] = []
        cached = side.ngrams.get(n)
        for index in order:
            size = len(texts[index])
            whole = cached is not None and size <= left
            found = cached[index] if cached is not None and whole else ngrams(texts[index][:left], n)
            left -= min(size, left)
            grams += found
            owners += [index] * len(found)
            if left <= 0:
                break
        if not grams:
            continue
        kept = _kept_with_copies(grams, owners, side) if repeated else len(set(grams))
        values.append(kept / len(grams))
    return mean(values)


def _kept_with_copies(grams: Sequence[tuple[str, ...]], owners: Sequence[int], side: UserSide) -> int:
    """The distinct n-grams of a resample's cut sample, an n-gram of one dialogue only counted once
    per copy of it (`distinct`); in numpy, on the n-grams' hashes (a collision of 64-bit hashes
    among a sample's n-grams is too rare to matter)."""
    owner = np.asarray(owners, dtype=np.int64)
    base = np.asarray(side.origins, dtype=np.int64)[owner]
    copy = np.asarray(side.copies, dtype=np.int64)[owner]
    ids = np.fromiter((hash(g) for g in grams), dtype=np.int64, count=len(grams))
    _, in_dialogues = np.unique(_distinct_pairs(ids, base), return_counts=True)
    _, in_copies = np.unique(_distinct_pairs(ids, copy), return_counts=True)  # the same sorted ids
    return int(np.where(in_dialogues == 1, in_copies, 1).sum())


def _distinct_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The `first` value of each distinct (first, second) pair, sorted."""
    order = np.lexsort((second, first))
    a, b = first[order], second[order]
    new = np.ones(a.size, dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[new]


# --- the indistinguishability classifier ----------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """Out-of-fold classifier scores of every utterance, with its label (1: `first`) and dialogue."""

    labels: list[int]
    scores: list[float]
    groups: list[str]

    def auc(self) -> float:
        from sklearn.metrics import roc_auc_score

        return float(roc_auc_score(self.labels, self.scores))


def classifier_scores(
    first: Sequence[tuple[str, str]], second: Sequence[tuple[str, str]], seed: int, folds: int = 5
) -> Scored | None:
    """Out-of-fold scores of a logistic regression telling utterances of `first` from those of
    `second` ((group, text) pairs) under cross-validation grouped by dialogue: no dialogue is in the
    training and the test part of one fold. Features: tf-idf of word 1-2-grams (lower-cased) and of
    character 2-4-grams (case kept, so style counts). None when a side has fewer than two dialogues."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.pipeline import make_pipeline, make_union

    groups_first = {g for g, _ in first}
    groups_second = {g for g, _ in second}
    splits = min(folds, len(groups_first), len(groups_second))
    if splits < 2:
        return None
    texts = [t for _, t in first] + [t for _, t in second]
    labels = [1] * len(first) + [0] * len(second)
    groups = [g for g, _ in first] + [g for g, _ in second]
    scores = [0.0] * len(texts)
    cv = StratifiedGroupKFold(n_splits=splits, shuffle=True, random_state=seed % (2**32))
    for train, test in cv.split(texts, labels, groups):
        model = make_pipeline(
            make_union(
                TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1),
                TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=False, sublinear_tf=True),
            ),
            LogisticRegression(C=1.0, max_iter=1000, class_weight="balanced"),
        )
        model.fit([texts[i] for i in train], [labels[i] for i in train])
        predicted = model.decision_function([texts[i] for i in test])
        for index, value in zip(test, predicted, strict=True):
            scores[index] = float(value)
    return Scored(labels, scores, groups)


def classifier_auc(
    first: Sequence[tuple[str, str]], second: Sequence[tuple[str, str]], seed: int, folds: int = 5
) -> float | None:
    """AUC of the classifier of `classifier_scores` from its out-of-fold scores (0.5: it cannot tell
    the two sides apart); None when a side has fewer than two dialogues."""
    scored = classifier_scores(first, second, seed, folds)
    return None if scored is None else scored.auc()


# --- intervals ------------------------------------------------------------------------------------

#: Bootstrap replicates per interval unless told otherwise.
RESAMPLES = 200
#: Coverage of every interval.
LEVEL = 0.95
#: At least this share of replicates must define a value for its interval to be given.
DEFINED_SHARE = 0.5

Interval = tuple[float, float]


def percentile_interval(values: Sequence[float | None], level: float = LEVEL) -> Interval | None:
    """The percentile interval of the replicates that define a value; None when fewer than
    DEFINED_SHARE of them do (e.g. most resamples of a simulator have no recommendation round)."""
    known = np.array([v for v in values if v is not None], dtype=float)
    if not values or known.size < DEFINED_SHARE * len(values):
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(known, [tail, 100 - tail])
    return float(low), float(high)


def auc_interval(scored: Scored, resamples: int, seed: int, level: float = LEVEL) -> Interval | None:
    """Percentile interval of the classifier's AUC by a bootstrap over dialogues: each replicate draws,
    per class, as many dialogues as the class has, with replacement, and takes the AUC of all their
    utterances' out-of-fold scores. The scores stay fixed (the classifier is not refitted), so the
    interval covers the sampling of dialogues, not the variance of the fitting."""
    from sklearn.metrics import roc_auc_score

    labels = np.asarray(scored.labels)
    scores = np.asarray(scored.scores)
    members: dict[str, list[int]] = {}
    for index, group in enumerate(scored.groups):
        members.setdefault(group, []).append(index)
    by_class = [[np.asarray(m) for g, m in members.items() if labels[m[0]] == label] for label in (1, 0)]
    rng = np.random.default_rng(seed)
    values: list[float | None] = []
    for _ in range(resamples):
        chosen = np.concatenate(
            [groups[pick] for groups in by_class for pick in rng.integers(0, len(groups), size=len(groups))]
        )
        values.append(float(roc_auc_score(labels[chosen], scores[chosen])))
    return percentile_interval(values, level)


# --- the report -----------------------------------------------------------------------------------


class MeasureRow(BaseModel):
    """One measure: its value on the simulated users, the human corpus and the two human halves, and
    the Jensen-Shannon distances simulated-vs-human and half-vs-half (the control)."""

    model_config = ConfigDict(extra="forbid")

    measure: str
    unit: str = Field(description="What one observation is: utterance, round, dialogue, act, word.")
    simulated: float | None
    human: float | None
    half_a: float | None
    half_b: float | None
    distance: float | None = Field(description="Jensen-Shannon distance, simulated vs human.")
    control_distance: float | None = Field(description="Jensen-Shannon distance, half A vs half B.")
    n_simulated: int
    n_human: int
    simulated_distribution: dict[str, float] | None = None
    human_distribution: dict[str, float] | None = None
    simulated_ci: Interval | None = Field(None, description="95% bootstrap interval (`Intervals`).")
    human_ci: Interval | None = None
    distance_ci: Interval | None = None
    control_distance_ci: Interval | None = None


class SimulatorFidelity(BaseModel):
    """All measures for one simulator of the run, its summary distance and the classifier's AUC."""

    model_config = ConfigDict(extra="forbid")

    simulator: str
    dialogues: int
    user_utterances: int
    rows: list[MeasureRow]
    summary_distance: float | None = Field(
        description="Mean Jensen-Shannon distance over the measures both sides have (0 = same)."
    )
    control_summary_distance: float | None = Field(description="The same between the two human halves.")
    auc: float | None = Field(
        description="Classifier AUC, human vs simulated user turns (0.5 = indistinguishable)."
    )
    control_auc: float | None = Field(description="Classifier AUC, half A vs half B of the human corpus.")
    summary_ci: Interval | None = None
    control_summary_ci: Interval | None = None
    auc_ci: Interval | None = None
    control_auc_ci: Interval | None = None


class Intervals(BaseModel):
    """How the intervals of a fidelity report were made."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(
        "percentile bootstrap over dialogues: each replicate draws, per side (simulated, human, half A, "
        "half B), as many dialogues as the side has, with replacement, and recomputes every measure, "
        "distance and summary"
    )
    auc_method: str = Field(
        "percentile bootstrap over dialogues of the out-of-fold classifier scores (per class, as many "
        "dialogues as it has, with replacement; the classifier is not refitted)"
    )
    level: float = LEVEL
    resamples: int = RESAMPLES
    seed: int = 0


class FidelityReport(BaseModel):
    """The fidelity of every simulator of a run against one human corpus."""

    model_config = ConfigDict(extra="forbid")

    run: str
    against: str
    domain: str
    seed: int
    human_dialogues: int
    half_dialogues: tuple[int, int]
    human_user_utterances: int
    left_out: int = Field(
        description="Run dialogues left out: the simulator or the infrastructure broke them."
    )
    simulators: list[SimulatorFidelity]
    intervals: Intervals | None = Field(None, description="None: made without intervals.")


def _distribution(counts: Table | None) -> dict[str, float] | None:
    if not counts:
        return None
    total = sum(counts.values())
    return {k: round(v / total, 4) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}


def measure_rows(
    sim: UserSide,
    human: UserSide,
    half_a: UserSide,
    half_b: UserSide,
    seed: int,
    *,
    budget: int | None = None,
    draws: int = DISTINCT_DRAWS,
) -> list[MeasureRow]:
    """The rows of every measure but the classifier, in the order the table shows them. Distinct-n
    is taken at `budget` words (default: the smallest side's), averaged over `draws` orders."""
    sides = (sim, human, half_a, half_b)
    rows: list[MeasureRow] = []

    def add(
        name: str,
        unit: str,
        values: Sequence[float | None],
        tables: Sequence[Table | None],
        counts: tuple[int, int],
        keep: bool = False,
    ) -> None:
        rows.append(
            MeasureRow(
                measure=name,
                unit=unit,
                simulated=values[0],
                human=values[1],
                half_a=values[2],
                half_b=values[3],
                distance=js_distance(tables[0], tables[1]),
                control_distance=js_distance(tables[2], tables[3]),
                n_simulated=counts[0],
                n_human=counts[1],
                simulated_distribution=_distribution(tables[0]) if keep else None,
                human_distribution=_distribution(tables[1]) if keep else None,
            )
        )

    def each(function: Any) -> list[Any]:
        return [function(side) for side in sides]

    utterance_counts = (len(sim.lengths), len(human.lengths))
    add(
        "words_per_utterance",
        "utterance",
        each(lambda s: mean(s.lengths)),
        each(lambda s: binned(s.lengths, LENGTH_BINS) or None),
        utterance_counts,
        keep=True,
    )
    questions = each(lambda s: share(s.questions))
    add("question_share", "utterance", questions, [bernoulli(p) for p in questions], utterance_counts)
    round_counts = (len(sim.reactions), len(human.reactions))
    for name, outcome in (("acceptance_rate", ACCEPTED), ("rejection_rate", REJECTED)):
        rates = each(lambda s, o=outcome: share([r == o for r in s.reactions]))
        add(name, "recommendation", rates, [bernoulli(p) for p in rates], round_counts)
    add(
        "dialogue_acts",
        "act",
        [None] * 4,
        each(lambda s: Counter(s.intents) or None),
        (sum(sim.intents.values()), sum(human.intents.values())),
        keep=True,
    )
    budget = min(tokens(s) for s in sides) if budget is None else budget
    for n in (1, 2):
        values = [distinct(s, n, budget, derive_seed(seed, i), draws) for i, s in enumerate(sides)]
        add(
            f"distinct_{n}",
            f"{n}-gram in {budget} words",
            values,
            [bernoulli(p) for p in values],
            (budget, budget),
        )
    add(
        "turns_per_dialogue",
        "dialogue",
        each(lambda s: mean(s.turns)),
        each(lambda s: binned(s.turns, TURN_BINS) or None),
        (len(sim.turns), len(human.turns)),
        keep=True,
    )
    return rows


def summary(distances: Iterable[float | None]) -> float | None:
    """The mean of the distances that are defined."""
    known = [d for d in distances if d is not None]
    return sum(known) / len(known) if known else None


def split_halves(dialogues: Sequence[Dialogue], seed: int) -> tuple[list[Dialogue], list[Dialogue]]:
    """Two halves of a corpus, dialogues assigned at random (seeded)."""
    order = list(dialogues)
    random.Random(derive_seed(seed, "halves")).shuffle(order)
    middle = len(order) // 2
    return order[:middle], order[middle:]


def sample(dialogues: Sequence[Dialogue], limit: int | None, seed: int, what: str) -> list[Dialogue]:
    """At most `limit` dialogues, drawn at random (seeded); all when there are fewer."""
    if limit is None or len(dialogues) <= limit:
        return list(dialogues)
    return random.Random(derive_seed(seed, what)).sample(list(dialogues), limit)


def bootstrap_rows(
    rows: list[MeasureRow],
    sides: tuple[UserSide, UserSide, UserSide, UserSide],
    name: str,
    seed: int,
    resamples: int,
) -> tuple[list[MeasureRow], Interval | None, Interval | None]:
    """`rows` with their intervals, and the intervals of the summary and control summary distances:
    `resamples` replicates, each resampling the dialogues of every side (`merged`) and recomputing
    the rows at the point estimate's word budget (distinct-n on one random order per replicate). The
    human sides are drawn from a seed of their own, so every simulator sees the same human replicates
    (except for distinct-n, whose budget is the simulator's)."""
    budget = min(tokens(s) for s in sides)
    rngs = [
        np.random.default_rng(derive_seed(seed, "bootstrap", who))
        for who in (f"simulator {name}", "human", "half A", "half B")
    ]
    replicates: list[list[MeasureRow]] = []
    for r in range(resamples):
        drawn = [
            merged(side.parts, rng.integers(0, len(side.parts), size=len(side.parts)))
            for side, rng in zip(sides, rngs, strict=True)
        ]
        replicates.append(
            measure_rows(
                drawn[0],
                drawn[1],
                drawn[2],
                drawn[3],
                derive_seed(seed, name, "replicate", r),
                budget=budget,
                draws=1,
            )
        )
    found = []
    for i, row in enumerate(rows):
        column = [rep[i] for rep in replicates]
        found.append(
            row.model_copy(
                update={
                    "simulated_ci": percentile_interval([c.simulated for c in column]),
                    "human_ci": percentile_interval([c.human for c in column]),
                    "distance_ci": percentile_interval([c.distance for c in column]),
                    "control_distance_ci": percentile_interval([c.control_distance for c in column]),
                }
            )
        )
    summaries = percentile_interval([summary(c.distance for c in rep) for rep in replicates])
    controls = percentile_interval([summary(c.control_distance for c in rep) for rep in replicates])
    return found, summaries, controls


def simulator_fidelity(
    name: str,
    sim: UserSide,
    human: UserSide,
    half_a: UserSide,
    half_b: UserSide,
    seed: int,
    control: Scored | None,
    resamples: int = RESAMPLES,
    control_ci: Interval | None = None,
) -> SimulatorFidelity:
    """One simulator against the human side (`control`: the half-vs-half classifier's scores, with
    the interval of its AUC); `resamples` 0 leaves out the intervals."""
    rows = measure_rows(sim, human, half_a, half_b, derive_seed(seed, name))
    summary_ci = control_summary_ci = None
    if resamples:
        rows, summary_ci, control_summary_ci = bootstrap_rows(
            rows, (sim, human, half_a, half_b), name, seed, resamples
        )
    scored = classifier_scores(human.utterances, sim.utterances, derive_seed(seed, name, "auc"))
    return SimulatorFidelity(
        simulator=name,
        dialogues=sim.dialogues,
        user_utterances=len(sim.utterances),
        rows=rows,
        summary_distance=summary(r.distance for r in rows),
        control_summary_distance=summary(r.control_distance for r in rows),
        auc=None if scored is None else scored.auc(),
        control_auc=None if control is None else control.auc(),
        summary_ci=summary_ci,
        control_summary_ci=control_summary_ci,
        auc_ci=auc_interval(scored, resamples, derive_seed(seed, name, "auc interval"))
        if scored is not None and resamples
        else None,
        control_auc_ci=control_ci,
    )


async def _annotated(annotator: ActAnnotator, dialogues: Iterable[Dialogue]) -> list[Dialogue]:
    return [await annotator.annotate(d, overwrite=True) for d in dialogues]


def fidelity(
    run_name: str,
    run_dialogues: Iterable[Dialogue],
    against: str,
    corpus: Sequence[Dialogue],
    annotator: ActAnnotator,
    *,
    seed: int = 0,
    max_human: int | None = 400,
    max_simulated: int | None = 400,
    resamples: int = RESAMPLES,
) -> FidelityReport:
    """Compare the users of each simulator of a run with the human users of `corpus`.

    Every utterance of both sides is annotated anew by `annotator` (the same instrument on both);
    `max_human` and `max_simulated` cap the dialogues read per side (a seeded random sample);
    `resamples` bootstrap replicates give the intervals (0: none)."""
    humans = sample(corpus, max_human, seed, "human")
    if len(humans) < 4:
        raise CrsimError(
            f"--against {against}: {len(humans)} human dialogue(s); at least 4 are needed for two halves"
        )
    by_simulator: dict[str, list[Dialogue]] = {}
    left_out = 0
    for dialogue in run_dialogues:
        if not dialogue.evaluable:
            left_out += 1
            continue
        by_simulator.setdefault(dialogue.simulator_id or "simulator", []).append(dialogue)
    if not by_simulator:
        raise CrsimError(f"run {run_name}: no evaluable dialogue to compare")
    humans = asyncio.run(_annotated(annotator, humans))
    first, second = split_halves(humans, seed)
    human, half_a, half_b = side_of(humans, "human:"), side_of(first, "human:"), side_of(second, "human:")
    control = classifier_scores(half_a.utterances, half_b.utterances, derive_seed(seed, "control auc"))
    control_ci = (
        auc_interval(control, resamples, derive_seed(seed, "control auc interval"))
        if control is not None and resamples
        else None
    )
    results = []
    for name, dialogues in sorted(by_simulator.items()):
        chosen = sample(dialogues, max_simulated, seed, name)
        sim = side_of(asyncio.run(_annotated(annotator, chosen)), "sim:")
        results.append(
            simulator_fidelity(name, sim, human, half_a, half_b, seed, control, resamples, control_ci)
        )
    return FidelityReport(
        run=run_name,
        against=against,
        domain=annotator.domain.name,
        seed=seed,
        human_dialogues=len(humans),
        half_dialogues=(len(first), len(second)),
        human_user_utterances=len(human.utterances),
        left_out=left_out,
        simulators=results,
        intervals=Intervals(resamples=resamples, seed=seed) if resamples else None,
    )


def read_corpus(against: str, data: Path | None) -> tuple[str, list[Dialogue]]:
    """The human corpus `--against` names, with its label: a file of unified dialogues (.jsonl), or a
    dataset converted on the fly from its published files (`data`, default `datasets/<name>`, the
    folder `crsim data download NAME` fills)."""
    from crsim.datasets.base import build_reader, convert_dataset
    from crsim.model.io import iter_dialogues

    path = Path(against)
    if against not in CORPORA:
        if not path.is_file():
            raise CrsimError(
                f"--against: {against!r} is neither a corpus ({', '.join(CORPORA)}) nor a dialogues file"
            )
        return path.stem.removesuffix(".jsonl"), list(iter_dialogues(path))
    src = data if data is not None else Path("datasets") / against
    if not src.exists():
        raise CrsimError(
            f"--data: {src} does not exist; give the {against} files as published "
            f"(`crsim data download {against}` writes them to datasets/{against})"
        )
    return against, list(convert_dataset(build_reader(against, {}), src))
