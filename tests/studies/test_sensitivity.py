"""`crsim validate sensitivity` and `crsim validate noise`: the statistics on known data, and both
studies end to end on a tiny config (few users, short dialogues), including resuming a cut study."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import ConfigError
from crsim.runner.config import config_from_mapping
from crsim.studies.compare import ComparisonOptions, Observation, compare
from crsim.studies.noise import noise
from crsim.studies.sensitivity import analyse, pairwise_accuracy, with_twins

runner = CliRunner()


def _obs(crs: str, values: list[float], metric: str = "Success") -> list[Observation]:
    return [Observation(crs, "abus", metric, f"u{k}", (0, 0), v, True) for k, v in enumerate(values)]


def test_pairwise_accuracy_counts_draws_on_the_original_side_and_ties_as_half() -> None:
    assert pairwise_accuracy(np.ones(5), 10, sign=1.0, resamples=200, seed=0) == 1.0
    assert pairwise_accuracy(np.zeros(5), 10, sign=1.0, resamples=200, seed=0) == 0.5
    assert pairwise_accuracy(-np.ones(5), 10, sign=1.0, resamples=200, seed=0) == 0.0
    # one user in two better by 1: a draw of n = 1 is above the twin half the time (binomial, 4000
    # draws: SD 0.008, so 0.05 is six SDs)
    half = pairwise_accuracy(np.array([1.0, 0.0]), 1, sign=1.0, resamples=4000, seed=1)
    assert half is not None and abs(half - 0.75) < 0.05  # 0.5 above + 0.5 × 0.5 ties


def test_rows_say_detected_blind_and_reversed() -> None:
    rng = np.random.default_rng(0)
    original = list(rng.uniform(0.6, 1.0, 40))
    found = analyse(
        [
            *_obs("retrieval", original),
            *_obs("retrieval~random", [v - 0.5 for v in original]),
            *_obs("retrieval~garbled", original),
            *_obs("retrieval~mute", [v + 0.1 for v in original]),
        ],
        ["retrieval"],
    )
    verdicts = {row.degradation: row for row in found.rows}
    assert verdicts["random"].verdict == "detected" and verdicts["random"].accuracy[30] == 1.0
    assert verdicts["random"].difference == pytest.approx(0.5)
    assert verdicts["garbled"].verdict == "blind" and verdicts["mute"].verdict == "reversed"
    assert found.degradations == ["random", "mute", "garbled"]


def test_rows_follow_the_declared_direction_of_each_metric() -> None:
    original = [4.0, 5.0, 6.0, 5.0] * 10
    found = analyse(
        [
            *_obs("retrieval", original, "Turns"),
            *_obs("retrieval~stale", [v + 2 for v in original], "Turns"),
            *_obs("retrieval~eager", [v - 1 for v in original], "Turns"),
            *_obs("retrieval", original, "Jaccard"),
            *_obs("retrieval~stale", [v - 1 for v in original], "Jaccard"),
            *_obs("retrieval", original, "Other"),
            *_obs("retrieval~stale", [v - 1 for v in original], "Other"),
        ],
        ["retrieval"],
        directions={"Turns": "lower", "Jaccard": "none"},
    )
    rows = {(row.metric, row.degradation): row for row in found.rows}
    longer, shorter = rows[("Turns", "stale")], rows[("Turns", "eager")]
    assert longer.direction == "lower" and longer.difference == pytest.approx(-2.0)
    assert longer.verdict == "detected" and longer.accuracy[30] == 1.0
    assert shorter.verdict == "reversed" and shorter.accuracy[30] == 0.0
    undirected = rows[("Jaccard", "stale")]
    assert undirected.direction == "none" and undirected.verdict == "detected"
    unrecorded = rows[("Other", "stale")]
    assert unrecorded.direction == "higher" and not unrecorded.direction_recorded
    assert longer.direction_recorded


def test_twins_of_every_crs_and_no_twin_of_a_twin() -> None:
    cfg = config_from_mapping({"crss": [{"name": "popular"}, {"name": "retrieval", "id": "r"}]})
    study = with_twins(cfg, ["random", "deaf"])
    assert [c.label for c in study.crss] == [
        "popular",
        "r",
        "popular~random",
        "popular~deaf",
        "r~random",
        "r~deaf",
    ]
    assert study.crss[4].args == {"of": {"name": "retrieval", "args": {}, "id": "r"}, "kind": "random"}
    with pytest.raises(ConfigError, match="degraded twins itself"):
        with_twins(study, ["stale"])


def test_noise_counts_flipped_rankings_and_verdicts() -> None:
    high, low = [1.0] * 12, [0.0] * 12
    runs = [
        compare([*_obs("a", high), *_obs("b", low)], ComparisonOptions()),  # a significantly above b
        compare([*_obs("a", high), *_obs("b", low)], ComparisonOptions()),
        compare([*_obs("a", low), *_obs("b", high)], ComparisonOptions()),  # flipped
    ]
    found = noise([1, 2, 3], runs)
    (metric,) = found.results
    assert metric.ranking_flip_rate == pytest.approx(1 / 3)
    assert metric.pairs[0].verdicts == ["A>B", "A>B", "B>A"] and metric.pairs[0].flip_rate == pytest.approx(
        1 / 3
    )
    spread = {s.crs: s for s in metric.crss}
    assert spread["a"].means == [1.0, 1.0, 0.0] and spread["a"].sd == pytest.approx(np.std([1, 1, 0], ddof=1))


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "crss: [{name: retrieval}]\nmax_turns: 6\nusers: {size: 4}\n"
        "metrics: [{name: success_rate}, {name: turns}]\n"
    )
    return path


def test_sensitivity_end_to_end_and_resumed_after_a_cut(tmp_path: Path) -> None:
    out = tmp_path / "study"
    args = ["validate", "sensitivity", str(_config(tmp_path)), "--out", str(out), "--kinds", "random,garbled"]
    first = runner.invoke(app, [*args, "--resamples", "200", "--json"])
    assert first.exit_code == 0, first.output
    written = json.loads((out / "sensitivity.json").read_text())
    assert {(r["metric"], r["degradation"]) for r in written["rows"]} == {
        (m, k) for m in ("Success", "Turns") for k in ("random", "garbled")
    }
    assert all(r["n_users"] == 4 and r["crs"] == "retrieval" for r in written["rows"])
    assert {r["metric"]: r["direction"] for r in written["rows"]} == {"Success": "higher", "Turns": "lower"}
    lines = (out / "dialogues.jsonl").read_text().splitlines()
    assert len(lines) == 12  # 4 users × (retrieval + 2 twins)
    refused = runner.invoke(app, args)
    assert refused.exit_code != 0 and "pass --resume" in refused.output and "Traceback" not in refused.output
    (out / "dialogues.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])  # cut mid-record
    (out / "sensitivity.json").unlink()
    again = runner.invoke(app, [*args, "--resamples", "200", "--resume"])
    assert again.exit_code == 0, again.output
    resumed = [json.loads(line) for line in (out / "dialogues.jsonl").read_text().splitlines()]
    assert len(resumed) == 12 and len({d["id"] for d in resumed}) == 12
    assert json.loads((out / "sensitivity.json").read_text())["rows"] == written["rows"]
    assert "retrieval against its degraded twins" in again.output and "garbled" in again.output


def test_noise_end_to_end(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(
        "crss: [{name: popular}, {name: retrieval}]\nmax_turns: 6\nusers: {size: 4}\n"
        "metrics: [{name: turns}]\n"
    )
    out = tmp_path / "noise"
    result = runner.invoke(app, ["validate", "noise", str(path), "--seeds", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    found = json.loads((out / "noise.json").read_text())
    assert found["seeds"] == [42, 43] and (out / "seed-42" / "dialogues.jsonl").is_file()
    (metric,) = found["results"]
    assert metric["metric"] == "Turns" and len(metric["rankings"]) == 2
    assert "ranking flips in" in result.output


def test_a_twin_meets_each_user_with_its_originals_seed(tmp_path: Path) -> None:
    from crsim.runner.build import build_experiment

    cfg = config_from_mapping({"crss": [{"name": "popular"}, {"name": "retrieval"}], "users": {"size": 3}})
    experiment = build_experiment(with_twins(cfg, ["random"]), run_folder=tmp_path / "run")
    seeds = {(t.crs_label, t.user.id): t.seed for t in experiment.tasks}
    for user in experiment.users:
        assert seeds[("retrieval~random", user.id)] == seeds[("retrieval", user.id)]
        assert seeds[("popular~random", user.id)] == seeds[("popular", user.id)]
        assert seeds[("popular", user.id)] != seeds[("retrieval", user.id)]  # other CRSs: their own


def test_an_unknown_degradation_is_named_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "study"
    result = runner.invoke(
        app, ["validate", "sensitivity", str(_config(tmp_path)), "--out", str(out), "--kinds", "sleepy"]
    )
    assert result.exit_code != 0 and "--kinds: unknown degradation 'sleepy'" in result.output
    assert not out.exists()
