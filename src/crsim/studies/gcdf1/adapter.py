"""crsim dialogues as GCDF1 input: the information need as the goal, dialogue acts as actions.

The goal has one domain (`movie` unless told otherwise): each constraint value is an inform
constraint, each requested slot a request. A turn is a user utterance followed by the CRS
utterances answering it; CRS utterances before the first user utterance (a greeting) are left
out, because GCDF1 starts with a user turn. Intents map onto the kinds the rules look at:

| crsim act (role) | GCDF1 action |
|---|---|
| `disclose`/`inform` (user) with values | inform constraint per slot-value pair |
| `disclose(slot)` (user, no value: "no preference") | inform `slot=dontcare` |
| `inquire`/`request` (user), slots without value | requested slot `domain-slot` |
| `elicit`, `ask`, `request` (CRS) | system request (of the slot, when named) |
| `recommend` (CRS), or `recommended_items` without a recommend act | recommendation (`title`, `item`) |
| `inform` (CRS) | system inform (answers, pre-empted constraints) |
| `greeting`, `goodbye` | the `general` service |
| anything else | an action without a kind in the domain |

crsim records carry no system NLU annotations, so the NLU checks are skipped, and there are no
no-offer, booking or taxi acts, so those rules never fire (see docs/gcdf1.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.user import InformationNeed
from crsim.studies.gcdf1.dialogue import (
    SYSTEM,
    USER,
    Action,
    ActKind,
    DomainGoal,
    Frame,
    GoalDialogue,
    Ontology,
    Turn,
)

GENERAL = "general"
DONTCARE = "dontcare"
_USER_INFORM = frozenset({Intent.DISCLOSE.value, Intent.INFORM.value})
_USER_REQUEST = frozenset({Intent.INQUIRE.value, "request"})
_SYSTEM_REQUEST = frozenset({Intent.ELICIT.value, Intent.ASK.value, "request"})
_SOCIAL = frozenset({Intent.GREETING.value, Intent.GOODBYE.value})


def crsim_ontology(domain: str = "movie", entity_slots: Sequence[str] = ("title",)) -> Ontology:
    """Domain knowledge for crsim dialogues: the recommended item is the entity; nothing books."""
    return Ontology(entity_slots={domain: tuple(entity_slots)}, general_service=GENERAL, taxi_domain=None)


def goal_from_need(need: InformationNeed, domain: str = "movie") -> dict[str, DomainGoal]:
    constraints = tuple((slot, value) for slot in need.constraints for value in need.constraint_values(slot))
    return {domain: DomainGoal(constraints=constraints, requests=tuple(need.requests))}


def _user_frames(acts: Sequence[DialogueAct], domain: str) -> tuple[Frame, ...]:
    actions: list[Action] = []
    general: list[Action] = []
    requested: list[str] = []
    for act in acts:
        if act.intent in _SOCIAL:
            general.append(Action(act=act.intent))
        elif act.intent in _USER_INFORM:
            for slot, value in act.slots or [("", None)]:
                if slot:
                    actions.append(
                        Action(act.intent, slot, (value if value is not None else DONTCARE,), ActKind.INFORM)
                    )
                else:
                    actions.append(Action(act.intent, kinds=ActKind.INFORM))
        elif act.intent in _USER_REQUEST:
            asked = [slot for slot, value in act.slots if value is None]
            requested += [f"{domain}-{slot}" for slot in asked]
            actions += [Action(act.intent, slot, (), ActKind.REQUEST) for slot in asked] or [
                Action(act.intent, kinds=ActKind.REQUEST)
            ]
        else:
            actions.append(Action(act=act.intent))
    frames = [Frame(domain, tuple(actions), tuple(requested))]
    if general:
        frames.append(Frame(GENERAL, tuple(general)))
    return tuple(frames)


def _system_frames(utterances: Sequence[Utterance], domain: str) -> tuple[Frame, ...]:
    actions: list[Action] = []
    general: list[Action] = []
    for utterance in utterances:
        recommends = False
        for act in utterance.acts:
            if act.intent in _SOCIAL:
                general.append(Action(act=act.intent))
                continue
            if act.intent == Intent.RECOMMEND.value:
                kinds, recommends = ActKind.RECOMMEND, True
            elif act.intent == Intent.INFORM.value:
                kinds = ActKind.INFORM
            elif act.intent in _SYSTEM_REQUEST:
                kinds = ActKind.REQUEST
            else:
                kinds = 0
            for slot, value in act.slots or [("", None)]:
                actions.append(Action(act.intent, slot, (value,) if value is not None else (), kinds))
        if utterance.recommended_items and not recommends:
            actions += [
                Action(Intent.RECOMMEND.value, "item", (item,), ActKind.RECOMMEND)
                for item in utterance.recommended_items
            ]
    frames = [Frame(domain, tuple(actions))]
    if general:
        frames.append(Frame(GENERAL, tuple(general)))
    return tuple(frames)


def _turns(utterances: Sequence[Utterance], domain: str) -> tuple[Turn, ...]:
    """Alternating turns, starting with the user: consecutive utterances of one role are merged,
    and CRS utterances before the first user utterance are left out."""
    groups: list[tuple[Role, list[Utterance]]] = []
    for utterance in utterances:
        if groups and groups[-1][0] is utterance.role:
            groups[-1][1].append(utterance)
        else:
            groups.append((utterance.role, [utterance]))
    if groups and groups[0][0] is not Role.USER:
        groups = groups[1:]
    turns: list[Turn] = []
    for role, group in groups:
        text = " ".join(u.text for u in group)
        if role is Role.USER:
            turns.append(Turn(USER, text, _user_frames([a for u in group for a in u.acts], domain)))
        else:
            turns.append(Turn(SYSTEM, text, _system_frames(group, domain)))
    return tuple(turns)


def goal_dialogue(dialogue: Dialogue, domain: str = "movie") -> GoalDialogue:
    """A crsim dialogue as GCDF1 input (its information need must be set)."""
    if dialogue.information_need is None:
        raise ValueError(f"dialogue {dialogue.id!r} has no information need")
    return GoalDialogue(
        dialogue_id=dialogue.id,
        goal=goal_from_need(dialogue.information_need, domain),
        turns=_turns(dialogue.utterances, domain),
        system_nlu=False,
    )
