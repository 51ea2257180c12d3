"""A small CRS that speaks crsim's generic JSON protocol: a starting point for your own server.

    python docs/examples/generic_crs_server.py --port 8765
    crsim crs check http://127.0.0.1:8765 --protocol generic

It recommends from a handful of movies by genre, with the ids of crsim's movie catalogue (so crsim
needs no title linking), keeps one state per session, answers a resent turn with the reply it
already gave, uses the session's seed for its only random choice, and ends the dialogue when the
user says goodbye. Replace `reply` with your recommender. Protocol: docs/generic-crs-openapi.yaml.
"""

from __future__ import annotations

import argparse
import random
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, HTTPException, Response
from pydantic import BaseModel

#: Genre -> (item id in crsim's movie catalogue, title). The ids are MovieLens ids, as in
#: `crsim.data.movies` (e.g. `movie_domain().items["2571"].title == "The Matrix"`).
CATALOGUE: dict[str, list[tuple[str, str]]] = {
    "sci-fi": [("2571", "The Matrix"), ("1214", "Alien"), ("541", "Blade Runner"), ("164179", "Arrival")],
    "crime": [("6", "Heat"), ("608", "Fargo"), ("858", "The Godfather"), ("296", "Pulp Fiction")],
    "comedy": [("1265", "Groundhog Day"), ("2671", "Notting Hill"), ("1732", "The Big Lebowski")],
    "animation": [("1", "Toy Story"), ("6377", "Finding Nemo"), ("68954", "Up"), ("4306", "Shrek")],
}
GENRE_WORDS = {
    "sci-fi": ("sci-fi", "science fiction", "scifi", "space"),
    "crime": ("crime", "gangster", "heist", "thriller"),
    "comedy": ("comedy", "comedies", "funny", "romance", "romantic"),
    "animation": ("animation", "animated", "children", "family", "cartoon"),
}
GOODBYE = re.compile(r"\b(bye|goodbye|thanks?|thank you)\b", re.IGNORECASE)
REJECT = re.compile(r"\b(seen|watched|else|another|no|not)\b", re.IGNORECASE)


@dataclass
class Session:
    """One conversation: its random generator (from crsim's seed), what it knows and said."""

    rng: random.Random
    genre: str | None = None
    recommended: list[str] = field(default_factory=list)
    turn: int = 0
    last_reply: dict[str, Any] = field(default_factory=dict)


class Open(BaseModel):
    dialogue_id: str
    seed: int = 0


class Message(BaseModel):
    text: str
    turn: int


app = FastAPI(title="Example CRS (crsim generic protocol)")
sessions: dict[str, Session] = {}


@app.post("/sessions")
def open_session(body: Open) -> dict[str, Any]:
    session_id = uuid.uuid4().hex
    sessions[session_id] = Session(random.Random(body.seed))
    greeting = {"text": "Hi! What kind of movie are you in the mood for?"}
    return {"session_id": session_id, "greeting": greeting}


@app.post("/sessions/{session_id}/messages")
def message(session_id: str, body: Message) -> dict[str, Any]:
    session = sessions.get(session_id)
    if session is None:
        raise HTTPException(404, "no such session")
    if body.turn == session.turn:  # crsim resent a message after a lost connection: same answer
        return session.last_reply
    session.turn, session.last_reply = body.turn, reply(session, body.text)
    return session.last_reply


@app.delete("/sessions/{session_id}", status_code=204)
def close(session_id: str) -> Response:
    sessions.pop(session_id, None)
    return Response(status_code=204)


def reply(session: Session, text: str) -> dict[str, Any]:
    """The recommender: a genre from the user's words, the next unseen film of that genre."""
    if GOODBYE.search(text):
        return {"text": "Enjoy your film. Goodbye!", "end": True, "mentioned_items": []}
    lowered = text.lower()
    named = [genre for genre, words in GENRE_WORDS.items() if any(word in lowered for word in words)]
    if named:
        session.genre = named[0]
    elif session.recommended and not REJECT.search(text):
        return {"text": "Glad you like it! Anything else?", "mentioned_items": []}
    if session.genre is None:
        session.genre = session.rng.choice(sorted(CATALOGUE))  # the seed decides, as crsim expects
    left = [(i, t) for i, t in CATALOGUE[session.genre] if i not in session.recommended]
    if not left:
        return {"text": f"That was all my {session.genre} films. Another genre?", "mentioned_items": []}
    item_id, title = left[0]
    session.recommended.append(item_id)
    return {
        "text": f"How about {title}? It is a {session.genre} film.",
        "recommended_items": [item_id],
        "mentioned_items": [],  # the text names no other catalogue item
    }


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)
