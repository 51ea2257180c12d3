"""The learned CRSArena-Eval evaluator: honest folds, the JSON model, `crsim evaluate`, `crsim meta-eval`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from typer.testing import CliRunner

import crsim.studies.meta.learned as learned
from crsim.cli import app
from crsim.cli.meta_eval import meta_app
from crsim.core.errors import DataError
from crsim.eval.learned.crsarena import (
    CRSARENA_MODEL,
    NO_CRS_UTTERANCE,
    CrsarenaParams,
    LearnedCrsarena,
    cached_model,
)
from crsim.eval.learned.crsarena_features import TURN_FEATURES, dialogue_features
from crsim.eval.learned.crsarena_model import (
    DIALOGUE_ASPECTS,
    TURN_ASPECTS,
    CrsarenaModel,
    load_model,
    predict,
    save_model,
    turn_arrays,
)
from crsim.eval.metrics.base import NotApplicable, metric_registry
from crsim.eval.scoring import score_all
from crsim.model import Dialogue, Role, Utterance
from crsim.studies.fitting.crsarena_fit import FitSettings, LabelledDialogue, fit_model, turn_labels
from crsim.studies.meta.gold import GoldSet, load_gold
from crsim.studies.meta.learned import labelled, protocol_folds
from crsim.studies.meta.predictions import Predictions
from support import QUICK_CRSARENA

runner = CliRunner()
QUICK = QUICK_CRSARENA
ASPECTS = (*TURN_ASPECTS, *DIALOGUE_ASPECTS)


@pytest.fixture(scope="module")
def gold() -> GoldSet:
    return load_gold()


@pytest.fixture(scope="module")
def small(gold: GoldSet) -> list[LabelledDialogue]:
    return [labelled(c) for c in list(gold)[:24]]


@pytest.fixture(scope="module")
def model(small: list[LabelledDialogue]) -> CrsarenaModel:
    return fit_model(small, QUICK, name="test")


# --- the protocols --------------------------------------------------------------------------------


def test_grouped_folds_never_train_on_a_test_conversation(gold: GoldSet) -> None:
    folds = protocol_folds(gold, "cv5")
    ids = [c.conv_id for c in gold]
    assert len(folds) == 5
    tested = np.concatenate([f.test for f in folds])
    assert sorted(tested.tolist()) == list(range(len(gold)))  # every conversation tested exactly once
    for fold in folds:
        train_ids = {ids[i] for i in fold.train.tolist()}
        test_ids = {ids[i] for i in fold.test.tolist()}
        assert not train_ids & test_ids
        assert len(train_ids) + len(test_ids) == len(gold)
        assert 90 <= len(test_ids) <= 95


def test_loso_holds_out_exactly_one_system(gold: GoldSet) -> None:
    folds = protocol_folds(gold, "loso")
    systems = gold.systems
    assert len(systems) == 9 and [f.name for f in folds] == systems
    conversations = list(gold)
    for fold in folds:
        test_systems = {conversations[i].crs for i in fold.test.tolist()}
        train_systems = {conversations[i].crs for i in fold.train.tolist()}
        assert test_systems == {fold.name}
        assert train_systems == set(systems) - {fold.name}
        assert len(fold.train) + len(fold.test) == len(gold)


def test_cross_validation_fits_only_on_the_other_conversations(
    gold: GoldSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    subset = GoldSet(tuple(list(gold)[:20]), gold.source)
    trained: list[set[str]] = []
    predicted: list[set[str]] = []
    real_predict = learned.predict_fold

    def spy_fit(data: Sequence[LabelledDialogue], *args: object, **kwargs: object) -> CrsarenaModel:
        trained.append({d.group for d in data})
        return fit_model(data, QUICK, name="spy")

    def spy_predict(model: CrsarenaModel, test: GoldSet) -> Predictions:
        predicted.append({c.conv_id for c in test})
        return real_predict(model, test)

    monkeypatch.setattr(learned, "fit_model", spy_fit)
    monkeypatch.setattr(learned, "predict_fold", spy_predict)
    run = learned.cross_validate(subset, "cv5")
    assert len(trained) == len(predicted) == 5
    for train_ids, test_ids in zip(trained, predicted, strict=True):
        assert not train_ids & test_ids and len(train_ids | test_ids) == 20
    assert set().union(*predicted) == {c.conv_id for c in subset}
    # every gold label of the subset got an out-of-fold value
    labels = sum(len(c.turn_labels) * 2 + len(c.dialogue_labels) for c in subset)
    assert len([v for v in run.predictions.values.values() if v is not None]) >= labels - 5


def test_inner_folds_keep_the_turns_of_a_conversation_together(small: list[LabelledDialogue]) -> None:
    from crsim.studies.fitting.cv import conversation_folds, grouped_folds

    groups = [d.group for d in small for _ in d.features.turns]
    for fold in grouped_folds(groups, conversation_folds(groups, k=3, seed=0)):
        assert not {groups[i] for i in fold.train.tolist()} & {groups[i] for i in fold.test.tolist()}


# --- the model --------------------------------------------------------------------------------------


def test_exported_heads_equal_a_primal_ridge_fit(small: list[LabelledDialogue], model: CrsarenaModel) -> None:
    """The dual (kernel) solution exported as coefficients is the ridge regression scikit-learn fits."""
    texts, dense = turn_arrays([d.features for d in small])
    labels = turn_labels(small)
    complete = ~np.isnan(labels).any(axis=1)
    design = model.turn.design(texts, dense)
    for j, aspect in enumerate(TURN_ASPECTS):
        head = model.turn.heads[aspect]
        width = design.shape[1] - len(TURN_FEATURES)
        scaled = design.toarray()
        scaled[:, :width] *= head.text_weight  # ridge sees the text block weighted
        ridge = Ridge(alpha=head.alpha).fit(scaled[complete], labels[complete, j])
        ours = design.toarray() @ np.asarray(head.coef) + head.intercept
        assert np.allclose(ours, ridge.predict(scaled), atol=1e-6)


def test_model_round_trips_through_json(
    tmp_path: Path, small: list[LabelledDialogue], model: CrsarenaModel
) -> None:
    path = tmp_path / "model.json"
    save_model(model, path)
    loaded = load_model(path)
    features = [d.features for d in small]
    assert predict(loaded, features) == predict(model, features)
    save_model(loaded, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["dialogue"]["heads"]["overall"]["coef"].pop()
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match="coefficients for") as info:
        load_model(path)
    assert (info.value.path, info.value.field) == (str(path), "dialogue")
    with pytest.raises(DataError, match=r"model\.json"):
        LearnedCrsarena(CrsarenaParams(model=str(path)))
    data = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    data["turn"]["dense_names"][0] = "mood"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match="differ from this crsim's turn features"):
        load_model(path)


def test_the_shipped_model_is_small_and_trained_on_all_conversations() -> None:
    assert CRSARENA_MODEL.stat().st_size < 5_000_000
    shipped = cached_model()
    assert shipped.training.conversations == 467 and shipped.training.turns == 2235
    assert shipped.training.labels["relevance"] == 2230 and shipped.training.labels["overall"] == 467
    assert "movie" in shipped.description
    assert set(shipped.turn.heads) == set(TURN_ASPECTS) and set(shipped.combiner.heads) == set(
        DIALOGUE_ASPECTS
    )


# --- as an evaluator --------------------------------------------------------------------------------


def test_a_dialogue_without_a_crs_utterance_is_not_applicable() -> None:
    evaluator = LearnedCrsarena()
    silent = Dialogue(id="silent", utterances=[Utterance(role=Role.USER, text="Any good thrillers?")])
    with pytest.raises(NotApplicable, match=NO_CRS_UTTERANCE) as info:
        evaluator.values(silent)
    assert "silent" in info.value.detail
    records = asyncio.run(score_all([silent], [evaluator]))
    assert [(r.metric, r.value, r.missing_reason) for r in records] == [
        ("learned_crsarena", None, NO_CRS_UTTERANCE)
    ]
    assert not dialogue_features(silent).turns


def test_values_per_turn_and_dialogue_in_range() -> None:
    dialogue = Dialogue(
        id="d",
        utterances=[
            Utterance(role=Role.CRS, text="Hi! What would you like to watch?"),
            Utterance(role=Role.USER, text="A funny movie with Jim Carrey please"),
            Utterance(role=Role.CRS, text="How about The Mask (1994)? It is a comedy with Jim Carrey."),
            Utterance(role=Role.USER, text="Great, thanks! I love that one."),
            Utterance(role=Role.CRS, text="Enjoy!"),
        ],
    )
    values = LearnedCrsarena().values(dialogue)
    dialogue_level = {v.aspect for v in values if v.turn is None}
    assert dialogue_level == set(DIALOGUE_ASPECTS)
    # the greeting and the first reply are both turn 1 and averaged into one value
    assert sorted((v.turn, v.aspect) for v in values if v.turn is not None) == [
        (t, a) for t in (1, 2) for a in sorted(TURN_ASPECTS)
    ]
    ranges = {"relevance": 3, "interestingness": 2, "understanding": 2, "efficiency": 1, "overall": 4}
    for value in values:
        assert value.value is not None and 0 <= value.value <= ranges.get(value.aspect or "", 2)
    assert metric_registry.get("learned_crsarena") is LearnedCrsarena


def test_crsim_evaluate_gives_all_seven_aspects(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    made = runner.invoke(app, ["run", "--out", str(run_dir), "--users", "2", "--json"])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["evaluate", str(run_dir), "--metrics", "learned_crsarena", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    metrics = {m for group in summary for m in group["metrics"]}
    assert metrics >= {f"learned_crsarena/{a}" for a in ASPECTS}
    scores = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text().splitlines()]
    turn_records = [s for s in scores if s["metric"] == "learned_crsarena/relevance"]
    assert turn_records and all(s["turn"] is not None and s["value"] is not None for s in turn_records)


# --- crsim meta-eval --protocol --------------------------------------------------------------------


def test_meta_eval_learned_protocol_on_a_subset() -> None:
    result = runner.invoke(
        meta_app, ["--evaluator", "learned_crsarena", "--protocol", "cv5", "--limit", "12", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["cv5"]
    assert report["result"]["evaluator"] == "learned_crsarena (grouped 5-fold CV)"
    assert report["result"]["excluded"] == 467 - 24
    cells = {(c["split"], c["aspect"]): c for c in report["result"]["cells"]}
    assert len(cells) == 14
    for cell in cells.values():
        assert cell["n"] == cell["labels"] and cell["missing"] == 0
    assert cells[("redial", "overall")]["n"] == 12
    assert "FACE" in report["baselines"]["redial"]
    assert report["best"]["redial"]["pearson"]["overall"]


def test_meta_eval_protocol_errors() -> None:
    wrong = runner.invoke(meta_app, ["--evaluator", "turns", "--protocol", "cv5"])
    assert wrong.exit_code == 2 and "only --evaluator learned_crsarena" in wrong.output
    unknown = runner.invoke(meta_app, ["--evaluator", "learned_crsarena", "--protocol", "cv10"])
    assert unknown.exit_code == 2 and "expected cv5, loso or both" in unknown.output
    ignored = runner.invoke(
        meta_app, ["--evaluator", "learned_crsarena", "--protocol", "loso", "--arg", "model=x"]
    )
    assert ignored.exit_code == 2 and "--arg" in ignored.output


def test_the_dialogue_level_chooses_among_its_own_grids(small: list[LabelledDialogue]) -> None:
    settings = FitSettings(
        alphas=(10.0,),
        text_weights=(1.0,),
        dialogue_alphas=(500.0, 50.0),
        dialogue_text_weights=(3.0,),
        inner_folds=3,
    )
    fitted = fit_model(small, settings, name="grids")
    assert {(h.alpha, h.text_weight) for h in fitted.turn.heads.values()} == {(10.0, 1.0)}
    assert {h.alpha for h in fitted.dialogue.heads.values()} <= {500.0, 50.0}
    assert {h.text_weight for h in fitted.dialogue.heads.values()} == {3.0}
    assert {h.alpha for h in fitted.combiner.heads.values()} <= {500.0, 50.0}
    assert fitted.training.settings["dialogue_alphas"] == "500.0,50.0"
