"""The `llm` CRS's replies made to agree with their text, without the model.

A model's answer is a message and the numbers of the candidates it recommends; simulators and people
read only the message. `ReplyMaker` turns an answer into the reply shown (`Settled`): the message cut
and tidied as shown, the recommended items those its text names, and the last resorts when the text
cannot carry them (a recommendation sentence appended, or a reply composed from the catalogue). It
also says when an answer repeats an earlier reply. The rules are in `crsim.crs.llm`'s docstring; the
model-free checks they use are `crsim.crs.llm_checks`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from crsim.crs.llm_checks import shorten, tidy_ending
from crsim.crs.nlg import sentences_for
from crsim.language.understanding import Context, understand
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.model.linking import Mention
from crsim.model.mentions import split_linked
from crsim.model.text import near_duplicate, states_value

#: An earlier reply at least this long that a new one begins with makes the new one a repeat.
ECHO_CHARS = 40


@dataclass(frozen=True)
class Settled:
    """A reply whose text and items agree: the listed items it recommends, the ids of new items it
    names besides them (recommended too) and of items named before (mentioned)."""

    text: str
    listed: list[Item]
    fresh: list[str]
    mentioned: list[str]
    mentions: list[Mention]


class ReplyMaker:
    """Replies of one `llm` CRS: its domain, message cap and most recommendations per reply."""

    def __init__(self, domain: Domain, max_message_chars: int, max_recommendations: int) -> None:
        self.domain = domain
        self.max_message_chars, self.max_recommendations = max_message_chars, max_recommendations

    def shown(self, message: str, notes: dict[str, Any]) -> str:
        """The message as shown: cut to `max_message_chars` at a sentence end (`shortened`), and its
        ending tidied (`tidied`: an unfinished last sentence after an ellipsis dropped, or a missing
        full stop added; `crsim.crs.llm_checks.tidy_ending`)."""
        text = shorten(message, self.max_message_chars)
        if text != message:
            notes["shortened"] = len(message)
        text, tidied = tidy_ending(text)
        if tidied is not None:
            notes["tidied"] = tidied
        return text

    def repeats(self, message: str, earlier: list[str]) -> bool:
        """Whether `message`, as it would be shown, nearly repeats one of the `earlier` replies
        (`crsim.model.text.near_duplicate`, the behaviour report's rule: a paraphrase that keeps most
        words in order), or begins with a whole earlier reply of at least `ECHO_CHARS` characters."""
        said = self.shown(message, {})
        for reply in earlier:
            folded = _folded(reply)
            if near_duplicate(said, reply) or (
                len(folded) >= ECHO_CHARS and _folded(said).startswith(folded)
            ):
                return True
        return False

    def settle(
        self,
        message: str,
        listed: list[Item],
        named_before: set[str],
        notes: dict[str, Any],
        agreement: str | None = None,
    ) -> Settled | None:
        """The reply for an answer recommending `listed` when its text names what it recommends (or can
        be made to by leaving out listed items it does not name); None when its text names no item at
        all. Items in `named_before` that the text names are mentioned, not recommended."""
        text = self.shown(message, notes)
        mentions = self.domain.items.linker.link(text)
        linked = list(dict.fromkeys(m.item_id for m in mentions))
        listed_ids = {item.id for item in listed}
        fresh, mentioned = split_linked([i for i in linked if i not in listed_ids], named_before)
        named = [item for item in listed if item.id in linked]
        if len(named) < len(listed):
            if not named and not fresh and not mentioned:
                return None
            notes["not_named"] = [item.id for item in listed if item.id not in linked]
            agreement = agreement or "named"
        if agreement is not None:
            notes["agreement"] = agreement
        return Settled(text, named, fresh, mentioned, mentions)

    def appended(
        self,
        message: str,
        listed: list[Item],
        named_before: set[str],
        rng: random.Random,
        notes: dict[str, Any],
    ) -> Settled:
        """The last resort for a message that names none of the items it recommends: a sentence
        recommending them by title, in the domain's own phrasing, follows the model's words
        (`appended`)."""
        text = f"{self.shown(message, notes)} {self.recommendation(listed, rng)}"
        notes["agreement"] = "appended"
        mentions = self.domain.items.linker.link(text)
        listed_ids = {item.id for item in listed}
        unlisted = [i for i in dict.fromkeys(m.item_id for m in mentions) if i not in listed_ids]
        fresh, mentioned = split_linked(unlisted, named_before)
        return Settled(text, listed, fresh, mentioned, mentions)

    def composed(self, chosen: list[Item], rng: random.Random, notes: dict[str, Any]) -> Settled:
        """The model looped or left its sentence unfinished even when asked again: the reply is composed
        without it, recommending `chosen` (its listed items, else the best candidate), a single item
        with its genres and leading actors from the catalogue (`composed`), so the dialogue moves on.
        Several items get no facts: the domain's "It's a ..." would not say which one it is about."""
        chosen = chosen[: self.max_recommendations]
        only = chosen[0] if len(chosen) == 1 else None
        facts = sentences_for(self.domain).described(only.genres[:2], only.actors[:2], None) if only else ""
        text = " ".join(part for part in (self.recommendation(chosen, rng), facts) if part)
        notes["agreement"] = "composed"
        return Settled(text, chosen, [], [], self.domain.items.linker.link(text))

    def recommendation(self, items: list[Item], rng: random.Random) -> str:
        """One sentence recommending `items` by title ("How about Heat (1995)?")."""
        return sentences_for(self.domain).recommendation([item.display_title for item in items], rng)

    def catalogue_answers(
        self, text: str, user_text: str, about: list[str]
    ) -> tuple[str, list[dict[str, str]], list[DialogueAct]]:
        """The reply with the answers the model's `text` left out: for each requestable slot the user
        asks about (the CRSs' rule-based understanding of its text) whose value the catalogue has for
        the item under discussion (the one of `about`, the last recommended items, that the user names,
        else the first) and the text does not state (`crsim.model.text.states_value`), the domain's
        answer sentence is appended. Also returns what was answered ({item, slot}) and its `inform`
        acts."""
        known = [i for i in about if i in self.domain.items]
        if not known:
            return text, [], []
        named = [m.item_id for m in self.domain.items.linker.link(user_text) if m.item_id in known]
        item = self.domain.items[named[0] if named else known[0]]
        heard = understand(user_text, self.domain, Context(recommended=item.id))
        asked = [s for a in heard.acts if a.intent == Intent.INQUIRE for s, _ in a.slots]
        say = sentences_for(self.domain)
        sentences: list[str] = []
        answered: list[dict[str, str]] = []
        acts: list[DialogueAct] = []
        titles = (item.display_title, item.title)
        for slot in dict.fromkeys(asked):
            attribute = self.domain.requestable_slots.get(slot)
            values = item.values(attribute) if attribute else []
            if not values or states_value(text, values, titles):
                continue
            sentences.append(say.answer(slot, values))
            answered.append({"item": item.id, "slot": slot})
            acts += [DialogueAct(intent=Intent.INFORM, slots=[(slot, v)]) for v in values]
        return " ".join([text, *sentences]), answered, acts


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()
