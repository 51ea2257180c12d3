"""The bounded dialogue loop: termination reasons, errors kept, fresh state per dialogue."""

from __future__ import annotations

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.model.dialogue import Role, TerminationReason
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.run.loop import run_dialogue
from crsim.sim.base import UserTurn


class EchoCRS(BaseCRS):
    def __init__(self, greet: bool = True, fail_on: int | None = None, end_on: int | None = None) -> None:
        self.greet, self.fail_on, self.end_on = greet, fail_on, end_on

    async def start(self, session: CRSSession) -> CRSReply | None:
        session.state = 0
        return CRSReply("Hello!") if self.greet else None

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        session.state += 1
        if session.state == self.fail_on:
            raise RuntimeError("model server went away")
        return CRSReply(f"reply {session.state} to {text}", end=session.state == self.end_on)


class CountingUser:
    def __init__(self, stop_after: int | None = None) -> None:
        self.stop_after, self.turns = stop_after, 0

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.turns = 1
        return UserTurn("hi", end=self.stop_after == 1)

    async def respond(self, reply: CRSReply) -> UserTurn:
        self.turns += 1
        return UserTurn(f"turn {self.turns}", end=self.turns == self.stop_after)


async def _run(crs: EchoCRS, sim: CountingUser, max_turns: int = 5, domain: Domain | None = None):  # type: ignore[no-untyped-def]
    return await run_dialogue(
        sim,  # type: ignore[arg-type]
        crs,
        SimulatedUser(id="u1"),
        dialogue_id="d1",
        session=CRSSession("d1", 7),
        max_turns=max_turns,
        items=domain.items if domain else None,
    )


async def test_max_turns_bounds_the_dialogue() -> None:
    dialogue = await _run(EchoCRS(), CountingUser(), max_turns=3)
    assert dialogue.termination is not None
    assert dialogue.termination.reason == TerminationReason.MAX_TURNS
    assert dialogue.num_turns == 3
    assert [u.role for u in dialogue.utterances] == [Role.CRS] + [Role.USER, Role.CRS] * 3


async def test_user_and_crs_endings_are_recorded() -> None:
    by_user = await _run(EchoCRS(greet=False), CountingUser(stop_after=2))
    assert by_user.termination and by_user.termination.reason == TerminationReason.USER_ENDED
    assert by_user.utterances[0].role == Role.USER and by_user.utterances[-1].role == Role.USER
    by_crs = await _run(EchoCRS(end_on=2), CountingUser())
    assert by_crs.termination and by_crs.termination.reason == TerminationReason.CRS_ENDED


async def test_a_crs_exception_ends_only_that_dialogue_and_is_kept() -> None:
    dialogue = await _run(EchoCRS(fail_on=2), CountingUser())
    assert dialogue.termination is not None
    assert dialogue.termination.reason == TerminationReason.CRS_ERROR
    assert dialogue.termination.error is not None
    assert dialogue.termination.error.source == "crs"
    assert dialogue.termination.error.type == "RuntimeError"
    assert "went away" in dialogue.termination.error.message
    assert dialogue.num_turns == 2  # the utterances before the failure are kept


async def test_titles_of_text_only_crs_are_linked(domain: Domain) -> None:
    class TextOnly(EchoCRS):
        async def respond(self, session: CRSSession, text: str) -> CRSReply:
            return CRSReply("You could try The Matrix (1999).")

    dialogue = await _run(TextOnly(), CountingUser(stop_after=2), domain=domain)
    reply = dialogue.utterances[2]
    matrix = next(i.id for i in domain.items if i.title == "The Matrix" and i.year == 1999)
    assert reply.recommended_items == [matrix]
    assert reply.annotations["recommended_items_source"] == "linked"


async def test_a_malformed_reply_is_the_crs_error_and_keeps_the_dialogue_so_far() -> None:
    class WrongIds(EchoCRS):
        async def respond(self, session: CRSSession, text: str) -> CRSReply:
            session.state += 1
            ids: list[object] = ["1"] if session.state < 3 else [1, 2]  # ints, not item id strings
            return CRSReply(f"reply {session.state}", recommended_items=ids)  # type: ignore[arg-type]

    dialogue = await _run(WrongIds(), CountingUser())
    assert dialogue.termination is not None and dialogue.termination.error is not None
    assert dialogue.termination.reason == TerminationReason.CRS_ERROR
    assert (dialogue.termination.error.source, dialogue.termination.error.type) == ("crs", "ValidationError")
    assert dialogue.num_turns == 3
    assert [u.text for u in dialogue.by(Role.CRS)] == ["Hello!", "reply 1", "reply 2"]


async def test_a_user_turn_that_is_not_a_user_turn_is_the_simulator_error() -> None:
    class Mute(CountingUser):
        async def respond(self, reply: CRSReply) -> UserTurn:
            return None  # type: ignore[return-value]

    dialogue = await _run(EchoCRS(), Mute())
    assert dialogue.termination is not None and dialogue.termination.error is not None
    assert dialogue.termination.error.source == "user"
    assert dialogue.num_turns == 1 and len(dialogue.utterances) == 3


async def test_long_text_only_replies_are_linked_off_the_event_loop(domain: Domain) -> None:
    filler = "Let me tell you about a film I really enjoy watching on a rainy evening. " * 40

    class Verbose(EchoCRS):
        async def respond(self, session: CRSSession, text: str) -> CRSReply:
            return CRSReply(filler + "You could try The Matrix (1999).")

    dialogue = await _run(Verbose(), CountingUser(stop_after=2), domain=domain)
    reply = dialogue.utterances[2]
    assert len(reply.text) > 2_000
    matrix = next(i.id for i in domain.items if i.title == "The Matrix" and i.year == 1999)
    assert reply.recommended_items == [matrix]


class ScriptedText(EchoCRS):
    """A text-only CRS that says the given lines in turn."""

    def __init__(self, lines: list[str], linked_by_adapter: list[list[str]] | None = None) -> None:
        super().__init__()
        self.lines, self.adapter = lines, linked_by_adapter

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        session.state += 1
        if self.adapter is not None:  # what an HTTP adapter returns: linked ids, marked as linked
            ids = self.adapter[session.state - 1]
            return CRSReply(
                self.lines[session.state - 1], ids, annotations={"recommended_items_source": "linked"}
            )
        return CRSReply(self.lines[session.state - 1])


class SayingUser(CountingUser):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(stop_after=len(lines))
        self.lines = lines

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.turns = 1
        return UserTurn(self.lines[0])

    async def respond(self, reply: CRSReply) -> UserTurn:
        self.turns += 1
        return UserTurn(self.lines[self.turns - 1], end=self.turns == self.stop_after)


def _id(domain: Domain, title: str, year: int) -> str:
    return next(i.id for i in domain.items if i.title == title and i.year == year)


async def test_a_linked_title_discussed_again_is_mentioned_not_recommended_again(domain: Domain) -> None:
    crs = ScriptedText(
        ["You could try The Matrix (1999).", "The Matrix (1999) was directed by the Wachowskis."]
    )
    dialogue = await _run(crs, CountingUser(stop_after=3), domain=domain)
    first, second = dialogue.by(Role.CRS)[1:]
    matrix = _id(domain, "The Matrix", 1999)
    assert (first.recommended_items, first.mentioned_items) == ([matrix], [])
    assert (second.recommended_items, second.mentioned_items) == ([], [matrix])
    assert second.annotations["recommended_items_source"] == "linked"


async def test_a_title_the_user_named_first_is_mentioned_and_a_new_one_recommended(domain: Domain) -> None:
    user = SayingUser(["I loved The Matrix (1999), anything like it?", "thanks"])
    crs = ScriptedText(["If you liked The Matrix (1999), try Heat (1995)."])
    dialogue = await _run(crs, user, domain=domain)
    reply = dialogue.by(Role.CRS)[1]
    assert reply.recommended_items == [_id(domain, "Heat", 1995)]
    assert reply.mentioned_items == [_id(domain, "The Matrix", 1999)]


async def test_ids_linked_by_an_adapter_are_split_by_the_dialogue_context(domain: Domain) -> None:
    matrix, heat = _id(domain, "The Matrix", 1999), _id(domain, "Heat", 1995)
    crs = ScriptedText(["Try The Matrix.", "The Matrix is long; or Heat."], [[matrix], [matrix, heat]])
    dialogue = await _run(crs, CountingUser(stop_after=3), domain=domain)
    second = dialogue.by(Role.CRS)[2]
    assert (second.recommended_items, second.mentioned_items) == ([heat], [matrix])


async def test_a_crs_that_lists_its_items_is_not_linked(domain: Domain) -> None:
    class Listing(EchoCRS):
        async def respond(self, session: CRSSession, text: str) -> CRSReply:
            return CRSReply("I don't have details about The Matrix (1999).", items_listed=True)

    dialogue = await _run(Listing(), CountingUser(stop_after=2), domain=domain)
    reply = dialogue.by(Role.CRS)[1]
    assert reply.recommended_items == [] and reply.mentioned_items == []


async def test_a_title_naming_several_items_equally_is_recorded_as_ambiguous(domain: Domain) -> None:
    books = [i.id for i in domain.items if i.title == "The Jungle Book"]
    crs = ScriptedText(["You might like The Jungle Book, or The Matrix (1999)."])
    dialogue = await _run(crs, CountingUser(stop_after=2), domain=domain)
    reply = dialogue.by(Role.CRS)[1]
    ambiguous = reply.annotations["ambiguous_links"]
    (linked,) = ambiguous
    assert len(books) == 3 and sorted(ambiguous[linked]) == sorted(books) and ambiguous[linked][0] == linked
    assert linked in reply.recommended_items and _id(domain, "The Matrix", 1999) not in ambiguous
