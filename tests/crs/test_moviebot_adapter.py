"""The `moviebot` adapter against a double of MovieBot v2's REST controller (tests/crs_doubles.py,
written from MovieBot's code): the same cases are run on the double directly and through the adapter."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from crs_doubles import MovieBotV2
from crsim.components import BuildContext
from crsim.crs.base import CRSReply, CRSSession
from crsim.crs.http import CRSInvalidResponse, MovieBotCRS
from crsim.crs.http.moviebot import MovieBotParams, intent_parts, sender_id
from crsim.model.annotations import CRS_INTENT, CRS_SESSION
from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.registry import Params
from crsim.run.loop import run_dialogue
from crsim.sim.base import UserTurn
from faults.servers import running_server


class ButtonUser:
    """Asks for science fiction, answers the keyword question, then presses buttons by label in the
    order given (its own words when no offered button has the label); `goodbye` ends it by saying so."""

    Params = Params

    def __init__(self, labels: list[str], goodbye: str | None = None) -> None:
        self.labels, self.goodbye = list(labels), goodbye
        self.replies: list[CRSReply] = []

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        return UserTurn("I would like to watch a science fiction movie.")

    async def respond(self, reply: CRSReply) -> UserTurn:
        self.replies.append(reply)
        if not reply.options and not self.labels and self.goodbye:
            return UserTurn(self.goodbye, end=True)
        if not reply.options:
            return UserTurn("Something with robots.")
        label = self.labels.pop(0) if self.labels else ""
        chosen = next((o for o in reply.options if o.label == label), None)
        if chosen is None:
            return UserTurn(self.goodbye or "Hmm.", end=self.goodbye is not None)
        return UserTurn(chosen.payload)


async def _dialogue(crs: MovieBotCRS, user: ButtonUser, dialogue_id: str, domain: Domain) -> Dialogue:
    return await run_dialogue(
        user,
        crs,
        SimulatedUser(id=dialogue_id),
        dialogue_id=dialogue_id,
        session=CRSSession(dialogue_id, 7),
        max_turns=10,
        items=domain.items,
    )


def _crs(url: str, domain: Domain, **args: Any) -> MovieBotCRS:
    return MovieBotCRS(MovieBotParams(base_url=url, **args), BuildContext(domain))


def _post(url: str, body: Any) -> httpx.Response:
    return httpx.post(url + "/", json=body, timeout=10)


def test_the_double_behaves_like_the_v2_controller(tmp_path: Path) -> None:
    """Flat body, one conversation per sender, `/start` as user text, the malformed-body fallback,
    goodbye exports, a '/' in the sender breaks the export, nothing after goodbye."""
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        assert httpx.get(url + "/").text == "MovieBot is alive"
        start = _post(url, {"message": {"text": "/start"}, "sender": {"id": "a"}}).json()
        assert start["recipient"] == "a" and start["message"]["intent"] == "elicit"  # no greeting
        reveal = _post(url, {"message": {"text": "science fiction"}, "sender": {"id": "a"}}).json()
        assert reveal["message"]["intent"] == "count results;elicit"
        # Messenger envelope: read as the default sender with an empty text, and answered
        envelope = {"entry": [{"messaging": [{"message": {"text": "crime"}, "sender": {"id": "b"}}]}]}
        answered = _post(url, envelope).json()
        assert answered["recipient"] == "ClientREST" and bot.received[-1] == ("ClientREST", "")
        recommend = _post(url, {"message": {"text": "robots"}, "sender": {"id": "a"}}).json()
        message = recommend["message"]
        assert message["intent"] == "recommend" and message["text"].startswith("Have you seen The Matrix")
        buttons = {b["title"]: b["payload"] for b in message["attachments"][0]["payload"]["buttons"]}
        assert buttons["Seen it"] == "I have already watched it." and "Something else" in buttons
        bye = _post(url, {"message": {"text": "bye"}, "sender": {"id": "a"}}).json()
        assert bye["message"]["intent"] == "bye" and (tmp_path / "export" / "IAIMovieBot_a.json").exists()
        assert _post(url, {"message": {"text": "hello"}, "sender": {"id": "a"}}).status_code == 500
        _post(url, {"message": {"text": "hi"}, "sender": {"id": "moviebot/abus/ml-163"}})
        failed = _post(url, {"message": {"text": "goodbye"}, "sender": {"id": "moviebot/abus/ml-163"}})
        assert failed.status_code == 500


async def test_a_dialogue_with_buttons_ends_on_moviebots_goodbye(domain: Domain, tmp_path: Path) -> None:
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        user = ButtonUser(["Seen it", "I like this", "Quit"])
        dialogue = await _dialogue(_crs(url, domain), user, "moviebot/abus/ml-163", domain)
    assert dialogue.termination.reason == "crs_ended" and dialogue.termination.error is None
    replies = dialogue.by("crs")
    intents = [CRS_INTENT.get(u.annotations, where="test") for u in replies]
    assert intents == ["count results;elicit", "recommend", "recommend", "continue_recommendation", "bye"]
    sender = CRS_SESSION.get(replies[0].annotations, where="test")
    assert sender is not None and "/" not in sender and sender.startswith("moviebot_abus_ml-163-")
    assert {s for s, _ in bot.received} == {sender}
    assert [t for _, t in bot.received][2:] == [
        "I have already watched it.",
        "I like this recommendation.",
        "I would like to quit now.",
    ]
    titles = [[domain.items[i].title for i in u.recommended_items] for u in replies]
    assert titles == [[], ["The Matrix"], ["Alien"], [], []]
    assert [o.label for o in user.replies[1].options] == [
        "Seen it", "Something else", "I like this", "More information", "Restart"
    ]  # fmt: skip
    assert (tmp_path / "export" / f"IAIMovieBot_{sender}.json").exists()


async def test_the_users_goodbye_reaches_moviebot_on_close(domain: Domain, tmp_path: Path) -> None:
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        user = ButtonUser(["Something else"], goodbye="Thanks, that is all. Bye!")
        dialogue = await _dialogue(_crs(url, domain), user, "d2", domain)
    assert dialogue.termination.reason == "user_ended" and dialogue.termination.error is None
    assert dialogue.utterances[-1].text == "Thanks, that is all. Bye!"
    assert bot.received[-1][1] == "Thanks, that is all. Bye!"
    sender = bot.received[-1][0]
    assert (tmp_path / "export" / f"IAIMovieBot_{sender}.json").exists()


async def test_a_failed_close_is_in_the_record(domain: Domain, tmp_path: Path) -> None:
    blocked = tmp_path / "export"
    blocked.write_text("a file where MovieBot wants its export folder")
    bot = MovieBotV2(blocked)
    with running_server(bot.app) as url:
        user = ButtonUser([], goodbye="Goodbye.")
        dialogue = await _dialogue(_crs(url, domain), user, "d3", domain)
    assert dialogue.termination.reason == "user_ended"
    error = dialogue.termination.error
    assert error is not None and error.type == "CRSStatusError" and error.message.startswith("on close:")
    assert "HTTP 500" in error.message


async def test_two_dialogues_at_once_have_two_conversations(domain: Domain, tmp_path: Path) -> None:
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        crs = _crs(url, domain)
        a, b = await asyncio.gather(
            _dialogue(crs, ButtonUser(["Seen it", "Quit"]), "same", domain),
            _dialogue(crs, ButtonUser(["Seen it", "Quit"]), "same", domain),
        )
    senders = {CRS_SESSION.get(d.by("crs")[0].annotations, where="test") for d in (a, b)}
    assert len(senders) == 2 and {s for s, _ in bot.received} == senders
    for dialogue in (a, b):
        assert dialogue.by("crs")[1].text.startswith("Have you seen The Matrix")  # each its own state


async def test_the_messenger_envelope_against_v2_fails_the_dialogue(domain: Domain, tmp_path: Path) -> None:
    """The old adapter's silent failure: v2 reads no sender and no text from the envelope."""
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        dialogue = await _dialogue(
            _crs(url, domain, request_format="messenger"), ButtonUser([]), "d4", domain
        )
    assert dialogue.termination.reason == "crs_error"
    error = dialogue.termination.error
    assert error is not None and error.type == "CRSInvalidResponse" and "'ClientREST'" in error.message
    assert bot.received == [("ClientREST", "")]


async def test_no_results_names_a_title_without_recommending_it(domain: Domain, tmp_path: Path) -> None:
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        user = ButtonUser(["Seen it", "Seen it", "Seen it", "Restart"], goodbye="bye")
        dialogue = await _dialogue(_crs(url, domain), user, "d5", domain)
    replies = dialogue.by("crs")
    no_results = next(u for u in replies if CRS_INTENT.get(u.annotations, where="t") == "no results")
    assert 'similar to "Blade Runner"' in no_results.text
    blade_runner = next(i.id for i in domain.items if i.title == "Blade Runner")
    assert no_results.recommended_items == [] and no_results.mentioned_items == [blade_runner]
    assert [o.label for o in user.replies[-2].options] == [
        'Don\'t want a "science fiction" movie.',
        "Restart",
    ]


def _intent_server(intent: str) -> FastAPI:
    app = FastAPI()

    @app.post("/")
    async def reply(body: dict[str, Any]) -> dict[str, Any]:
        return {"recipient": body["sender"]["id"], "message": {"text": "Fine. See you.", "intent": intent}}

    return app


@pytest.mark.parametrize(("intent", "ends"), [("acknowledge;BYE", True), ("Bye", True), ("byebye", False)])
async def test_stop_intents_match_any_part_in_any_case(domain: Domain, intent: str, ends: bool) -> None:
    assert intent_parts("count results; Elicit") == {"count results", "elicit"}
    with running_server(_intent_server(intent)) as url:
        crs = _crs(url, domain)
        session = CRSSession("s", 1)
        await crs.start(session)
        reply = await crs.respond(session, "thanks")
        await crs.close(session)
    assert reply.end is ends


async def test_a_reply_to_another_sender_is_refused(domain: Domain) -> None:
    app = FastAPI()

    @app.post("/")
    async def reply() -> dict[str, Any]:
        return {"recipient": "someone-else", "message": {"text": "How about Heat?", "intent": "recommend"}}

    with running_server(app) as url:
        crs = _crs(url, domain)
        session = CRSSession("s", 1)
        await crs.start(session)
        with pytest.raises(CRSInvalidResponse, match="addressed to 'someone-else'"):
            await crs.respond(session, "hello")
        await crs.close(session)


def test_sender_ids_are_path_safe_and_unique() -> None:
    ids = {sender_id("moviebot/abus/ml-163") for _ in range(20)}
    assert len(ids) == 20
    assert all("/" not in i and i.startswith("moviebot_abus_ml-163-") for i in ids)
    assert sender_id("../..").startswith("dialogue-")
