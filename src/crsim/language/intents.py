"""Intents of one user utterance: social acts, item feedback, inquiries and "no preference" answers.

Runs after the slot values are read (it needs to know whether the utterance states preferences),
resolves bare "yes"/"no"/"it" against what the CRS last did, and writes the contract acts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from crsim.language import cues
from crsim.model.acts import DialogueAct, Intent
from crsim.model.items import ItemCollection

if TYPE_CHECKING:
    from crsim.language.lexicon import Lexicon
    from crsim.language.results import Context, Period, Understanding


class ParsedText(Protocol):
    """The surface of an utterance that intent rules read (the understanding parser provides it)."""

    @property
    def text(self) -> str: ...

    @property
    def norm(self) -> str: ...

    @property
    def words(self) -> list[str]: ...

    @property
    def clause(self) -> list[int]: ...

    @property
    def sentences(self) -> list[str]: ...

    @property
    def questions(self) -> list[str]: ...


class IntentReader:
    """Intent detection over the normalised text, resolved against the context; then the acts."""

    def __init__(
        self, parsed: ParsedText, out: Understanding, ctx: Context, items: ItemCollection, lex: Lexicon
    ) -> None:
        self.p, self.out, self.ctx, self.items, self.lex = parsed, out, ctx, items, lex
        self.cues = lex.cues

    def apply(self) -> None:
        """Fill the intents, inquiries, feedback and no-preference fields of `out`, then its acts."""
        out, norm, words = self.out, self.p.norm, self.p.words
        found = {
            Intent.GREETING: cues.GREETING.search(norm),
            Intent.GOODBYE: cues.GOODBYE.search(norm),
            Intent.REQUEST_RECOMMENDATION: self.cues.request.search(norm),
            Intent.AFFIRM: cues.AFFIRM.search(norm),
            Intent.DENY: cues.DENY.search(norm)
            or (words[:1] in cues.LEADING_NO and (len(words) == 1 or self.p.clause[1] > 0)),
        }
        out.intents.update(intent for intent, hit in found.items() if hit)
        out.thanks = bool(cues.THANKS.search(norm))
        self._inquiries()
        self._feedback()
        self._no_preference()
        out.acts = self._acts()

    def _inquiries(self) -> None:
        """Questions about the item by the slot asked for; a question that states a value of the slot
        ("is the director Nolan? I like Nolan") states it rather than asks. "Is it a comedy?" asks, and
        so does a bare "Its director?" (`cues.bare_question`)."""
        out, p, unless = self.out, self.p, self.cues.inquiry_unless_stated
        bare = {cues.bare_question(q, self.cues.inquiries) for q in p.questions}
        for slot, pattern in self.cues.inquiries.items():
            stated = slot in out.likes and (unless is None or slot in unless)
            if (slot in bare or any(pattern.search(s) for s in p.sentences)) and not stated:
                out.inquiries.append(slot)
        is_it = "?" in p.text and cues.IS_IT.match(p.norm)
        for slot in self.lex.value_slots if is_it else ():
            if slot in out.likes and slot not in out.inquiries and slot in self.cues.inquiries:
                out.inquiries.append(slot)
                del out.likes[slot]
        if out.inquiries:
            out.intents.add(Intent.INQUIRE)
            out.free_words.clear()

    def _feedback(self) -> None:
        """Accept / reject / seen about the mentioned items, else about the item under discussion."""
        out, ctx, norm = self.out, self.ctx, self.p.norm
        target = list(out.mentioned_items) or ([ctx.recommended] if ctx.recommended else [])
        seen = bool(self.cues.seen.search(norm)) and not self.cues.not_seen.search(norm)
        rejection = cues.REJECT.search(norm)
        # after a yes/no question a bare "no" answers the question, it does not reject the item
        reject = not seen and rejection is not None and not (ctx.yes_no and rejection.group() in cues.BARE_NO)
        accept = not seen and not reject and bool(self.cues.accept.search(norm))
        plain = not (seen or reject or accept or out.inquiries or out.gives_preferences)
        if ctx.recommended and not ctx.yes_no and plain:  # "yes" / "no" right after a recommendation
            accept, reject = Intent.AFFIRM in out.intents, Intent.DENY in out.intents
        if seen and target:
            out.seen_items.extend(target)
            if (cues.LIKE.search(norm) and not cues.HATE.search(norm)) or cues.WAS_GOOD.search(norm):
                out.liked_items.extend(target)  # "seen it, loved it": a taste the CRS can use
        elif reject and target:
            out.rejected_items.extend(target)
        elif accept and target:
            out.accepted_items.extend(target)
        elif out.mentioned_items and (cues.LIKE.search(norm) or cues.HATE.search(norm)):
            (out.rejected_items if cues.HATE.search(norm) else out.liked_items).extend(out.mentioned_items)
        for ids, intent in ((out.seen_items, Intent.SEEN), (out.rejected_items, Intent.REJECT)):
            if ids:
                out.intents.add(intent)
        if out.accepted_items:
            out.intents.add(Intent.ACCEPT)

    def _no_preference(self) -> None:
        """'Any is fine', or a bare 'no' to an elicitation: no preference on the named or asked slot."""
        out, ctx = self.out, self.ctx
        if out.gives_preferences or out.inquiries or out.mentioned_items:
            return
        denied = Intent.DENY in out.intents and ctx.elicited is not None and not ctx.yes_no
        if not (denied or cues.NO_PREFERENCE.search(self.p.norm)):
            return
        words = set(self.p.words)
        named = [slot for slot, names in self.cues.slot_words.items() if names & words]
        out.no_preference.extend(named or [ctx.elicited or "any"])
        out.free_words.clear()

    def _acts(self) -> list[DialogueAct]:
        """The contract form: social acts, disclosed and rejected values, inquiries, item feedback."""
        out, items = self.out, self.items

        def act(intent: str, slot: str | None = None, value: str | None = None) -> DialogueAct:
            return DialogueAct(intent=intent, slots=[(slot, value)] if slot else [])

        acts = [act(i) for i in (Intent.GREETING, Intent.REQUEST_RECOMMENDATION) if i in out.intents]
        acts += [act(Intent.DISCLOSE, slot, v) for slot, values in out.likes.items() for v in values]
        period = self.lex.period_slot or "period"
        acts += [act(Intent.DISCLOSE, period, _decade_label(p)) for p in out.periods]
        if out.newer or out.older:
            acts.append(act(Intent.DISCLOSE, period, "more recent" if out.newer else "older"))
        acts += [act(Intent.DISCLOSE, slot) for slot in out.no_preference if slot != "any"]
        acts += [act(Intent.REJECT, slot, v) for slot, values in out.dislikes.items() for v in values]
        acts += [act(Intent.INQUIRE, slot) for slot in out.inquiries]
        feedback = (
            (Intent.DISCLOSE, out.liked_items),
            (Intent.ACCEPT, out.accepted_items),
            (Intent.REJECT, out.rejected_items),
            (Intent.SEEN, out.seen_items),
        )
        acts += [act(intent, "title", items[i].display_title) for intent, ids in feedback for i in ids]
        answered = bool(out.accepted_items or out.rejected_items or out.seen_items)
        acts += [act(i) for i in (Intent.AFFIRM, Intent.DENY) if i in out.intents and not answered]
        acts += [act(Intent.GOODBYE)] if Intent.GOODBYE in out.intents else []
        return acts or ([act(Intent.OTHER)] if out.text.strip() else [])


def _decade_label(period: Period) -> str:
    """Decade slot value: '1990s' for decades and single years, else the period's own label."""
    if period.start == period.end or (period.end - period.start == 9 and period.label.endswith("s")):
        return f"{period.start // 10 * 10}s"
    return period.label
