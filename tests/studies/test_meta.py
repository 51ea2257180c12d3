"""Meta-evaluation against CRSArena-Eval: gold data, FACE reproduction, correlations, ranking, CLI output."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from crsim.cli.meta_eval import meta_app
from crsim.studies.meta import (
    ASPECTS,
    GoldSet,
    Predictions,
    bradley_terry,
    correlate,
    load_baselines,
    load_gold,
    meta_evaluate,
    pairwise_wins,
    rank_systems,
    read_run_file,
)
from crsim.studies.meta.ranking import agreement

FIXTURES = Path(__file__).parents[1] / "fixtures" / "crsarena_eval"
FACE_RUN = FIXTURES / "face_run.json.gz"
runner = CliRunner()


def raw(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def gold() -> GoldSet:
    return load_gold()


# --- gold data -----------------------------------------------------------------------------------


def test_gold_splits_systems_and_labels(gold: GoldSet) -> None:
    assert len(gold) == 467
    assert len(gold.split("redial")) == 267
    assert len(gold.split("opendialkg")) == 200
    assert len(gold.systems) == 9
    assert {c.crs for c in gold.split("redial")} == {
        "barcor_redial",
        "chatgpt_redial",
        "crbcrs_redial",
        "kbrd_redial",
        "unicrs_redial",
    }
    assert sum("relevance" in t for c in gold for t in c.turn_labels.values()) == 2230
    assert sum("interestingness" in t for c in gold for t in c.turn_labels.values()) == 2235
    assert all(set(c.dialogue_labels) == set(ASPECTS[2:]) for c in gold)


def test_gold_is_the_shipped_copy_of_the_fixture(gold: GoldSet) -> None:
    data = raw(FIXTURES / "crs_arena_eval.json.gz")
    assert [c.conv_id for c in gold] == [d["conv_id"] for d in data]
    first, conversation = data[0], gold.conversations[0]
    assert conversation.dialogue_labels["overall"] == first["dial_level_aggregated"]["dialogue_overall"]
    for turn in first["dialogue"]:
        if "turn_level_aggregated" in turn:
            assert dict(conversation.turn_labels[turn["turn_ind"]]) == turn["turn_level_aggregated"]


def test_the_older_copy_of_the_data_gives_the_same_cells(gold: GoldSet) -> None:
    older = load_gold(FIXTURES / "hideaki-j" / "crs_arena_eval.json.gz")  # dialog / dialog_overall keys
    predictions = read_run_file(FACE_RUN)
    assert meta_evaluate(older, predictions, "f").cells == meta_evaluate(gold, predictions, "f").cells


def test_a_bad_gold_file_is_a_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "crs_arena_eval.json"
    bad.write_text(json.dumps([{"conv_id": "kbrd_imdb_1", "dialogue": []}]), encoding="utf-8")
    result = runner.invoke(meta_app, ["--run-file", str(FACE_RUN), "--gold", str(bad)])
    assert result.exit_code == 2
    assert (
        "record 1, field 'conv_id': expected a CRS name ending in _redial or _opendialkg"
        in result.output.replace("\n", "")
    )


def test_limit_keeps_the_first_conversations_of_each_split(gold: GoldSet) -> None:
    few = load_gold(limit_per_split=2)
    first = {c.conv_id for c in gold.split("redial")[:2] + gold.split("opendialkg")[:2]}
    assert [c.conv_id for c in few] == [c.conv_id for c in gold if c.conv_id in first]
    assert few.excluded == set(gold.by_id) - first


def test_evaluators_never_see_the_labels(gold: GoldSet) -> None:
    for conversation in gold:
        assert "human" not in conversation.dialogue.metadata
        assert all("human" not in u.annotations for u in conversation.dialogue.utterances)


def test_turn_mapping_is_the_t_th_crs_reply(gold: GoldSet) -> None:
    for conversation in gold:
        assert all(t == (ind + 1) // 2 and ind % 2 == 1 for ind, t in conversation.turn_of.items())
        assert conversation.turn_inds(1) == [1]


# --- FACE reproduction -------------------------------------------------------------------------------


def test_face_run_reproduces_every_published_face_cell(gold: GoldSet) -> None:
    result = meta_evaluate(gold, read_run_file(FACE_RUN), "FACE (run file)")
    published = load_baselines()
    worst = 0.0
    for split in ("redial", "opendialkg"):
        for aspect in ASPECTS:
            cell = result.cell(split, aspect)
            face = published[split]["FACE"][aspect]
            assert cell.pearson is not None and cell.spearman is not None
            assert face.pearson is not None and face.spearman is not None
            worst = max(worst, abs(cell.pearson - face.pearson), abs(cell.spearman - face.spearman))
    assert worst < 1e-3


def test_face_run_missing_counts_match_the_raw_files() -> None:
    """The labels FACE did not predict, counted straight from the two files, per split and aspect."""
    gold_data = raw(FIXTURES / "crs_arena_eval.json.gz")
    run = {r["conv_id"]: r for r in raw(FACE_RUN)}
    expected: dict[tuple[str, str], int] = {}
    for record in gold_data:
        split = "redial" if "_redial_" in record["conv_id"] else "opendialkg"
        predicted = run[record["conv_id"]]
        turn_preds = {t["turn_ind"]: t["turn_level_pred"] for t in predicted["turns"]}
        for turn in record["dialogue"]:
            for aspect in turn.get("turn_level_aggregated", {}):
                if aspect not in turn_preds.get(turn["turn_ind"], {}):
                    expected[(split, aspect)] = expected.get((split, aspect), 0) + 1
        if not predicted["dial_level_pred"]:
            for aspect in ASPECTS[2:]:
                expected[(split, aspect)] = expected.get((split, aspect), 0) + 1
    result = meta_evaluate(load_gold(), read_run_file(FACE_RUN), "face")
    for cell in result.cells:
        assert cell.missing == expected.get((cell.split, cell.aspect), 0)
        assert cell.n + cell.missing == cell.labels
        assert cell.missing_reasons == ({"no prediction": cell.missing} if cell.missing else {})
    assert result.cell("redial", "relevance").missing == 10
    assert result.cell("opendialkg", "overall").missing == 1
    assert result.cell("opendialkg", "overall").n == 199
    assert result.unknown_conv_ids == []


# --- correlations ------------------------------------------------------------------------------------


def test_correlation_on_a_tiny_case_by_hand_and_by_scipy() -> None:
    # centred x = (-1, 0, 1), y = (-1, 1, 0): r = 1 / (√2 · √2) = 0.5; the values are their own ranks
    tiny = correlate([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    assert tiny.n == 3 and tiny.pearson == pytest.approx(0.5) and tiny.spearman == pytest.approx(0.5)
    pred = [0.2, 1.5, 1.5, 2.0, 3.1, 0.9]
    gold = [0, 1, 2, 2, 3, 1]
    ours = correlate(pred, gold)
    assert ours.pearson == pytest.approx(stats.pearsonr(pred, gold)[0])
    assert ours.spearman == pytest.approx(stats.spearmanr(pred, gold)[0])
    # ties get average ranks: ranks of pred are 1, 3.5, 3.5, 5, 6, 2
    ranks_pred = np.array([1, 3.5, 3.5, 5, 6, 2])
    ranks_gold = np.array([1, 2.5, 4.5, 4.5, 6, 2.5])
    assert ours.spearman == pytest.approx(np.corrcoef(ranks_pred, ranks_gold)[0, 1])


def test_undefined_correlations_are_none_with_a_reason() -> None:
    constant = correlate([2.0, 2.0, 2.0], [0.0, 1.0, 2.0])
    assert (constant.pearson, constant.spearman, constant.undefined) == (None, None, "constant predictions")
    assert correlate([1.0], [1.0]).undefined == "fewer than two pairs"
    assert correlate([], []).n == 0
    assert correlate([1.0, 2.0], [1.0, 1.0]).undefined == "constant gold labels"


def test_constant_predictions_are_undefined_not_zero(gold: GoldSet) -> None:
    predictions = Predictions("constant")
    for conversation in gold:
        predictions.add((conversation.conv_id, None, "overall"), 2.0)
    cell = meta_evaluate(gold, predictions, "constant").cell("redial", "overall")
    assert (cell.n, cell.pearson, cell.spearman, cell.undefined) == (267, None, None, "constant predictions")


def test_missing_predictions_are_counted_per_cell_with_reasons(gold: GoldSet) -> None:
    predictions = Predictions("partial")
    redial = gold.split("redial")
    for index, conversation in enumerate(redial):
        key = (conversation.conv_id, None, "overall")
        if index % 3 == 0:
            predictions.add(key, None, "error: LLMOutputError")
        elif index % 3 == 1:
            predictions.add(key, float(conversation.dialogue_labels["overall"]) + index % 2)
    result = meta_evaluate(gold, predictions, "partial")
    cell = result.cell("redial", "overall")
    errors = len(range(0, 267, 3))
    present = len(range(1, 267, 3))
    assert (cell.labels, cell.n, cell.missing) == (267, present, 267 - present)
    assert cell.missing_reasons == {"error: LLMOutputError": errors, "no prediction": 267 - present - errors}
    assert result.cell("opendialkg", "overall").missing == 200
    assert result.cell("redial", "relevance").missing == result.cell("redial", "relevance").labels


# --- ranking -----------------------------------------------------------------------------------------


def test_pairwise_wins_count_ties_as_halves() -> None:
    wins = pairwise_wins([[1.0, 2.0], [2.0], []])
    assert wins.tolist() == [[0.0, 0.5, 0.0], [1.5, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_bradley_terry_recovers_known_strengths() -> None:
    truth = np.array([0.5, 0.3, 0.15, 0.05])
    games = 1000.0
    wins = games * truth[:, None] / (truth[:, None] + truth[None, :])
    np.fill_diagonal(wins, 0.0)
    fitted = bradley_terry(wins)
    assert fitted == pytest.approx(truth, abs=1e-6)
    assert list(np.argsort(-fitted)) == [0, 1, 2, 3]


def test_bradley_terry_on_dialogue_scores_orders_systems() -> None:
    rng = np.random.default_rng(7)
    scores = [rng.normal(mean, 1.0, size=40) for mean in (2.0, 1.0, 0.0)]
    fitted = bradley_terry(pairwise_wins(scores))
    assert list(np.argsort(-fitted)) == [0, 1, 2]
    assert fitted.sum() == pytest.approx(1.0)
    never_wins = bradley_terry(pairwise_wins([[1.0, 2.0], [0.0]]))
    assert never_wins.tolist() == pytest.approx([1.0, 0.0])


def test_agreement_of_orderings() -> None:
    assert agreement([3, 2, 1], [30, 20, 10]).kendall == pytest.approx(1.0)
    reversed_ = agreement([3, 2, 1], [1, 2, 3])
    assert (reversed_.kendall, reversed_.spearman) == (pytest.approx(-1.0), pytest.approx(-1.0))
    assert agreement([1], [1]).undefined == "fewer than two systems"


def gold_as_predictions(gold: GoldSet) -> Predictions:
    predictions = Predictions("gold")
    for conversation in gold:
        for aspect, label in conversation.dialogue_labels.items():
            predictions.add((conversation.conv_id, None, aspect), float(label))
        for ind, labels in conversation.turn_labels.items():
            for aspect, label in labels.items():
                predictions.add((conversation.conv_id, ind, aspect), float(label))
    return predictions


def test_an_evaluator_equal_to_the_humans_ranks_systems_identically(gold: GoldSet) -> None:
    predictions = gold_as_predictions(gold)
    for aspect in ("overall", "relevance"):
        rankings = rank_systems(gold, predictions, aspect)
        assert [r.scope for r in rankings] == ["redial", "opendialkg", "all"]
        for ranking in rankings:
            assert ranking.mean.kendall == pytest.approx(1.0)
            assert ranking.mean.spearman == pytest.approx(1.0)
            assert ranking.bradley_terry.kendall == pytest.approx(1.0)
            assert ranking.missing == 0
        assert len(rankings[2].systems) == 9
        # one conversation has a single rated turn that carries only interestingness
        assert rankings[2].dialogues == (467 if aspect == "overall" else 466)
    result = meta_evaluate(gold, predictions, "gold")
    assert all(cell.pearson == pytest.approx(1.0) and cell.missing == 0 for cell in result.cells)


def test_ranking_by_mean_matches_the_human_means(gold: GoldSet) -> None:
    ranking = rank_systems(gold, gold_as_predictions(gold))[0]
    chatgpt = next(r for r in ranking.systems if r.system == "chatgpt_redial")
    labels = [c.dialogue_labels["overall"] for c in gold.split("redial") if c.crs == "chatgpt_redial"]
    assert chatgpt.human_mean == pytest.approx(np.mean(labels))
    assert chatgpt.dialogues == len(labels) == 52
    assert chatgpt.human_rank == 1


# --- command line ------------------------------------------------------------------------------------


def test_cli_json_reports_face_cells_baselines_and_best() -> None:
    result = runner.invoke(meta_app, ["--run-file", str(FACE_RUN), "--json", "--rank"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    cells = {(c["split"], c["aspect"]): c for c in report["result"]["cells"]}
    assert cells[("opendialkg", "overall")]["pearson"] == pytest.approx(0.766, abs=1e-3)
    assert cells[("redial", "relevance")]["n"] == 1286
    assert report["result"]["evaluator"] == "face_run"
    assert report["baselines"]["redial"]["G-Eval"]["overall"]["pearson"] == 0.577
    assert report["best"]["redial"]["pearson"]["overall"] == ["FACE"]  # 0.712 published, 0.7116 here
    assert report["best"]["redial"]["pearson"]["relevance"] == ["face_run"]
    assert [r["scope"] for r in report["ranking"]] == ["redial", "opendialkg", "all"]


def test_cli_markdown_has_the_tables_and_marks_the_best() -> None:
    result = runner.invoke(meta_app, ["--run-file", str(FACE_RUN), "--markdown", "--name", "FACE"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "### ReDial (267 conversations): Pearson r" in text
    assert "| evaluator | Relevance | Interestingness | Understanding |" in text
    ours = next(line for line in text.splitlines() if line.startswith("| **FACE (this run)**"))
    assert "**0.650**" in ours  # best understanding r on ReDial
    geval = next(line for line in text.splitlines() if line.startswith("| G-Eval |"))
    assert "**0.488**" in geval  # G-Eval's efficiency r beats FACE's 0.484
    assert "| N | 1286 | 1289 | 267 |" in text
    assert "35 gold label(s) missing a prediction: no prediction" in text


def test_cli_terminal_table_and_notes() -> None:
    result = runner.invoke(meta_app, ["--run-file", str(FACE_RUN), "--limit", "20"])
    assert result.exit_code == 0, result.output
    assert "OpenDialKG (20 conversations): Spearman ρ" in result.output
    assert "face_run" in result.output and "missing" in result.output
    assert "a subset: 427 gold conversation(s) left out" in result.output
    assert "not in the gold data" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --run-file FILE or --evaluator NAME"),
        (["--run-file", "x.json", "--evaluator", "turns"], "give exactly one of"),
        (["--run-file", str(FACE_RUN), "--aspect", "charm"], "--aspect: unknown aspect 'charm'"),
        (["--run-file", str(FACE_RUN), "--json", "--markdown"], "choose one output format"),
        (["--run-file", "nowhere.json"], "nowhere.json: not found"),
        (["--evaluator", "no_such_metric"], "unknown metric 'no_such_metric'"),
    ],
)
def test_cli_user_errors(args: list[str], message: str) -> None:
    result = runner.invoke(meta_app, args)
    assert result.exit_code == 2
    assert message in result.output.replace("\n", "")
