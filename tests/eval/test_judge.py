"""The rubric judge and the `judge` evaluator, with the scripted provider standing in for the model
(its script sees every request), plus an unreachable OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.eval.judge.evaluator import JudgeEvaluator
from crsim.eval.judge.judge import NO_CRS_TURN, NO_PREFERENCES, NO_UTTERANCES, Sample, combine
from crsim.eval.judge.transcript import crs_turns, fit, general_preferences, lines
from crsim.eval.metrics.base import NotApplicable, Value, metric_registry
from crsim.eval.scores import build_metrics
from crsim.eval.scoring import evaluate_dialogue
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.user import SlotPreferences, UserProfile
from llm_servers import closed_port_url
from support import ScriptedHub

Script = Callable[[list[Message], ResolvedGeneration], str | BaseException]


def grade(score: int, why: str = "it is shown in the conversation") -> str:
    return json.dumps({"justification": why, "score": score})


def evaluator(
    script: Script, cache: Path | None = None, **args: Any
) -> tuple[JudgeEvaluator, ScriptedProvider]:
    provider = ScriptedProvider(script)
    return JudgeEvaluator(
        JudgeEvaluator.Params(**args), BuildContext(llms=ScriptedHub(provider, cache))
    ), provider


def aspect_of(messages: list[Message]) -> str:
    found = re.search(r"You grade one aspect: ([a-z ]+)\.", messages[1]["content"])
    assert found, messages[1]["content"]
    return found.group(1).replace(" ", "_")


def utterance(role: str, text: str, **fields: Any) -> Utterance:
    return Utterance(role=Role(role), text=text, **fields)


def movie_dialogue(dialogue_id: str = "popular/llm_single/u1", **fields: Any) -> Dialogue:
    return Dialogue(
        id=dialogue_id,
        crs_id="popular",
        simulator_id="llm_single",
        user_id="u1",
        utterances=[
            utterance("crs", "Hello! What would you like to watch?"),
            utterance("user", "A funny movie, please."),
            utterance("crs", "How about Groundhog Day (1993)?", recommended_items=["m1"]),
            utterance("user", "Seen it. Something newer?"),
            utterance(
                "crs", "Then try Game Night (2018) or Booksmart (2019).", recommended_items=["m2", "m3"]
            ),
            utterance("user", "Booksmart sounds great, thanks!"),
        ],
        **fields,
    )


def values_by_aspect(values: list[Value]) -> dict[str, Value]:
    return {v.aspect or "": v for v in values if v.turn is None}


# --- scoring ---------------------------------------------------------------------------------------


async def test_quality5_scores_every_aspect_with_its_justification() -> None:
    scores = {
        "recommendation_relevance": 4,
        "communication_style": 5,
        "fluency": 3,
        "conversational_flow": 2,
        "overall_satisfaction": 1,
    }
    judge, provider = evaluator(lambda m, _g: grade(scores[aspect_of(m)], f"why {aspect_of(m)}"))
    values = await judge.evaluate(movie_dialogue())
    assert judge.label == "quality5" and judge.record_label("fluency") == "quality5/fluency"
    assert [v.aspect for v in values] == list(scores)
    for value in values:
        assert value.value == scores[value.aspect or ""] and value.turn is None and value.error is None
        assert value.explanation == f"why {value.aspect}"
    assert len(provider.requests) == 5


async def test_each_question_carries_the_schema_and_levels_of_its_aspect() -> None:
    judge, provider = evaluator(
        lambda _m, _g: grade(1), rubric="crsarena7", aspects=["relevance", "efficiency"]
    )
    await judge.evaluate(movie_dialogue())
    enums = {}
    for messages, generation in provider.requests:
        assert generation.json_schema is not None
        assert list(generation.json_schema["properties"]) == ["justification", "score"]
        enums[aspect_of(messages)] = generation.json_schema["properties"]["score"]["enum"]
        assert '"justification"' in messages[0]["content"]
    assert enums == {"relevance": [0, 1, 2, 3], "efficiency": [0, 1]}
    relevance = next(m for m, _ in provider.requests if aspect_of(m) == "relevance")[1]["content"]
    for score, text in judge.rubric.aspects["relevance"].described_levels():
        assert f"{score} = {text}" in relevance


async def test_a_fenced_json_answer_is_read() -> None:
    judge, _ = evaluator(lambda _m, _g: "```json\n" + grade(4) + "\n```", aspects=["fluency"])
    (value,) = await judge.evaluate(movie_dialogue())
    assert value.value == 4.0 and value.error is None


async def test_an_answer_outside_the_levels_is_repaired_once() -> None:
    answers = [grade(9), grade(2)]
    judge, provider = evaluator(lambda _m, _g: answers.pop(0), aspects=["fluency"])
    (value,) = await judge.evaluate(movie_dialogue())
    assert value.value == 2.0
    assert len(provider.requests) == 2
    repair = provider.requests[1][0]
    assert repair[-2]["content"] == grade(9) and "could not be read" in repair[-1]["content"]


async def test_an_unreadable_answer_is_an_error_value_never_a_number() -> None:
    judge, _ = evaluator(lambda _m, _g: "I would say it is quite good overall.", aspects=["fluency"])
    dialogue = movie_dialogue()
    (value,) = await judge.evaluate(dialogue)
    assert value.value is None
    assert value.error is not None and value.error.startswith("LLMOutputError: unreadable answer")
    assert value.raw == "I would say it is quite good overall."
    (record,) = await evaluate_dialogue(dialogue, judge)
    assert record.metric == "quality5/fluency" and record.value is None
    assert record.missing_reason == "error: LLMOutputError" and record.raw == value.raw


# --- samples ---------------------------------------------------------------------------------------


def by_seed(answers: list[str]) -> Script:
    """Answer by the order in which seeds first appear (a repair reuses its sample's seed)."""
    seen: list[int | None] = []

    def script(_messages: list[Message], generation: ResolvedGeneration) -> str:
        if generation.seed not in seen:
            seen.append(generation.seed)
        return answers[seen.index(generation.seed)]

    return script


async def test_samples_use_distinct_seeds_and_their_mean_is_the_value() -> None:
    judge, provider = evaluator(
        by_seed([grade(3, "a"), grade(4, "b"), grade(5, "c")]), aspects=["fluency"], samples=3
    )
    (value,) = await judge.evaluate(movie_dialogue())
    assert value.value == pytest.approx(4.0) and value.error is None
    assert len({g.seed for _, g in provider.requests}) == 3 == len(provider.requests)
    assert value.explanation is not None and value.explanation.startswith(
        "mean of 3 of 3 readable samples (3, 4, 5)"
    )
    assert "[1] a" in value.explanation and "[3] c" in value.explanation


async def test_a_failed_sample_is_left_out_of_the_mean_and_reported() -> None:
    judge, _ = evaluator(by_seed([grade(2), "not json", grade(5)]), aspects=["fluency"], samples=3)
    (value,) = await judge.evaluate(movie_dialogue())
    assert value.value == pytest.approx(3.5) and value.error is None
    assert value.explanation is not None
    assert value.explanation.startswith("mean of 2 of 3 readable samples (2, 5)")
    assert "sample 2: LLMOutputError" in value.explanation


async def test_no_readable_sample_gives_an_error_and_no_number() -> None:
    judge, _ = evaluator(lambda _m, _g: "no idea", aspects=["fluency"], samples=3)
    (value,) = await judge.evaluate(movie_dialogue())
    assert value.value is None
    assert value.error is not None and value.error.startswith(
        "LLMOutputError: no readable answer in 3 samples"
    )
    assert value.raw is not None and "[sample 3] no idea" in value.raw


def test_combine_counts_readable_samples() -> None:
    score = combine(
        [Sample(1, "x", "r1"), Sample(None, None, None, "LLMTimeout: no answer"), Sample(2, "y", "r3")]
    )
    assert (score.value, score.samples, score.readable, score.scores) == (1.5, 3, 2, (1, 2))
    failed = combine([Sample(None, None, None, "LLMTimeout: no answer within 1 s")])
    assert (
        failed.value is None and failed.error == "LLMTimeout: no answer within 1 s" and failed.readable == 0
    )


async def test_samples_are_cached_separately(tmp_path: Path) -> None:
    cache = tmp_path / "llm_cache.sqlite"
    first, provider = evaluator(
        by_seed([grade(1), grade(2), grade(3)]), cache, aspects=["fluency"], samples=3
    )
    (value,) = await first.evaluate(movie_dialogue())
    assert value.value == pytest.approx(2.0) and len(provider.requests) == 3
    again, fresh = evaluator(lambda _m, _g: grade(5), cache, aspects=["fluency"], samples=3)
    (cached,) = await again.evaluate(movie_dialogue())
    assert cached.value == pytest.approx(2.0) and fresh.requests == []


# --- failures --------------------------------------------------------------------------------------


async def test_an_unreachable_endpoint_gives_error_values_per_dialogue() -> None:
    settings = LLMSettings(
        default=ModelConfig(provider="openai", model="m", base_url=closed_port_url() + "/v1", max_retries=0),
        cache=CacheConfig(mode="off"),
    )
    hub = LLMHub(settings)
    try:
        (judge,) = build_metrics(
            [ComponentSpec(name="judge", args={"rubric": "quality5"})], BuildContext(llms=hub)
        )
        assert isinstance(judge, JudgeEvaluator)
        for dialogue_id in ("popular/llm_single/u1", "popular/llm_single/u2"):
            records = await evaluate_dialogue(movie_dialogue(dialogue_id), judge)
            assert [r.metric for r in records] == [f"quality5/{a}" for a in judge.rubric.aspects]
            for record in records:
                assert record.dialogue_id == dialogue_id and record.value is None
                assert record.missing_reason == "error: LLMConnectionError"
                assert record.error is not None and "cannot reach" in record.error
    finally:
        await hub.aclose()


async def test_a_dialogue_without_utterances_is_not_applicable() -> None:
    judge, provider = evaluator(lambda _m, _g: grade(1))
    with pytest.raises(NotApplicable) as caught:
        await judge.evaluate(Dialogue(id="empty", utterances=[utterance("user", "   ")]))
    assert caught.value.reason == NO_UTTERANCES and provider.requests == []


# --- turn level ------------------------------------------------------------------------------------


def turn_script(messages: list[Message], _generation: ResolvedGeneration) -> str:
    """Turn-level grades by the reply shown; dialogue-level ones fixed."""
    task = messages[1]["content"]
    turn = re.search(r"The CRS reply to grade \(turn (\d+)\):\n(.*)\n", task)
    if turn is None:
        return grade(1)
    aspect = aspect_of(messages)
    reply = turn.group(2)
    if "Groundhog" in reply:
        return grade(3 if aspect == "relevance" else 0)
    if "Booksmart" in reply:
        return grade(1 if aspect == "relevance" else 2)
    raise AssertionError(f"unexpected reply to grade: {reply}")


async def test_crsarena7_turn_values_land_on_their_turns() -> None:
    judge, provider = evaluator(turn_script, rubric="crsarena7")
    values = await judge.evaluate(movie_dialogue())
    turned = {(v.aspect, v.turn): v.value for v in values if v.turn is not None}
    assert turned == {
        ("relevance", 1): 3.0,
        ("relevance", 2): 1.0,
        ("interestingness", 1): 0.0,
        ("interestingness", 2): 2.0,
    }
    assert set(values_by_aspect(values)) == {
        "understanding",
        "task_completion",
        "interest_arousal",
        "efficiency",
        "overall",
    }
    # the last user utterance got no reply: no turn 3; the greeting is context, never graded alone
    second = next(
        m[1]["content"]
        for m, _ in provider.requests
        if "(turn 2)" in m[1]["content"] and aspect_of(m) == "relevance"
    )
    context = second.split("The CRS reply to grade")[0]
    assert "Hello! What would you like" in context and "Seen it. Something newer?" in context
    assert "Booksmart sounds great" not in second
    assert len(provider.requests) == 4 + 5


async def test_turn_values_reach_score_records_with_their_turn() -> None:
    judge, _ = evaluator(turn_script, rubric="crsarena7", aspects=["relevance"])
    records = await evaluate_dialogue(movie_dialogue(), judge)
    assert [(r.metric, r.turn, r.value) for r in records] == [
        ("crsarena7/relevance", 1, 3.0),
        ("crsarena7/relevance", 2, 1.0),
    ]


async def test_turn_aspects_without_a_crs_reply_have_no_value() -> None:
    judge, _ = evaluator(lambda _m, _g: grade(1), rubric="crsarena7", aspects=["relevance", "overall"])
    only_user = Dialogue(id="d", utterances=[utterance("crs", "Hi there."), utterance("user", "Bye.")])
    values = await judge.evaluate(only_user)
    relevance = next(v for v in values if v.aspect == "relevance")
    assert relevance.value is None and relevance.turn is None and relevance.explanation == NO_CRS_TURN
    assert next(v for v in values if v.aspect == "overall").value == 1.0


def test_crs_turns_group_replies_and_skip_the_opening() -> None:
    dialogue = Dialogue(
        id="d",
        utterances=[
            utterance("crs", "Welcome."),
            utterance("user", "Hi."),
            utterance("crs", "What genre?"),
            utterance("crs", "Or an actor?"),
            utterance("user", "Comedy."),
            utterance("crs", ""),
            utterance("user", "Hello?"),
            utterance("crs", "Try Heat."),
        ],
    )
    turns = crs_turns(dialogue)
    assert [(t.turn, [u.text for u in t.reply]) for t in turns] == [
        (1, ["What genre?", "Or an actor?"]),
        (3, ["Try Heat."]),
    ]
    assert [u.text for u in turns[1].context][-1] == "Hello?"


# --- preferences -----------------------------------------------------------------------------------


async def test_pepper3_shows_the_general_preferences_from_the_persona() -> None:
    profile = UserProfile(persona={"general_preferences": "Loves witty coming-of-age comedies; avoids gore."})
    judge, provider = evaluator(lambda _m, _g: grade(4), rubric="pepper3")
    values = await judge.evaluate(movie_dialogue(user_profile=profile))
    assert [v.aspect for v in values] == ["proactiveness", "coherence", "personalization"]
    assert all(v.value == 4.0 for v in values)
    for messages, _ in provider.requests:
        assert (
            "The user's general preferences:\nLoves witty coming-of-age comedies; avoids gore."
            in messages[1]["content"]
        )


async def test_pepper3_describes_likes_and_dislikes_when_there_is_no_persona_text() -> None:
    profile = UserProfile(
        preferences={
            "genres": SlotPreferences(likes=["Comedy", "Romance"], dislikes=["Horror"]),
            "actors": SlotPreferences(likes=["Bill Murray"]),
        }
    )
    judge, provider = evaluator(lambda _m, _g: grade(3), rubric="pepper3", aspects=["personalization"])
    await judge.evaluate(movie_dialogue(user_profile=profile))
    (request,) = provider.requests
    assert (
        "Likes: genres: Comedy, Romance; actors: Bill Murray\nDislikes: genres: Horror"
        in request[0][1]["content"]
    )


async def test_pepper3_without_preferences_is_not_applicable() -> None:
    judge, provider = evaluator(lambda _m, _g: grade(3), rubric="pepper3")
    dialogue = movie_dialogue(user_profile=UserProfile(persona={"mean_rating": 3.5}))
    with pytest.raises(NotApplicable) as caught:
        await judge.evaluate(dialogue)
    assert caught.value.reason == NO_PREFERENCES and "pepper3" in caught.value.detail
    (record,) = await evaluate_dialogue(movie_dialogue(), judge)
    assert record.metric == "pepper3" and record.value is None and record.missing_reason == NO_PREFERENCES
    assert provider.requests == []


def test_general_preferences_accepts_lists_of_texts() -> None:
    listed = movie_dialogue(
        user_profile=UserProfile(persona={"general_preferences": ["Likes jazz", "Hates sequels"]})
    )
    assert general_preferences(listed) == "- Likes jazz\n- Hates sequels"
    assert general_preferences(movie_dialogue()) is None


async def test_quality5_does_not_show_preferences_and_recusersim3_does_when_known() -> None:
    profile = UserProfile(persona={"general_preferences": "Enjoys surprises."})
    quality, q_provider = evaluator(lambda _m, _g: grade(3), aspects=["fluency"])
    await quality.evaluate(movie_dialogue(user_profile=profile))
    assert "general preferences" not in q_provider.requests[0][0][1]["content"]
    recusersim, r_provider = evaluator(
        lambda _m, _g: grade(1), rubric="recusersim3", aspects=["language_quality"]
    )
    await recusersim.evaluate(movie_dialogue(user_profile=profile))
    assert "Enjoys surprises." in r_provider.requests[0][0][1]["content"]
    await recusersim.evaluate(movie_dialogue())  # optional: judged without them too
    assert "general preferences" not in r_provider.requests[1][0][1]["content"]


# --- recusersim3: the derived recommendation quality -----------------------------------------------


async def test_recommendation_quality_is_objective_plus_modifier() -> None:
    scores = {
        "language_quality": 4,
        "action_quality": 3,
        "recommendation_objective": 4,
        "recommendation_modifier": -1,
    }
    judge, _ = evaluator(
        lambda m, _g: grade(scores[aspect_of(m)], f"{aspect_of(m)} reason"), rubric="recusersim3"
    )
    values = values_by_aspect(await judge.evaluate(movie_dialogue()))
    assert list(values) == [*scores, "recommendation_quality"]
    quality = values["recommendation_quality"]
    assert quality.value == 3.0 and quality.error is None
    assert quality.explanation is not None
    assert quality.explanation.startswith("recommendation_objective 4 + recommendation_modifier -1 = 3")
    assert "recommendation_modifier reason" in quality.explanation


async def test_recommendation_quality_has_no_value_when_a_part_has_none() -> None:
    def script(messages: list[Message], _g: ResolvedGeneration) -> str:
        return "garbled" if aspect_of(messages) == "recommendation_modifier" else grade(4)

    judge, provider = evaluator(script, rubric="recusersim3", aspects=["recommendation_quality"])
    values = values_by_aspect(await judge.evaluate(movie_dialogue()))
    assert list(values) == ["recommendation_objective", "recommendation_modifier", "recommendation_quality"]
    quality = values["recommendation_quality"]
    assert quality.value is None
    assert quality.error is not None
    assert quality.error.startswith(
        "LLMOutputError: part 'recommendation_modifier' of 'recommendation_quality'"
    )
    assert {aspect_of(m) for m, _ in provider.requests} == {
        "recommendation_objective",
        "recommendation_modifier",
    }


# --- parameters and registration -------------------------------------------------------------------


def test_params_are_checked_when_the_config_is_read(tmp_path: Path) -> None:
    assert metric_registry.get("judge") is JudgeEvaluator
    with pytest.raises(
        ConfigError, match=r"metrics\[0\]\.args\.rubric: .*rubric 'nosuch': neither a shipped"
    ):
        metric_registry.params("judge", {"rubric": "nosuch"}, where="metrics[0]")
    with pytest.raises(ConfigError, match=r"'charm' is not an aspect of rubric 'quality5'"):
        metric_registry.params("judge", {"aspects": ["fluency", "charm"]}, where="metrics[0]")
    with pytest.raises(ConfigError, match=r"args\.samples"):
        metric_registry.params("judge", {"samples": 0}, where="metrics[0]")
    with pytest.raises(ConfigError, match=r"args\.prompt"):
        metric_registry.params("judge", {"prompt": "missing.j2"}, where="metrics[0]")
    with pytest.raises(ConfigError, match=r"unknown argument"):
        metric_registry.params("judge", {"rubrik": "quality5"}, where="metrics[0]")
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "name: b\ndescription: d\naspects:\n  a: {description: x, scale: [1, 2], levels: {1: low}}\n"
    )
    with pytest.raises(ConfigError, match=r"broken\.yaml: aspect 'a': level 2 is missing"):
        metric_registry.params("judge", {"rubric": str(broken)}, where="metrics[0]")


def test_the_evaluator_declares_its_role_and_needs_a_model() -> None:
    params = JudgeEvaluator.Params(role="grader")
    assert JudgeEvaluator.needs_llm and JudgeEvaluator.llm_roles(params) == ["grader"]
    with pytest.raises(ConfigError, match=r"uses a language model"):
        build_metrics([ComponentSpec(name="judge")])


async def test_a_user_rubric_and_generation_settings_are_used(tmp_path: Path) -> None:
    rubric = tmp_path / "tiny.yaml"
    rubric.write_text(
        "name: tiny\ndescription: Judges politeness.\naspects:\n"
        "  politeness:\n    description: Whether the CRS is polite.\n    scale: [0, 1]\n"
        "    levels: {0: rude, 1: polite}\n",
        encoding="utf-8",
    )
    judge, provider = evaluator(lambda _m, _g: grade(1), rubric=str(rubric), temperature=0.0, max_tokens=64)
    (value,) = await judge.evaluate(movie_dialogue())
    assert judge.label == "tiny" and value.aspect == "politeness" and value.value == 1.0
    generation = provider.requests[0][1]
    assert generation.temperature == 0.0 and generation.max_tokens == 64


# --- transcripts -----------------------------------------------------------------------------------


def test_transcript_lines_mark_recommendations() -> None:
    shown = lines(movie_dialogue().utterances)
    assert shown[0] == "CRS: Hello! What would you like to watch?"
    assert shown[2] == "CRS (recommends 1 item): How about Groundhog Day (1993)?"
    assert shown[4] == "CRS (recommends 2 items): Then try Game Night (2018) or Booksmart (2019)."
    assert shown[5] == "USER: Booksmart sounds great, thanks!"


def test_long_transcripts_leave_out_whole_utterances() -> None:
    shown = [f"USER: message number {i:02d}" for i in range(20)]
    whole = "\n".join(shown)
    assert fit(shown, len(whole)) == whole
    cut = fit(shown, 150)
    kept = cut.splitlines()
    assert kept[0] == shown[0] and kept[-1] == shown[-1]
    assert any(line.startswith("[... ") and "left out" in line for line in kept)
    assert (
        sum(1 for line in kept if line.startswith("USER:")) + int(re.findall(r"(\d+) utterance", cut)[0])
        == 20
    )
    recent = fit(shown, 100, keep="last").splitlines()
    assert recent[-1] == shown[-1] and recent[0].startswith("[... ") and shown[0] not in recent


# --- facts of the record, and answers checked against them ---------------------------------------


def questions_only_dialogue() -> Dialogue:
    """Three eliciting questions and no recommendation."""
    return Dialogue(
        id="llm/llm_single/u2",
        crs_id="llm",
        simulator_id="llm_single",
        user_id="u2",
        utterances=[
            utterance("crs", "Hi! What are you in the mood for?"),
            utterance("user", "A comedy."),
            utterance("crs", "Any actor you like?"),
            utterance("user", "Bill Murray."),
            utterance("crs", "From which decade?"),
            utterance("user", "The nineties. Bye!"),
        ],
    )


async def test_relevance_when_nothing_was_recommended_is_the_lowest_level_and_says_so() -> None:
    why = "The CRS recommended Groundhog Day, which fits the request perfectly."
    judge, provider = evaluator(lambda _m, _g: grade(5, why))
    values = values_by_aspect(await judge.evaluate(questions_only_dialogue()))
    relevance = values["recommendation_relevance"]
    assert relevance.value == 1 and relevance.error is None
    assert relevance.explanation is not None and relevance.explanation.startswith("rubric rule: nothing")
    assert "the judge answered 5" in relevance.explanation and why in relevance.explanation
    assert relevance.raw is not None and '"score": 5' in relevance.raw
    # aspects without the rule keep the judge's answer untouched
    assert values["fluency"].value == 5 and values["fluency"].explanation == why
    # the judge was shown that nothing was recommended, and how many questions were asked
    prompt = provider.requests[0][0][1]["content"]
    assert "No item was recommended" in prompt
    assert "asked a question in 3 of its 3 messages" in prompt
    # with a recommendation, the rule does not apply and the facts list it with its turn
    judge, provider = evaluator(lambda _m, _g: grade(5, why))
    values = values_by_aspect(await judge.evaluate(movie_dialogue()))
    assert values["recommendation_relevance"].value == 5
    assert values["recommendation_relevance"].explanation == why
    prompt = provider.requests[0][0][1]["content"]
    assert "No item was recommended" not in prompt and "turn 1: an item" in prompt


async def test_the_rule_applies_per_reply_for_turn_level_aspects(tmp_path: Path) -> None:
    rubric = tmp_path / "turns.yaml"
    rubric.write_text(
        "name: turns\ndescription: Per reply.\naspects:\n  fit:\n    description: How well it fits.\n"
        "    level: turn\n    scale: [0, 2]\n    levels: {0: not at all, 1: partly, 2: fully}\n"
        "    without_recommendation: 0\n",
        encoding="utf-8",
    )
    judge, _ = evaluator(lambda _m, _g: grade(2), rubric=str(rubric))
    values = {v.turn: v for v in await judge.evaluate(movie_dialogue())}
    # turn 1 and 2 recommend, turn 3 (after "Booksmart sounds great") has no reply
    assert [values[t].value for t in (1, 2)] == [2, 2]
    questions = {v.turn: v for v in await judge.evaluate(questions_only_dialogue())}
    assert [questions[t].value for t in (1, 2)] == [0, 0]
    assert all("reply of turn" in (v.explanation or "") for v in questions.values())


def test_a_rule_level_outside_the_scale_is_a_config_error(tmp_path: Path) -> None:
    from crsim.eval.judge.rubric import load_rubric

    rubric = tmp_path / "bad.yaml"
    rubric.write_text(
        "name: bad\ndescription: x\naspects:\n  fit:\n    description: x\n    scale: [1, 3]\n"
        "    levels: {1: a, 2: b, 3: c}\n    without_recommendation: 0\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="without_recommendation 0 is outside the scale"):
        load_rubric(rubric)


async def test_a_justification_naming_items_never_recommended_is_flagged() -> None:
    from crsim.eval.judge.judge import RubricJudge
    from crsim.eval.judge.rubric import load_rubric
    from crsim.model.items import Item, ItemCollection

    items = ItemCollection(
        [
            Item(id="m1", title="Groundhog Day", year=1993),
            Item(id="m2", title="Game Night", year=2018),
            Item(id="m3", title="Booksmart", year=2019),
            Item(id="m9", title="The Big Lebowski", year=1998),
        ],
        name="tiny",
    )
    why = "Groundhog Day and The Big Lebowski both fit the request."
    provider = ScriptedProvider(lambda _m, _g: grade(4, why))
    judge = RubricJudge(
        load_rubric("quality5"),
        ScriptedHub(provider).role("judge"),
        aspects=["recommendation_relevance"],
        items=items,
    )
    (found,) = await judge.judge(movie_dialogue())
    assert found.score.value == 4
    assert found.score.explanation == (
        "flag: the justification names The Big Lebowski (1998), which the CRS never recommended. "
        f"Judge: {why}"
    )
    # the facts name the recommended items by their catalogue titles
    prompt = provider.requests[0][0][1]["content"]
    assert "turn 1: Groundhog Day (1993); turn 2: Game Night (2018), Booksmart (2019)" in prompt


async def test_pepper3_proactiveness_at_the_lowest_level_despite_questions_is_flagged() -> None:
    dialogue = questions_only_dialogue()
    dialogue.user_profile = UserProfile(persona={"general_preferences": "Likes comedies."})
    judge, provider = evaluator(lambda _m, _g: grade(1, "The CRS only reacts."), rubric="pepper3")
    values = values_by_aspect(await judge.evaluate(dialogue))
    proactive = values["proactiveness"]
    assert proactive.value == 1 and proactive.explanation == (
        "flag: the lowest level of proactiveness, though the CRS asked a question in 3 of its 3 "
        "messages. Judge: The CRS only reacts."
    )
    assert "asked a question in 3 of its 3 messages" in provider.requests[0][0][1]["content"]
    # personalization without any recommendation: the rubric's rule
    assert values["personalization"].value == 1
    assert (values["personalization"].explanation or "").startswith("rubric rule: nothing was recommended")
    # coherence: neither rule nor flag
    assert values["coherence"].explanation == "The CRS only reacts."
