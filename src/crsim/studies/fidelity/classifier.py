"""The indistinguishability classifier: a logistic regression telling human from simulated user turns
under cross-validation grouped by dialogue, and its AUC (0.5: indistinguishable)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
