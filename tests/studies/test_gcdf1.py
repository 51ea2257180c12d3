"""GCDF1 on the reference evaluator's data: all 128 dialogues match its scores, plus the pieces
(multiset F1, similarity, canonical values, SGD loading with located errors)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from crsim.core.errors import ConfigError, DataError
from crsim.studies.gcdf1 import (
    CanonicalMap,
    CorpusResult,
    Gcdf1Scorer,
    ValueCanonicaliser,
    corpus_means,
    load_config,
    load_sgd_files,
    parse_sgd_dialogue,
    prf,
    score_files,
)
from crsim.studies.gcdf1.canonical import minimum_score, similarity, token_sort_key
from crsim.studies.gcdf1.config import parse_config
from crsim.studies.gcdf1.sgd import SgdFormatError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "gcdf1"
FILES = [FIXTURES / f"dialogues_00{i}.json.gz" for i in range(1, 5)]


def _json(name: str) -> Any:
    with gzip.open(FIXTURES / name, "rt", encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def cmap() -> CanonicalMap:
    return CanonicalMap.load(FIXTURES / "multiwoz21_canonical_map.json.gz")


@pytest.fixture(scope="module")
def config() -> Any:
    return load_config(FIXTURES / "multiwoz_user_evaluator.yaml")


@pytest.fixture(scope="module")
def result(cmap: CanonicalMap, config: Any) -> CorpusResult:
    return score_files(FILES, config, cmap)


def assert_same_scores(got: dict[str, Any], expected: dict[str, Any]) -> None:
    """Same keys and "NA"s, numbers within 1e-6 (an assertion names the first difference)."""
    assert set(got) == set(expected)
    for metric, value in expected.items():
        if isinstance(value, str):
            assert got[metric] == value, metric
        else:
            assert isinstance(got[metric], dict), metric
            assert set(got[metric]) == set(value), metric
            for domain, number in value.items():
                assert got[metric][domain] == pytest.approx(number, abs=1e-6), (metric, domain)


def test_all_128_dialogues_match_the_reference_scores(result: CorpusResult) -> None:
    expected = _json("expected_per_dialogue.json.gz")
    assert not result.issues and not result.failures
    got = result.per_dialogue()
    assert len(expected) == 128 and set(got) == set(expected)
    mismatched = []
    for dialogue_id, scores in expected.items():
        try:
            assert_same_scores(got[dialogue_id], scores)
        except AssertionError:
            mismatched.append(dialogue_id)
    assert mismatched == [], f"{len(mismatched)} of 128 differ: {mismatched[:5]}"


def test_corpus_means_average_per_dialogue_values_over_the_goal_domains(result: CorpusResult) -> None:
    expected = _json("expected_per_dialogue.json.gz")
    means = corpus_means(result.scores)
    goals = {s.dialogue_id: set(s.goal_domains) for s in result.scores}
    for key in ("igcd_f1", "rgcd_precision", "rcgd_recall"):
        values = [
            v[key]["hotel"] for d, v in expected.items() if isinstance(v[key], dict) and "hotel" in v[key]
        ]
        assert all(
            "hotel" in goals[d] for d, v in expected.items() if isinstance(v[key], dict) and "hotel" in v[key]
        )
        assert means[key]["hotel"].n == len(values)
        assert means[key]["hotel"].value == pytest.approx(sum(values) / len(values))
        combined = [v[key]["combined"] for v in expected.values() if isinstance(v[key], dict)]
        assert means[key]["combined"].value == pytest.approx(sum(combined) / len(combined))
    # corpus F1 is the mean of per-dialogue F1, not the harmonic mean of the corpus P and R
    i = means["igcd_f1"]["combined"].value
    p, r = means["igcd_precision"]["combined"].value, means["igcd_recall"]["combined"].value
    assert i != pytest.approx(2 * p * r / (p + r))


def test_sample_conversation_is_scored_without_errors(cmap: CanonicalMap, config: Any) -> None:
    scorer = Gcdf1Scorer(config, cmap)
    for raw in _json("sample_conversation.json.gz"):
        scores = scorer.score(parse_sgd_dialogue(raw))
        assert "combined" in scores.inform
        assert 0.0 <= scores.inform["combined"].f1 <= 1.0


# -- multiset F1 --------------------------------------------------------------------------------


def test_prf_counts_the_multiset_intersection() -> None:
    scores = prf(["a", "a", "b"], ["a", "a", "a", "c"])
    assert scores.precision == pytest.approx(2 / 4)
    assert scores.recall == pytest.approx(2 / 3)
    assert scores.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_prf_edge_cases() -> None:
    assert prf(["a"], []) == prf(["a"], [])  # deterministic
    empty_hyp = prf(["a"], [])
    assert (empty_hyp.precision, empty_hyp.recall, empty_hyp.f1) == (1.0, 0.0, 0.0)
    empty_ref = prf([], ["a"])
    assert (empty_ref.precision, empty_ref.recall, empty_ref.f1) == (0.0, 1.0, 0.0)
    none = prf(["a"], ["b"])
    assert (none.precision, none.recall, none.f1) == (0.0, 0.0, 0.0)


# -- similarity and canonical values ------------------------------------------------------------


# Scores of fuzzywuzzy 0.18 `token_sort_ratio` (python-Levenshtein), the reference's matcher.
@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        ("centre of town", "town centre", 88),
        ("center", "centre", 83),
        ("the restaurant", "the j restaurant", 93),
        ("Café Jello", "cafe jello", 95),
        ("moderately priced", "moderate", 64),
        ("4:45", "4:45 pm", 73),
        ("2:00", "$2,000", 89),
        ("", "abc", 0),
        ("!!", "??", 100),
        ("guest house", "guesthouse", 95),
        # exactly 2.5 before rounding: Python rounds half to even, as python-Levenshtein 0.12 did
        ("14:30", "wandlebury country park and sheep 's green and lammas land park fen causeway", 2),
    ],
)
def test_similarity_is_fuzzywuzzy_token_sort_ratio(a: str, b: str, score: int) -> None:
    assert similarity(a, b) == score


def test_token_sort_key_and_threshold() -> None:
    assert token_sort_key("Town, Centre!") == "centre town"
    assert minimum_score(0.9) == 90
    assert minimum_score(0.895) == 90
    assert minimum_score(1.0) == 100


def test_canonicaliser_uses_goal_values_first_then_the_whole_map(cmap: CanonicalMap) -> None:
    canon = ValueCanonicaliser(cmap, 0.9, {"restaurant": frozenset({"the restaurant"})})
    assert canon.canonical("restaurant", "area", "centre", ()) is None  # already canonical
    assert canon.canonical("restaurant", "area", "center", ("centre",)) == "centre"
    assert canon.canonical("restaurant", "area", "center", ()) == "centre"  # found in the full map
    assert canon.canonical("restaurant", "name", "the restaurant", ()) is None  # co-reference kept
    assert canon.canonical("restaurant", "area", "nowhere in particular", ()) is None
    assert canon.canonical("restaurant", "nosuchslot", "x", ()) is None


def test_canonicaliser_without_a_map_matches_goal_values_only() -> None:
    canon = ValueCanonicaliser(None, 0.9)
    assert canon.canonical("hotel", "name", "acorn guesthouse", ("acorn guest house",)) == "acorn guest house"
    assert canon.canonical("hotel", "name", "acorn guesthouse", ()) is None
    strict = ValueCanonicaliser(None, 1.0)
    assert strict.canonical("hotel", "name", "acorn guesthouse", ("acorn guest house",)) is None


def test_canonical_map_with_a_bad_leaf_is_rejected_with_its_location() -> None:
    with pytest.raises(DataError, match=r"field 'area\.centre\[1\]'"):
        CanonicalMap({"area": {"centre": ["centre", 3]}})


# -- configuration ------------------------------------------------------------------------------


def test_config_defaults_equal_the_published_file(config: Any) -> None:
    assert parse_config({}) == config


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"igcd_f1\.repetitions\.count_fpp"):
        parse_config({"igcd_f1": {"repetitions": {"count_fpp": True}}})
    bad = tmp_path / "bad.yaml"
    bad.write_text("igcd_f1: [1, 2", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml"):
        load_config(bad)


# -- SGD loading --------------------------------------------------------------------------------


def _dialogue(dialogue_id: str = "D1") -> dict[str, Any]:
    return {
        "dialogue_id": dialogue_id,
        "goal": {"restaurant": {"info": {"food": "indian"}}},
        "turns": [
            {
                "speaker": "USER",
                "turn_id": "0",
                "utterance": "indian food please",
                "frames": [
                    {
                        "service": "restaurant",
                        "actions": [{"act": "Restaurant-Inform", "slot": "food", "values": ["indian"]}],
                        "state": {"requested_slots": []},
                    }
                ],
            },
            {"speaker": "SYSTEM", "turn_id": "1", "utterance": "ok", "frames": [], "nlu": {"frames": []}},
        ],
    }


def test_a_malformed_dialogue_names_file_dialogue_and_field_and_the_rest_is_scored(tmp_path: Path) -> None:
    bad = _dialogue("BAD")
    bad["turns"][0]["frames"][0]["actions"][0]["values"] = ["indian", 7]
    swapped = _dialogue("SWAPPED")
    swapped["turns"][0]["speaker"] = "SYSTEM"
    path = tmp_path / "dialogues.json"
    path.write_text(json.dumps([_dialogue("D1"), bad, swapped, _dialogue("D1")]), encoding="utf-8")
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    result = score_files([path, broken, tmp_path / "missing.json"])
    assert [s.dialogue_id for s in result.scores] == ["D1"]
    problems = result.problems()
    assert len(problems) == 5
    assert problems[0].startswith(
        f"{path}, record 1, dialogue 'BAD', field 'turns[0].frames[0].actions[0].values[1]'"
    )
    assert "expected a string, got int" in problems[0]
    assert "dialogue 'SWAPPED', field 'turns[0].speaker'" in problems[1]
    assert "record 3, dialogue 'D1'" in problems[2] and "first dialogue with it is kept" in problems[2]
    assert str(broken) in problems[3] and "not valid JSON" in problems[3]
    assert "missing.json" in problems[4] and "cannot read" in problems[4]
    assert result.scores[0].inform["combined"].f1 == 1.0


def test_parse_reports_the_first_bad_field() -> None:
    raw = _dialogue()
    raw["goal"]["restaurant"]["info"]["food"] = ["indian"]
    with pytest.raises(SgdFormatError) as info:
        parse_sgd_dialogue(raw)
    assert info.value.field == "goal.restaurant.info.food"
    raw = _dialogue()
    raw["turns"][1]["turn_id"] = "5"
    with pytest.raises(SgdFormatError, match=r"turns\[1\]\.turn_id"):
        parse_sgd_dialogue(raw)


def test_nlu_annotations_keep_the_difference_between_missing_and_empty() -> None:
    raw = _dialogue()
    assert parse_sgd_dialogue(raw).turns[1].nlu == ()
    raw["turns"][1]["nlu"] = {}
    assert parse_sgd_dialogue(raw).turns[1].nlu is None
    del raw["turns"][1]["nlu"]
    assert parse_sgd_dialogue(raw).turns[1].nlu is None


def test_loading_keeps_file_order_and_drops_empty_frames() -> None:
    loaded = load_sgd_files(FILES[:1])
    assert len(loaded.dialogues) == 32 and not loaded.issues
    first = loaded.dialogues[0]
    assert first.dialogue_id == "PMUL3875.json"
    assert [f.service for f in first.turns[0].frames] == ["restaurant"]  # 7 empty frames left out


def test_the_fast_frame_reader_reads_every_shipped_frame_as_the_checked_reader_does() -> None:
    """The readers' fast paths (sgd.py) must return exactly what the field-by-field checks return."""
    from crsim.studies.gcdf1.sgd import _checked_frame, _frame

    frames = 0
    for path in FILES[:2]:
        for dialogue in _json(path.name):
            for index, turn in enumerate(dialogue["turns"]):
                raws = [(f, index % 2 == 0) for f in turn.get("frames") or []]
                raws += [(f, False) for f in (turn.get("nlu") or {}).get("frames") or []]
                for raw, user in raws:
                    assert _frame(raw, user) == _checked_frame(raw, user)
                    frames += 1
    assert frames > 1000


_FRAME = {"service": "hotel", "actions": [{"act": "Hotel-Inform", "slot": "area", "values": ["north"]}]}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda f: f.update(service=3), "turns[0].frames[1].service", "service name (string), got int"),
        (lambda f: f.update(actions="inform"), "turns[0].frames[1].actions", "a list of actions, got str"),
        (lambda f: f["actions"].append("Inform"), "turns[0].frames[1].actions[1]", "object, got str"),
        (lambda f: f["actions"][0].update(act=None), "turns[0].frames[1].actions[0].act", "got null"),
        (lambda f: f["actions"][0].update(slot=["a"]), "turns[0].frames[1].actions[0].slot", "got list"),
        (lambda f: f["actions"][0].update(values="north"), "turns[0].frames[1].actions[0].values", "got str"),
        (lambda f: f["actions"][0].update(values=["n", 1]), "turns[0].frames[1].actions[0].values[1]", "int"),
        (lambda f: f.update(state=[]), "turns[0].frames[1].state", "expected an object, got list"),
        (
            lambda f: f.update(state={"requested_slots": ["area", None]}),
            "turns[0].frames[1].state.requested_slots[1]",
            "expected a string, got null",
        ),
        (  # two faults in one frame: the first in reading order (actions before state) is named
            lambda f: (f.update(state=[]), f["actions"][0].update(act=1)),
            "turns[0].frames[1].actions[0].act",
            "got int",
        ),
    ],
)
def test_a_bad_field_in_a_later_frame_is_located_past_the_fast_path(
    change: Any, field: str, message: str
) -> None:
    raw = _dialogue()
    frame = json.loads(json.dumps(_FRAME))
    change(frame)
    raw["turns"][0]["frames"].append(frame)
    with pytest.raises(SgdFormatError) as info:
        parse_sgd_dialogue(raw)
    assert info.value.field == field
    assert message in info.value.message


def test_a_bad_nlu_frame_is_located() -> None:
    raw = _dialogue()
    raw["turns"][1]["nlu"] = {"frames": [dict(_FRAME), {"service": "hotel", "actions": [7]}]}
    with pytest.raises(SgdFormatError) as info:
        parse_sgd_dialogue(raw)
    assert info.value.field == "turns[1].nlu.frames[1].actions[0]"


def test_equal_actions_are_read_into_one_shared_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """Actions are immutable and repeat (12,323 actions, 1,046 distinct in the reference's dialogues):
    equal ones share an object; the memo is emptied when it reaches its bound."""
    from crsim.studies.gcdf1 import sgd

    first, second = parse_sgd_dialogue(_dialogue("A")), parse_sgd_dialogue(_dialogue("B"))
    a, b = first.turns[0].frames[0].actions[0], second.turns[0].frames[0].actions[0]
    assert a is b and a.values == ("indian",) and a.slot == "food"
    monkeypatch.setattr(sgd, "_MAX_ACTIONS", len(sgd._ACTIONS))
    other = _dialogue("C")
    other["turns"][0]["frames"][0]["actions"][0]["values"] = ["thai"]
    parse_sgd_dialogue(other)
    assert len(sgd._ACTIONS) == 1  # full: emptied, then the new action remembered
