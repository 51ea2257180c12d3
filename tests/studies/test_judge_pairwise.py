"""Pairwise simulator comparison: pairing by (CRS, user, trial), both orders asked, disagreement =
draw, win/draw/loss counts with Wilson intervals, unpaired dialogues reported; and the CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crsim.cli.judge import judge_app
from crsim.core.errors import ConfigError
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.studies.pairwise import (
    PairwiseJudge,
    Preference,
    compare_dialogues,
    load_criteria,
    outcome,
    pair_dialogues,
    rate,
    trial_of,
)
from support import ScriptedHub

runner = CliRunner()
CRITERIA = ["naturalness", "clarity", "adaptability", "relevance", "role_play", "realism"]


def dialogue(
    sim: str, user: str, *, crs: str = "popular", trial: int | None = None, voice: str = ""
) -> Dialogue:
    suffix = f"#{trial}" if trial is not None else ""
    return Dialogue(
        id=f"{crs}/{sim}/{user}{suffix}",
        crs_id=crs,
        simulator_id=sim,
        user_id=user,
        utterances=[
            Utterance(role=Role.USER, text=f"{voice or sim} asks for a comedy"),
            Utterance(role=Role.CRS, text="Try Booksmart (2019).", recommended_items=["m3"]),
        ],
    )


def verdict(better: str, why: str = "compared the user messages") -> str:
    return json.dumps({"justification": why, "better": better})


def criterion_of(messages: list[Message]) -> str:
    found = re.search(r"Compare the two users on one criterion: ([a-z ]+)\.", messages[0]["content"])
    assert found, messages[0]["content"]
    return found.group(1).replace(" ", "_")


def first_user(messages: list[Message]) -> str:
    """Which simulator's conversation is shown first ("alpha" or "beta")."""
    task = messages[1]["content"]
    return "alpha" if task.index("alpha asks") < task.index("beta asks") else "beta"


def judge_with(script: Any) -> tuple[PairwiseJudge, ScriptedProvider]:
    provider = ScriptedProvider(script)
    hub = ScriptedHub(provider)
    return PairwiseJudge(hub.role("judge"), load_criteria()), provider


# --- pairing ---------------------------------------------------------------------------------------


def test_trial_suffix() -> None:
    assert trial_of("popular/abus/u1#3") == 3
    assert trial_of("popular/abus/u1") == 0
    assert trial_of("popular/abus/u#1x") == 0


def test_pairing_by_crs_user_and_trial_reports_the_unpaired() -> None:
    run_a = [
        dialogue("alpha", "u1"),
        dialogue("alpha", "u2"),
        dialogue("alpha", "u3", crs="retrieval"),
        dialogue("alpha", "u4", trial=1),
        Dialogue(id="no-user", simulator_id="alpha", utterances=[]),
        dialogue("alpha", "u1"),  # the same key again
    ]
    run_b = [
        dialogue("beta", "u2"),
        dialogue("beta", "u1"),
        dialogue("beta", "u3", crs="popular"),
        dialogue("beta", "u4", trial=2),
    ]
    pairing = pair_dialogues(run_a, run_b)
    assert [(k.crs_id, k.user_id, k.trial) for k, _, _ in pairing.pairs] == [
        ("popular", "u1", 0),
        ("popular", "u2", 0),
    ]
    assert [(a.id, b.id) for _, a, b in pairing.pairs] == [
        ("popular/alpha/u1", "popular/beta/u1"),
        ("popular/alpha/u2", "popular/beta/u2"),
    ]
    assert sorted(pairing.unpaired_a) == ["no-user", "popular/alpha/u4#1", "retrieval/alpha/u3"]
    assert sorted(pairing.unpaired_b) == ["popular/beta/u3", "popular/beta/u4#2"]
    assert pairing.duplicates_a == ["popular/alpha/u1"] and pairing.duplicates_b == []


async def test_a_run_with_several_simulators_needs_a_choice() -> None:
    judge, _ = judge_with(lambda _m, _g: verdict("tie"))
    mixed = [dialogue("alpha", "u1"), dialogue("gamma", "u1")]
    with pytest.raises(
        ConfigError, match=r"run A holds dialogues of several simulators \(alpha, gamma\).*--sim-a"
    ):
        await compare_dialogues(mixed, [dialogue("beta", "u1")], judge)
    with pytest.raises(
        ConfigError, match=r"run B: no dialogue of simulator 'delta'; simulators present: beta"
    ):
        await compare_dialogues(
            mixed, [dialogue("beta", "u1")], judge, simulator_a="alpha", simulator_b="delta"
        )
    report = await compare_dialogues(mixed, [dialogue("beta", "u1")], judge, simulator_a="gamma")
    assert report.simulator_a == "gamma" and report.pairs[0].dialogue_a == "popular/gamma/u1"


# --- judging ---------------------------------------------------------------------------------------


async def test_both_orders_are_asked_for_every_criterion() -> None:
    judge, provider = judge_with(lambda _m, _g: verdict("tie"))
    report = await compare_dialogues([dialogue("alpha", "u1")], [dialogue("beta", "u1")], judge)
    asked = sorted((criterion_of(m), first_user(m)) for m, _ in provider.requests)
    assert asked == sorted((c, first) for c in CRITERIA for first in ("alpha", "beta"))
    for messages, generation in provider.requests:
        assert generation.json_schema is not None
        assert list(generation.json_schema["properties"]) == ["justification", "better"]
        assert generation.json_schema["properties"]["better"]["enum"] == ["1", "2", "tie"]
        assert load_criteria().criteria[criterion_of(messages)] in messages[0]["content"]
    assert len({g.seed for _, g in provider.requests}) == 12
    assert [s.criterion for s in report.summaries] == CRITERIA
    assert all((s.draws, s.n, s.disagreements) == (1, 1, 0) for s in report.summaries)


def _prefers(winner: str) -> Any:
    """A judge that always names `winner`'s user as better, whichever position it is shown in."""
    return lambda m, _g: verdict("1" if first_user(m) == winner else "2")


async def test_a_consistent_preference_is_a_win_or_a_loss() -> None:
    a = [dialogue("alpha", f"u{i}") for i in range(3)]
    b = [dialogue("beta", f"u{i}") for i in range(3)]
    judge, _ = judge_with(_prefers("alpha"))
    report = await compare_dialogues(a, b, judge)
    assert all((s.wins, s.draws, s.losses, s.n) == (3, 0, 0, 3) for s in report.summaries)
    judge, _ = judge_with(_prefers("beta"))
    report = await compare_dialogues(a, b, judge)
    assert all((s.wins, s.draws, s.losses, s.n) == (0, 0, 3, 3) for s in report.summaries)
    outcome_ = report.pairs[0].outcomes[0]
    assert (outcome_.a_first.better, outcome_.b_first.better, outcome_.orders_agree) == ("B", "B", True)


async def test_orders_that_disagree_are_a_draw() -> None:
    # A position-biased judge: always prefers whatever is shown first.
    judge, _ = judge_with(lambda _m, _g: verdict("1"))
    report = await compare_dialogues([dialogue("alpha", "u1")], [dialogue("beta", "u1")], judge)
    for summary in report.summaries:
        assert (summary.wins, summary.draws, summary.losses, summary.disagreements) == (0, 1, 0, 1)
    first = report.pairs[0].outcomes[0]
    assert (first.a_first.better, first.b_first.better, first.outcome) == ("A", "B", "draw")


def test_a_winner_against_a_tie_is_a_draw_and_a_failed_order_has_no_outcome() -> None:
    a_wins = Preference(order="a_first", better="A")
    tie = Preference(order="b_first", better="tie")
    mixed = outcome("clarity", a_wins, tie)
    assert (mixed.outcome, mixed.orders_agree) == ("draw", False)
    failed = Preference(order="b_first", better=None, raw="???", error="LLMOutputError: unreadable answer")
    broken = outcome("clarity", a_wins, failed)
    assert broken.outcome is None and broken.error == "LLMOutputError: unreadable answer"


async def test_counts_rates_and_wilson_intervals() -> None:
    # Per user: u0..u5 alpha wins, u6..u7 beta wins, u8 draw (tie both), u9 unreadable in one order.
    plan = {**{f"u{i}": "alpha" for i in range(6)}, "u6": "beta", "u7": "beta", "u8": "tie", "u9": "broken"}

    def script(messages: list[Message], _g: ResolvedGeneration) -> str:
        user = re.search(r"popular (u\d)", messages[1]["content"])
        assert user is not None
        wanted = plan[user.group(1)]
        if wanted == "tie":
            return verdict("tie")
        if wanted == "broken":
            return verdict("1") if first_user(messages) == "alpha" else "nonsense"
        return verdict("1" if first_user(messages) == wanted else "2")

    def voiced(sim: str, user: str) -> Dialogue:
        return dialogue(sim, user, voice=f"{sim} asks for a comedy, popular {user}:")

    judge, _ = judge_with(script)
    report = await compare_dialogues(
        [voiced("alpha", u) for u in plan], [voiced("beta", u) for u in plan], judge, confidence=0.95
    )
    for summary in report.summaries:
        assert (summary.n, summary.wins, summary.draws, summary.losses, summary.errors) == (9, 6, 1, 2, 1)
        assert summary.win.rate == pytest.approx(6 / 9)
        low, high = _wilson(6, 9, 1.959963984540054)
        assert (summary.win.ci_low, summary.win.ci_high) == (pytest.approx(low), pytest.approx(high))
        assert summary.loss.ci_low is not None and summary.loss.ci_high is not None
        assert summary.loss.ci_low < 2 / 9 < summary.loss.ci_high
    broken = next(p for p in report.pairs if p.user_id == "u9").outcomes[0]
    assert broken.outcome is None and broken.b_first.raw == "nonsense"
    assert broken.error is not None and broken.error.startswith("LLMOutputError")


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_rate_without_pairs_is_empty() -> None:
    assert rate(0, 0, 0.95).rate is None
    edge = rate(5, 5, 0.95)
    assert (
        edge.rate == 1.0
        and edge.ci_high == pytest.approx(1.0)
        and edge.ci_low is not None
        and edge.ci_low < 0.6
    )


async def test_limit_compares_the_first_pairs_and_counts_the_rest() -> None:
    judge, provider = judge_with(lambda _m, _g: verdict("tie"))
    users = ["u3", "u1", "u2"]
    report = await compare_dialogues(
        [dialogue("alpha", u) for u in users], [dialogue("beta", u) for u in users], judge, limit=2
    )
    assert [p.user_id for p in report.pairs] == ["u1", "u2"]
    assert report.pairs_compared == 2 and report.left_out_by_limit == 1
    assert len(provider.requests) == 2 * 2 * len(CRITERIA)


def test_a_user_criteria_file_is_validated(tmp_path: Path) -> None:
    good = tmp_path / "mine.yaml"
    good.write_text("name: mine\ncriteria:\n  politeness: The user is polite.\n", encoding="utf-8")
    assert load_criteria(str(good)).criteria == {"politeness": "The user is polite."}
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ncriteria:\n  Polite Users: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml: field 'criteria': criterion 'Polite Users'"):
        load_criteria(str(bad))
    extra = tmp_path / "extra.yaml"
    extra.write_text("name: e\ncriteria: {a: b}\nweights: {a: 1}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"extra\.yaml: field 'weights': unknown field"):
        load_criteria(str(extra))
    with pytest.raises(ConfigError, match=r"criteria 'nosuch': neither shipped criteria \(recusersim6\)"):
        load_criteria("nosuch")


# --- CLI -------------------------------------------------------------------------------------------


def _run_folder(path: Path, dialogues: list[Dialogue]) -> Path:
    path.mkdir(parents=True)
    (path / "dialogues.jsonl").write_text(
        "".join(d.model_dump_json() + "\n" for d in dialogues), encoding="utf-8"
    )
    return path


def _judge_config(tmp_path: Path, reply: str) -> Path:
    config = tmp_path / "judge.yaml"
    config.write_text(
        "llm:\n  roles:\n    judge: {provider: scripted, replies: [" + json.dumps(reply) + "]}\n",
        encoding="utf-8",
    )
    return config


def test_cli_compare_prints_rates_and_writes_the_report(tmp_path: Path) -> None:
    run_a = _run_folder(
        tmp_path / "a", [dialogue("alpha", "u1"), dialogue("alpha", "u2"), dialogue("alpha", "u9")]
    )
    run_b = _run_folder(tmp_path / "b", [dialogue("beta", "u1"), dialogue("beta", "u2")])
    config = _judge_config(tmp_path, verdict("1"))  # always the first shown: every pair is a draw
    out = tmp_path / "report.json"
    result = runner.invoke(
        judge_app, ["compare", str(run_a), str(run_b), "--judge", str(config), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "naturalness" in result.output and "role_play" in result.output
    assert "pairs compared: 2; unpaired: 1 in A, 0 in B" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["simulator_a"] == "alpha" and report["simulator_b"] == "beta"
    assert report["unpaired_a"] == ["popular/alpha/u9"]
    assert all((s["draws"], s["disagreements"], s["n"]) == (2, 2, 2) for s in report["summaries"])
    assert (tmp_path / "a" / "llm_cache.sqlite").is_file()  # the cache defaults to run A's folder


def test_cli_compare_json_and_cache_option(tmp_path: Path) -> None:
    run_a = _run_folder(tmp_path / "a", [dialogue("alpha", "u1")])
    run_b = _run_folder(tmp_path / "b", [dialogue("beta", "u1")])
    config = _judge_config(tmp_path, verdict("tie"))
    cache = tmp_path / "elsewhere" / "judge_cache.sqlite"
    cache.parent.mkdir()
    result = runner.invoke(
        judge_app,
        [
            "compare",
            str(run_a),
            str(run_b),
            "--judge",
            str(config),
            "--cache",
            str(cache),
            "--json",
            "--limit",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["pairs_compared"] == 1 and report["criteria"] == "recusersim6"
    assert report["pairs"][0]["outcomes"][0]["outcome"] == "draw"
    assert cache.is_file() and not (tmp_path / "a" / "llm_cache.sqlite").exists()


def test_cli_compare_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    run_a = _run_folder(tmp_path / "a", [dialogue("alpha", "u1"), dialogue("gamma", "u1")])
    run_b = _run_folder(tmp_path / "b", [dialogue("beta", "u1")])
    config = _judge_config(tmp_path, verdict("tie"))
    result = runner.invoke(judge_app, ["compare", str(run_a), str(run_b), "--judge", str(config)])
    assert result.exit_code == 2 and "several simulators" in result.output
    result = runner.invoke(judge_app, ["compare", str(tmp_path / "none"), str(run_b), "--judge", str(config)])
    assert result.exit_code == 2 and "file not found" in result.output


def test_cli_lists_and_shows_rubrics(tmp_path: Path) -> None:
    listed = runner.invoke(judge_app, ["rubrics"])
    assert listed.exit_code == 0, listed.output
    for name in ("quality5", "pepper3", "recusersim3", "crsarena7"):
        assert name in listed.output
    shown = runner.invoke(judge_app, ["show", "crsarena7"])
    assert shown.exit_code == 0, shown.output
    assert (
        "relevance (turn level, 0..3)" in shown.output and "efficiency (dialogue level, 0..1)" in shown.output
    )
    assert "The response makes sense and fully serves what the user asked for." in shown.output
    derived = runner.invoke(judge_app, ["show", "recusersim3"])
    assert "recommendation_quality (= recommendation_objective + recommendation_modifier)" in derived.output
    missing = runner.invoke(judge_app, ["show", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "neither a shipped rubric" in missing.output


def test_cli_compare_shows_progress_of_the_pairs_and_a_summary(tmp_path: Path) -> None:
    run_a = _run_folder(tmp_path / "a", [dialogue("alpha", "u1"), dialogue("alpha", "u2")])
    run_b = _run_folder(tmp_path / "b", [dialogue("beta", "u1"), dialogue("beta", "u2")])
    config = _judge_config(tmp_path, verdict("1"))
    result = runner.invoke(judge_app, ["compare", str(run_a), str(run_b), "--judge", str(config)])
    assert result.exit_code == 0, result.output
    calls = 2 * 2 * len(CRITERIA)  # pairs × orders × criteria
    assert f"pairs 2/2 (100%) · 0:00:00 · errors 0 · LLM calls {calls} (0 cached)" in result.output
    lines = result.output.splitlines()
    row = lines[lines.index(next(line for line in lines if line.startswith("phase "))) + 1].split()
    assert row[0] == "pairs" and row[2:5] == ["2/2", "0", str(calls)]
    quiet = runner.invoke(judge_app, ["compare", str(run_a), str(run_b), "--judge", str(config), "--json"])
    assert "pairs 2/2" not in quiet.output and json.loads(quiet.output)["pairs_compared"] == 2
