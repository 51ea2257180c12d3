"""Buttons over the generic protocol, end to end on 127.0.0.1: `crsim serve` sends a CRS's options,
`generic_http` keeps them on the reply, the agenda user picks one, and the served CRS gets the option
(its payload) with the next message."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI

from crs_doubles import MovieBotV2
from crsim.core.components import BuildContext
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.http import GenericHTTPCRS, MovieBotCRS
from crsim.crs.http.errors import CRSInvalidResponse
from crsim.crs.http.generic import GenericParams
from crsim.crs.http.moviebot import MovieBotParams
from crsim.crs.server import create_app
from crsim.model.dialogue import ReplyOption, Role
from crsim.model.domain import Domain
from crsim.runner.loop import run_dialogue
from faults.servers import running_server
from sim.test_abus_simulator import HEAT, MATRIX, SCIFI_FAN, make_sim, make_user

BUTTONS = [
    ReplyOption(label="Seen it", payload="I have already watched it."),
    ReplyOption(label="Something else", payload="Recommend me something else please."),
    ReplyOption(label="I like this", payload="I like this recommendation."),
]


class ButtonCRS(BaseCRS):
    """Recommends Love Actually, then Heat, each with buttons; keeps what each message chose."""

    def __init__(self) -> None:
        self.received: list[tuple[str, ReplyOption | None]] = []

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        self.received.append((text, session.chosen_option))
        title = "Love Actually (2003)" if len(self.received) == 1 else "Heat (1995)"
        return CRSReply(f"You might like {title}.", options=BUTTONS)


async def test_options_travel_both_ways_through_serve_and_generic_http(domain: Domain) -> None:
    served = ButtonCRS()
    with running_server(create_app(served)) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        dialogue = await run_dialogue(
            make_sim(), remote, make_user(targets=[HEAT]), dialogue_id="d", session=CRSSession("d", 0)
        )
        await remote.aclose()
    assert [u.options for u in dialogue.by(Role.CRS)] == [BUTTONS, BUTTONS]
    users = dialogue.by(Role.USER)
    assert (users[1].text, users[1].chosen_option) == ("Something else", BUTTONS[1])
    assert (users[2].text, users[2].chosen_option) == ("I like this", BUTTONS[2])
    # the served CRS got the user's own opening words, then the button with its payload
    assert served.received[0][1] is None
    assert served.received[1] == ("Something else", BUTTONS[1])


def _raw_server(options: object) -> FastAPI:
    app = FastAPI()

    @app.post("/sessions")
    async def start() -> dict[str, object]:
        return {"session_id": "s1"}

    @app.post("/sessions/s1/messages")
    async def message() -> dict[str, object]:
        return {"text": "Heat (1995)?", "options": options}

    return app


MALFORMED = [["Seen it"], [{"payload": "x"}], {"label": "x"}, [{"label": "a", "x": 1}]]


@pytest.mark.parametrize("options", MALFORMED)
async def test_malformed_options_fail_the_reply_naming_the_field(domain: Domain, options: object) -> None:
    with running_server(_raw_server(options)) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        session = CRSSession("d", 0)
        await remote.start(session)
        with pytest.raises(CRSInvalidResponse, match=r"POST /sessions/s1/messages: 'options' must be a list"):
            await remote.respond(session, "hi")
        await remote.close(session)
        await remote.aclose()


async def test_a_reply_without_options_has_none(domain: Domain) -> None:
    with running_server(_raw_server(None)) as url:
        remote = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        session = CRSSession("d", 0)
        await remote.start(session)
        assert (await remote.respond(session, "hi")).options == []
        await remote.close(session)
        await remote.aclose()


async def test_the_agenda_user_presses_moviebots_buttons(domain: Domain, tmp_path: Path) -> None:
    """abus against the MovieBot v2 double (tests/crs_doubles.py, from MovieBot's code): the user
    presses buttons by meaning, the record shows label and option, and MovieBot receives the payload."""
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        crs = MovieBotCRS(MovieBotParams(base_url=url), BuildContext(domain))
        dialogues = []
        seen_matrix = make_user({"genre": "sci-fi"}, item_ratings={**SCIFI_FAN, MATRIX: 4.5})
        for index, user in enumerate([seen_matrix, make_user({"genre": "sci-fi"}, requests=["director"])]):
            session = CRSSession(f"moviebot/abus/u{index}", index)
            dialogues.append(
                await run_dialogue(
                    make_sim(seed=index),
                    crs,
                    user,
                    dialogue_id=session.id,
                    session=session,
                    max_turns=12,
                    items=domain.items,
                )
            )
        await crs.aclose()
    pressed = [u for d in dialogues for u in d.by(Role.USER) if u.chosen_option is not None]
    # one user has seen The Matrix and Alien, the other asks about The Matrix, then takes it
    assert [u.text for u in pressed] == ["Seen it", "Seen it", "More information", "I like this"]
    for utterance in pressed:
        assert utterance.text == utterance.chosen_option.label  # type: ignore[union-attr]
    payloads = {u.chosen_option.payload for u in pressed}  # type: ignore[union-attr]
    assert payloads <= {text for _, text in bot.received}  # MovieBot got the payloads, not the labels
    assert not {u.text for u in pressed} & {text for _, text in bot.received}
    assert all(d.termination is not None and d.termination.error is None for d in dialogues)
