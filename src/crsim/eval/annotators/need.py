"""The information need of a recorded dialogue (constraints, requests, targets), read off the user's acts.

Recipe (rule-based; `extract_need`). User utterances without acts are first annotated by an act
annotator (`rules` by default; CRS utterances without acts too, since the user's acts are read
in the context of the CRS turn before). Then the user's acts are read in order:

- `disclose(slot=value)` and `request_recommendation(slot=value)` of an informable slot add the
  value to the constraints (several values of one slot make a list); a later `reject(slot=value)`
  of an equivalent value removes it again. Titles and slots asked about (`disclose(genre)`, "any
  genre is fine") are not constraints.
- `inquire(slot)` of a slot the domain knows adds a request.
- `accept` adds targets: the item it names (an `item` slot, or a `title` slot linked exactly to
  the domain's items); an accept that names none answers the latest CRS recommendation before
  it, and takes the items of that recommendation the utterance mentions, else all of them. A
  later `reject` of a target item removes it.

Values are compared as in the act evaluation (`evaluate.value_key`: case, accents, punctuation,
a "(year)", a leading article and a plural "s" do not matter). The result goes into
`Dialogue.information_need` with `metadata["information_need_source"] = "rules"`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass

from crsim.eval.annotators.base import ActAnnotator
from crsim.eval.annotators.evaluate import slot_key, value_key
from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.mentions import named_items
from crsim.model.user import InformationNeed

#: Metadata key naming how `Dialogue.information_need` was made; absent for a given (true) need.
NEED_SOURCE = keys.NEED_SOURCE.name
#: The extraction method this module implements.
METHOD = "rules"
_CONSTRAINT_INTENTS = frozenset({Intent.DISCLOSE, Intent.REQUEST_RECOMMENDATION})
_ITEM_SLOTS = frozenset({"title", "item"})


@dataclass
class NeedReport:
    """Counts of one need-annotation pass."""

    dialogues: int = 0
    extracted: int = 0
    kept: int = 0
    utterances_annotated: int = 0


class _Need:
    """The need as it builds up while the dialogue is read."""

    def __init__(self) -> None:
        self.constraints: dict[str, list[str]] = {}
        self.requests: list[str] = []
        self.targets: list[str] = []

    def add_constraint(self, slot: str, value: str) -> None:
        values = self.constraints.setdefault(slot, [])
        if all(value_key(v) != value_key(value) for v in values):
            values.append(value)

    def drop_constraint(self, slot: str, value: str) -> None:
        kept = [v for v in self.constraints.get(slot, []) if value_key(v) != value_key(value)]
        if kept:
            self.constraints[slot] = kept
        else:
            self.constraints.pop(slot, None)

    def result(self) -> InformationNeed:
        constraints = {s: vs[0] if len(vs) == 1 else list(vs) for s, vs in self.constraints.items()}
        return InformationNeed(constraints=constraints, requests=self.requests, targets=self.targets)


def need_from_acts(dialogue: Dialogue, domain: Domain) -> InformationNeed:
    """The information need the user's acts express (see the module docstring); acts are not added."""
    need = _Need()
    for position, utterance in enumerate(dialogue.utterances):
        if utterance.role != Role.USER:
            continue
        history = dialogue.utterances[:position]
        for act in utterance.acts:
            _read_act(need, act, utterance, history, domain)
    return need.result()


def _read_act(
    need: _Need, act: DialogueAct, utterance: Utterance, history: Sequence[Utterance], domain: Domain
) -> None:
    values = [(slot_key(s), v) for s, v in act.slots]
    if act.intent in _CONSTRAINT_INTENTS:
        for slot, value in values:
            if value and slot in domain.informable_slots:
                need.add_constraint(slot, value)
    elif act.intent == Intent.REJECT:
        for slot, value in values:
            if value and slot in domain.informable_slots:
                need.drop_constraint(slot, value)
        dropped = set(act_items(act, domain))
        need.targets = [t for t in need.targets if t not in dropped]
    elif act.intent == Intent.INQUIRE:
        known = domain.requestable_slots.keys() | domain.informable_slots.keys()
        need.requests += [s for s, _ in values if s in known and s not in need.requests]
    elif act.intent == Intent.ACCEPT:
        items = act_items(act, domain) or answered_items(utterance, history, domain)
        need.targets += [i for i in items if i not in need.targets]


def act_items(act: DialogueAct, domain: Domain) -> list[str]:
    """Items an act names: `item` slots, and `title` slots linked exactly to the domain's items."""
    ids: list[str] = []
    for slot, value in act.slots:
        if not value or slot_key(slot) not in _ITEM_SLOTS:
            continue
        if slot_key(slot) == "item":
            ids.append(value)
            continue
        match = domain.items.linker.match_title(value)
        if match is not None and match.score >= 100:
            ids.append(match.item_id)
    return list(dict.fromkeys(ids))


def answered_items(utterance: Utterance, history: Sequence[Utterance], domain: Domain) -> list[str]:
    """The items of the latest CRS recommendation before `utterance` that it mentions, else all of them."""
    recommended = next((r for u in reversed(history) if (r := recommended_items(u, domain))), [])
    mentioned = set(mentioned_items(utterance, domain))
    chosen = [i for i in recommended if i in mentioned]
    return chosen or recommended


def recommended_items(utterance: Utterance, domain: Domain) -> list[str]:
    """Items a CRS utterance recommends: `recommended_items`, else the items of its `recommend` acts."""
    if utterance.role != Role.CRS:
        return []
    if utterance.recommended_items:
        return list(dict.fromkeys(utterance.recommended_items))
    acts = [a for a in utterance.acts if a.intent == Intent.RECOMMEND]
    return list(dict.fromkeys(i for a in acts for i in act_items(a, domain)))


def mentioned_items(utterance: Utterance, domain: Domain) -> list[str]:
    """Items an utterance names (`crsim.model.mentions.named_items`: recommended and mentioned ids, and
    an older conversion's `annotations["mentioned_items"]`) and the items its acts name."""
    ids = named_items(utterance)
    ids += [i for a in utterance.acts for i in act_items(a, domain)]
    return list(dict.fromkeys(ids))


class NeedExtractor:
    """Extracts needs with the recipe above, using `annotator` for user utterances without acts."""

    def __init__(self, annotator: ActAnnotator) -> None:
        self.annotator = annotator
        self.domain = annotator.domain

    async def extract(self, dialogue: Dialogue, report: NeedReport | None = None) -> InformationNeed:
        """The need of `dialogue`, annotating acts first where an utterance has none."""
        annotated = await self.annotator.annotate(dialogue)
        if report is not None:
            report.utterances_annotated += sum(
                a is not b for a, b in zip(annotated.utterances, dialogue.utterances, strict=True)
            )
        return need_from_acts(annotated, self.domain)

    async def annotate(
        self, dialogue: Dialogue, *, overwrite: bool = False, report: NeedReport | None = None
    ) -> Dialogue:
        """A copy of `dialogue` with its extracted need; an existing need is kept unless `overwrite`."""
        report = report if report is not None else NeedReport()
        report.dialogues += 1
        if dialogue.information_need is not None and not overwrite:
            report.kept += 1
            return dialogue
        need = await self.extract(dialogue, report)
        report.extracted += 1
        metadata = {**dialogue.metadata, **keys.NEED_SOURCE.entry(METHOD)}
        return dialogue.model_copy(update={"information_need": need, "metadata": metadata})

    async def annotate_all(
        self, dialogues: Iterable[Dialogue], *, overwrite: bool = False, report: NeedReport | None = None
    ) -> AsyncIterator[Dialogue]:
        """Annotate a stream of dialogues one by one."""
        for dialogue in dialogues:
            yield await self.annotate(dialogue, overwrite=overwrite, report=report)
