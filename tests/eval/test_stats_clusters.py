"""Intervals when users repeat: a cluster bootstrap over users, and no change when they do not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.eval.metrics.utility import Turns
from crsim.eval.scores import score_dialogues
from crsim.eval.stats import DIALOGUE_BOOTSTRAP, USER_BOOTSTRAP, aggregate
from crsim.eval.summaries import summarize
from crsim.model.dialogue import Dialogue, Role, Termination, Utterance

runner = CliRunner()


def _users_with_repeats(rng: np.random.Generator, users: int, per_user: int) -> tuple[list[float], list[str]]:
    """0/1 successes of `users` users drawn from a population whose success rates follow Beta(2, 2)
    (mean 0.5), `per_user` dialogues each: strongly correlated within a user."""
    rates = rng.beta(2, 2, size=users)
    values = [float(v) for rate in rates for v in rng.random(per_user) < rate]
    labels = [f"user-{u}" for u in range(users) for _ in range(per_user)]
    return values, labels


def test_without_repeated_users_the_interval_is_exactly_the_dialogue_bootstrap() -> None:
    rng = np.random.default_rng(3)
    for values in (
        [float(v) for v in rng.random(120)],  # scipy's bootstrap
        [float(v) for v in rng.random(6000) < 0.4],  # the multinomial path for large 0/1 samples
        [None, 1.0, 0.0, 1.0, None, 1.0, 0.0, 0.0, 1.0],
    ):
        labels = [f"u{i}" for i in range(len(values))]
        plain, clustered = aggregate(values, seed=7), aggregate(values, seed=7, clusters=labels)
        same = ("mean", "std", "ci_low", "ci_high", "n", "missing")
        assert [getattr(plain, f) for f in same] == [getattr(clustered, f) for f in same]
        assert plain.method == clustered.method == DIALOGUE_BOOTSTRAP
        assert clustered.clusters == plain.n and plain.clusters is None
        assert (clustered.resamples, clustered.seed) == (2000, 7)


def test_with_heavy_reuse_the_user_interval_is_wider_and_covers_the_truth() -> None:
    """30 users, 40 dialogues each, 200 simulated experiments: the interval that resamples users
    covers the population mean 0.5 about 95% of the time (0.945 with these seeds); the one that
    resamples dialogues is a third as wide (ratio 2.2 to 4) and covers it about half the time (0.565).
    Bounds: 200 experiments estimate a coverage with a standard error of about 1.5 points, and a
    percentile cluster bootstrap over 30 users covers a little under its nominal 95%, so 0.88 leaves
    room for both; the dialogue interval stays far below it."""
    rng = np.random.default_rng(2024)
    covered = {"users": 0, "dialogues": 0}
    ratios = []
    experiments = 200
    for seed in range(experiments):
        values, labels = _users_with_repeats(rng, users=30, per_user=40)
        clustered = aggregate(values, seed=seed, resamples=1000, clusters=labels)
        naive = aggregate(values, seed=seed, resamples=1000)
        assert clustered.method == USER_BOOTSTRAP and clustered.clusters == 30 and clustered.n == 1200
        assert clustered.mean == naive.mean
        assert None not in (clustered.ci_low, clustered.ci_high, naive.ci_low, naive.ci_high)
        covered["users"] += clustered.ci_low <= 0.5 <= clustered.ci_high  # type: ignore[operator]
        covered["dialogues"] += naive.ci_low <= 0.5 <= naive.ci_high  # type: ignore[operator]
        ratios.append((clustered.ci_high - clustered.ci_low) / (naive.ci_high - naive.ci_low))  # type: ignore[operator]
    assert min(ratios) > 1.5
    assert covered["users"] / experiments >= 0.88
    assert covered["dialogues"] / experiments <= 0.7


def test_the_cluster_bootstrap_is_deterministic_and_handles_missing_values_and_constants() -> None:
    values = [1.0, 0.0, None, 1.0, 1.0, 0.0, 0.0, 1.0, None, 0.0]
    labels = ["a", "a", "a", "b", "b", "c", "c", "d", "d", "e"]
    first = aggregate(values, seed=1, clusters=labels)
    assert first == aggregate(values, seed=1, clusters=labels)
    assert first.method == USER_BOOTSTRAP and first.clusters == 5 and (first.n, first.missing) == (8, 2)
    assert first.ci_low is not None and first.ci_high is not None
    assert first.ci_low <= first.mean <= first.ci_high  # type: ignore[operator]
    constant = aggregate([1.0] * 10, clusters=labels)
    assert (constant.ci_low, constant.ci_high) == (1.0, 1.0)
    too_few = aggregate([1.0, 0.0, 1.0, 0.0], clusters=["a", "a", "b", "b"])
    assert too_few.ci_low is None and too_few.method is None and too_few.clusters == 2
    with pytest.raises(ValueError, match="3 cluster labels for 2 values"):
        aggregate([1.0, 0.0], clusters=["a", "b", "c"])


def _dialogue(id: str, user: str, turns: int, trial: int = 0) -> Dialogue:
    utterances = [Utterance(role=Role.USER, text="hi"), Utterance(role=Role.CRS, text="hello")] * turns
    return Dialogue(
        id=id,
        user_id=user,
        crs_id="c",
        simulator_id="s",
        utterances=utterances,
        termination=Termination(reason="user_ended"),
        metadata={"trial": trial},
    )


def test_summaries_count_distinct_users_and_resample_them_when_they_repeat() -> None:
    reused = [
        _dialogue(f"d{i}", f"ml-{i % 5}" + ("" if i < 5 else f"#{i // 5 + 1}"), 1 + i % 7) for i in range(40)
    ]
    (summary,) = summarize(score_dialogues(reused, [Turns()]), reused, seed=3)
    turns = summary.metrics["Turns"]
    assert (summary.n_dialogues, summary.n_users) == (40, 5)
    assert (turns.method, turns.clusters, turns.n, turns.resamples, turns.seed) == (
        USER_BOOTSTRAP,
        5,
        40,
        2000,
        3,
    )
    trials = [_dialogue(f"d{i}#{t}", f"u{i}", 1 + (i + t) % 4, trial=t) for i in range(10) for t in range(3)]
    (summary,) = summarize(score_dialogues(trials, [Turns()]), trials)
    assert (summary.n_users, summary.metrics["Turns"].method) == (10, USER_BOOTSTRAP)
    once = [_dialogue(f"d{i}", f"u{i}", 1 + i % 4) for i in range(30)]
    (summary,) = summarize(score_dialogues(once, [Turns()]), once, seed=3)
    plain = aggregate([float(1 + i % 4) for i in range(30)], seed=3)
    assert summary.n_users == 30 and summary.metrics["Turns"].method == DIALOGUE_BOOTSTRAP
    assert (summary.metrics["Turns"].ci_low, summary.metrics["Turns"].ci_high) == (
        plain.ci_low,
        plain.ci_high,
    )


def test_the_cli_refuses_reuse_unless_asked_and_then_shows_distinct_users(tmp_path: Path) -> None:
    """6 MovieLens users rate at least 1,000 catalogue movies: 8 users is reuse."""
    config = tmp_path / "c.yaml"
    config.write_text("users: {min_ratings: 1000}\ncrss: [{name: popular}]\nmax_turns: 2\n", encoding="utf-8")
    refused = runner.invoke(app, ["run", str(config), "--users", "8", "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2
    assert (
        "users.size: 8 users asked for, but the MovieLens population holds 6 eligible users" in refused.output
    )
    assert "--allow-reuse" in refused.output and not (tmp_path / "a").exists()
    args = ["run", str(config), "--users", "8", "--allow-reuse", "--out", str(tmp_path / "b"), "--json"]
    allowed = runner.invoke(app, args)
    assert allowed.exit_code == 0, allowed.output
    (summary,) = json.loads(allowed.output)
    assert (summary["n_dialogues"], summary["n_users"]) == (8, 6)
    assert summary["metrics"]["Turns"]["method"] == USER_BOOTSTRAP
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["users"]["allow_reuse"] is True
