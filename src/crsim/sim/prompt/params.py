"""The arguments shared by the prompt-based simulators (`llm_single`, `llm_dual`), each checked when
the config is validated (templates found, example dialogues readable)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from crsim.core.errors import CrsimError
from crsim.core.plugins import Params as BaseParams
from crsim.llm.prompts import template_check
from crsim.sim.prompt.prompt_parts import load_examples

#: Package holding the shipped templates; a `prompt` argument may also be a path to a file.
PROMPTS = "crsim.sim.prompt.prompts"


#: A template argument, checked when the config is validated.
TemplateName = Annotated[str, template_check(PROMPTS)]


class PromptParams(BaseParams):
    """Arguments shared by `llm_single` and `llm_dual`."""

    role: str = Field("user", min_length=1, description="Model role whose LLM writes the user's utterances.")
    prompt: TemplateName = Field(
        "response.j2",
        description="Response prompt: the name of a template shipped in crsim.sim.prompt.prompts, "
        "or a path to a jinja2 file rendering the parts 'system' and 'conversation'.",
    )
    persona: str | None = Field(
        None,
        description="Persona text, used for users whose profile has no persona['description'].",
    )
    temperature: float | None = Field(
        None, ge=0.0, le=2.0, description="Sampling temperature of utterances (default: the role's)."
    )
    max_tokens: int | None = Field(None, ge=1, description="Token cap per utterance (default: the role's).")
    history_format: Literal["transcript", "messages"] = Field(
        "transcript",
        description="How the conversation reaches the model: one transcript in the prompt, or "
        "alternating chat messages (recommender as user, simulated user as assistant).",
    )
    max_history_turns: int | None = Field(
        None,
        ge=1,
        description="Only the last N turns (user utterance + reply) go into the response prompt, "
        "for small context windows; None: the whole conversation.",
    )
    num_examples: int = Field(
        2, ge=1, description="How many dialogues of `examples` (the first ones) to show."
    )
    examples: str | None = Field(
        None,
        description="JSONL file of dialogues in crsim's format, shown as few-shot examples; None: zero-shot.",
    )
    include_preferences: bool = Field(
        True, description="Tell the user their liked and disliked slot values from the profile."
    )
    closing_utterance: str = Field(
        "Thank you, that is all for now. Goodbye!",
        min_length=1,
        description="What the user says when they end without words of their own.",
    )
    patience: int = Field(
        6,
        ge=1,
        description="Turns the user waits for a first recommendation: before this turn, an end (stop "
        "token or stop decision) while nothing has been recommended is ignored and annotated.",
    )
    give_up_after: int = Field(
        2,
        ge=1,
        description="Recommendations that miss the need before the user may end on one: an end right "
        "after a recommendation that does not fit, with fewer misses so far (and before the `patience` "
        "turn), is ignored and annotated; a later end on a miss says `giving_up_utterance`.",
    )
    giving_up_utterance: str = Field(
        "Thanks anyway, but that is not what I am looking for. Goodbye!",
        min_length=1,
        description="What the user says when they end right after a recommendation that misses the need.",
    )
    no_progress_patience: int = Field(
        3,
        ge=1,
        description="Recommender replies without progress (it found nothing, cannot help, or repeats "
        "its previous reply) after which the user ends, saying `giving_up_utterance`.",
    )

    @field_validator("examples")
    @classmethod
    def _examples_readable(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Read the examples now (`num_examples` is validated first), so a bad file fails before a run."""
        count = info.data.get("num_examples")
        if value is not None and count is not None:
            try:
                load_examples(value, count)
            except CrsimError as exc:
                raise ValueError(str(exc)) from None
        return value
