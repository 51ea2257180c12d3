"""What the simulator measures share: one measure's observation of a dialogue, and the constraints of
the need as (slot, lower-cased value) pairs."""

from __future__ import annotations

from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Kind, Observation


def observe(
    facts: Facts, measure: str, hit: bool | None, note: str = "", message: int | None = None
) -> Observation:
    """The observation of a simulator measure on the dialogue of `facts`."""
    return Observation(Kind.SIMULATOR, facts.simulator, measure, facts.dialogue.id, hit, note, message)


def need_constraints(facts: Facts) -> list[tuple[str, str]]:
    """Every (slot, value) the need constrains, values lower-cased; none without a need."""
    need = facts.dialogue.information_need
    if need is None:
        return []
    return [(slot, value.lower()) for slot in need.constraints for value in need.constraint_values(slot)]
