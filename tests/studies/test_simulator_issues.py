"""Failures of the simulated user flagged and counted per pairing, not charged to the CRS: a missed
recommendation, a constraint restated in vain, a question about a slot the user stated. Hand-built
dialogues on the shipped restaurants, each flag with a positive and a negative case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.domains import domain_named
from crsim.model.acts import parse_acts
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed
from crsim.studies.behaviour import attribution
from crsim.studies.behaviour.attribution import IssueSample, simulator_issues
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.user_reactions import missed_recommendation
from crsim.studies.behaviour.users import asked_stated_slot, restated_constraint

MIDSUMMER = "508"  # Midsummer House Restaurant: british, centre, expensive


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def chinese(domain: Domain) -> str:
    return sorted(domain.items.with_value("food", "chinese"))[0]


def crs(text: str, *items: str) -> Utterance:
    return Utterance(role=Role.CRS, text=text, recommended_items=list(items))


def user(text: str, acts: str) -> Utterance:
    return Utterance(role=Role.USER, text=text, acts=parse_acts(acts))


def dialogue(*utterances: Utterance, crs_id: str = "retrieval") -> Dialogue:
    need = InformationNeed(constraints={"food": "british", "area": "centre"}, requests=["phone"])
    return Dialogue(
        id=f"{crs_id}/abus/u1",
        crs_id=crs_id,
        simulator_id="abus",
        utterances=list(utterances),
        information_need=need,
    )


BRITISH = user("I'd like some British food, please.", 'disclose(food="british")')


def hits(measure: object, domain: Domain, d: Dialogue) -> list[bool | None]:
    return [o.hit for o in measure(Facts(d, domain))]  # type: ignore[operator]


def test_a_named_acceptable_recommendation_the_user_ignores_is_missed(restaurants: Domain) -> None:
    named = crs("How about Midsummer House Restaurant?", MIDSUMMER)
    missed = dialogue(BRITISH, named, user("Somewhere in the centre, please.", 'disclose(area="centre")'))
    heard = dialogue(BRITISH, named, user("What's their phone number?", "inquire(phone)"))
    unwanted = dialogue(BRITISH, crs("Try the one I found.", chinese(restaurants)), BRITISH)
    assert hits(missed_recommendation, restaurants, missed) == [True]
    assert hits(missed_recommendation, restaurants, heard) == [False]
    assert hits(missed_recommendation, restaurants, unwanted) == [None]  # nothing acceptable was named


def test_a_constraint_restated_while_the_crs_never_takes_it(restaurants: Domain) -> None:
    other = crs("How about this one?", chinese(restaurants))
    in_vain = dialogue(BRITISH, other, BRITISH, other, BRITISH)
    taken = dialogue(BRITISH, crs("Midsummer House Restaurant?", MIDSUMMER), BRITISH, other, BRITISH)
    twice = dialogue(BRITISH, other, BRITISH)
    assert hits(restated_constraint, restaurants, in_vain) == [True]
    assert hits(restated_constraint, restaurants, taken) == [False]
    assert hits(restated_constraint, restaurants, twice) == [False]


def test_a_question_about_a_stated_slot(restaurants: Domain) -> None:
    named = crs("How about Midsummer House Restaurant?", MIDSUMMER)
    asked_food = dialogue(BRITISH, named, user("What food do they serve?", "inquire(food)"))
    asked_phone = dialogue(BRITISH, named, user("What's their phone number?", "inquire(phone)"))
    assert hits(asked_stated_slot, restaurants, asked_food) == [True]
    assert hits(asked_stated_slot, restaurants, asked_phone) == [False]


def test_counts_per_pairing(restaurants: Domain) -> None:
    named = crs("How about Midsummer House Restaurant?", MIDSUMMER)
    missed = dialogue(BRITISH, named, user("Somewhere central.", 'disclose(area="centre")'), crs_id="popular")
    fine = dialogue(BRITISH, named, user("What's their phone number?", "inquire(phone)"))
    (popular, retrieval) = simulator_issues([missed, fine], restaurants)
    assert (popular.crs_id, popular.simulator_id) == ("popular", "abus")
    assert popular.issues["missed_recommendation"].k == 1 and popular.issues["missed_recommendation"].n == 1
    assert (
        retrieval.issues["missed_recommendation"].k == 0 and retrieval.issues["missed_recommendation"].n == 1
    )


def test_evaluate_shows_the_issues_beside_the_metrics(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    made = CliRunner().invoke(app, ["run", "--out", str(run_dir), "--users", "8", "--json"])
    assert made.exit_code == 0, made.output
    scored = CliRunner().invoke(app, ["evaluate", str(run_dir), "--json"])
    assert scored.exit_code == 0, scored.output
    for summary in json.loads(scored.output):
        issues = summary["simulator_issues"]
        assert list(issues) == ["missed_recommendation", "restated_constraint", "asked_stated_slot"]
        assert all(0 <= c["k"] <= c["n"] <= summary["n_dialogues"] for c in issues.values())
    table = CliRunner().invoke(app, ["evaluate", str(run_dir)], env={"COLUMNS": "160"})
    assert "Simulator-attributed issues" in table.output and "asked_stated_slot" in table.output


def test_issue_sample_keeps_a_seeded_uniform_sample_in_file_order() -> None:
    stream = [Dialogue(id=f"d{i}") for i in range(100)]
    whole = IssueSample(size=200)
    whole.add(stream[:40])
    whole.add(stream[40:])
    assert not whole.sampled and [d.id for d in whole.dialogues] == [d.id for d in stream]

    def kept(seed: int) -> list[int]:
        sample = IssueSample(size=10, seed=seed)
        for start in range(0, 100, 7):  # batches of any size give the same sample
            sample.add(stream[start : start + 7])
        assert sample.sampled and sample.seen == 100
        return [int(d.id[1:]) for d in sample.dialogues]

    assert kept(3) == kept(3) != kept(4)
    assert all(len(set(k)) == 10 and k == sorted(k) for k in (kept(3), kept(4)))
    # every position is kept with probability 10/100: over 2,000 seeds about 200 times each (SD ~13.4)
    counts = [0] * 100
    for seed in range(2000):
        for position in kept(seed):
            counts[position] += 1
    assert min(counts) > 120 and max(counts) < 290


def test_evaluate_says_when_the_issues_cover_a_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    made = CliRunner().invoke(app, ["run", "--out", str(run_dir), "--users", "4", "--json"])
    assert made.exit_code == 0, made.output
    monkeypatch.setattr(attribution, "ISSUES_SAMPLE", 3)
    scored = CliRunner().invoke(app, ["evaluate", str(run_dir), "--json"])
    assert scored.exit_code == 0, scored.output
    summaries = json.loads(scored.output)
    total = sum(s["n_dialogues"] for s in summaries)
    covered = [s["simulator_issues_sample"] for s in summaries if "simulator_issues" in s]
    assert covered and all(c == {"dialogues": 3, "of": total, "seed": 0} for c in covered)
    issues = [s["simulator_issues"] for s in summaries if "simulator_issues" in s]
    assert sum(i["missed_recommendation"]["n"] for i in issues) <= 3
    table = CliRunner().invoke(app, ["evaluate", str(run_dir)], env={"COLUMNS": "160"})
    words = " ".join(table.output.split())  # the caption wraps at the table's width
    assert f"counted on 3 of {total} dialogues, a uniform sample drawn with seed 0" in words
