"""Diversity, controllability and consistency on synthetic data whose answer is known by construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from crsim.core.errors import DataError
from crsim.eval.scores import ScoreRecord, write_scores
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.user import UserProfile
from crsim.studies.language.consistency import consistency, consistency_report, correlate, dialogue_values
from crsim.studies.language.diversity import controllability, diversity
from crsim.studies.language.measures import DialogueMeasures, Thresholds
from crsim.studies.language.measuring import RuleMeasurer, measure_dialogues, name_groups

VOCABULARY = ["maybe", "some", "film", "with", "good", "music", "and", "a", "calm", "story", "would", "work"]


def sentence(rng: np.random.Generator, words: int) -> str:
    """A plain sentence of exactly `words` words (no formality cues but capitals and a full stop)."""
    chosen = [str(w) for w in rng.choice(VOCABULARY, size=words)]
    return " ".join([chosen[0].capitalize(), *chosen[1:]]) + "."


def dialogue(dialogue_id: str, simulator: str, persona: dict[str, str], texts: list[str]) -> Dialogue:
    utterances = []
    for text in texts:
        utterances += [Utterance(role=Role.USER, text=text), Utterance(role=Role.CRS, text="Noted.")]
    return Dialogue(
        id=dialogue_id,
        simulator_id=simulator,
        user_profile=UserProfile(persona=persona),
        utterances=utterances,
    )


def length_population(
    short_words: tuple[int, int], long_words: tuple[int, int], *, per_level: int = 12, seed: int = 3
) -> list[Dialogue]:
    """Dialogues of `sentence_length` short and long personas, 3 user turns each, word counts drawn
    uniformly from the given ranges (inclusive)."""
    rng = np.random.default_rng(seed)
    dialogues = []
    for level, (low, high) in (("short", short_words), ("long", long_words)):
        for k in range(per_level):
            texts = [sentence(rng, int(rng.integers(low, high + 1))) for _ in range(3)]
            dialogues.append(dialogue(f"{level}-{k}", "recusersim", {"sentence_length": level}, texts))
    return dialogues


async def measured(dialogues: list[Dialogue]) -> list[DialogueMeasures]:
    return await measure_dialogues(dialogues, RuleMeasurer(None), Thresholds(), run="r")


# --- controllability --------------------------------------------------------------------------------


async def test_short_personas_that_write_shorter_show_the_intended_direction() -> None:
    report = controllability(
        await measured(length_population((4, 15), (45, 70))), method="rules", thresholds=Thresholds()
    )
    (result,) = report.results
    assert (result.pattern, result.measure, result.group) == ("sentence_length", "length", "recusersim")
    assert result.levels["short"].counts == {"short": 36, "medium": 0, "long": 0}
    assert result.levels["long"].counts == {"short": 0, "medium": 0, "long": 36}
    test = result.test
    assert (test.low, test.high, test.unit, test.n_low, test.n_high) == ("short", "long", "dialogue", 12, 12)
    assert test.direction == "intended"
    assert test.effect == pytest.approx(1.0)  # every long dialogue is longer than every short one
    assert test.p_value is not None and test.p_value < 1e-4
    assert test.chi2_p is not None and test.chi2_p < 1e-10
    assert test.cramers_v is not None and test.cramers_v > 0.9


async def test_the_mann_whitney_statistic_matches_scipy_on_the_dialogue_means() -> None:
    items = await measured(length_population((10, 30), (15, 45), per_level=9, seed=8))
    test = controllability(items, method="rules", thresholds=Thresholds()).results[0].test
    means = {
        level: [
            float(np.mean([u.words for u in it.utterances]))
            for it in items
            if it.pattern["sentence_length"] == level
        ]
        for level in ("short", "long")
    }
    expected = stats.mannwhitneyu(means["long"], means["short"], alternative="two-sided")
    assert test.mann_whitney_u == pytest.approx(float(expected.statistic))
    assert test.p_value == pytest.approx(float(expected.pvalue))
    assert test.median_low == pytest.approx(float(np.median(means["short"])))


async def test_personas_that_do_not_change_the_length_show_no_effect() -> None:
    """Both levels write exactly the same utterances (shuffled across dialogues)."""
    rng = np.random.default_rng(5)
    texts = [sentence(rng, int(n)) for n in rng.integers(3, 60, size=30)]
    dialogues = []
    for level in ("short", "long"):
        order = rng.permutation(len(texts))
        for k in range(10):
            chunk = [texts[i] for i in order[3 * k : 3 * k + 3]]
            dialogues.append(dialogue(f"{level}-{k}", "sim", {"sentence_length": level}, chunk))
    (result,) = controllability(await measured(dialogues), method="rules", thresholds=Thresholds()).results
    assert result.levels["short"].counts == result.levels["long"].counts
    assert result.test.direction == "no significant effect"
    assert result.test.p_value is not None and result.test.p_value > 0.05
    assert result.test.chi2_p == pytest.approx(1.0)


async def test_personas_that_write_the_wrong_way_show_the_opposite_direction() -> None:
    items = await measured(length_population((45, 70), (4, 15)))
    test = controllability(items, method="rules", thresholds=Thresholds()).results[0].test
    assert test.direction == "opposite"
    assert test.effect == pytest.approx(-1.0)


async def test_formality_and_richness_patterns_are_tested_on_their_own_measures() -> None:
    informal = ["lol yeah gimme something scary!!", "omg sooo cool 😂", "nah dude idk"]
    formal = [
        "Could you please recommend a drama? Thank you.",
        "I would appreciate a documentary, if possible.",
    ]
    rich = ["Tonight with my wife, a comedy under 2 hours on Netflix, not too violent."]
    poor = ["Okay.", "Something else."]
    dialogues = [dialogue(f"i{k}", "s", {"formality": "informal"}, informal) for k in range(4)]
    dialogues += [dialogue(f"f{k}", "s", {"formality": "formal"}, formal) for k in range(4)]
    dialogues += [dialogue(f"h{k}", "s", {"information_richness": "high"}, rich) for k in range(4)]
    dialogues += [dialogue(f"l{k}", "s", {"information_richness": "low"}, poor) for k in range(4)]
    report = controllability(await measured(dialogues), method="rules", thresholds=Thresholds())
    by_pattern = {r.pattern: r for r in report.results}
    assert set(by_pattern) == {"formality", "information_richness"}
    formality = by_pattern["formality"]
    assert list(formality.levels) == ["informal", "formal"]
    assert formality.levels["formal"].counts["formal"] == 8
    assert formality.test.direction == "intended"
    assert formality.unspecified == 8
    richness = by_pattern["information_richness"]
    assert richness.measure == "richness" and richness.test.direction == "intended"
    assert richness.levels["high"].counts == {"low": 0, "high": 4}


async def test_a_pattern_without_one_extreme_level_is_not_testable_and_unknown_levels_are_kept() -> None:
    dialogues = [dialogue(f"m{k}", "s", {"sentence_length": "medium"}, ["A calm story."]) for k in range(3)]
    dialogues += [dialogue(f"x{k}", "s", {"sentence_length": "chatty"}, ["A calm story."]) for k in range(2)]
    dialogues += [dialogue(f"s{k}", "s", {"sentence_length": "short"}, ["A calm story."]) for k in range(2)]
    (result,) = controllability(await measured(dialogues), method="rules", thresholds=Thresholds()).results
    assert list(result.levels) == ["short", "medium", "chatty"]
    assert result.test.direction == "not testable"
    assert result.test.note == "no dialogues with sentence_length = long"


async def test_the_utterance_unit_uses_every_utterance_as_an_observation() -> None:
    items = await measured(length_population((4, 15), (45, 70), per_level=4))
    report = controllability(items, method="rules", thresholds=Thresholds(), unit="utterance")
    test = report.results[0].test
    assert (test.unit, test.n_low, test.n_high) == ("utterance", 12, 12)


# --- diversity ------------------------------------------------------------------------------------


async def test_diversity_gives_uniform_simulators_entropy_one_and_one_note_simulators_zero() -> None:
    rng = np.random.default_rng(2)
    varied = [dialogue(f"v{k}", "varied", {}, [sentence(rng, n) for n in (10, 30, 50)]) for k in range(5)]
    flat = [dialogue(f"f{k}", "flat", {}, [sentence(rng, 5)] * 3) for k in range(5)]
    report = diversity(await measured(varied + flat), method="rules", thresholds=Thresholds(), runs=["r"])
    groups = {g.group: g for g in report.groups}
    assert [g.group for g in report.groups] == ["flat", "varied"]
    assert groups["varied"].distributions["length"].counts == {"short": 5, "medium": 5, "long": 5}
    assert groups["varied"].distributions["length"].entropy == pytest.approx(1.0)
    assert groups["flat"].distributions["length"].entropy == 0.0
    assert (groups["flat"].dialogues, groups["flat"].utterances) == (5, 15)


def test_one_simulator_in_two_runs_becomes_two_groups() -> None:
    items = [
        DialogueMeasures(dialogue_id="a", group="x", simulator_id="sim", run="run1"),
        DialogueMeasures(dialogue_id="b", group="x", simulator_id="sim", run="run2"),
        DialogueMeasures(dialogue_id="c", group="x", simulator_id="other", run="run2"),
        DialogueMeasures(dialogue_id="d", group="x", simulator_id=None, run="run1"),
    ]
    assert [i.group for i in name_groups(items)] == ["sim@run1", "sim@run2", "other", "unknown"]


# --- consistency ----------------------------------------------------------------------------------


def record(
    dialogue_id: str, metric: str, value: float | None, turn: int | None = None, crs: str = "c"
) -> ScoreRecord:
    return ScoreRecord(
        dialogue_id=dialogue_id,
        crs_id=crs,
        simulator_id="s",
        metric=metric,
        value=value,
        turn=turn,
        error=None if value is not None else "unreadable answer",
    )


def test_consistency_of_a_small_case_computed_by_hand() -> None:
    """A = (1, 2, 3), B = (1, 3, 2): deviations (-1, 0, 1) and (-1, 1, 0), so r = 1 / sqrt(2 * 2) = 0.5,
    and Spearman (the values are their own ranks) is 0.5 too. With n = 3 the t statistic
    0.5 * sqrt(1) / sqrt(0.75) = 1/sqrt(3) has one degree of freedom (a Cauchy law), so
    p = 1 - (2/pi) * atan(1/sqrt(3)) = 1 - 1/3 = 2/3. Dialogue d1 in A is turn-level: (0 + 2) / 2 = 1."""
    a = [record("d1", "judge/action", 0.0, turn=1), record("d1", "judge/action", 2.0, turn=2)]
    a += [record("d2", "judge/action", 2.0), record("d3", "judge/action", 3.0)]
    b = [
        record("d1", "judge/action", 1.0),
        record("d2", "judge/action", 3.0),
        record("d3", "judge/action", 2.0),
    ]
    (result,) = consistency(a, b)
    assert (result.metric, result.paired) == ("judge/action", 3)
    assert result.dialogues.pearson_r == pytest.approx(0.5)
    assert result.dialogues.spearman_rho == pytest.approx(0.5)
    assert result.dialogues.pearson_p == pytest.approx(2 / 3)
    assert result.dialogues.spearman_p == pytest.approx(2 / 3)
    assert result.groups.n == 1 and result.groups.note == "fewer than 3 pairs"


def test_missing_pairs_are_counted_never_filled_in() -> None:
    a = [record(f"d{k}", "m", float(k)) for k in range(4)] + [
        record("a-only", "m", 1.0),
        record("b-none", "m", 2.0),
    ]
    a += [record("both-none", "m", None)]
    b = [record(f"d{k}", "m", float(k * k)) for k in range(4)] + [record("b-none", "m", None)]
    b += [record("both-none", "m", None), record("b-only", "m", 3.0)]
    (result,) = consistency(a, b)
    assert (result.paired, result.missing_a, result.missing_b, result.missing_both) == (4, 1, 2, 1)
    assert result.mean_a == pytest.approx(1.5) and result.mean_b == pytest.approx(3.5)


def test_dialogue_values_average_turn_values_and_skip_missing_ones() -> None:
    values = dialogue_values(
        [record("d", "m", 1.0, turn=1), record("d", "m", None, turn=2), record("d", "m", 4.0, turn=3)]
    )
    assert values["m"]["d"] == (pytest.approx(2.5), ("c", "s"))


def test_correlations_are_undefined_for_constant_sides_and_tiny_samples() -> None:
    assert correlate([1.0, 2.0], [2.0, 1.0]).note == "fewer than 3 pairs"
    constant = correlate([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    assert constant.note == "constant values in A" and constant.pearson_r is None


def test_consistency_from_files_matches_scipy_and_groups_average_per_crs(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(3.0, 1.0, size=60)
    y = 0.6 * x + rng.normal(0.0, 0.5, size=60)
    crss = [f"crs{k % 4}" for k in range(60)]
    a = [record(f"d{k}", "judge/rec", float(x[k]), crs=crss[k]) for k in range(60)]
    b = [record(f"d{k}", "judge/rec", float(y[k]), crs=crss[k]) for k in range(60)]
    a.append(record("d0", "only_a", 1.0))
    write_scores(a, tmp_path / "a.jsonl")
    write_scores(b, tmp_path / "b.jsonl")
    report = consistency_report(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    (result,) = report.metrics
    assert report.only_in_a == ["only_a"] and report.only_in_b == []
    pearson, spearman = stats.pearsonr(x, y), stats.spearmanr(x, y)
    assert result.dialogues.pearson_r == pytest.approx(pearson.statistic)
    assert result.dialogues.pearson_p == pytest.approx(pearson.pvalue)
    assert result.dialogues.spearman_rho == pytest.approx(spearman.statistic)
    assert result.dialogues.spearman_p == pytest.approx(spearman.pvalue)
    assert result.dialogues.pearson_r > 0.5
    means_a = [float(np.mean(x[[k for k in range(60) if crss[k] == c]])) for c in sorted(set(crss))]
    means_b = [float(np.mean(y[[k for k in range(60) if crss[k] == c]])) for c in sorted(set(crss))]
    assert result.groups.n == 4
    assert result.groups.pearson_r == pytest.approx(stats.pearsonr(means_a, means_b).statistic)


def test_a_missing_scores_file_is_a_data_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.jsonl"):
        consistency_report(tmp_path / "nope.jsonl", tmp_path / "nope.jsonl")
