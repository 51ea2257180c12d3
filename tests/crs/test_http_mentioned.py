"""The generic protocol's optional `mentioned_items` (real servers on 127.0.0.1): a CRS that knows
which items it only mentions says so, crsim records them as mentioned and links nothing; a server
that does not send the field is read as before (titles linked and split by the dialogue context)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI

from crsim.core.components import BuildContext
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.http import GenericHTTPCRS
from crsim.crs.http.errors import CRSInvalidResponse
from crsim.crs.http.generic import GenericParams
from crsim.crs.server import create_app
from crsim.model.dialogue import Dialogue, Role
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.runner.loop import run_dialogue
from faults.harness import ScriptedUser
from faults.servers import running_server


def _id(domain: Domain, title: str) -> str:
    match = domain.items.linker.match_title(title)
    assert match is not None
    return match.item_id


class AnsweringCRS(BaseCRS):
    """Recommends Heat, then answers about it while naming Fargo as a comparison (mentioned only)."""

    def __init__(self, heat: str, fargo: str) -> None:
        self.heat, self.fargo = heat, fargo

    async def start(self, session: CRSSession) -> CRSReply | None:
        session.state = 0
        return None

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        session.state += 1
        if session.state == 1:
            return CRSReply("How about Heat (1995)?", [self.heat], items_listed=True)
        return CRSReply(
            "Heat (1995) is a crime film, darker than Fargo (1996).",
            mentioned_items=[self.heat, self.fargo],
            end=session.state == 3,
        )


async def _talk(url: str, domain: Domain) -> Dialogue:
    remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
    return await run_dialogue(
        ScriptedUser(),
        remote,
        SimulatedUser(id="u"),
        dialogue_id="d",
        session=CRSSession("d", 1),
        max_turns=3,
    )


async def test_a_served_crs_sends_its_mentioned_items_and_nothing_is_linked(domain: Domain) -> None:
    heat, fargo = _id(domain, "Heat (1995)"), _id(domain, "Fargo (1996)")
    with running_server(create_app(AnsweringCRS(heat, fargo))) as url:
        dialogue = await _talk(url, domain)
    first, *answers = dialogue.by(Role.CRS)
    assert (first.recommended_items, first.mentioned_items) == ([heat], [])
    for answer in answers:
        assert (answer.recommended_items, answer.mentioned_items) == ([], [heat, fargo])
        assert "recommended_items_source" not in answer.annotations  # listed, not linked


def _external(replies: list[dict[str, Any]]) -> FastAPI:
    """A third-party server speaking the generic protocol with fixed replies."""
    app = FastAPI()

    @app.post("/sessions")
    async def start() -> dict[str, Any]:
        return {"session_id": "s"}

    @app.post("/sessions/s/messages")
    async def message(body: dict[str, Any]) -> dict[str, Any]:
        return replies[min(body["turn"], len(replies)) - 1]

    @app.delete("/sessions/s", status_code=204)
    async def delete() -> None:
        return None

    return app


async def test_an_external_server_may_send_mentioned_items_or_leave_them_out(domain: Domain) -> None:
    heat, fargo = _id(domain, "Heat (1995)"), _id(domain, "Fargo (1996)")
    text = "Heat (1995) is darker than Fargo (1996)."
    replies = [
        {"text": "How about Heat (1995)?"},  # old style: linked, a new recommendation
        {"text": text, "mentioned_items": [fargo, "no-such-id"]},  # listed: Heat named, not listed
        {"text": text, "mentioned_items": None},  # null: as if absent, linked and split by context
        {"text": "Bye.", "mentioned_items": [], "end": True},
    ]
    with running_server(_external(replies)) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        dialogue = await run_dialogue(
            ScriptedUser(), remote, SimulatedUser(id="u"), dialogue_id="d", session=CRSSession("d", 1)
        )
    linked, listed, null, bye = dialogue.by(Role.CRS)
    assert (linked.recommended_items, linked.annotations["recommended_items_source"]) == ([heat], "linked")
    assert (listed.recommended_items, listed.mentioned_items) == ([], [fargo])
    assert listed.annotations["unknown_items"] == ["no-such-id"]
    assert "recommended_items_source" not in listed.annotations
    # linked: Heat and Fargo were both named before, so both are mentioned
    assert (null.recommended_items, null.mentioned_items) == ([], [heat, fargo])
    assert (bye.recommended_items, bye.mentioned_items) == ([], [])


@pytest.mark.parametrize("bad", ["Fargo", [1, 2], {"a": "b"}])
async def test_mentioned_items_of_the_wrong_type_are_an_invalid_response(domain: Domain, bad: Any) -> None:
    with running_server(_external([{"text": "Hi.", "mentioned_items": bad}])) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        session = CRSSession("d", 1)
        await remote.start(session)
        with pytest.raises(CRSInvalidResponse, match="'mentioned_items' must be a list of item id strings"):
            await remote.respond(session, "hello")
        await remote.close(session)


async def test_a_title_an_external_server_writes_for_several_items_is_recorded_as_ambiguous(
    domain: Domain,
) -> None:
    books = [i.id for i in domain.items if i.title == "The Jungle Book"]
    mother = next(i.id for i in domain.items if i.title == "Mother" and i.year == 2009)
    replies = [{"text": "Try The Jungle Book, or Mother."}, {"text": "Bye.", "end": True}]
    with running_server(_external(replies)) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        dialogue = await run_dialogue(
            ScriptedUser(), remote, SimulatedUser(id="u"), dialogue_id="d", session=CRSSession("d", 1)
        )
    linked = dialogue.by(Role.CRS)[0]
    assert linked.annotations["recommended_items_source"] == "linked"
    (book,) = linked.annotations["ambiguous_links"]
    assert linked.recommended_items == [book, mother]  # "Mother" as written, not "Mother!"
    assert sorted(linked.annotations["ambiguous_links"][book]) == sorted(books)
