"""The reply when the model will not speak as the user: one plain sentence per chosen action.

A small model sometimes answers "your next message" with the recommender's part twice in a row
("Recommender: I'm sorry, but I can't help you with that."); cleaned of that part, nothing of the
user's message is left. Rather than failing the dialogue, the simulator says what its chosen actions
mean in the domain's agenda templates (the phrasing `abus` speaks, so rule-based understanding reads
it), and records that it did (annotation `plain_reply`).
"""

from __future__ import annotations

import random

from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.sim.recusersim.actions import CLARIFY, END, INQUIRE, NEGATIVE, POSITIVE, REQUEST, UserAction
from crsim.sim.recusersim.evidence import Inquiry
from crsim.sim.shared.conversation import NeedView
from crsim.sim.shared.nlg import DomainWords, NLGContext, TemplateNLG, domain_template_set, load_templates


def plain_acts(
    actions: list[UserAction], inquiry: Inquiry | None, need: NeedView, turn: int
) -> list[DialogueAct]:
    """The dialogue acts the chosen actions stand for: a request, one constraint of the need (in turn,
    by the turn number), feedback on the item under discussion, the inquiry's details, a goodbye.
    Small talk says nothing; with no act left, the user asks for a recommendation."""
    acts: list[DialogueAct] = []
    for action in actions:
        if action.name == REQUEST.name:
            acts.append(DialogueAct(intent=Intent.REQUEST_RECOMMENDATION))
        elif action.name == CLARIFY.name and need.constraints:
            wanted = need.constraints[turn % len(need.constraints)]
            acts.append(DialogueAct(intent=Intent.DISCLOSE, slots=[(wanted.slot, v) for v in wanted.values]))
        elif action.name == POSITIVE.name:
            acts.append(DialogueAct(intent=Intent.ACCEPT))
        elif action.name == NEGATIVE.name:
            acts.append(DialogueAct(intent=Intent.REJECT))
        elif action.name == INQUIRE.name and inquiry is not None:
            acts += [DialogueAct(intent=Intent.INQUIRE, slots=[(detail, None)]) for detail in inquiry.details]
        elif action.name == END.name:
            acts.append(DialogueAct(intent=Intent.GOODBYE))
    return acts or [DialogueAct(intent=Intent.REQUEST_RECOMMENDATION)]


def plain_reply(
    actions: list[UserAction], inquiry: Inquiry | None, need: NeedView, domain: Domain, turn: int, seed: int
) -> str:
    """`plain_acts` in the domain's template phrasing, the phrasing chosen by `seed`."""
    nlg = TemplateNLG(
        load_templates(domain_template_set(domain)), random.Random(seed), DomainWords.of(domain)
    )
    return nlg.generate(plain_acts(actions, inquiry, need, turn), NLGContext())
