"""How long the agenda user (`abus`, default arguments) stays with a CRS that never makes progress.

Each CRS answers every message with one fixed text (IAI MovieBot's "cant help" and "no results"
replies, and a bare "Okay."); the users are the first 100 of the default population (movie domain,
seed 0), `max_turns` 20. Prints the mean number of turns and how the dialogues ended, per text.

Usage: python scripts/no_progress_turns.py
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter

from crsim.core.components import BuildContext
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.domains.movielens import movie_domain
from crsim.runner.loop import run_dialogue
from crsim.sim.agenda.simulator import AgendaBasedSimulator
from crsim.users.population import PopulationConfig
from crsim.users.sources import build_users

TEXTS = (
    "Sorry I can't help you with that.",
    "I believe I am stuck. I can't help you here.",
    "Sorry, I couldn't find any films. Please select from the list of options to continue.",
    "Okay.",
)


class FixedCRS(BaseCRS):
    """Says the same text whatever the user says."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return CRSReply(self.text)


async def main() -> None:
    domain = movie_domain()
    users = build_users(PopulationConfig(), domain, 0)[:100]
    for text in TEXTS:
        turns: list[int] = []
        endings: Counter[str] = Counter()
        for index, user in enumerate(users):
            simulator = AgendaBasedSimulator(AgendaBasedSimulator.Params(), BuildContext(domain, seed=index))
            session = CRSSession(str(index), index)
            dialogue = await run_dialogue(
                simulator, FixedCRS(text), user, dialogue_id=str(index), session=session, max_turns=20
            )
            turns.append(dialogue.num_turns)
            ended = dialogue.termination
            if ended is not None:
                endings[ended.reason.value + (f"/{ended.detail}" if ended.detail else "")] += 1
        print(f"{text!r}: mean turns {statistics.mean(turns):.2f}; {dict(endings)}")


if __name__ == "__main__":
    asyncio.run(main())
