"""`target_biased`: the target-biased baseline of PEPPER's analysis (after Zhu et al.'s simple user).

The user is told the attributes of a random *selected* subset of their targets (genres,
directors, stars, plot and the values of the domain's other slots; never the titles) and describes
what they want from them. The other targets form the *residual* subset. Which targets are
selected is a property of the user (`profile.persona["target_split"]`, drawn by the PEPPER
populations), so that both simulators'
dialogues with a user are scored on the same subsets; for other populations the simulator
draws the split itself from the dialogue seed. The split is kept in `Dialogue.metadata` (`TARGET_SPLIT`).

Each message is checked like PEPPER's (`ChatUser.write`); the titles of the selected targets count
as named targets. The recommended items reach the reply prompt with their attributes, so the user
can compare them with what it wants instead of repeating a verdict ("These movies match your
criteria.", measured on a 1.5B model: the prompt gave it nothing else to say).

The general preferences are still written (one cached narrative per user) and recorded, only so
that the pepper3 judge sees the same preferences for both simulators; they are not in the prompt.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.errors import DataError
from crsim.crs.base import CRSReply
from crsim.llm.prompts import load_template, render
from crsim.model import annotations as keys
from crsim.model.user import SimulatedUser
from crsim.sim.base import UserTurn, simulator
from crsim.sim.pepper.common import ChatUser, PepperParams, TemplateName, split_targets
from crsim.sim.pepper.profile import PROMPTS, ItemView, item_view
from crsim.sim.shared import checks


def target_split(user: SimulatedUser, count: int, seed: int) -> tuple[list[str], list[str]]:
    """(selected, residual) targets: the population's split when it has one, else drawn with `seed`."""
    given = keys.user_persona(keys.PERSONA_TARGET_SPLIT, user.id, user.profile.persona)
    if given is not None:
        return list(given.selected), list(given.residual)
    if not user.need.targets:
        return [], []
    return split_targets(list(user.need.targets), count, random.Random(seed))


@simulator("target_biased")
class TargetBiasedSimulator(ChatUser):
    """A user who knows the attributes (not the titles) of some of their targets."""

    class Params(PepperParams):
        selected_targets: int = Field(
            3, ge=1, le=20, description="Targets told to the user when the population gives no split."
        )
        prompt: TemplateName = Field(
            "biased.j2", description="Message prompt: a template of crsim.sim.pepper.prompts or a file path."
        )
        record_general_preferences: bool = Field(
            True,
            description="Write (or fetch from the cache) and record the user's general preferences "
            "for the judge.",
        )

    params: Params

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.template = load_template(PROMPTS, params.prompt)
        self.targets: list[ItemView] = []

    def fallback_text(self) -> str:
        """One detail of a selected target, a different one each turn (after two failed drafts)."""
        details = [
            f"{kind} {value}"
            for target in self.targets
            for kind, values in (
                ("with", target.genres),
                ("directed by", target.directors),
                ("starring", target.actors),
            )
            for value in values[:1]
        ]
        if not details:
            return super().fallback_text()
        return f"I am looking for a {self.words.item} {details[self.turn % len(details)]}."

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.user = user
        selected, residual = target_split(user, self.params.selected_targets, self.seed)
        if not selected:
            raise DataError(
                f"user {user.id!r}: no target items to describe; the target-biased user needs targets"
            )
        keys.TARGET_SPLIT.put(self.notes.metadata, {"selected": selected, "residual": residual})
        self.targets = [
            item_view(self.domain.items[t], self.params.plot_chars, self.domain)
            for t in selected
            if t in self.domain.items
        ]
        self.checker = checks.DraftChecker.build(vars(self.words), [t.title for t in self.targets])
        if self.params.record_general_preferences:
            await self.load_general_preferences(user)
        notes: dict[str, Any] = keys.SELECTED_TARGETS.entry(selected)
        if greeting is not None:
            self.hear(greeting)
        else:
            self.turn = 1
        cue = render(self.template, words=self.words, targets=self.targets, shown=[], part="opening")
        return await self.write(self.messages(self.template, {"targets": self.targets}, cue), notes, [])

    async def respond(self, reply: CRSReply) -> UserTurn:
        if self.user is None:
            raise RuntimeError("respond() called before start()")
        self.hear(reply)
        shown = [
            item_view(self.domain.items[i], self.params.plot_chars, self.domain)
            for i in list(dict.fromkeys(reply.recommended_items))[:3]
            if i in self.domain.items
        ]
        cue = render(self.template, words=self.words, targets=self.targets, shown=shown, part="reply")
        return await self.write(self.messages(self.template, {"targets": self.targets}, cue), {}, [])
