"""Test doubles of real CRS servers, written from the servers' own code (not from crsim's adapters),
and `preference_server`, a generic-protocol CRS that can share one conversation across sessions.

`MovieBotV2` follows iai-group/MovieBot at commit bb78caae5ab55837d65727ddbcdcad609f723826 (main,
May 2024) on DialogueKit v0.0.9.dev0 (commit 264b4525f24351b6c9bb18539c6553892a5dc4ce), the version
its requirements pin:

- moviebot/controller/controller_flask_rest.py `receive_message`: GET answers "MovieBot is alive";
  POST reads `output.get("sender", {}).get("id", "ClientREST")` and `output.get("message",
  {}).get("text", "")`, connects an unknown sender (a new agent, which greets), passes the text on,
  and returns `self._last_agent_responses.pop(sender_id)` (a KeyError, HTTP 500, when the agent
  produced no reply);
- moviebot/controller/http_data_formatter.py: `Response(recipient, Message(text, intent,
  attachments))`, buttons as `{"type": "buttons", "payload": {"buttons": [{title, payload,
  button_type}]}}` with `SHORT_ANSWER` titles, and a recommendation's text replaced by
  `get_movie_message_data` ("Have you seen <title> <rating>\\n     <duration> min") plus an images
  attachment;
- moviebot/agent/agent.py: intents joined with ";" (`count results;elicit`), stop intent `bye`;
  moviebot/connector/dialogue_connector.py and DialogueKit's `DialogueConnector` /
  `User.handle_input`: the greeting is registered (and overwritten by the first reply, so it never
  reaches a REST client), a reply with the stop intent closes the conversation and exports it to
  `dialogue_export/IAIMovieBot_<sender>.json` (appending to an earlier export of that sender), and
  afterwards the user is no longer "ready for input", so every later message of that sender is a 500;
- moviebot/nlu/rule_based_nlu.py and user_intents_checker.py: a chosen button's payload first, then
  "bye"/"goodbye"/"quit"/"exit" as a token, then revealed preferences; after the greeting anything
  else (`/start` included) is answered with an elicitation of genres; moviebot/dialogue_manager/
  dialogue_policy/rb_dialogue_policy.py and moviebot/nlg/nlg.py for the replies and buttons of each
  intent (count results;elicit, recommend, no results, inform, continue_recommendation, restart;elicit,
  cant help, bye).

What is simplified: the database is a handful of films with a declared result count per genre, the
NLU knows genres only, and where MovieBot picks a phrasing at random the double takes the first.

`CRSArenaServer` follows hideaki-j/iEvaLM-CRS (the CRS Arena fork of iEvaLM-CRS) at commit
e351b52325ccf673b01b6b002f9b5f7f0124e807, script/serve_model.py `CRSFlaskServer.receive_message`:
GET answers "Model is running."; POST needs `context` and `message` (else HTTP 400 with a text body),
takes the options state from the cookie session (a fresh state without a cookie), and answers
`{"response": ...}`; the model sees `context + [message]` and nothing else of the conversation.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse

#: The films of the double's database: title, rating, duration, genre.
FILMS: list[tuple[str, float, int, str]] = [
    ("The Matrix", 8.7, 136, "science fiction"),
    ("Alien", 8.5, 117, "science fiction"),
    ("Blade Runner", 8.1, 117, "science fiction"),
    ("Heat", 8.3, 170, "crime"),
    ("Fargo", 8.1, 98, "crime"),
    ("Taken", 7.8, 90, "action"),
    ("The Godfather", 9.2, 175, "drama"),
    ("Forrest Gump", 8.8, 142, "drama"),
    ("Groundhog Day", 8.0, 101, "comedy"),
    ("Notting Hill", 7.2, 124, "comedy"),
    ("The Shining", 8.4, 146, "horror"),
    ("Toy Story", 8.3, 81, "animation"),
]
#: How many results MovieBot's database would report per genre (for "There are almost N ... films").
RESULT_COUNTS = {
    "science fiction": 412, "crime": 268, "action": 517, "drama": 1210, "comedy": 934, "horror": 301,
    "animation": 122, "western": 0,
}  # fmt: skip
GENRE_WORDS = {
    "science fiction": "science fiction", "sci-fi": "science fiction", "crime": "crime", "action": "action",
    "drama": "drama", "comedy": "comedy", "comedies": "comedy", "horror": "horror", "animation": "animation",
    "animated": "animation", "western": "western",
}  # fmt: skip

#: http_data_formatter.SHORT_ANSWER: the button titles of MovieBot's long option texts.
SHORT_ANSWER = {
    "I like this recommendation.": "I like this",
    "I have already watched it.": "Seen it",
    "Tell me more about it.": "Tell me more",
    "Recommend me something else please.": "Something else",
    "Tell me something about it.": "More information",
    "/restart": "Restart",
    "I would like a similar recommendation.": "Similar",
    "I want to restart for a new movie.": "Restart",
    "I would like to quit now.": "Quit",
}
BYE_WORDS = {"bye", "goodbye", "quit", "exit"}
RECOMMEND_OPTIONS = {
    "I have already watched it.": "reject",
    "Recommend me something else please.": "reject",
    "I like this recommendation.": "accept",
    "Tell me something about it.": "inquire",
    "/restart": "restart",
}
INQUIRE_SLOTS = [
    "genres",
    "movie plot",
    "director name",
    "duration",
    "list of actors",
    "release year",
    "rating",
]


class ExportError(Exception):
    """DialogueKit's export could not write its file (MovieBot answers HTTP 500)."""


@dataclass
class _Conversation:
    """One DialogueKit connector: a MovieBot agent and its user, per sender id."""

    sender: str
    ready: bool = False  #: DialogueKit's User._ready_for_input
    history: list[dict[str, Any]] = field(default_factory=list)
    genre: str | None = None
    keywords_asked: bool = False
    offered: list[str] = field(default_factory=list)
    focus: tuple[str, float, int, str] | None = None
    last_intents: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)  #: payload -> the user act it stands for


class MovieBotV2:
    """MovieBot v2's Flask REST controller over a small rule-based agent (see the module docstring).

    `received` lists (sender, text) as the controller saw them; `exports` the files written."""

    def __init__(self, export_dir: Path) -> None:
        self.export_dir = export_dir
        self.active: dict[str, _Conversation] = {}
        self.last_responses: dict[str, dict[str, Any]] = {}
        self.received: list[tuple[str, str]] = []
        self.app = FastAPI()
        self.app.add_api_route("/", self._alive, methods=["GET"])
        self.app.add_api_route("/", self._receive, methods=["POST"])

    async def _alive(self) -> Response:
        return PlainTextResponse("MovieBot is alive")

    async def _receive(self, request: Request) -> Response:
        try:
            output = await request.json()
            sender = output.get("sender", {}).get("id", "ClientREST")
            text = output.get("message", {}).get("text", "")
            self.received.append((sender, text))
            if sender not in self.active:
                self._connect(sender)
            self._message(sender, text)
            return JSONResponse(self.last_responses.pop(sender))
        except (KeyError, AttributeError, ValueError, ExportError, OSError):
            return PlainTextResponse("Internal Server Error", status_code=500)  # Flask's unhandled error

    def _connect(self, sender: str) -> None:
        conversation = _Conversation(sender)
        self.active[sender] = conversation
        self._register_agent(conversation, "How may I help you?", ["welcome"], {})

    def _message(self, sender: str, text: str) -> None:
        conversation = self.active[sender]
        if not conversation.ready:  # User.handle_input ignores input when not ready
            return
        conversation.ready = False
        conversation.history.append({"participant": "USER", "utterance": text})
        reply_text, intents, options, film = self._agent_reply(conversation, text)
        self._register_agent(conversation, reply_text, intents, options, film)

    def _register_agent(
        self,
        conversation: _Conversation,
        text: str,
        intents: list[str],
        options: dict[str, str],
        film: tuple[str, float, int, str] | None = None,
    ) -> None:
        """DialogueConnector.register_agent_utterance and the REST controller's display."""
        intent = ";".join(intents)
        message: dict[str, Any] = {"text": text, "intent": intent, "attachments": []}
        if options:
            buttons = [
                {"title": SHORT_ANSWER.get(p, p), "payload": p, "button_type": "postback"} for p in options
            ]
            message["attachments"].append({"type": "buttons", "payload": {"buttons": buttons}})
        if film is not None:  # get_movie_message_data replaces the NLG text of a recommendation
            title, rating, duration, _ = film
            message["text"] = f"Have you seen {title} {rating}\n     {duration} min"
            poster = f"https://posters.example/{title.replace(' ', '_')}.jpg"
            message["attachments"].append({"type": "images", "payload": {"images": [poster]}})
        conversation.history.append({"participant": "AGENT", "utterance": message["text"], "intent": intent})
        conversation.last_intents, conversation.options = intents, options
        self.last_responses[conversation.sender] = {"recipient": conversation.sender, "message": message}
        if intent == "bye":  # the agent's stop intent: the connector closes and exports
            self._export(conversation)
        else:
            conversation.ready = True

    def _export(self, conversation: _Conversation) -> None:
        """DialogueConnector._dump_dialogue_history: one file per agent and user id, appended to."""
        self.export_dir.mkdir(parents=True, exist_ok=True)
        path = f"{self.export_dir}/IAIMovieBot_{conversation.sender}.json"
        earlier = json.loads(Path(path).read_text()) if Path(path).exists() else []
        try:
            with open(path, "w", encoding="utf-8") as out:  # a '/' in the sender: no such directory
                json.dump([*earlier, {"conversation": conversation.history}], out)
        except FileNotFoundError as error:
            raise ExportError(str(error)) from error
        conversation.history = []

    # --- the agent: NLU, policy and NLG of the rule-based MovieBot, reduced to genres -----------

    def _agent_reply(
        self, c: _Conversation, text: str
    ) -> tuple[str, list[str], dict[str, str], tuple[str, float, int, str] | None]:
        act = self._understand(c, text)
        if act == "bye":
            return "I hope you had a good experience. Bye.", ["bye"], {}, None
        if act == "restart":
            c.genre, c.keywords_asked, c.offered, c.focus = None, False, [], None
            return "Let's restart.\n\nWhich genres do you prefer?", ["restart", "elicit"], {}, None
        if act.startswith("remove:"):
            c.genre, c.keywords_asked = None, False
            return "Which genres do you prefer?", ["elicit"], {}, None
        if act.startswith("reveal:"):
            c.genre = act.removeprefix("reveal:")
            if RESULT_COUNTS.get(c.genre, 0) == 0:
                return self._no_results(c)
            if not c.keywords_asked:
                c.keywords_asked = True
                count = round(RESULT_COUNTS[c.genre] / 100) * 100
                text = (
                    f"There are almost {count} {c.genre} films. Please answer a few more questions to help "
                    "me find a good movie.\n\nCan you give me a few keywords?"
                )
                return text, ["count results", "elicit"], {}, None
            return self._recommend(c)
        if act in ("reject", "similar"):
            return self._recommend(c)
        if act == "accept":
            options = {
                "I would like a similar recommendation.": "similar",
                "I want to restart for a new movie.": "restart",
                "I would like to quit now.": "bye",
            }
            return "Please choose your next step:", ["continue_recommendation"], options, None
        if act == "inquire" and c.focus is not None:
            options = {slot: "inform" for slot in INQUIRE_SLOTS}
            options.update(
                {
                    "I don't like this recommendation.": "reject",
                    "I like this recommendation.": "accept",
                    "I would like a similar recommendation.": "similar",
                    "I want to restart for a new movie.": "restart",
                }
            )
            return f'What would you like to know about "{c.focus[0]}"?', ["inform"], options, None
        if "welcome" in c.last_intents:  # hi, /start, an empty text, anything unknown after the greeting
            return "Which genres do you prefer?", ["elicit"], {}, None
        if c.keywords_asked and c.focus is None and c.genre is not None:
            return self._recommend(c)  # any answer to the keyword question (MovieBot: keywords or don't care)
        return "Sorry I can't help you with that.", ["cant help"], {}, None

    def _understand(self, c: _Conversation, text: str) -> str:
        if text in c.options:  # NLU.get_selected_option: the exact payload of a button offered last
            return c.options[text]
        tokens = (
            text.lower().translate(str.maketrans(string.punctuation, " " * len(string.punctuation))).split()
        )
        if BYE_WORDS & set(tokens):
            return "bye"
        lowered = text.lower()
        for word, genre in GENRE_WORDS.items():
            if re.search(rf"\b{re.escape(word)}\b", lowered):
                return f"reveal:{genre}"
        if c.focus is not None and re.search(r"\b(seen|watched)\b", lowered):
            return "reject"
        if c.focus is not None and re.search(r"something else|anything else|another", lowered):
            return "reject"
        return "unknown"

    def _recommend(
        self, c: _Conversation
    ) -> tuple[str, list[str], dict[str, str], tuple[str, float, int, str] | None]:
        films = [f for f in FILMS if f[3] == c.genre and f[0] not in c.offered]
        if not films:
            return self._no_results(c)
        film = films[0]
        c.offered.append(film[0])
        c.focus = film
        options = dict(RECOMMEND_OPTIONS)
        link = f'**"[{film[0]}](https://www.imdb.com/)"**'
        nlg_text = f"There is a {c.genre} film named {link}. Have you seen this one?"
        return nlg_text, ["recommend"], options, film

    def _no_results(
        self, c: _Conversation
    ) -> tuple[str, list[str], dict[str, str], tuple[str, float, int, str] | None]:
        other = "other " if c.offered else ""
        similar = f' named similar to "{c.focus[0]}"' if c.focus else ""
        text = (
            f"Sorry, I couldn't find any {other}{c.genre} films{similar}. "
            "Please select from the list of options to continue."
        )
        options = {f'Don\'t want a "{c.genre}" movie.': f"remove:{c.genre}", "/restart": "restart"}
        return text, ["no results"], options, None


#: A CRS Arena model: (context + [message], options state) -> (response, new state).
ArenaModel = Callable[[list[str], list[float]], tuple[str, list[float]]]


class CRSArenaServer:
    """CRS Arena's `CRSFlaskServer` (see the module docstring) around a scripted model.

    The options state travels in a cookie session as Flask's does (signed there; plain JSON here);
    `seen` lists every POST body with the cookie state it came with."""

    def __init__(self, model: ArenaModel, n_options: int = 3) -> None:
        self.model, self.n_options = model, n_options
        self.seen: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.add_api_route("/", self._alive, methods=["GET"])
        self.app.add_api_route("/", self._receive, methods=["POST"])

    async def _alive(self) -> Response:
        return PlainTextResponse("Model is running.")

    async def _receive(self, request: Request) -> Response:
        data = await request.json()
        if not isinstance(data, dict) or any(key not in data for key in ("context", "message")):
            return PlainTextResponse(
                "An error occurred, make sure you have provided the context and message.", status_code=400
            )
        cookie = request.cookies.get("session")
        state = json.loads(cookie) if cookie else None
        self.seen.append({**data, "state": state})
        if state is None or len(state) != self.n_options:
            state = [0.0] * self.n_options
        response, new_state = self.model([*data["context"], data["message"]], state)
        reply = JSONResponse({"response": response})
        reply.set_cookie("session", json.dumps(new_state))
        return reply


def preference_server(shared: bool) -> FastAPI:
    """A generic-protocol CRS that repeats the preferences it heard; `shared` keeps one list for every
    session (the session ids differ, the state does not)."""
    app, ids = FastAPI(), count(1)
    heard: dict[str, list[str]] = {}

    @app.post("/sessions")
    async def open_session(body: dict[str, Any]) -> dict[str, Any]:
        session = f"s{next(ids)}"
        heard[session] = heard.setdefault("all", []) if shared else []
        return {"session_id": session, "greeting": None}

    @app.post("/sessions/{session}/messages")
    async def message(session: str, body: dict[str, Any]) -> dict[str, Any]:
        text = body["text"].lower()
        for genre in ("science fiction", "romantic comedy"):
            if genre in text:
                heard[session].append(genre)
        wants = ", ".join(heard[session]) or "anything"
        return {"text": f"You want {wants}. How about Heat (1995)?"}

    @app.delete("/sessions/{session}")
    async def close(session: str) -> dict[str, Any]:
        return {}

    return app
