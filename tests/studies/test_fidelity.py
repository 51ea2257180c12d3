"""The fidelity study (`crsim.studies.fidelity`): each measure on hand-made dialogues, the control
split, and the classifier's AUC on two halves of ReDial (near 0.5) and against a degenerate simulator
(near 1)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from crsim.datasets.base import build_reader, convert_dataset
from crsim.eval.annotators.base import annotation_domain, build_annotator
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.studies.fidelity import (
    ACCEPTED,
    NO_REACTION,
    REJECTED,
    binned,
    classifier_auc,
    distinct,
    fidelity,
    js_distance,
    measure_rows,
    reactions,
    side_of,
    split_halves,
)

REDIAL = Path(__file__).parents[1] / "fixtures" / "redial" / "test_data.jsonl.gz"


def user(text: str, *intents: str) -> Utterance:
    return Utterance(role=Role.USER, text=text, acts=[DialogueAct(intent=i) for i in intents])


def crs(text: str, *items: str) -> Utterance:
    return Utterance(role=Role.CRS, text=text, recommended_items=list(items))


def dialogue(name: str, *utterances: Utterance, simulator: str | None = None) -> Dialogue:
    return Dialogue(id=name, utterances=list(utterances), simulator_id=simulator)


SHOPPER = dialogue(
    "d1",
    user("Hi, any comedy?", "request_recommendation"),
    user("I mean a funny one", "disclose"),  # before any recommendation: no round
    crs("Try Heat", "m1"),
    user("No, seen it", "reject"),
    crs("Try Up", "m2"),
    user("Maybe", "other"),
    user("Yes, that one!", "accept"),
    crs("Try Big", "m3"),
    user("Great but no thanks", "accept", "reject"),  # both: an acceptance, as the metrics read it
    crs("And Jaws?", "m4"),
)


def test_reactions_per_recommendation_follow_the_last_accept_or_reject() -> None:
    assert reactions(SHOPPER) == [REJECTED, ACCEPTED, ACCEPTED, NO_REACTION]
    assert reactions(dialogue("d", user("hi", "greeting"), crs("Hello"))) == []


def test_side_counts_lengths_questions_acts_and_turns() -> None:
    side = side_of([SHOPPER, dialogue("d2", user("What?", "inquire"), user("  "))], "sim:")
    assert side.lengths == [3, 5, 3, 1, 3, 4, 1]  # the blank utterance is no user turn
    assert side.questions == [True, False, False, False, False, False, True]
    assert side.turns == [6, 1]
    assert side.intents["accept"] == 2 and side.intents["reject"] == 2 and side.intents["inquire"] == 1
    assert side.utterances[0] == ("sim:d1", "Hi, any comedy?")
    assert side.dialogues == 2


def test_distinct_n_at_a_word_budget() -> None:
    side = side_of([dialogue("d", user("a b a b c"))])
    assert distinct(side, 1, 4, seed=1) == pytest.approx(2 / 4)  # a b a b
    assert distinct(side, 2, 4, seed=1) == pytest.approx(2 / 3)  # ab ba ab
    assert distinct(side, 1, 5, seed=1) == pytest.approx(3 / 5)
    assert distinct(side, 2, 1, seed=1) is None


def test_bins_and_jensen_shannon_distance() -> None:
    assert binned([0, 1, 2, 3, 41, 40], (0, 2, 5, 10, 20, 40)) == {
        "0": 1,
        "1-2": 2,
        "3-5": 1,
        "21-40": 1,
        "41+": 1,
    }
    assert js_distance({"a": 3, "b": 1}, {"a": 6, "b": 2}) == pytest.approx(0.0)
    assert js_distance({"a": 1}, {"b": 5}) == pytest.approx(1.0)
    # p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4): JSD = (log2(4/3) + (log2(2/3) + 1) / 2) / 2
    expected = math.sqrt((math.log2(4 / 3) + (math.log2(2 / 3) + 1) / 2) / 2)
    assert js_distance({"a": 1}, {"a": 1, "b": 1}) == pytest.approx(expected)
    assert js_distance(None, {"a": 1}) is None and js_distance({}, {"a": 1}) is None


def test_jensen_shannon_distance_is_the_same_number_in_every_process() -> None:
    """The sum runs in the tables' order, not in a set's (which follows the hash seed): a fidelity
    report is the same to the last bit when it is made again."""
    code = (
        "import random; from crsim.studies.fidelity import js_distance; r = random.Random(5); "
        "p = {f'w{i}': r.random() for i in range(300)}; q = {f'w{i}': r.random() for i in range(150, 450)}; "
        "print(repr(js_distance(p, q)))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outputs) == 1


def test_measure_rows_on_hand_made_sides() -> None:
    sim = side_of([dialogue("s", user("I like it", "accept"), crs("Up?", "m1"), user("No", "reject"))])
    human = side_of([SHOPPER, SHOPPER.model_copy(update={"id": "d9"})])
    a, b = side_of([SHOPPER]), side_of([SHOPPER.model_copy(update={"id": "d9"})])
    rows = {r.measure: r for r in measure_rows(sim, human, a, b, seed=3)}
    assert rows["words_per_utterance"].simulated == pytest.approx(2.0)
    assert rows["words_per_utterance"].human == pytest.approx(19 / 6)
    assert rows["question_share"].simulated == 0.0 and rows["question_share"].human == pytest.approx(1 / 6)
    assert (rows["acceptance_rate"].simulated, rows["rejection_rate"].simulated) == (0.0, 1.0)
    assert (rows["acceptance_rate"].human, rows["rejection_rate"].human) == (0.5, 0.25)
    assert rows["turns_per_dialogue"].simulated == 2.0 and rows["turns_per_dialogue"].human == 6.0
    assert rows["dialogue_acts"].simulated_distribution == {"accept": 0.5, "reject": 0.5}
    # identical halves: every control distance is 0, and the word budget is the smallest side's (4)
    assert all(r.control_distance == pytest.approx(0.0) for r in rows.values())
    assert rows["distinct_1"].unit == "1-gram in 4 words"
    assert rows["rejection_rate"].distance == pytest.approx(js_distance({"y": 1}, {"y": 1, "n": 3}))


def test_control_split_is_disjoint_complete_and_seeded() -> None:
    dialogues = [dialogue(f"d{i}", user("hi")) for i in range(9)]
    a, b = split_halves(dialogues, seed=5)
    assert (len(a), len(b)) == (4, 5)
    assert sorted(d.id for d in a + b) == sorted(d.id for d in dialogues)
    assert [d.id for d in a] == [d.id for d in split_halves(dialogues, seed=5)[0]]
    assert [d.id for d in a] != [d.id for d in split_halves(dialogues, seed=6)[0]]


@pytest.fixture(scope="module")
def redial() -> list[Dialogue]:
    return list(convert_dataset(build_reader("redial", {}), REDIAL))[:160]


def test_classifier_cannot_tell_two_halves_of_redial_apart(redial: list[Dialogue]) -> None:
    a, b = split_halves(redial, seed=0)
    auc = classifier_auc(side_of(a, "h:").utterances, side_of(b, "h:").utterances, seed=0)
    # across seeds the half-vs-half AUC on 200 dialogues ranged 0.485-0.563 (docs/fidelity.md)
    assert auc is not None and abs(auc - 0.5) < 0.1


def test_degenerate_simulator_is_told_apart_and_far(redial: list[Dialogue]) -> None:
    parrot = [
        dialogue(
            f"p{i}", user("I want a movie."), crs("Try Up", "m1"), user("I want a movie."), simulator="parrot"
        )
        for i in range(20)
    ]
    report = fidelity(
        "run",
        parrot,
        "redial",
        redial,
        build_annotator("rules", {}, annotation_domain()),
        seed=1,
        max_human=120,
        resamples=100,
    )
    (sim,) = report.simulators
    assert sim.simulator == "parrot" and sim.dialogues == 20 and report.human_dialogues == 120
    assert sim.auc is not None and sim.auc > 0.95
    assert sim.control_auc is not None and abs(sim.control_auc - 0.5) < 0.1
    assert sim.summary_distance is not None and sim.control_summary_distance is not None
    assert sim.summary_distance > 3 * sim.control_summary_distance
    rows = {r.measure: r for r in sim.rows}
    assert rows["distinct_2"].simulated is not None and rows["distinct_2"].simulated < 0.2
    assert rows["turns_per_dialogue"].simulated == 2.0
    # intervals: said how they were made, and around their estimates (the parrot is far and told apart)
    assert report.intervals is not None and report.intervals.resamples == 100
    assert "percentile bootstrap over dialogues" in report.intervals.method
    assert sim.summary_ci is not None and sim.control_summary_ci is not None
    assert sim.control_summary_ci[1] < sim.summary_ci[0]
    assert sim.auc_ci is not None and sim.auc_ci[0] > 0.9
    assert sim.control_auc_ci is not None and sim.control_auc_ci[0] < 0.5 < sim.control_auc_ci[1]
    human = rows["words_per_utterance"]
    assert human.human_ci is not None and human.human_ci[0] <= human.human <= human.human_ci[1]
    assert type(report).model_validate_json(report.model_dump_json()) == report


def test_error_dialogues_are_left_out_and_too_small_a_corpus_is_refused(redial: list[Dialogue]) -> None:
    from crsim.core.errors import CrsimError
    from crsim.model.dialogue import ErrorInfo, Termination, TerminationReason

    broken = dialogue("x", user("hi")).model_copy(
        update={
            "termination": Termination(
                reason=TerminationReason.ERROR, error=ErrorInfo(source="user", type="Boom", message="boom")
            )
        }
    )
    annotator = build_annotator("rules", {}, annotation_domain())
    ok = [dialogue(f"s{i}", user("I like comedies"), simulator="s") for i in range(3)]
    report = fidelity("run", [broken, *ok], "redial", redial[:20], annotator, seed=0, resamples=0)
    assert report.left_out == 1 and report.simulators[0].dialogues == 3
    with pytest.raises(CrsimError, match="at least 4"):
        fidelity("run", ok, "redial", redial[:3], annotator)


def test_corpus_is_a_dialogues_file_or_a_named_dataset(tmp_path: Path, redial: list[Dialogue]) -> None:
    from crsim.core.errors import CrsimError
    from crsim.studies.fidelity import read_corpus

    path = tmp_path / "people.jsonl"
    path.write_text("".join(d.model_dump_json() + "\n" for d in redial[:5]), encoding="utf-8")
    label, corpus = read_corpus(str(path), None)
    assert label == "people" and [d.id for d in corpus] == [d.id for d in redial[:5]]
    label, corpus = read_corpus("redial", REDIAL)
    assert label == "redial" and len(corpus) == 1342
    with pytest.raises(
        CrsimError, match=r"--against: 'nowhere\.jsonl' is neither a corpus \(redial, crsarena_dial"
    ):
        read_corpus("nowhere.jsonl", None)


# --- intervals ------------------------------------------------------------------------------------


def _asking(count: int, questions: int, prefix: str) -> list[Dialogue]:
    """`count` one-utterance dialogues, the first `questions` of them a question."""
    return [
        dialogue(f"{prefix}{i}", user("Any good film?" if i < questions else "I like films."))
        for i in range(count)
    ]


def test_bootstrap_interval_of_a_share_agrees_with_the_normal_interval() -> None:
    from crsim.studies.fidelity import bootstrap_rows

    sim = side_of(_asking(200, 20, "s"), "s:")  # 0.10 of 200 dialogues ask
    human = side_of(_asking(200, 100, "h"), "h:")  # 0.50
    a, b = side_of(_asking(100, 50, "a"), "h:"), side_of(_asking(100, 50, "b"), "h:")
    rows = measure_rows(sim, human, a, b, seed=0)
    found, summary_ci, control_ci = bootstrap_rows(rows, (sim, human, a, b), "s", seed=4, resamples=400)
    share = {r.measure: r for r in found}["question_share"]
    # one utterance per dialogue: the bootstrap over dialogues is that of a proportion, whose 95%
    # interval is about p ± 1.96·sqrt(p(1-p)/n); 0.015 allows for 400 replicates (Monte Carlo SD of
    # an endpoint about 0.005) and the 1/200 steps of the share
    for interval, p in ((share.simulated_ci, 0.1), (share.human_ci, 0.5)):
        half = 1.959964 * math.sqrt(p * (1 - p) / 200)
        assert interval is not None
        assert interval[0] == pytest.approx(p - half, abs=0.015)
        assert interval[1] == pytest.approx(p + half, abs=0.015)
    # the distance 0.10 vs 0.50 is far from the control's (two equal halves): the intervals apart
    assert share.distance_ci is not None and share.control_distance_ci is not None
    assert share.distance is not None and share.distance_ci[0] <= share.distance <= share.distance_ci[1]
    assert share.control_distance_ci[1] < share.distance_ci[0]
    assert summary_ci is not None and control_ci is not None
    again, _, _ = bootstrap_rows(rows, (sim, human, a, b), "s", seed=4, resamples=400)
    assert again == found  # seeded
    other, _, _ = bootstrap_rows(rows, (sim, human, a, b), "s", seed=5, resamples=400)
    assert other != found


def test_distinct_n_of_a_resample_does_not_count_a_repeated_dialogue_as_repetition() -> None:
    from crsim.studies.fidelity import merged

    side = side_of([dialogue("d1", user("red apple pie")), dialogue("d2", user("green apple tart"))])
    # 6 words; "apple" is in both dialogues: 5 distinct of 6
    assert distinct(side, 1, 6, seed=0) == pytest.approx(5 / 6)
    twice = merged(side.parts, [0, 0])
    # d1 drawn twice: its own words count once per copy (6 of 6), as two different dialogues would
    assert distinct(twice, 1, 6, seed=0) == pytest.approx(1.0)
    both = merged(side.parts, [0, 0, 1])
    # with d2 there, "apple" (shared with another dialogue) counts once: red, pie twice, green, tart: 7 of 9
    assert distinct(both, 1, 9, seed=0) == pytest.approx(7 / 9)


def test_auc_interval_resamples_dialogues_not_utterances() -> None:
    from crsim.studies.fidelity import Scored, auc_interval

    # 10 dialogues per class, 50 utterances each sharing their dialogue's score: the AUC rests on 10
    # against 10 dialogues, whose standard error is about 0.13 (Hanley & McNeil), so the 95% interval
    # is wide; resampling the 1,000 utterances as if independent would give one about 0.1 wide
    rng = np.random.default_rng(0)
    labels, scores, groups = [], [], []
    for label in (1, 0):
        for g in range(10):
            value = float(rng.normal(0.8 if label else 0.0))
            labels += [label] * 50
            scores += [value] * 50
            groups += [f"{label}-{g}"] * 50
    scored = Scored(labels, scores, groups)
    interval = auc_interval(scored, resamples=500, seed=1)
    assert interval is not None and interval[0] <= scored.auc() <= interval[1]
    assert interval[1] - interval[0] > 0.3
    assert auc_interval(scored, resamples=500, seed=1) == interval
    apart = Scored([1, 1, 0, 0], [2.0, 3.0, 0.0, 1.0], ["a", "b", "c", "d"])
    assert auc_interval(apart, resamples=100, seed=0) == (1.0, 1.0)
