"""`llm_single`: the single-prompt LLM user simulator of UserSimCRS v2 (section 4.3).

One prompt (task, optional persona, information need, optional few-shot examples, the
conversation so far) yields the next user utterance. The model ends the dialogue itself by
writing the stop token: the words before it are the last utterance (the fixed closing
utterance if there are none) and the turn has `end=True`. Two ends are not taken (the marker is
dropped, the words kept and the `draft_checks` annotation says why): one before anything was
recommended (until the `patience` turn), one while a request of the need is still to ask about
the item just recommended, which the message then asks, and one right after a recommendation that
misses the need while the recommender has missed fewer than `give_up_after` times (`end_after_miss`;
a later end on a miss without words of its own says `giving_up_utterance`).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from crsim.language.cues import REJECT
from crsim.model.text import normalize
from crsim.sim.base import UserTurn, simulator
from crsim.sim.prompt.common import PromptSimulator
from crsim.sim.prompt.params import PromptParams
from crsim.sim.shared import checks


@simulator("llm_single")
class SinglePromptSimulator(PromptSimulator):
    """An LLM plays the user from one prompt and says when it is done with a stop token.

    Annotations of each turn: `stop_token_seen` (in the model's answer); `draft_checks` when a check
    re-asked, rewrote or overruled the answer; `raw_answer` when the text differs from the answer;
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

    params: Params

    async def _next_turn(self) -> UserTurn:
        body, seen, raw, notes = await self.draft(self.params.stop_token)
        notes["stop_token_seen"] = seen
        body, asked = self.ask_pending(body, notes)
        if seen and asked:
            seen = False
            checks.note(notes, "end_with_request_pending", "ignored")
        elif seen and self.waiting():
            seen = False
            checks.note(notes, "end_before_recommendation", "ignored", detail=raw)
            body = body or self.fallback_text()
        elif seen and self.settling_for_a_miss():
            seen = False
            checks.note(notes, "end_after_miss", "ignored", detail=raw)
            # words that were a goodbye do not go on the conversation; a refusal does
            body = body if REJECT.search(normalize(body)) else self.fallback_text()
        if seen:
            if not body:
                notes["closing_utterance"] = True
            return self.say(body or self.closing(), raw, notes, end=True)
        if not body:
            raise self.empty_answer(raw)
        return self.say(body, raw, notes)
