"""`llm_single`: the single-prompt LLM user simulator of UserSimCRS v2 (section 4.3).

One prompt (task, optional persona, information need, optional few-shot examples, the
conversation so far) yields the next user utterance. The model ends the dialogue itself by
writing the stop token: the words before it are the last utterance (the fixed closing
utterance if there are none) and the turn has `end=True`.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from crsim.components import BuildContext
from crsim.sim.base import UserTurn, simulator
from crsim.sim.prompt.common import PromptParams, PromptSimulator, split_at_stop


@simulator("llm_single")
class SinglePromptSimulator(PromptSimulator):
    """An LLM plays the user from one prompt and says when it is done with a stop token.

    Annotations of each turn: `stop_token_seen`; `raw_answer` when cleaning changed the text;
    `closing_utterance` when the fixed closing was said; `history_omitted` when old turns
    were left out of the prompt.
    """

    class Params(PromptParams):
        stop_token: str = Field(
            "[END]",
            description="Text the model writes to end the dialogue (matched ignoring case); "
            "the prompt tells the model about it.",
        )

        @field_validator("stop_token")
        @classmethod
        def _visible(cls, value: str) -> str:
            if not value.strip():
                raise ValueError("the stop token must contain visible characters")
            return value.strip()

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.stop_token = params.stop_token

    async def _next_turn(self) -> UserTurn:
        text, raw, notes = await self.generate_utterance(self.stop_token)
        before, seen = split_at_stop(text, self.stop_token)
        notes["stop_token_seen"] = seen
        if seen:
            if not before:
                notes["closing_utterance"] = True
            return self.say(before or self.settings.closing_utterance, raw, notes, end=True)
        if not text:
            raise self.empty_answer(raw)
        return self.say(text, raw, notes)
