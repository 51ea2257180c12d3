"""Paired comparisons between CRSs (crsim.studies.compare): validated on synthetic data where the truth
is known, then pairing, corrections, groups and the command on a real run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import ConfigError
from crsim.studies.compare import (
    ComparisonOptions,
    Observation,
    compare,
    holm,
    letter_groups,
    mcnemar_pvalue,
    min_detectable,
    pair,
    paired_test,
    permutation_pvalues,
    ttest_pvalues,
    users_needed,
)
from report_support import small_run

runner = CliRunner()

SIMULATIONS = 1000
#: A false-positive rate estimated from 1,000 simulations has a binomial SD of 0.0069 at 5%; the
#: band 0.03–0.07 is about three SDs wide on each side.
FPR_BAND = (0.03, 0.07)


def test_the_permutation_test_rejects_a_true_null_about_five_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    # The null: two CRSs that do not differ. Each user has a level of their own (shared by both
    # CRSs), values are skewed (exponential), not normal; 20 users per simulated run.
    level = rng.normal(size=(SIMULATIONS, 20, 1))
    values = level + rng.exponential(size=(SIMULATIONS, 20, 2))
    differences = values[..., 0] - values[..., 1]
    p = np.array([permutation_pvalues(d, seed=i, resamples=999) for i, d in enumerate(differences)])
    assert FPR_BAND[0] <= np.mean(p < 0.05) <= FPR_BAND[1]
    # Under the null the p-values are about uniform, not only at 5%.
    assert abs(np.mean(p < 0.2) - 0.2) < 0.04


def test_above_a_thousand_users_the_paired_t_test_keeps_its_level_and_has_the_theoretical_power() -> None:
    rng = np.random.default_rng(13)
    # Skewed and asymmetric (a centred exponential): at this n the central limit theorem holds.
    null = rng.exponential(size=(SIMULATIONS, 1500)) - 1.0
    assert FPR_BAND[0] <= np.mean(ttest_pvalues(null) < 0.05) <= FPR_BAND[1]
    for effect in (0.04, 0.08):
        p = ttest_pvalues(rng.normal(loc=effect, size=(SIMULATIONS, 1500)))
        expected = TTestPower().power(effect_size=effect, nobs=1500, alpha=0.05, alternative="two-sided")
        assert abs(np.mean(p < 0.05) - expected) < 0.045  # 3 binomial SDs at 1,000 simulations
    assert paired_test(null[0, :1000])[0] == "permutation" and paired_test(null[0, :1001])[0] == "t"
    assert paired_test(np.zeros(2000)) == ("t", 1.0)


def test_the_exact_mcnemar_test_keeps_its_level_on_paired_successes() -> None:
    rng = np.random.default_rng(11)
    # 40 users; both CRSs succeed with the same chance (0.5), correlated within a user (a shared
    # difficulty), so the pairs are dependent as in a real run.
    difficulty = rng.random(size=(SIMULATIONS, 40))
    a = (rng.random(size=difficulty.shape) < difficulty).astype(float)
    b = (rng.random(size=difficulty.shape) < difficulty).astype(float)
    p = np.array([mcnemar_pvalue(x - y) for x, y in zip(a, b, strict=True)])
    rate = np.mean(p < 0.05)
    # Exact tests of discrete data are conservative: at most the nominal 5% (within tolerance).
    assert 0.01 <= rate <= FPR_BAND[1]


@pytest.mark.parametrize(("effect", "n"), [(0.3, 25), (0.6, 25), (0.9, 15)])
def test_power_rises_with_the_effect_as_the_paired_t_test_theory_says(effect: float, n: int) -> None:
    rng = np.random.default_rng(int(effect * 100))
    sims = 300
    differences = rng.normal(loc=effect, scale=1.0, size=(sims, n))
    p = np.array([permutation_pvalues(d, seed=i, resamples=999) for i, d in enumerate(differences)])
    observed = float(np.mean(p < 0.05))
    expected = float(TTestPower().power(effect_size=effect, nobs=n, alpha=0.05, alternative="two-sided"))
    # Binomial SD of a rate from 300 simulations is at most 0.029; 0.09 is three of them.
    assert abs(observed - expected) < 0.09, (observed, expected)


def test_the_minimum_detectable_difference_is_detected_with_eighty_percent_power() -> None:
    sd, n = 2.0, 30
    mde = min_detectable(sd, n)
    assert mde is not None
    rng = np.random.default_rng(5)
    differences = rng.normal(loc=mde, scale=sd, size=(300, n))
    p = np.array([permutation_pvalues(d, seed=i, resamples=999) for i, d in enumerate(differences)])
    assert abs(float(np.mean(p < 0.05)) - 0.8) < 0.08
    # And the users needed for that difference are the n it was computed for.
    assert users_needed(mde, sd) == n
    assert min_detectable(sd, 4 * n) == pytest.approx(mde / 2, rel=0.05)  # ~1/sqrt(n)
    assert min_detectable(0.0, n) is None and min_detectable(sd, 1) is None


def test_holm_adjusts_in_step_down_order() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []


def test_letter_groups_share_a_letter_when_not_significantly_different() -> None:
    order = ["a1", "b2", "c3"]
    assert letter_groups(order, []) == {"a1": "a", "b2": "a", "c3": "a"}
    assert letter_groups(order, [("a1", "c3")]) == {"a1": "a", "b2": "ab", "c3": "b"}
    assert letter_groups(order, [("a1", "b2"), ("a1", "c3"), ("b2", "c3")]) == {
        "a1": "a",
        "b2": "b",
        "c3": "c",
    }
    assert letter_groups(order, [("a1", "b2"), ("a1", "c3")]) == {"a1": "a", "b2": "b", "c3": "b"}


def obs(crs: str, user: str, value: float | None, *, trial: int = 0, evaluable: bool = True) -> Observation:
    return Observation(crs, "sim", "m", user, (trial, 0), value, evaluable)


def test_pairs_drop_broken_dialogues_on_both_sides_and_average_trials_per_user() -> None:
    a = [
        obs("A", "u1", 1.0, trial=0),
        obs("A", "u1", 3.0, trial=1),
        obs("A", "u2", 5.0),
        obs("A", "u3", 1.0, evaluable=False),  # broken by the simulator: u3's pair goes
        obs("A", "u4", None),  # no value: u4's pair goes
        obs("A", "u5", 1.0),  # B never met u5
    ]
    b = [
        obs("B", "u1", 0.0, trial=0),
        obs("B", "u1", 0.0, trial=1),
        obs("B", "u2", 1.0),
        obs("B", "u3", 9.0),
        obs("B", "u4", 0.0),
    ]
    sample = pair(a, b)
    assert sample.users == ["u1", "u2"]
    assert list(sample.differences) == [2.0, 4.0]  # u1: mean of its two trials' differences
    assert (sample.pairs, sample.not_evaluable, sample.missing, sample.unmatched) == (3, 1, 1, 1)
    assert not sample.one_per_user and not sample.binary


def synthetic(effects: dict[str, float], users: int, seed: int) -> list[Observation]:
    """Three CRSs meeting the same users: a shared user difficulty plus the CRS's effect."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(size=users)
    return [
        Observation(crs, "sim", "score", f"u{u}", (0, 0), float(difficulty[u] + effect + noise), True)
        for crs, effect in effects.items()
        for u, noise in enumerate(rng.normal(0, 0.5, size=users))
    ]


def test_compare_finds_the_known_differences_and_groups_the_equal() -> None:
    data = synthetic({"strong": 1.0, "weak": 0.0, "weak_too": 0.0}, users=60, seed=3)
    (result,) = compare(data).results
    by_pair = {(p.crs_a, p.crs_b): p for p in result.pairs}
    assert by_pair[("strong", "weak")].significant and by_pair[("strong", "weak_too")].significant
    assert not by_pair[("weak", "weak_too")].significant
    assert all(p.p_holm is not None and p.p_value is not None and p.p_holm >= p.p_value for p in result.pairs)
    truth = by_pair[("strong", "weak")]
    assert truth.ci_low is not None and truth.ci_high is not None and truth.ci_low < 1.0 < truth.ci_high
    assert truth.test == "permutation" and truth.n_users == 60
    # The paired SD is that of the noise difference (0.5 * sqrt 2), not of the users' spread.
    assert truth.sd == pytest.approx(0.5 * np.sqrt(2), rel=0.25)
    assert result.ranking[0].crs == "strong"
    assert {r.crs: r.group for r in result.ranking} == {"strong": "a", "weak": "b", "weak_too": "b"}
    baseline = compare(data, ComparisonOptions(baseline="weak")).results[0]
    assert [(p.crs_a, p.crs_b) for p in baseline.pairs] == [("weak", "strong"), ("weak", "weak_too")]


def test_binary_metrics_use_mcnemar_and_unknown_names_are_errors() -> None:
    rng = np.random.default_rng(2)
    data = [
        Observation(crs, "sim", "Success", f"u{u}", (0, 0), float(rng.random() < chance), True)
        for crs, chance in (("A", 0.9), ("B", 0.3))
        for u in range(50)
    ]
    (result,) = compare(data).results
    assert result.pairs[0].test == "mcnemar" and result.pairs[0].significant
    with pytest.raises(ConfigError, match="--metrics: no scores for Recall; the runs have Success"):
        compare(data, ComparisonOptions(metrics=["Recall"]))
    with pytest.raises(ConfigError, match="--baseline: no CRS 'C'"):
        compare(data, ComparisonOptions(baseline="C"))


@pytest.fixture(scope="module")
def two_crs_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_run(tmp_path_factory.mktemp("compare") / "run", users=12, crss=["popular", "retrieval"])


def test_the_command_compares_a_run_readably_at_80_columns(two_crs_run: Path) -> None:
    result = runner.invoke(app, ["compare", str(two_crs_run), "--detect", "0.1"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert "Success" in result.output and "popular" in result.output and "retrieval" in result.output
    assert "Holm" in result.output and "80%" in result.output
    as_json = runner.invoke(app, ["compare", str(two_crs_run), "--json", "--metrics", "Success,Turns"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert [r["metric"] for r in data["results"]] == ["Success", "Turns"]
    pair_ = data["results"][0]["pairs"][0]
    assert pair_["n_users"] == 12 and pair_["test"] == "mcnemar"
    bad = runner.invoke(app, ["compare", str(two_crs_run), "--baseline", "nobody"])
    assert bad.exit_code != 0 and "nobody" in bad.output


def test_comparisons_dataframe(two_crs_run: Path) -> None:
    from crsim.report.dataframes import comparisons_df

    frame = comparisons_df(two_crs_run)
    assert {"metric", "crs_a", "crs_b", "difference", "ci_low", "p_holm", "min_detectable"} <= set(
        frame.columns
    )
    assert len(frame) == frame["metric"].nunique()  # two CRSs, one simulator: one pair per metric
    # Requests answered pairs only the users who asked something of both CRSs
    every_user = frame["metric"] != "Requests answered"
    assert (frame.loc[every_user, "n_users"] == 12).all()
    assert (frame.loc[~every_user, "n_users"] <= 12).all()


def test_a_dialogue_broken_by_the_simulator_is_dropped_with_its_pair(
    two_crs_run: Path, tmp_path: Path
) -> None:
    from crsim.report.compare import compare_folders
    from crsim.report.titles import open_run

    run = tmp_path / "run"
    shutil.copytree(two_crs_run, run)
    lines = (run / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[0])
    broken["termination"] = {
        "reason": "user_error",
        "error": {"source": "user", "type": "LLMOutputError", "message": "unreadable answer"},
    }
    lines[0] = json.dumps(broken)
    (run / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = compare_folders([open_run(run)]).comparison
    for result in found.results:
        if result.metric == "Requests answered":  # pairs only the users who asked something of both
            continue
        (pair_,) = result.pairs
        assert (pair_.n_users, pair_.dropped_not_evaluable) == (11, 1), result.metric
        # Only the broken dialogue's CRS loses the user from its mean; the other keeps all 12.
        users = {entry.crs: entry.n_users for entry in result.ranking}
        assert users == {broken["crs_id"]: 11, ({"popular", "retrieval"} - {broken["crs_id"]}).pop(): 12}
    printed = runner.invoke(app, ["compare", str(run), "--metrics", "Success"])
    assert "11 users, 1 pair dropped (1 not evaluable)" in printed.output


def test_runs_are_compared_across_folders_and_a_run_equals_its_copy(
    two_crs_run: Path, tmp_path: Path
) -> None:
    from crsim.report.compare import compare_folders
    from crsim.report.titles import open_run

    shutil.copytree(two_crs_run, tmp_path / "copy")
    found = compare_folders(
        [open_run(two_crs_run), open_run(tmp_path / "copy")], ComparisonOptions(baseline="popular [run]")
    )
    success = next(r for r in found.comparison.results if r.metric == "Success")
    by_b = {p.crs_b: p for p in success.pairs}
    assert set(by_b) == {"retrieval [run]", "popular [copy]", "retrieval [copy]"}
    same = by_b["popular [copy]"]
    assert (same.difference, same.p_value, same.significant, same.n_users) == (0.0, 1.0, False, 12)
    assert found.notes == []


def test_a_run_without_scores_is_named(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text('{"config": {}}', encoding="utf-8")
    (run / "dialogues.jsonl").write_text("", encoding="utf-8")
    result = runner.invoke(app, ["compare", str(run)])
    assert result.exit_code != 0 and "scores.jsonl" in result.output and "crsim evaluate" in result.output


def test_observations_average_turn_values_per_dialogue_and_skip_dialogues_without_user() -> None:
    from crsim.eval.scores import ScoreRecord
    from crsim.model import Dialogue
    from crsim.studies.compare import observations

    dialogues = [
        Dialogue(id="d1", crs_id="A", simulator_id="s", user_id="u1"),
        Dialogue(id="d2", crs_id="A", simulator_id="s", user_id="u1"),  # the user's second occurrence
        Dialogue(id="d3", crs_id="A", simulator_id="s"),  # no user: cannot be paired
    ]

    def record(dialogue: str, value: float | None, turn: int | None = None) -> ScoreRecord:
        return ScoreRecord(
            dialogue_id=dialogue, crs_id="A", simulator_id="s", metric="m", value=value, turn=turn
        )

    records = [record("d1", 1.0, 1), record("d1", None, 2), record("d1", 3.0, 3), record("d2", 5.0)]
    records += [record("d3", 1.0), record("unknown", 1.0)]
    found = sorted(observations(dialogues, records), key=lambda o: o.unit)
    assert [(o.user, o.unit, o.value) for o in found] == [("u1", (0, 0), 2.0), ("u1", (0, 1), 5.0)]


def test_no_root_for_the_users_needed_is_none_without_a_warning() -> None:
    # A difference 100 SDs wide needs fewer than two users: statsmodels finds no root and warns. In a
    # fresh process, because statsmodels installs an "always" filter the first time it warns.
    code = (
        "from crsim.studies.compare import users_needed, min_detectable\n"
        "print(users_needed(100.0, 1.0), users_needed(0.5, 1.0), min_detectable(1.0, 2) is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "34", "True"] and "Warning" not in done.stderr


def test_one_person_simulated_under_several_ids_counts_once() -> None:
    a = [Observation("A", "s", "m", uid, (0, 0), v, True, "p1") for uid, v in (("p1", 1.0), ("p1#2", 3.0))]
    b = [Observation("B", "s", "m", uid, (0, 0), 0.0, True, "p1") for uid in ("p1", "p1#2")]
    sample = pair([*a, obs("A", "u2", 1.0)], [*b, obs("B", "u2", 0.0)])
    assert sample.users == ["p1", "u2"] and list(sample.differences) == [2.0, 1.0] and sample.pairs == 3


def test_the_ranking_gives_the_run_to_run_spread_over_trials_and_the_text_shows_it() -> None:
    from crsim.report.compare import FolderComparison, comparison_lines

    found = [obs("a", f"u{k}", float(trial), trial=trial) for k in range(4) for trial in (0, 1, 2)]
    found += [obs("b", f"u{k}", 0.5, trial=trial) for k in range(4) for trial in (0, 1, 2)]
    (metric,) = compare(found).results
    entries = {e.crs: e for e in metric.ranking}
    assert entries["a"].trials == 3 and entries["a"].trial_sd == pytest.approx(1.0)  # means 0, 1, 2
    assert entries["b"].trial_sd == pytest.approx(0.0)
    lines = comparison_lines(FolderComparison(compare(found)))
    (header,) = [line for line in lines if "rank" in line and "CRS" in line]
    assert "trial SD" in header and all(len(line) <= 80 for line in lines)
    first = [o for o in found if o.unit[0] == 0]
    (single,) = compare(first).results
    assert all(e.trials == 1 and e.trial_sd is None for e in single.ranking)
    (header,) = [line for line in comparison_lines(FolderComparison(compare(first))) if "rank" in line]
    assert "trial SD" not in header


def test_compare_ranks_turns_by_its_declared_direction(two_crs_run: Path) -> None:
    """Turns declares lower is better (docs/metrics.md): the CRS with the shorter dialogues ranks first
    and wins a significant difference; Success stays higher-first. The directions come from the
    summary.json the evaluation wrote, not from building the metrics again."""
    from crsim.model.run_folder import open_run
    from crsim.report.compare import compare_folders

    recorded = open_run(two_crs_run).metric_metadata()
    assert recorded is not None and recorded["Turns"].direction == "lower"
    assert recorded["Success"].direction == "higher"
    found = compare_folders([open_run(two_crs_run)])
    by_metric = {r.metric: r for r in found.comparison.results}
    turns, success = by_metric["Turns"], by_metric["Success"]
    assert turns.direction == "lower" and turns.direction_recorded
    means = [entry.mean for entry in turns.ranking]
    assert means == sorted(means) and means[0] != means[-1]  # lower first, and the runs differ
    assert [entry.rank for entry in turns.ranking] == [1, 2]
    pair_ = turns.pairs[0]
    lower = turns.ranking[0].crs
    assert pair_.winner == (lower if pair_.significant else None)
    assert [e.mean for e in success.ranking] == sorted((e.mean for e in success.ranking), reverse=True)
    (verdict,) = found.comparison.verdicts
    counted = verdict.wins_a + verdict.wins_b + verdict.ties + verdict.undirected
    assert counted == len(found.comparison.results) == len(verdict.metrics)
    turns_entry = next(e for e in verdict.metrics if e.metric == "Turns")
    assert (turns_entry.winner, turns_entry.p_holm) == (pair_.winner, pair_.p_holm)
    shown = runner.invoke(app, ["compare", str(two_crs_run)], env={"COLUMNS": "80"})
    assert "lower is better" in shown.output and "Verdicts across metrics" in shown.output


def test_a_win_follows_the_direction_and_none_has_no_winner() -> None:
    """Synthetic data: B is 0.5 above A for 200 users on three metrics read three ways."""
    rng = np.random.default_rng(3)
    data = []
    for metric in ("Up", "Down", "Flat"):
        for user in range(200):
            base = float(rng.normal())
            data.append(replace(obs("A", f"u{user}", base), metric=metric))
            data.append(replace(obs("B", f"u{user}", base + 0.5), metric=metric))
    found = compare(data, directions={"Up": "higher", "Down": "lower", "Flat": "none"})
    winners = {r.metric: r.pairs[0].winner for r in found.results}
    assert winners == {"Up": "B", "Down": "A", "Flat": None}
    firsts = {r.metric: r.ranking[0].crs for r in found.results}
    assert firsts == {"Up": "B", "Down": "A", "Flat": "B"}
    (verdict,) = found.verdicts
    assert (verdict.wins_a, verdict.wins_b, verdict.ties, verdict.undirected) == (1, 1, 0, 1)
    assert all(e.p_holm is not None and e.p_holm < 0.05 for e in verdict.metrics)
    unknown = compare(data, ComparisonOptions(metrics=["Down"]))
    assert unknown.results[0].direction == "higher" and not unknown.results[0].direction_recorded
