"""`degraded`: a CRS wrapped so that it loses one property, the twin a sensitivity study compares it with.

Any CRS (built-in or reached over HTTP) is wrapped through the CRS protocol; the wrapped CRS still
holds the conversation, and the wrapper rewrites what the user sees. The kinds (docs/validate.md):

- `random`: each recommended item is replaced by a random catalogue item not yet shown (seeded per
  dialogue);
- `stale`: every recommendation repeats the dialogue's first one;
- `deaf`: the k-th recommendation of a dialogue is the k-th item of the catalogue's popularity order
  not yet shown, whatever the user said;
- `eager`: a reply that would ask (no item, a question mark) recommends instead, from the same
  popularity order, so the CRS recommends in its first reply and never asks;
- `mute`: a reply to a message asking about an item (rule-based understanding finds an inquiry)
  answers nothing: its text becomes a non-answer and items it merely mentioned are dropped;
- `garbled`: the words of the text are shuffled; the items it names are listed unchanged.

Where items are replaced, their titles are replaced in the text; a text naming none of them is
replaced by a recommendation sentence of the domain. A text-only reply's items are found by linking
titles as the run loop does, and every rewritten reply lists its items (`items_listed`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from crsim.core.components import BuildContext, build, llm_roles_of
from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.core.plugins import Params as RegistryParams
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRS, CRSReply, CRSSession, crs, crs_registry
from crsim.crs.item_index import item_index
from crsim.crs.nlg import sentences_for
from crsim.language.understanding import understand
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.mentions import split_linked

DegradationKind = Literal["random", "stale", "deaf", "eager", "mute", "garbled"]

#: Every degradation, in the order tables list them.
DEGRADATIONS: tuple[DegradationKind, ...] = ("random", "stale", "deaf", "eager", "mute", "garbled")

#: What a `mute` CRS says instead of an answer about an item.
NON_ANSWER = "Sorry, I can't tell you anything about that."

_WORD = re.compile(r"\S+")


@dataclass
class _State:
    """What the wrapper remembers of one dialogue."""

    rng: random.Random
    shown: list[str] = field(default_factory=list)  # every item id the user has been shown, in order
    first: list[str] = field(default_factory=list)  # the first recommendation (for `stale`)
    recommendations: int = 0  # recommending replies so far


@crs("degraded")
class DegradedCRS:
    """A CRS that loses one property: `of` is the wrapped CRS's spec, `kind` the property removed."""

    class Params(RegistryParams):
        of: ComponentSpec = Field(description="The CRS to degrade (name, args, id), as in `crss:`.")
        kind: DegradationKind = Field(description="The property removed: " + ", ".join(DEGRADATIONS) + ".")

        @field_validator("of")
        @classmethod
        def _a_crs_to_wrap(cls, of: ComponentSpec) -> ComponentSpec:
            """The wrapped CRS's name and arguments, checked where the config names them."""
            if of.name == "degraded":
                raise ValueError("a degraded twin wraps an original CRS, not another twin")
            try:
                crs_registry.params(of.name, of.args, where="of")
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
            return of

    needs_llm: ClassVar[bool] = True  # when the wrapped CRS does: `llm_roles` gives its roles

    @classmethod
    def llm_roles(cls, params: Any) -> list[str]:
        """The wrapped CRS's roles (it is built with the same context)."""
        inner = crs_registry.get(params.of.name)
        return llm_roles_of(inner, crs_registry.params(params.of.name, params.of.args, where="args.of"))

    def __init__(self, params: DegradedCRS.Params, ctx: BuildContext) -> None:
        self.params = params
        self.kind: DegradationKind = params.kind
        self.domain: Domain = ctx.require_domain(f"crs 'degraded' ({params.kind})")
        self.inner: CRS = build(crs_registry, params.of, ctx, "args.of")
        #: The twin's dialogues take the seeds of the CRS it degrades (`crsim.runner.build`), so that
        #: both meet each user with the same simulator and CRS randomness until their replies differ.
        self.seed_label = params.of.label
        self.say = sentences_for(self.domain)
        index = item_index(self.domain)
        self.popularity_order = [index.ids[k] for k in index.order]  # ties in catalogue order
        self._states: dict[str, _State] = {}

    def _state(self, session: CRSSession) -> _State:
        state = self._states.get(session.id)
        if state is None:
            rng = random.Random(derive_seed(session.seed, "degraded", self.kind))
            state = self._states[session.id] = _State(rng)
        return state

    async def start(self, session: CRSSession) -> CRSReply | None:
        reply = await self.inner.start(session)
        if reply is None:
            return None
        return self._degrade(reply, self._state(session), None)

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        reply = await self.inner.respond(session, text)
        return self._degrade(reply, self._state(session), text)

    async def close(self, session: CRSSession) -> None:
        self._states.pop(session.id, None)
        await self.inner.close(session)

    # -----------------------------------------------------------------------------------------

    def _items(self, reply: CRSReply, state: _State) -> tuple[list[str], list[str]]:
        """The reply's recommended and mentioned ids: as listed, else linked in its text."""
        if reply.items_listed or reply.recommended_items or reply.mentioned_items:
            return list(reply.recommended_items), list(reply.mentioned_items)
        linked = [m.item_id for m in self.domain.items.linker.link(reply.text, offers=True)]
        return split_linked(linked, set(state.shown))

    def _degrade(self, reply: CRSReply, state: _State, user_text: str | None) -> CRSReply:
        recommended, mentioned = self._items(reply, state)
        reply = replace(reply, recommended_items=recommended, mentioned_items=mentioned, items_listed=True)
        if self.kind == "garbled":
            reply = replace(reply, text=_shuffle_words(reply.text, state.rng))
        elif self.kind == "mute":
            if user_text is not None and understand(user_text, self.domain).inquiries:
                reply = replace(
                    reply,
                    text=NON_ANSWER
                    if not recommended
                    else f"{NON_ANSWER} {self._sentence(recommended, state)}",
                    mentioned_items=[],
                    acts=[a for a in reply.acts if a.intent == Intent.RECOMMEND]
                    or [DialogueAct(intent=Intent.OTHER)],
                )
        elif recommended:
            reply = self._replace_items(reply, recommended, self._substitutes(recommended, state), state)
        elif self.kind == "eager" and not reply.end and not mentioned and "?" in reply.text:
            chosen = self._next_popular(1, state)
            if chosen:
                reply = replace(
                    reply,
                    text=self._sentence(chosen, state),
                    recommended_items=chosen,
                    acts=[DialogueAct(intent=Intent.RECOMMEND, slots=[("title", self._title(chosen[0]))])],
                    options=[],
                )
        if reply.recommended_items:
            state.recommendations += 1
            if not state.first:
                state.first = list(reply.recommended_items)
        state.shown.extend(
            i for i in [*reply.recommended_items, *reply.mentioned_items] if i not in state.shown
        )
        return reply

    def _substitutes(self, recommended: list[str], state: _State) -> list[str]:
        """What the user is shown instead of `recommended` (the same ids where the kind keeps them)."""
        if self.kind == "random":
            unseen = [i for i in self.domain.items.ids if i not in state.shown]
            return state.rng.sample(unseen, min(len(recommended), len(unseen))) or recommended
        if self.kind == "stale":
            return list(state.first) if state.first else recommended
        if self.kind == "deaf":
            return self._next_popular(len(recommended), state) or recommended
        return recommended

    def _next_popular(self, count: int, state: _State) -> list[str]:
        shown = set(state.shown)
        found: list[str] = []
        for item_id in self.popularity_order:
            if item_id not in shown:
                found.append(item_id)
                if len(found) == count:
                    break
        return found

    def _title(self, item_id: str) -> str:
        return self.domain.items[item_id].display_title

    def _sentence(self, ids: list[str], state: _State) -> str:
        return self.say.recommendation([self._title(i) for i in ids], state.rng)

    def _replace_items(self, reply: CRSReply, old: list[str], new: list[str], state: _State) -> CRSReply:
        """The reply recommending `new` instead of `old`: titles swapped in the text and the acts."""
        if new == old:
            return reply
        text = reply.text
        swapped = False
        for before, after in zip(old, new, strict=False):
            for title in dict.fromkeys([self._title(before), self.domain.items[before].title]):
                if title and title in text:
                    text = text.replace(title, self._title(after))
                    swapped = True
                    break
        if not swapped or len(new) != len(old):
            text = self._sentence(new, state)
        acts = [a for a in reply.acts if a.intent != Intent.RECOMMEND]
        acts += [DialogueAct(intent=Intent.RECOMMEND, slots=[("title", self._title(i))]) for i in new]
        return replace(reply, text=text, recommended_items=list(new), acts=acts)


def _shuffle_words(text: str, rng: random.Random) -> str:
    """The words (whitespace-separated tokens) of `text` in a random order; one word stays as it is."""
    words = _WORD.findall(text)
    if len(words) < 2:
        return text
    shuffled = list(words)
    for _ in range(5):  # a permutation that differs from the original where one exists
        rng.shuffle(shuffled)
        if shuffled != words:
            break
    return " ".join(shuffled)
