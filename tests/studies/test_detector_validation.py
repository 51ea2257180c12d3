"""`crsim.studies.behaviour.validation` on a tiny hand-made labelled set (a unit fixture written for
these tests, not the real set in tests/fixtures/behaviour_labels): agreement, Cohen's kappa, the gold
label with and without adjudication, and the rules' precision and recall, against numbers computed
by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import DataError
from crsim.model.dialogue import Dialogue, Role, Termination, TerminationReason, Utterance
from crsim.model.user import InformationNeed
from crsim.studies.behaviour.validation import (
    BEHAVIOURS,
    BehaviourCheck,
    check,
    cohen_kappa,
    validate_detectors,
)

HEAT, GUMP, GROUNDHOG = "6", "356", "1265"  # Heat (1995), Forrest Gump (1994), Groundhog Day (1993)


def _dialogue(did: str, turns: list[tuple[str, str, list[str]]]) -> Dialogue:
    return Dialogue(
        id=did,
        utterances=[Utterance(role=Role(r), text=t, recommended_items=items) for r, t, items in turns],
        crs_id="crs",
        simulator_id="sim",
        information_need=InformationNeed(constraints={"genre": "comedy"}, requests=[], targets=[GUMP]),
        termination=Termination(reason=TerminationReason.USER_ENDED),
        metadata={"domain": "movies"},
    )


#: The unit fixture: three movie dialogues. d1's user speaks as the recommender at message 1; d2's
#: user writes a speaker label at message 0 and the CRS recommends Heat at message 1 without naming
#: it; d3 is clean.
DIALOGUES = [
    _dialogue(
        "d1",
        [
            ("crs", "Hi! What would you like to watch?", []),
            ("user", "I'd recommend you watch a comedy tonight.", []),
            ("crs", "How about Forrest Gump (1994)?", [GUMP]),
            ("user", "Thanks, bye.", []),
        ],
    ),
    _dialogue(
        "d2",
        [
            ("user", "User: I want a comedy.", []),
            ("crs", "You might like this one.", [HEAT]),
            ("user", "Okay, thanks.", []),
        ],
    ),
    _dialogue(
        "d3",
        [
            ("user", "Hi, a comedy please.", []),
            ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]),
            ("user", "Great, thanks!", []),
        ],
    ),
]


def _labels(present: dict[tuple[str, str], list[int] | bool]) -> list[dict[str, object]]:
    """Every behaviour of every dialogue: absent unless `present` names it (message indices for a
    message-level behaviour, True for a dialogue-level one)."""
    lines: list[dict[str, object]] = []
    for d in DIALOGUES:
        for name in BEHAVIOURS:
            found = present.get((d.id, name), False)
            messages = found if isinstance(found, list) else []
            lines.append({"dialogue": d.id, "behaviour": name, "messages": messages, "present": bool(found)})
    return lines


def _write(path: Path, lines: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    _write(tmp_path / "dialogues.jsonl", [d.model_dump(mode="json") for d in DIALOGUES])
    # Reader A: role flips at d1:1 and d2:0, a contradicting acceptance in d2; reader B: a role flip at
    # d1:1 only, a contradicting acceptance in d3. Both: meta text at d2:0, d2:1 not naming its item.
    _write(
        tmp_path / "labels-reader-a.jsonl",
        _labels(
            {
                ("d1", "role_flip"): [1],
                ("d2", "role_flip"): [0],
                ("d2", "meta_text"): [0],
                ("d2", "text_misses_item"): [1],
                ("d2", "contradicting_acceptance"): True,
            }
        ),
    )
    _write(
        tmp_path / "labels-reader-b.jsonl",
        _labels(
            {
                ("d1", "role_flip"): [1],
                ("d2", "meta_text"): [0],
                ("d2", "text_misses_item"): [1],
                ("d3", "contradicting_acceptance"): True,
            }
        ),
    )
    return tmp_path


@pytest.fixture(autouse=True)
def _one_positive_validates(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """The unit fixture has one or two positives per behaviour: let one validate a rule there (the
    minimum itself is tested by hand)."""
    if request.node.name != "test_precision_recall_and_status_by_hand":
        monkeypatch.setattr("crsim.studies.behaviour.validation.MIN_POSITIVES", 1)


def _by_name(folder: Path) -> dict[str, BehaviourCheck]:
    return {c.behaviour: c for c in validate_detectors(folder).checks}


def test_kappa_by_hand() -> None:
    # po = 3/4; p(A) = 1/2, p(B) = 1/4; chance = 1/2 * 1/4 + 1/2 * 3/4 = 1/2; kappa = (3/4 - 1/2) / (1/2).
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == pytest.approx(0.5)
    assert cohen_kappa([False, False], [False, False]) is None  # chance agreement 1: undefined


def test_precision_recall_and_status_by_hand() -> None:
    units = [("d", i) for i in range(10)]
    gold_positive = {("d", i) for i in range(5)}
    detected = {("d", 0), ("d", 1), ("d", 2), ("d", 3), ("d", 7)}  # 4 true, 1 false positive
    found = check(BEHAVIOURS["role_flip"], units, gold_positive, gold_positive, None, set(), detected)
    assert (found.precision.k, found.precision.n) == (4, 5)  # type: ignore[union-attr]
    assert (found.recall.k, found.recall.n) == (4, 5)  # type: ignore[union-attr]
    assert found.kappa == pytest.approx(1.0)
    assert found.status == "experimental"  # precision 0.8 < 0.9
    perfect = check(BEHAVIOURS["role_flip"], units, gold_positive, gold_positive, None, set(), gold_positive)
    assert perfect.status == "experimental"  # 5 of 5 found, but fewer than MIN_POSITIVES = 10 positives
    assert perfect.precision is not None and perfect.precision.n == 5
    many = [("d", i) for i in range(30)]
    ten = set(many[:10])
    assert check(BEHAVIOURS["role_flip"], many, ten, ten, None, set(), ten).status == "validated"
    # 1 of 1: Wilson's lower bound (1 + z^2/2 - z * sqrt(z^2/4)) / (1 + z^2) = 1 / (1 + z^2) = 0.20654.
    one = check(BEHAVIOURS["role_flip"], units[:1], {units[0]}, {units[0]}, None, set(), {units[0]})
    assert one.precision is not None and one.precision.ci_low == pytest.approx(0.20654, abs=1e-4)


def test_agreement_gold_and_rules_on_the_unit_fixture(labelled: Path) -> None:
    checks = _by_name(labelled)
    flip = checks["role_flip"]
    # Units: the 6 user messages. A marks d1:1, d2:0; B marks d1:1: agreement 5/6; p(A) = 2/6,
    # p(B) = 1/6, chance = 2/36 + 20/36, kappa = (30/36 - 22/36) / (14/36) = 8/14.
    assert flip.units == 6 and flip.agreement == pytest.approx(5 / 6)
    assert flip.kappa == pytest.approx(8 / 14)
    # The disagreement at d2:0 has no adjudication: left out; gold 1 positive of 5; the rule flags
    # d1:1 ("I'd recommend"): precision 1/1, recall 1/1.
    assert (flip.disagreements, flip.excluded, flip.gold_units, flip.gold_positive) == (1, 1, 5, 1)
    assert (flip.precision.k, flip.precision.n, flip.recall.k, flip.recall.n) == (1, 1, 1, 1)  # type: ignore[union-attr]
    assert flip.status == "validated"
    meta = checks["meta_text"]  # both mark d2:0 ("User:"); the rule finds it
    assert meta.kappa == pytest.approx(1.0) and meta.true_positive == 1 and meta.detected == 1
    misses = checks["text_misses_item"]  # units: the 4 CRS messages; the rule misses no naming
    assert misses.units == 4 and misses.gold_positive == 1 and misses.true_positive == 1
    assert misses.precision.n == 1  # type: ignore[union-attr]  # d1:2 and d3:1 name their items
    accept = checks["contradicting_acceptance"]  # dialogue level: A says d2, B says d3
    assert accept.units == 3 and accept.agreement == pytest.approx(1 / 3) and accept.excluded == 2
    seeker = checks["crs_role_flip"]  # a rule exists: no CRS message of the fixture speaks as the seeker
    assert seeker.status != "no rule" and seeker.gold_positive == 0 and seeker.detected == 0


def test_a_behaviour_without_a_rule_gets_agreement_only(
    labelled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crsim.studies.behaviour import validation

    unruled = validation.Behaviour("crs_role_flip", None, validation.Role.CRS)
    monkeypatch.setitem(validation.BEHAVIOURS, "crs_role_flip", unruled)
    check = _by_name(labelled)["crs_role_flip"]
    assert check.status == "no rule" and check.precision is None and check.agreement is not None


def test_adjudication_settles_disagreements(labelled: Path) -> None:
    _write(
        labelled / "adjudicated.jsonl",
        [
            {"dialogue": "d2", "behaviour": "role_flip", "messages": [0], "present": True},
            {"dialogue": "d2", "behaviour": "contradicting_acceptance", "messages": [], "present": False},
        ],
    )
    checks = _by_name(labelled)
    flip = checks["role_flip"]
    # d2:0 is now a gold role flip the rule does not find ("User: I want a comedy."): recall 1/2.
    assert (flip.adjudicated, flip.excluded, flip.gold_units, flip.gold_positive) == (1, 0, 6, 2)
    assert (flip.recall.k, flip.recall.n) == (1, 2)  # type: ignore[union-attr]
    assert flip.status == "experimental"
    accept = checks["contradicting_acceptance"]  # d2 settled (absent), d3 still excluded
    assert (accept.adjudicated, accept.excluded, accept.gold_units) == (1, 1, 2)


def test_a_missing_or_wrong_label_names_the_file_and_line(labelled: Path) -> None:
    lines = (labelled / "labels-reader-b.jsonl").read_text().splitlines()
    (labelled / "labels-reader-b.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(DataError, match=r"labels-reader-b\.jsonl.*have no label"):
        validate_detectors(labelled)
    bad = {"dialogue": "d1", "behaviour": "role_flip", "messages": [0], "present": True}  # a CRS message
    _write(labelled / "labels-reader-b.jsonl", [bad])
    with pytest.raises(DataError, match="line 1: messages: 0 is a crs message"):
        validate_detectors(labelled)


def test_cli_prints_and_writes_csv(labelled: Path, tmp_path: Path) -> None:
    out = tmp_path / "checks.csv"
    result = CliRunner().invoke(
        app, ["validate", "detectors", str(labelled), "--out", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "role_flip" in result.output and "validated" in result.output
    header, *rows = out.read_text().splitlines()
    assert header.startswith("behaviour,rule,unit") and len(rows) == len(BEHAVIOURS)


def test_the_report_marks_each_rule_as_the_labelled_set_measures_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`MEASURES[...].status` (what `crsim analyze behaviour` prints) is the standing the shipped
    labelled set gives each rule: a rule change that moves a rule across the goal must update it."""
    from crsim.studies.behaviour.observation import MEASURES
    from crsim.studies.behaviour.validation import standing

    monkeypatch.setattr("crsim.studies.behaviour.validation.MIN_POSITIVES", 10)
    measured = standing(Path(__file__).parents[1] / "fixtures" / "behaviour_labels")
    assert {name: MEASURES[name].status for name in measured} == measured
    assert MEASURES["role_flip_dialogue"].status == MEASURES["role_flip"].status
