"""`pepper`: PEPPER's target-free user simulator (Kim et al.).

The user opens from their general preferences only. After each CRS reply, the item interface
shows the CRS's top `items_shown` recommendations with their plots; the user has seen some of
them (their own rating and review or tags come with those) and not the others (plot only:
targets look exactly like any other unseen item, so nothing marks them). For every shown item
the LLM writes a reflected preference, one like and one dislike (seen: what the user recalls;
unseen: what they expect from their general preferences); these go into the next message, which
is one or two sentences that should say something new. The user never ends the dialogue: it
runs until the CRS ends it or the turn budget (`max_turns`, 20 in PEPPER) is spent.

Annotations of each user utterance: `item_interface` (shown ids with `seen`), `reflected_preferences`
(item, seen, like, dislike; or error and raw answer when unreadable; no dislike when it contradicted
the like twice), `draft_checks` when a reflection or the message failed a check (`checks`),
`raw_answer` when cleaning changed the text; the first one also `general_preferences`.
`Utterance.shown_items` lists the items on screen. The record's `user_profile.persona` gains
`general_preferences` and `binary_preferences` (read by the pepper3 judge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crsim.core.components import BuildContext
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, system, user
from crsim.model import annotations as keys
from crsim.model.dialogue import Role
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.sim.base import UserTurn, simulator
from crsim.sim.pepper.common import ChatUser, PepperParams, TemplateName
from crsim.sim.pepper.profile import PROMPTS, Feedback, ItemView, item_view, seen_feedback
from crsim.sim.shared import checks


class Reflection(BaseModel):
    """The reflected preference on one shown item."""

    model_config = ConfigDict(extra="forbid")

    like: str = Field(min_length=1, max_length=80)
    dislike: str = Field(min_length=1, max_length=80)


@dataclass(frozen=True)
class ShownItem:
    """An item on the interface: its view and, when the user has seen it, their own feedback."""

    item: ItemView
    feedback: Feedback | None


@dataclass(frozen=True)
class Reflected:
    title: str
    like: str
    dislike: str


def item_interface(
    user: SimulatedUser, domain: Domain, recommended: list[str], k: int, plot_chars: int
) -> list[ShownItem]:
    """The first `k` distinct recommended items of the domain, classified seen (own feedback) or unseen."""
    shown: list[ShownItem] = []
    for item_id in dict.fromkeys(recommended):
        if len(shown) == k:
            break
        item = domain.items.get(item_id)
        if item is not None:
            shown.append(ShownItem(item_view(item, plot_chars, domain), seen_feedback(user, item_id)))
    return shown


@simulator("pepper")
class PepperSimulator(ChatUser):
    """Target-free user: general preferences, an item interface, reflected preferences."""

    class Params(PepperParams):
        items_shown: int = Field(
            4,
            ge=0,
            le=10,
            description="Items of each recommendation list shown on the item interface (0: none).",
        )
        reflect_max_tokens: int = Field(
            64, ge=16, description="Token cap of one reflected preference (JSON)."
        )
        prompt: TemplateName = Field(
            "respond.j2", description="Message prompt: a template of crsim.sim.pepper.prompts or a file path."
        )
        reflect_prompt: TemplateName = Field(
            "reflect.j2", description="Reflected-preference prompt: a shipped template or a file path."
        )
        recall_said: int = Field(
            2,
            ge=0,
            description="Own earlier messages outside the shown history the user is reminded of, "
            "so that they say something new.",
        )

    params: Params

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.template = load_template(PROMPTS, params.prompt)
        self.reflect_template = load_template(PROMPTS, params.reflect_prompt)
        self.reflections: dict[str, Reflected | dict[str, Any]] = {}

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.user = user
        self.general = await self.load_general_preferences(user)
        notes: dict[str, Any] = keys.GENERAL_PREFERENCES_NOTE.entry(self.general.narrative)
        if greeting is None:
            self.turn = 1
            return await self._message(render(self.template, **self._vars(), part="opening"), notes, [])
        self.hear(greeting)
        opening = render(self.template, **self._vars(), part="opening")
        return await self._react(greeting, notes, opening)

    async def respond(self, reply: CRSReply) -> UserTurn:
        if self.user is None:
            raise RuntimeError("respond() called before start()")
        self.hear(reply)
        return await self._react(reply, {}, "")

    def _vars(self) -> dict[str, Any]:
        assert self.general is not None
        return {"words": self.words, "general": self.general.narrative}

    async def _react(self, reply: CRSReply, notes: dict[str, Any], extra: str) -> UserTurn:
        assert self.user is not None
        shown = item_interface(
            self.user,
            self.domain,
            list(reply.recommended_items),
            self.params.items_shown,
            self.params.plot_chars,
        )
        reflected: list[Reflected] = []
        records: list[dict[str, Any]] = []
        for entry in shown:
            result = await self._reflect(entry, notes)
            record = {"item": entry.item.id, "seen": entry.feedback is not None}
            if isinstance(result, Reflected):
                reflected.append(result)
                record.update(like=result.like, **({"dislike": result.dislike} if result.dislike else {}))
            else:
                record.update(result)
            records.append(record)
        if shown:
            keys.ITEM_INTERFACE.put(
                notes, [{"item": s.item.id, "seen": s.feedback is not None} for s in shown]
            )
            keys.REFLECTED_PREFERENCES.put(notes, records)
        screen = render(
            self.template,
            **self._vars(),
            part="screen",
            items=shown,
            reflections=reflected,
            said=self._said(),
        )
        cue = f"{extra}\n\n{screen}".strip() if extra else screen
        return await self._message(cue, notes, [s.item.id for s in shown])

    async def _message(self, cue: str, notes: dict[str, Any], shown: list[str]) -> UserTurn:
        messages = self.messages(self.template, self._vars(), cue)
        return await self.write(messages, notes, shown)

    def _said(self) -> list[str]:
        """The user's own earlier messages that fall outside the history the prompt shows."""
        own = [e.text for e in self.history if e.role == Role.USER]
        window = self.params.max_history_turns
        hidden = own[:-window] if window is not None and len(own) > window else []
        return hidden[-self.params.recall_said :] if self.params.recall_said else []

    async def _reflect(self, shown: ShownItem, notes: dict[str, Any]) -> Reflected | dict[str, Any]:
        """One like and one dislike for a shown item; the same item is reflected on once per dialogue.
        An unreadable answer is kept as an error with the raw text and left out of the prompt. A like
        and dislike of the same thing (`checks.contradictory`) are asked again once; if they still
        agree, the dislike is dropped. Both steps are recorded under `draft_checks`."""
        cached = self.reflections.get(shown.item.id)
        if cached is not None:
            return cached
        result = await self._ask_reflection(shown, contradiction=False)
        if isinstance(result, Reflected) and checks.contradictory(result.like, result.dislike, result.title):
            draft = f"like: {result.like}; dislike: {result.dislike}"
            checks.note(notes, "contradictory_reflection", "retried", draft=draft, detail=shown.item.id)
            result = await self._ask_reflection(shown, contradiction=True)
            if isinstance(result, Reflected) and checks.contradictory(
                result.like, result.dislike, result.title
            ):
                draft = f"like: {result.like}; dislike: {result.dislike}"
                checks.note(
                    notes, "contradictory_reflection", "dislike_dropped", draft=draft, detail=shown.item.id
                )
                result = Reflected(result.title, result.like, "")
        self.reflections[shown.item.id] = result
        return result

    async def _ask_reflection(self, shown: ShownItem, *, contradiction: bool) -> Reflected | dict[str, Any]:
        assert self.general is not None
        variables = {
            **self._vars(),
            "item": shown.item,
            "feedback": shown.feedback,
            "contradiction": contradiction,
        }
        messages = [
            system(render(self.reflect_template, part="system", **variables)),
            user(render(self.reflect_template, part="task", **variables)),
        ]
        purpose = "reflect-again" if contradiction else "reflect"
        config = GenerationConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.reflect_max_tokens,
            seed=derive_seed(0, purpose, shown.item.id) % 2**31,
        )
        answer = await generate_json(self.llm, messages, Reflection, config)
        if answer.value is None:
            return {"error": answer.error, "raw": answer.raw}
        like, dislike = (" ".join(text.split()) for text in (answer.value.like, answer.value.dislike))
        return Reflected(shown.item.title, like, dislike)
