"""The rule-based act annotator: crsim's existing rule-based understanding applied to recorded dialogues.

User utterances go through `crsim.language.understanding.understand` (the parser the built-in CRSs
use) with a context taken from the CRS utterance before them; CRS utterances go through the ABUS
simulator's `RuleNLU` with the items discussed so far as hints. No third set of rules: what the
annotator gets right or wrong is what crsim's own components get right or wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as ComponentParams
from crsim.eval.annotators.base import ActAnnotator, annotator
from crsim.language.crs_text import RuleNLU
from crsim.language.understanding import Context, understand
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Role, Utterance
from crsim.model.items import ItemCollection
from crsim.model.mentions import named_items


@annotator("rules")
class RuleAnnotator(ActAnnotator):
    """Acts from crsim's rule-based understanding of user and CRS text."""

    description = "rule-based: crsim.language.understanding for user text, the ABUS RuleNLU for CRS text"

    class Params(ComponentParams):
        pass

    def __init__(self, params: ComponentParams, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self._nlu = RuleNLU(self.domain)

    async def utterance_acts(self, utterance: Utterance, history: Sequence[Utterance]) -> list[DialogueAct]:
        if utterance.role == Role.USER:
            context = user_context(history, self.domain.items)
            return understand(utterance.text, self.domain, context).acts
        return self._nlu.parse(utterance.text, self.items_hint(history))

    def item_ids(self, utterance: Utterance) -> list[str]:
        """Items an utterance recommends or mentions: listed ids, `item` slots, resolvable titles."""
        ids = named_items(utterance)
        for act in utterance.acts:
            ids += [v for s, v in act.slots if s == "item" and v]
            for title in (v for s, v in act.slots if s == "title" and v):
                match = self.domain.items.linker.match_title(title)
                if match is not None and match.score >= 100:
                    ids.append(match.item_id)
        return [i for i in ids if i in self.domain.items]

    def items_hint(self, history: Sequence[Utterance]) -> list[str]:
        """Items discussed so far, each at its latest mention, so the one in focus comes last."""
        order: dict[str, None] = {}
        for utterance in history:
            for item_id in self.item_ids(utterance):
                order.pop(item_id, None)
                order[item_id] = None
        return list(order)


def user_context(history: Sequence[Utterance], items: ItemCollection) -> Context:
    """What the CRS last did: the slot it elicited, the item (of `items`) it last recommended, a
    yes/no question."""
    last_crs = next((u for u in reversed(history) if u.role == Role.CRS), None)
    if last_crs is None:
        return Context()
    elicited = next(
        (s for a in last_crs.acts if a.intent == Intent.ELICIT for s, v in a.slots if v is None), None
    )
    yes_no = any(a.intent == Intent.ASK for a in last_crs.acts)
    return Context(elicited=elicited, recommended=_last_recommended(history, items), yes_no=yes_no)


def _last_recommended(history: Sequence[Utterance], items: ItemCollection) -> str | None:
    """The most recent item the CRS recommended (from `recommended_items` or a `recommend` act)."""
    for utterance in reversed(history):
        if utterance.role != Role.CRS:
            continue
        ids = list(utterance.recommended_items)
        ids += [
            v for a in utterance.acts if a.intent == Intent.RECOMMEND for s, v in a.slots if s == "item" and v
        ]
        ids = [i for i in ids if i in items]
        if ids:
            return ids[-1]
    return None
