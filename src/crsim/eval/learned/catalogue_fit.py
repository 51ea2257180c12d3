"""Whether a CRS's recommendations fit what the user asked for, read against the item catalogue.

A rater who asked for fantasy and got two animated films judges the reply by its items, not its
wording. These features make that judgement without labels and without knowing which CRS spoke:
the user's utterances are parsed by crsim's rule-based understanding (`crsim.language.understanding`)
into liked and disliked slot values (genres, keywords, people) and items the user has seen or
rejected; each CRS reply's recommended items (linked to the catalogue) are then checked against
what the user had said *before* that reply.

Per CRS reply (`ReplyFit`):

- `known`: 1 when the reply recommends catalogue items and the user had stated at least one liked
  value of a slot the catalogue describes; the two shares below are 0 otherwise.
- `match`: share of those items that hold at least one liked value.
- `clash`: share of the recommended catalogue items that hold a disliked value.
- `seen`: share of the recommended items the user had said they have seen or rejected.

The catalogue is the run's domain when the evaluator is given one (`crsim evaluate` on a run
folder), else the shipped movie domain, the domain the CRSArena-Eval conversations come from and
the one the model was trained with. In another domain the same definitions apply to that domain's
slots (a restaurant's food and area instead of a film's genre), which is an extrapolation of what
was learned; a dialogue whose items are not in the catalogue gets 0 everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsim.domains.movielens import movie_domain
from crsim.language.understanding import understand
from crsim.model.dialogue import Dialogue, Role
from crsim.model.domain import Domain


@dataclass(frozen=True, slots=True)
class ReplyFit:
    """How one CRS reply's recommended items fit the user's stated wishes (see the module text)."""

    known: float = 0.0
    match: float = 0.0
    clash: float = 0.0
    seen: float = 0.0


@dataclass
class _Wishes:
    """What the user has said so far: liked and disliked (attribute, value) pairs, seen items."""

    liked: set[tuple[str, str]]
    disliked: set[tuple[str, str]]
    seen: set[str]


def reply_fits(dialogue: Dialogue, domain: Domain | None = None) -> dict[int, ReplyFit]:
    """`ReplyFit` of every CRS utterance, by its position in the dialogue (`domain`: the catalogue,
    default the shipped movies)."""
    domain = domain or movie_domain()
    wishes = _Wishes(set(), set(), set())
    out: dict[int, ReplyFit] = {}
    for position, utterance in enumerate(dialogue.utterances):
        if utterance.role is Role.USER:
            _update(wishes, utterance.text, domain)
        else:
            out[position] = _fit(list(dict.fromkeys(utterance.recommended_items)), wishes, domain)
    return out


def _update(wishes: _Wishes, text: str, domain: Domain) -> None:
    parsed = understand(text, domain)
    for target, values in ((wishes.liked, parsed.likes), (wishes.disliked, parsed.dislikes)):
        for slot, slot_values in values.items():
            if slot in domain.slots:
                target.update((domain.slots[slot].attribute, v) for v in slot_values)
    wishes.seen.update(parsed.seen_items)
    wishes.seen.update(parsed.rejected_items)


def _holding(pairs: set[tuple[str, str]], domain: Domain) -> frozenset[str]:
    ids: set[str] = set()
    for attribute, value in pairs:
        ids.update(domain.items.with_value(attribute, value))
    return frozenset(ids)


def _fit(items: list[str], wishes: _Wishes, domain: Domain) -> ReplyFit:
    found = [i for i in items if domain.items.get(i) is not None]
    if not found:
        return ReplyFit()
    seen = sum(i in wishes.seen for i in found) / len(found)
    disliked = _holding(wishes.disliked, domain)
    clash = sum(i in disliked for i in found) / len(found)
    if not wishes.liked:
        return ReplyFit(clash=clash, seen=seen)
    liked = _holding(wishes.liked, domain)
    return ReplyFit(known=1.0, match=sum(i in liked for i in found) / len(found), clash=clash, seen=seen)
