"""The memory module: the profile, the conversation, what the user knows they like, and what they
discover they like during the conversation (unknown-preference excitation).

Known preferences are the profile's preference values, the information need's constraint values
and liked slot values, and the preferences discovered so far. A recommended item none of whose
attribute values is a known preference is a candidate for excitation: the simulator asks the LLM
whether this user would find it highly agreeable anyway and, if so, which new preference it
reveals; that preference is remembered and shown in every later prompt.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pydantic import BaseModel

from crsim.model.items import LIST_ATTRIBUTES, Item, ItemCollection
from crsim.sim.recusersim.evidence import Inquiry
from crsim.sim.recusersim.profile import Profile
from crsim.sim.shared.conversation import Entry, NeedView


class Discovery(BaseModel):
    """A preference the user discovered: at which turn, from which item, and why."""

    turn: int
    item_id: str
    item: str
    preference: str
    reason: str


@dataclass
class Memory:
    """Everything the simulated user remembers during one dialogue."""

    profile: Profile
    need: NeedView
    history: list[Entry] = field(default_factory=list)
    discovered: list[Discovery] = field(default_factory=list)
    #: Items already checked for excitation (each item at most once per dialogue).
    checked: set[str] = field(default_factory=set)
    #: Items the recommender has recommended so far, in order, without repeats.
    recommended: list[str] = field(default_factory=list)
    #: The item under discussion: the first one of the latest message that recommended something.
    focus: str | None = None
    #: Per item, the requested details the recommender has told (`evidence.tells`).
    learned: dict[str, set[str]] = field(default_factory=dict)
    #: Per item, how often the user asked about its details.
    inquired: Counter[str] = field(default_factory=Counter)
    #: What the user's last message did: its actions, and the details it asked about (if any).
    last_actions: list[str] = field(default_factory=list)
    pending: Inquiry | None = None

    def known_preferences(self) -> set[str]:
        """Lower-case values the user already knows they like (or want)."""
        known = {v.lower() for v in self.profile.preference_values()}
        known |= {v.lower() for c in self.need.constraints for v in c.values}
        known |= {v.lower() for p in self.need.likes for v in p.values}
        known |= {d.preference.lower() for d in self.discovered}
        return known

    def note_recommended(self, item_ids: list[str]) -> None:
        for item_id in item_ids:
            if item_id not in self.recommended:
                self.recommended.append(item_id)
        if item_ids:
            self.focus = item_ids[0]

    def open_details(self, item_id: str | None) -> list[str]:
        """The details of the need's requests not yet told about `item_id` (in the need's order)."""
        if item_id is None:
            return []
        known = self.learned.get(item_id, set())
        return [d for d in self.need.requests if d not in known]

    def excitation_candidate(self, item_ids: list[str], items: ItemCollection) -> Item | None:
        """The first recommended item, not checked before, that matches no known preference."""
        known = self.known_preferences()
        for item_id in item_ids:
            item = items.get(item_id)
            if item is None or item_id in self.checked:
                continue
            values = {v.lower() for attribute in LIST_ATTRIBUTES for v in item.values(attribute)}
            values |= {v.lower() for key in item.extra for v in item.values(key)}
            if not values & known:
                return item
        return None
