"""The learned satisfaction evaluator: features, grouped CV, the JSON artifact and the metrics."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from crsim.core.errors import DataError
from crsim.eval.learned.artifact import load_artifact, save_artifact
from crsim.eval.learned.features import DENSE_FEATURES, analyzer, dense_features, document, utterance_cues
from crsim.eval.learned.satisfaction import (
    NO_USER_TURNS,
    SATISFACTION_ARTIFACT,
    Satisfaction,
    SatisfactionOverall,
    SatisfactionParams,
    cached_artifact,
)
from crsim.eval.metrics.base import NotApplicable, metric_registry
from crsim.model import Dialogue, DialogueAct, Role, Utterance
from crsim.studies.fitting.cv import (
    Fold,
    conversation_folds,
    grouped_folds,
    leave_one_group_out,
    out_of_fold,
    select,
)
from crsim.studies.fitting.model import DirectRidge, HeadKind, build_pipeline, export_head, predict
from crsim.studies.fitting.specs import LabelledSet, TrainingConfig
from crsim.studies.fitting.training import _training_data, load_sets, quick_check, shared_folds, strength_of
from crsim.studies.fitting.validation import binary_report, roc_auc, within_group_auc, within_group_pearson

FIXTURES = Path(__file__).parents[1] / "fixtures"
VALIDATION = SATISFACTION_ARTIFACT.with_name("satisfaction-v1.validation.json")


def talk(*turns: str, items: dict[int, list[str]] | None = None) -> Dialogue:
    """A dialogue alternating user and CRS, starting with the user; `items`: CRS turn index -> ids."""
    utterances = []
    for index, text in enumerate(turns):
        role = Role.USER if index % 2 == 0 else Role.CRS
        recommended = (items or {}).get(index, []) if role is Role.CRS else []
        utterances.append(Utterance(role=role, text=text, recommended_items=recommended))
    return Dialogue(id="d", utterances=utterances)


HAPPY = talk(
    "Hi, can you recommend a funny movie?",
    "How about Groundhog Day (1993)?",
    "Sounds great, I'll watch it. Thank you so much, that's perfect!",
    "Enjoy the movie!",
    "Thanks, bye!",
)
UNHAPPY = talk(
    "Hi, can you recommend a funny movie?",
    "How about Saw (2004)?",
    "No, that's not what I asked. Saw is a horror movie, not a comedy.",
    "How about Saw (2004)?",
    "You keep recommending the same movie again. This is useless, you don't understand me.",
    "How about Saw (2004)?",
    "No. Terrible.",
    items={1: ["saw"], 3: ["saw"], 5: ["saw"]},
)


@pytest.fixture(scope="module")
def sets() -> tuple[LabelledSet, LabelledSet]:
    return load_sets(FIXTURES / "crsarena_dial", FIXTURES / "crsarena_eval" / "crs_arena_eval.json.gz")


# --- features ---------------------------------------------------------------------------------------


def test_acceptance_and_rejection_cues_move_the_features() -> None:
    happy, unhappy = dense_features(HAPPY), dense_features(UNHAPPY)
    assert set(happy) == set(DENSE_FEATURES)
    for name in (
        "last_accept",
        "last_thanks",
        "last_positive",
        "last_sentiment",
        "user_thanks",
        "last_goodbye",
    ):
        assert happy[name] > unhappy[name], name
    for name in ("last_reject", "last_negative", "user_complaint", "user_reject", "crs_repeat_share"):
        assert unhappy[name] > happy[name], name
    assert unhappy["repeated_item_share"] == pytest.approx(2 / 3)
    assert happy["repeated_item_share"] == 0.0
    assert (happy["log_turns"], unhappy["log_turns"]) == (
        pytest.approx(np.log1p(3)),
        pytest.approx(np.log1p(4)),
    )
    assert unhappy["crs_repeat_share"] == pytest.approx(2 / 3)
    assert happy["crs_year_titles_mean"] == pytest.approx(0.5)


def test_cues_of_single_utterances() -> None:
    def cues(text: str, *acts: str) -> frozenset[str]:
        return utterance_cues(
            Utterance(role=Role.USER, text=text, acts=[DialogueAct(intent=a) for a in acts])
        )

    assert {"accept", "positive"} <= cues("That sounds good, I'll watch it")
    assert "reject" in cues("Nah, not for me") and "accept" not in cues("Nah, not for me")
    assert cues("I've already seen it") >= {"seen"} and "seen" not in cues("I haven't seen it")
    assert "negative" in cues("that is not good") and "positive" not in cues("that is not good")
    assert {"complaint", "question"} <= cues("Why do you keep saying that again?")
    # acts count too: a neutral text annotated as acceptance is an acceptance
    assert "accept" not in cues("ok") and "accept" in cues("ok", "accept")


def test_terms_are_words_and_bigrams_within_one_utterance() -> None:
    assert analyzer("Don't like it!") == ["dont", "like", "it", "dont like", "like it"]
    doc = document(talk("I like comedy", "Try Airplane"))
    assert "comedy try" not in doc.user_terms + doc.crs_terms
    assert doc.user_terms == ("i", "like", "comedy", "i like", "like comedy")
    assert doc.crs_terms == ("try", "airplane", "try airplane")


def test_features_of_a_dialogue_without_crs_or_user_turns_are_finite() -> None:
    for dialogue in (Dialogue(id="e"), talk("hello")):
        assert all(np.isfinite(list(dense_features(dialogue).values())))


# --- cross-validation -------------------------------------------------------------------------------


def test_grouped_folds_never_share_a_conversation_across_sources(
    sets: tuple[LabelledSet, LabelledSet],
) -> None:
    dial, evaluated = sets
    fold_of = shared_folds(dial, evaluated, TrainingConfig())
    dial_folds = grouped_folds(dial.conversations, fold_of)
    eval_folds = grouped_folds(evaluated.conversations, fold_of)
    assert len(dial_folds) == len(eval_folds) == 5
    for d, e in zip(dial_folds, eval_folds, strict=True):
        tested = {dial.conversations[i] for i in d.test} | {evaluated.conversations[i] for i in e.test}
        trained = {dial.conversations[i] for i in d.train} | {evaluated.conversations[i] for i in e.train}
        assert not tested & trained
        assert not set(d.test.tolist()) & set(d.train.tolist())
        assert len(d.test) + len(d.train) == len(dial.docs)
    tested_rows = np.sort(np.concatenate([f.test for f in dial_folds]))
    assert tested_rows.tolist() == list(range(len(dial.docs)))
    # stratified: every fold gets its share of the 87 satisfied users
    assert all(16 <= dial.y[f.test].sum() <= 19 for f in dial_folds)
    # seeded: the same seed gives the same folds, another seed other folds
    assert shared_folds(dial, evaluated, TrainingConfig()) == fold_of
    assert shared_folds(dial, evaluated, TrainingConfig(seed=1)) != fold_of


def test_repeated_conversation_ids_stay_together() -> None:
    conversations = ["a", "b", "a", "c", "d", "b", "e", "f"]
    folds = grouped_folds(conversations, conversation_folds(conversations, k=3, seed=0))
    for fold in folds:
        assert not {conversations[i] for i in fold.test} & {conversations[i] for i in fold.train}
    with pytest.raises(KeyError, match="no fold"):
        grouped_folds(["z"], {"a": 0})


def test_leave_one_system_out(sets: tuple[LabelledSet, LabelledSet]) -> None:
    dial, _ = sets
    folds = leave_one_group_out(dial.systems)
    assert [f.name for f in folds] == sorted(set(dial.systems)) and len(folds) == 9
    for fold in folds:
        assert {dial.systems[i] for i in fold.test} == {fold.name}
        assert fold.name not in {dial.systems[i] for i in fold.train}
        assert len(fold.test) + len(fold.train) == len(dial.docs)


def test_out_of_fold_rejects_leaky_or_incomplete_folds() -> None:
    def fit_predict(fold: Fold) -> np.ndarray:
        return np.zeros(len(fold.test))

    index = np.asarray
    with pytest.raises(ValueError, match="both the training and the test"):
        out_of_fold(fit_predict, 3, [Fold("f", index([0, 1]), index([1, 2]))])
    with pytest.raises(ValueError, match="no test fold"):
        out_of_fold(fit_predict, 3, [Fold("f", index([0]), index([1]))])
    assert out_of_fold(
        fit_predict, 2, [Fold("a", index([1]), index([0])), Fold("b", index([0]), index([1]))]
    ).tolist() == [0, 0]


# --- the artifact -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["logistic", "linear"])
def test_artifact_round_trip_gives_the_pipeline_predictions(
    sets: tuple[LabelledSet, LabelledSet], kind: HeadKind, tmp_path: Path
) -> None:
    dial, evaluated = sets
    data = dial if kind == "logistic" else evaluated
    train, test = np.arange(0, len(data.docs), 2), np.arange(1, len(data.docs), 2)
    pipeline = build_pipeline(kind, 0.1).fit([data.docs[i] for i in train], data.y[train])
    expected = predict(pipeline, [data.docs[i] for i in test])
    head = export_head(pipeline, target="t", training=_training_data(data))
    artifact = cached_artifact().model_copy(update={"heads": {"h": head}})
    path = tmp_path / "a.json"
    save_artifact(artifact, path)
    loaded = load_artifact(path).head("h")
    got = loaded.predict([data.docs[i] for i in test])
    assert np.max(np.abs(got - expected)) < 1e-9
    dense = loaded.features([data.docs[i] for i in test[:20]])
    sparse = pipeline.named_steps["features"].transform([data.docs[i] for i in test[:20]]).toarray()
    assert np.max(np.abs(dense - sparse)) < 1e-12
    save_artifact(load_artifact(path), tmp_path / "b.json")
    assert (tmp_path / "b.json").read_bytes() == path.read_bytes()


def test_cached_artifact_prefers_thanks_and_acceptance() -> None:
    satisfaction, overall = Satisfaction(), SatisfactionOverall()
    assert satisfaction.label == "Satisfaction" and overall.label == "Overall(pred)"
    happy, unhappy = satisfaction.score(HAPPY), satisfaction.score(UNHAPPY)
    assert happy is not None and unhappy is not None
    assert 0 < unhappy < happy < 1
    happy_overall, unhappy_overall = overall.score(HAPPY), overall.score(UNHAPPY)
    assert happy_overall is not None and unhappy_overall is not None
    assert 0 <= unhappy_overall < happy_overall <= 4
    with pytest.raises(NotApplicable, match=NO_USER_TURNS):
        satisfaction.compute(Dialogue(id="silent", utterances=[Utterance(role=Role.CRS, text="Hello!")]))


SCORE_WITHOUT_SKLEARN = """
import sys
from crsim.eval.scores import build_metrics, score_dialogues
from crsim.model import Dialogue, Role, Utterance
from crsim.core.plugins import ComponentSpec
from crsim.eval.metrics.base import metric_registry

metric_registry.names()  # every built-in metric module, as a run's scoring loads them
(metric,) = build_metrics([ComponentSpec(name="satisfaction")])
dialogue = Dialogue(id="d", utterances=[Utterance(role=Role.USER, text="Thanks, that is perfect!")])
(record,) = score_dialogues([dialogue], [metric])
assert record.value is not None, record
print(sorted(m for m in sys.modules if m.startswith(("sklearn", "crsim.studies.fitting"))))
"""


def test_scoring_with_satisfaction_never_imports_sklearn() -> None:
    """Inference is numpy-only: scoring loads every built-in metric and none pulls in scikit-learn
    (training lives in crsim.studies.fitting). A fresh interpreter, since this test module imports sklearn."""
    done = subprocess.run(
        [sys.executable, "-c", SCORE_WITHOUT_SKLEARN],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_metrics_are_registered() -> None:
    assert metric_registry.get("satisfaction") is Satisfaction
    assert metric_registry.get("satisfaction_overall") is SatisfactionOverall


def corrupt(tmp_path: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    data = json.loads(SATISFACTION_ARTIFACT.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def rename_first_dense_feature(data: dict[str, Any]) -> None:
    data["heads"]["satisfied"]["dense"]["names"][0] = "mood"


def test_corrupt_or_wrong_version_artifact_is_a_clear_error(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(SATISFACTION_ARTIFACT.read_bytes()[:5000])
    with pytest.raises(DataError, match="not a valid JSON artifact") as info:
        load_artifact(truncated)
    assert info.value.path == str(truncated)
    with pytest.raises(DataError, match="cannot read") as info:
        load_artifact(tmp_path / "missing.json")
    assert str(tmp_path / "missing.json") in str(info.value)
    cases = [
        (lambda d: d.update(version=99), "version", "artifact version 99 is not supported"),
        (lambda d: d.update(feature_version=0), "feature_version", "not supported"),
        (lambda d: d.update(format="pickle"), "format", "not a crsim learned-evaluator artifact"),
        (lambda d: d["heads"]["satisfied"]["coef"].pop(), "heads.satisfied", "coefficients for"),
        (lambda d: d["heads"]["overall"]["text"][0]["idf"].pop(), "heads.overall.text.0", "idf values"),
        (rename_first_dense_feature, "heads.satisfied.dense", "unknown dense features"),
    ]
    for change, field, message in cases:
        path = corrupt(tmp_path, change)
        with pytest.raises(DataError, match=message) as info:
            load_artifact(path)
        assert (info.value.path, info.value.field) == (str(path), field)
    with pytest.raises(DataError, match=r"bad\.json"):
        Satisfaction(SatisfactionParams(artifact=str(path)))


@pytest.mark.parametrize("shape", [(30, 80), (80, 12)])
def test_direct_ridge_is_the_exact_ridge_solution(shape: tuple[int, int]) -> None:
    """Dual form (more columns than rows) and primal form, sparse input, against scikit-learn's
    dense Cholesky ridge; both are direct solves, so they agree to rounding (condition numbers < 1e3)."""
    from scipy import sparse as sp
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    x = sp.random(*shape, density=0.3, random_state=1, format="csr")
    y = rng.normal(size=shape[0])
    ours = DirectRidge(alpha=0.5).fit(x, y)
    reference = Ridge(alpha=0.5, solver="cholesky").fit(x.toarray(), y)
    assert np.max(np.abs(ours.coef_ - reference.coef_)) < 1e-10
    assert abs(ours.intercept_[0] - reference.intercept_) < 1e-10
    assert np.max(np.abs(ours.predict(x) - reference.predict(x.toarray()))) < 1e-10


# --- reproduction -----------------------------------------------------------------------------------

#: How far a refit's predictions may be from the shipped heads' on any CPU and BLAS kernel. The ridge
#: head is solved directly (Cholesky of the centred kernel + alpha I; condition number ~630 on these
#: data, so rounding moves predictions by ~1e-13). The logistic head's newton-cg stops at
#: max |gradient| <= 1e-10: with the objective's curvature >= 1/(C n) = 0.07 (C 0.03, n 474), d = 6,683
#: columns and rows of norm <= 21, any such stopping point is within sqrt(d) 1e-10 / 0.07 * 21 / 4
#: = 6e-7 of the optimum in probability. Measured across OpenBLAS core types (SkylakeX, Haswell,
#: Sandybridge, Zen) and 1 or 2 threads: at most 8e-14. scikit-learn's `sparse_cg` ridge (tol 1e-4),
#: used before, differed by 3e-4 between two kernels.
PREDICTION_TOLERANCE = 1e-6
#: The quick check's AUC moves only if near-tied predictions swap (1 / (87 * 387) = 3e-5 a pair);
#: Pearson r moves by about the prediction noise. Either way far inside the published 3 decimals.
CHECK_TOLERANCE = 1e-4


def test_training_on_the_fixtures_reproduces_the_cached_artifact(
    sets: tuple[LabelledSet, LabelledSet],
) -> None:
    dial, evaluated = sets
    shipped = cached_artifact()
    validation = json.loads(VALIDATION.read_text(encoding="utf-8"))
    strengths = validation["final_strengths"]
    config = TrainingConfig()
    for spec, data in ((config.satisfied, dial), (config.overall, evaluated)):
        head = shipped.head(spec.name)
        assert head.hyperparameters["strength"] == strengths[spec.name]
        refit = build_pipeline(spec.kind, strengths[spec.name]).fit(data.docs, data.y)
        again = export_head(refit, target=head.target, training=head.training, clip=head.clip)
        assert [b.vocabulary for b in again.text] == [b.vocabulary for b in head.text]
        difference = np.abs(again.predict(data.docs) - head.predict(data.docs))
        assert float(np.max(difference)) < PREDICTION_TOLERANCE, spec.name
        assert head.training.n == len(data.docs)
    # the validation numbers: the quick grouped-CV check at the final strengths
    check = quick_check(dial, evaluated, config, strengths)
    assert check == pytest.approx(validation["check"], abs=CHECK_TOLERANCE)
    # and the artifact carries the same headline numbers as the validation file
    grouped = validation["protocols"]["grouped_5fold"]
    auc = shipped.head("satisfied").metrics["grouped_5fold.roc_auc"]
    assert auc == round(grouped["sentiment"]["all"]["roc_auc"]["value"], 4)
    assert shipped.head("satisfied").threshold == pytest.approx(87 / 474)


# --- validation numbers -----------------------------------------------------------------------------


def test_within_crs_numbers_ignore_differences_between_systems() -> None:
    # system a: all probabilities high, system b: all low; inside each the order is right
    y = np.asarray([1, 0, 1, 0, 0, 1, 0, 0], dtype=np.float64)
    p = np.asarray([0.9, 0.8, 0.95, 0.85, 0.1, 0.3, 0.2, 0.05])
    groups = np.asarray(["a", "a", "a", "a", "b", "b", "b", "b"], dtype=object)
    assert within_group_auc(y, p, groups) == 1.0
    assert roc_auc(y, p) < 1.0
    # a prediction that only knows the system has no within-system correlation
    x = np.asarray([1.0, 1.0, 2.0, 2.0])
    assert np.isnan(
        within_group_pearson(x, np.asarray([0.0, 1.0, 3.0, 4.0]), np.asarray(["a", "a", "b", "b"]))
    )
    assert within_group_pearson(
        np.asarray([0.0, 1.0, 5.0, 7.0]), np.asarray([1.0, 2.0, 0.0, 2.0]), np.asarray(["a", "a", "b", "b"])
    ) == pytest.approx(1.0)


def test_binary_report_against_hand_counts() -> None:
    y = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    p = [0.9, 0.2, 0.6, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    report = binary_report(y, p, None, threshold=0.2, seed=0, resamples=200)
    assert report.roc_auc.value == pytest.approx(15 / 16)  # 0.9 beats all 8 negatives, 0.2 all but 0.6
    assert report.accuracy.value == pytest.approx(0.8)  # 0.9 right, 0.2 missed, 0.6 wrong
    assert report.majority_accuracy == pytest.approx(0.8) and report.accuracy_gain.value == pytest.approx(0.0)
    assert report.balanced_accuracy.value == pytest.approx((1.0 + 7 / 8) / 2)
    assert report.within_crs_roc_auc.value is None
    assert report.roc_auc.low is not None and report.roc_auc.high is not None
    assert report.roc_auc.low <= report.roc_auc.value <= report.roc_auc.high
    assert binary_report(y, p, None, threshold=0.2, seed=0, resamples=200) == report  # seeded


def test_select_matches_a_full_pipeline_cross_validation(sets: tuple[LabelledSet, LabelledSet]) -> None:
    dial, _ = sets
    rows = np.arange(0, len(dial.docs), 3)
    docs, y, conversations = [dial.docs[i] for i in rows], dial.y[rows], [dial.conversations[i] for i in rows]
    strengths = (0.01, 0.1, 1.0)
    chosen = select(build_pipeline("logistic"), strengths, docs, y, conversations, scoring="roc_auc", seed=3)
    splits = [
        (f.train, f.test)
        for f in grouped_folds(conversations, conversation_folds(conversations, list(y), 3, 3))
    ]
    scores = [
        sum(
            roc_auc(
                y[test],
                predict(
                    build_pipeline("logistic", s).fit([docs[i] for i in train], y[train]),
                    [docs[i] for i in test],
                ),
            )
            * len(test)
            for train, test in splits
        )
        for s in strengths
    ]
    assert len(set(scores)) == len(strengths)  # no tie: the choice is informative
    best = strengths[int(np.argmax(scores))]
    assert strength_of(chosen) == best
    assert len(chosen.named_steps["features"].vectorizers_["user"].idf_) > 0
