"""The LLM judges of formality and key points: scripted answers, unreadable answers as counted errors,
failed calls, and one short run on the real local model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from crsim.core.errors import ConfigError
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.errors import LLMConnectionError
from crsim.llm.providers.base import Provider
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.studies.language.diversity import diversity
from crsim.studies.language.judge import JudgeSettings, LLMJudge
from crsim.studies.language.measures import FORMALITY_CATEGORIES, Thresholds
from crsim.studies.language.measuring import LLMMeasurer, error_counts, measure_dialogues
from support import needs_local_model

Script = Callable[[list[Message], ResolvedGeneration], str | BaseException]


class ScriptedHub(LLMHub):
    """Every role answered by one scripted provider; no cache."""

    def __init__(self, script: Script) -> None:
        model = ModelConfig(provider="scripted", max_retries=1, backoff=0.0)
        super().__init__(LLMSettings(default=model, cache=CacheConfig(mode="off")))
        self.scripted = ScriptedProvider(script)

    def provider(self, config: ModelConfig) -> Provider:
        return self.scripted


def is_formality(messages: list[Message]) -> bool:
    return "register" in messages[0]["content"]


def message_text(messages: list[Message]) -> str:
    return messages[1]["content"].split("Message: ", 1)[1].split("\n")[0]


def judge_script(messages: list[Message], _generation: ResolvedGeneration) -> str:
    """Informal for texts with 'lol', formal otherwise; one key point per comma-separated part."""
    text = message_text(messages)
    if is_formality(messages):
        return json.dumps({"formality": "informal" if "lol" in text else "formal"})
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return json.dumps({"key_points": [{"kind": "other", "text": p} for p in parts]})


async def test_the_judges_answer_with_validated_json_on_the_judge_role() -> None:
    hub = ScriptedHub(judge_script)
    judge = LLMJudge(hub)
    assert (await judge.formality("lol ok")).value == "informal"
    assert (await judge.formality("Good evening.")).value == "formal"
    points = await judge.key_points("a comedy, tonight, with my wife, a comedy")
    assert points.value == 3  # the repeated point counts once
    assert points.details == ("other: a comedy", "other: tonight", "other: with my wife")
    messages, generation = hub.scripted.requests[0]
    assert generation.json_schema is not None and generation.temperature == 0.0
    assert "lol ok" in messages[1]["content"]
    assert judge.llm.role == "judge" and judge.failed == 0


async def test_key_points_not_found_in_the_message_are_not_counted() -> None:
    """A small model may copy the prompt's examples; such points are listed as dropped."""
    answer = {
        "key_points": [
            {"kind": "person", "text": "Jim Carrey"},
            {"kind": "genre", "text": "Comedies"},
            {"kind": "time", "text": "comedies"},  # one text given twice counts once, with its first kind
        ]
    }
    hub = ScriptedHub(lambda _m, _g: json.dumps(answer))
    reading = await LLMJudge(hub).key_points("Any comedies for tonight?")
    assert reading.value == 1
    assert reading.details == ("genre: comedies", "not in the message: person: jim carrey")
    everything = await LLMJudge(hub, JudgeSettings(min_grounding=0)).key_points("Any comedies for tonight?")
    assert everything.value == 2


async def test_an_unreadable_answer_is_an_error_value_after_one_repair() -> None:
    hub = ScriptedHub(lambda _m, _g: "I would say it is rather informal.")
    judge = LLMJudge(hub)
    reading = await judge.formality("hey there")
    assert reading.value is None
    assert reading.error is not None and reading.error.startswith("unreadable answer after one repair")
    assert reading.raw == "I would say it is rather informal."
    assert len(hub.scripted.requests) == 2  # the answer, then one repair
    assert judge.failed == 1


async def test_an_unknown_label_or_kind_is_unreadable_not_coerced() -> None:
    judge = LLMJudge(
        ScriptedHub(lambda _m, _g: '{"formality": "casual", "key_points": [{"kind": "x", "text": "y"}]}')
    )
    assert (await judge.formality("hi")).value is None
    assert (await judge.key_points("hi")).value is None
    assert judge.failed == 2


async def test_a_failed_call_is_an_error_value_naming_the_error() -> None:
    hub = ScriptedHub(lambda _m, _g: LLMConnectionError("connection refused"))
    judge = LLMJudge(hub)
    reading = await judge.key_points("a comedy")
    assert reading.value is None
    assert reading.error is not None and reading.error.startswith("LLMConnectionError")
    assert "connection refused" in reading.error
    assert len(hub.scripted.requests) == 2  # retried once (max_retries=1), then given up


async def test_unreadable_answers_are_counted_per_measure_and_left_out_of_the_distributions() -> None:
    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        if "broken" in message_text(messages) and is_formality(messages):
            return "no idea"
        return judge_script(messages, generation)

    dialogues = [
        Dialogue(
            id=f"d{k}",
            simulator_id="sim",
            utterances=[
                Utterance(role=Role.USER, text="lol a comedy, tonight"),
                Utterance(role=Role.CRS, text="Sure."),
                Utterance(role=Role.USER, text="broken, answer"),
            ],
        )
        for k in range(3)
    ]
    measured = await measure_dialogues(dialogues, LLMMeasurer(LLMJudge(ScriptedHub(script))), Thresholds())
    assert error_counts(measured) == {"formality": 3, "richness": 0}
    broken = measured[0].utterances[1]
    assert broken.formality is None and broken.formality_error is not None
    assert broken.raw == {"formality": "no idea"}
    assert (broken.key_points, broken.richness) == (2, "low")
    report = diversity(measured, method="llm", thresholds=Thresholds())
    formality = report.groups[0].distributions["formality"]
    assert (formality.n, formality.errors) == (3, 3)
    assert formality.counts == {"informal": 3, "neutral": 0, "formal": 0}


def test_a_prompt_template_that_does_not_exist_fails_at_settings_time() -> None:
    with pytest.raises(ValueError, match=r"nothing\.j2"):
        JudgeSettings(formality_prompt="nothing.j2")


def test_a_template_rendering_nothing_is_a_config_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.j2"
    empty.write_text("{% if part == 'system' %}Judge.{% endif %}", encoding="utf-8")
    judge = LLMJudge(ScriptedHub(judge_script), JudgeSettings(formality_prompt=str(empty)))
    with pytest.raises(ConfigError, match="renders nothing"):
        judge.formality_messages("hi")


@needs_local_model
async def test_the_local_model_gives_a_valid_label_or_an_error_value() -> None:
    settings = LLMSettings(
        default=ModelConfig(provider="local", max_tokens=24, seed=3), cache=CacheConfig(mode="off")
    )
    hub = LLMHub(settings)
    try:
        judge = LLMJudge(hub, JudgeSettings(formality_tokens=16))
        for text in ("lol gimme something scary!!", "Could you kindly recommend a historical drama?"):
            reading = await judge.formality(text)
            if reading.value is None:
                assert reading.error
            else:
                assert reading.value in FORMALITY_CATEGORIES
    finally:
        await hub.aclose()
