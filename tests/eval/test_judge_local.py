"""One real-model check: SmolLM2-135M (the `local` provider) judges a short dialogue with
`quality5`; every aspect must come back as one of its levels, or as an error with the raw answer
kept, never as a made-up number.

One slot (`max_concurrency=1`): the five questions share the conversation as a prompt prefix, which
llama.cpp reuses when they run one after another; measured on 2 busy cores this took 25 s of CPU
instead of 39 s with the default parallel slots (each of which reads the whole prompt)."""

from __future__ import annotations

import re

from crsim.core.components import BuildContext
from crsim.eval.judge.evaluator import JudgeEvaluator
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.model.dialogue import Dialogue, Role, Utterance
from support import needs_local_model


@needs_local_model
async def test_the_local_model_grades_every_quality5_aspect_with_a_level_or_an_error() -> None:
    hub = LLMHub(
        LLMSettings(
            default=ModelConfig(provider="local", seed=7, max_concurrency=1), cache=CacheConfig(mode="off")
        )
    )
    dialogue = Dialogue(
        id="popular/llm_single/u1",
        utterances=[
            Utterance(role=Role.USER, text="I want a funny movie for tonight."),
            Utterance(
                role=Role.CRS, text="Try Groundhog Day (1993), a classic comedy.", recommended_items=["m1"]
            ),
            Utterance(role=Role.USER, text="Great, I will watch it. Thanks!"),
        ],
    )
    try:
        judge = JudgeEvaluator(
            JudgeEvaluator.Params(
                rubric="quality5", temperature=0.0, max_tokens=48, max_justification_chars=80
            ),
            BuildContext(llms=hub),
        )
        values = await judge.evaluate(dialogue)
    finally:
        await hub.aclose()
    assert [v.aspect for v in values] == list(judge.rubric.aspects)
    for value in values:
        if value.value is None:  # an error: unreadable answers keep the model's text
            assert value.error is not None and re.match(r"LLM\w+: ", value.error), value
            if value.error.startswith("LLMOutputError"):
                assert value.raw
        else:
            assert value.value in {1.0, 2.0, 3.0, 4.0, 5.0} and value.error is None
            assert value.explanation and len(value.explanation) <= 80
