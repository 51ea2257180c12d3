"""`llm_dual`: the dual-prompt LLM user simulator of UserSimCRS v2 (section 4.3).

Before each user turn after the first, a stopping prompt (the task put as a yes/no decision,
the persona, the need and the whole conversation, both sides) asks whether the user stops.
The answer is JSON `{"decision": "continue"|"stop", "reason": ...}`, decoded under its JSON
schema where the provider supports it and repaired once otherwise; an answer still unreadable
is an error of the simulator, never a default decision. On "stop" the user says the fixed
closing utterance and the dialogue ends; on "continue" the response prompt of `llm_single`,
without its stop instruction, writes the utterance (checked as in `llm_single`).

The stopping prompt is told which items were recommended and which requests are still to ask. A
"stop" before anything was recommended is overruled until the `patience` turn, and so is one right
after a fitting recommendation while a request is still to ask (the message then asks it), and one
right after a recommendation that misses the need while the recommender has missed fewer than
`give_up_after` times (`stop_after_miss`); a later stop on a miss says `giving_up_utterance`. After
`no_progress_patience` replies without progress (`crsim.sim.prompt.common`) the decision is "stop"
without asking, and the prompt shows how many there were so far. A
reason naming an item that was never recommended is asked again once. All are recorded under
`draft_checks`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from crsim.core.components import BuildContext
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig
from crsim.model.linking import heard_titles
from crsim.sim.base import UserTurn, simulator
from crsim.sim.prompt.common import PromptSimulator
from crsim.sim.prompt.params import PROMPTS, PromptParams, TemplateName
from crsim.sim.prompt.prompt_parts import prompt_messages, within_chars
from crsim.sim.shared import checks
from crsim.sim.shared.conversation import transcript


class StopDecision(BaseModel):
    """The stopping prompt's answer."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["continue", "stop"]
    reason: str = Field(max_length=200)


@simulator("llm_dual")
class DualPromptSimulator(PromptSimulator):
    """An LLM plays the user; a second prompt decides before each turn whether the user stops.

    Annotations of each turn after the first: `stop_decision`, `stop_reason`,
    `stop_decision_repaired` (the first answer was unreadable and the repair worked) and
    `stop_history_omitted` when the history had to be cut to `stop_history_chars`; plus
    `draft_checks`, `raw_answer`, `closing_utterance` and `history_omitted` as in `llm_single`
    (`stop_decision`/`stop_reason` are those of the decision taken, after any re-ask).
    """

    #: The reply and the stop decision (runner/estimate.py plans an LLM run's duration with it).
    llm_calls_per_turn: ClassVar[float] = 2.0

    class Params(PromptParams):
        stop_prompt: TemplateName = Field(
            "stop.j2",
            description="Stopping prompt: a template shipped in crsim.sim.prompt.prompts or a path "
            "to a jinja2 file rendering the parts 'system' and 'conversation'.",
        )
        decision_max_tokens: int = Field(
            128, ge=16, description="Token cap of the JSON decision (room for a one-sentence reason)."
        )
        stop_history_chars: int | None = Field(
            8000,
            ge=200,
            description="The stopping prompt shows the whole conversation, since whether to stop "
            "depends on all of it (a suggestion turned down early, questions already answered); "
            "only a transcript longer than this many characters loses its oldest messages, so the "
            "prompt fits the model's context window. None: never cut.",
        )

    params: Params

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.stop_template = load_template(PROMPTS, params.stop_prompt)

    async def _next_turn(self) -> UserTurn:
        notes: dict[str, Any] = {}
        if self.turn > 1:
            decision = await self._decide(notes)
            if decision.decision == "stop" and self.waiting():
                checks.note(notes, "stop_before_recommendation", "overridden", detail=decision.reason)
            elif decision.decision == "stop" and self.tracker.pending():
                checks.note(notes, "stop_with_request_pending", "overridden", detail=decision.reason)
            elif decision.decision == "stop" and self.settling_for_a_miss():
                checks.note(notes, "stop_after_miss", "overridden", detail=decision.reason)
            elif decision.decision == "stop":
                notes["closing_utterance"] = True
                return self.say(self.closing(), None, notes, end=True)
        text, _, raw, more = await self.draft(None)
        notes.update(more)
        if not text:
            raise self.empty_answer(raw)
        text, _ = self.ask_pending(text, notes)
        return self.say(text, raw, notes)

    def give_up(self) -> UserTurn:
        """The stop decision taken by the no-progress rule, without asking the model."""
        turn = super().give_up()
        reason = f"no progress in {self.stalled} recommender replies"
        turn.annotations.update(stop_decision="stop", stop_reason=reason)
        return turn

    async def _decide(self, notes: dict[str, Any]) -> StopDecision:
        """The stop decision; a "stop" whose reason names an item never recommended is asked again
        once (the second answer is kept either way, and the names are recorded)."""
        decision = await self._ask_decision(notes, correction=False)
        unrecommended = self._unrecommended(decision.reason) if decision.decision == "stop" else None
        if unrecommended:
            checks.note(notes, "reason_unrecommended", "retried", draft=decision.reason, detail=unrecommended)
            decision = await self._ask_decision(notes, correction=True)
            unrecommended = self._unrecommended(decision.reason)
            if unrecommended:
                checks.note(
                    notes, "reason_unrecommended", "kept", draft=decision.reason, detail=unrecommended
                )
        return decision

    def _unrecommended(self, reason: str) -> str | None:
        """Titles the reason names that were never recommended in this dialogue ("; "-joined), or None."""
        items = self.domain.items
        named = dict.fromkeys(m.item_id for m in heard_titles(items, reason))
        wrong = [items[i].display_title for i in named if i not in self.tracker.recommended]
        return "; ".join(wrong) or None

    async def _ask_decision(self, notes: dict[str, Any], *, correction: bool) -> StopDecision:
        shown, omitted = within_chars(self.history, self.params.stop_history_chars)
        variables = self.variables(
            stop_token=None,
            examples=[],
            transcript=transcript(shown),
            omitted=omitted,
            recommended=self.tracker.titles(),
            pending=[slot for slot in self.tracker.requests if slot not in self.tracker.asked],
            correction=correction,
        )
        messages = prompt_messages(self.stop_template, self.params.stop_prompt, variables)
        config = GenerationConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.decision_max_tokens,
            seed=self.call_seed("stop-retry" if correction else "stop"),
        )
        answer = await generate_json(self.llm, messages, StopDecision, config)
        if answer.value is None:
            raise LLMOutputError(f"{self.llm.describe()}: stopping decision: {answer.error}", answer.raw)
        notes.update(stop_decision=answer.value.decision, stop_reason=answer.value.reason)
        if answer.repaired:
            notes["stop_decision_repaired"] = True
        if omitted:
            notes["stop_history_omitted"] = omitted
        return answer.value
