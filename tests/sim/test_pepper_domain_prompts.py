"""PEPPER's prompts name the domain's items: for movies every prompt of `pepper`, `target_biased`, the
review extraction and the preference-accuracy study renders exactly as main rendered it before the
prompts became domain-generic (fixture tests/fixtures/movie_prompts_pepper.json), as does RecUserSim's
excitation prompt; on a books domain with a ratings file, PEPPER users come from that file and the
prompts speak of books."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.domains import read_ratings
from crsim.domains.loader import read_domain_file
from crsim.domains.movielens import movie_domain
from crsim.language.domain_cues import prompt_nouns
from crsim.llm.prompts import load_template, render
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.runner.loop import run_dialogue
from crsim.sim.base import simulator_registry
from crsim.studies.pepper.accuracy import AccuracyOptions, preference_accuracy
from crsim.users.population import PopulationConfig
from crsim.users.sources import build_users
from support import ScriptedHub

FIXTURE = Path(__file__).parents[1] / "fixtures" / "movie_prompts_pepper.json"


def provider() -> ScriptedProvider:
    """Reflections and review likes for JSON requests, "A" for choices, otherwise messages that
    differ (a repeated one would be asked again by the simulators' repeat check)."""
    said = iter(
        [
            "Something clever would be great.",
            "I enjoy stories with a twist at the end.",
            "Maybe a lighter one with a strong cast?",
            "Anything slow-burning and atmospheric works too.",
        ]
    )

    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        if generation.grammar is not None:
            return "A"
        if generation.json_schema is not None:
            if "like" in generation.json_schema["properties"]:
                return '{"like": "the pace", "dislike": "the ending"}'
            return '{"likes": ["clever plot"], "dislikes": ["slow start"]}'
        if "Begin with" in messages[-1]["content"]:
            return "You enjoy clever stories and dislike slow starts."
        return next(said)

    return ScriptedProvider(script)


class ListCRS(BaseCRS):
    """Recommends the given lists, one per reply."""

    def __init__(self, domain: Domain, lists: list[list[str]]) -> None:
        self.domain, self.lists = domain, lists

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        index = session.state = (session.state or 0) + 1
        items = self.lists[min(index, len(self.lists)) - 1]
        titles = ", ".join(self.domain.items[i].display_title for i in items)
        return CRSReply(text=f"Try {titles}.", recommended_items=items)


def pepper_user(seen: dict[str, float], targets: list[str], **persona: Any) -> SimulatedUser:
    return SimulatedUser.model_validate(
        {
            "id": "u1",
            "profile": {"item_ratings": seen, "persona": {"rating_scale": [0.5, 5.0], **persona}},
            "need": {"targets": targets},
        }
    )


def contents(scripted: ScriptedProvider) -> list[list[str]]:
    return [[m["content"] for m in messages] for messages, _ in scripted.requests]


def simulate(name: str, domain: Domain, user: SimulatedUser, lists: list[list[str]]) -> list[list[str]]:
    """The prompts `name` sends in a three-turn dialogue with a CRS recommending `lists`."""
    scripted = provider()
    sim_class = simulator_registry.get(name)
    sim = sim_class(simulator_registry.params(name, {}), BuildContext(domain, ScriptedHub(scripted), 7))
    asyncio.run(
        run_dialogue(
            sim, ListCRS(domain, lists), user, dialogue_id="d1", session=CRSSession("d1", 1), max_turns=3
        )
    )
    return contents(scripted)


def accuracy_prompts(domain: Domain, user: SimulatedUser, true: dict[str, float]) -> list[list[str]]:
    scripted = provider()
    hub = ScriptedHub(scripted)
    options = AccuracyOptions(pairs_per_user=2, both_orders=True)
    asyncio.run(preference_accuracy(hub.role("user"), [user], {user.id: true}, domain, options))
    return contents(scripted)


def render_all(domain: Domain, ids: list[str]) -> dict[str, list[list[str]]]:
    """Every PEPPER prompt on `domain`, for a user who has seen ids[0:4] (with reviews and tags on
    some) and wants ids[4:7]; the CRS shows seen and unseen items."""
    seen = {ids[0]: 4.5, ids[1]: 1.0, ids[2]: 4.0, ids[3]: 2.5}
    targets = ids[4:7]
    split = {"selected": targets[:2], "residual": targets[2:]}
    tagged = pepper_user(
        seen, targets, tags={ids[0]: ["witty"], ids[1]: ["dull", "long"]}, target_split=split
    )
    reviewed = pepper_user(
        seen, targets, reviews={ids[0]: "Loved the twists.", ids[1]: "Too slow for me."}, target_split=split
    )
    lists = [[ids[0], ids[4], ids[7]], [ids[2], ids[8]]]
    true = {ids[4]: 5.0, ids[5]: 4.0, ids[6]: 3.0}
    return {
        "pepper_tags": simulate("pepper", domain, tagged, lists),
        "pepper_reviews": simulate("pepper", domain, reviewed, lists),
        "target_biased": simulate("target_biased", domain, tagged, lists),
        "accuracy": accuracy_prompts(domain, tagged, true),
    }


def excite_prompt(domain: Domain, item: str, known: str) -> list[list[str]]:
    """RecUserSim's excitation prompt with the examples of what one may come to like in an item."""
    template = load_template("crsim.sim.recusersim.prompts", "excite.j2")
    aspects = prompt_nouns(domain)["aspects"]
    return [[render(template, item=item, known=[known], aspects=aspects)]]


def movie_ids() -> list[str]:
    return [i.id for i in list(movie_domain().items)[:9]]


def test_movie_prompts_render_as_before() -> None:
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    rendered = render_all(movie_domain(), movie_ids())
    assert {
        **rendered,
        "recusersim_excite": excite_prompt(movie_domain(), "Heat (1995); crime", "crime films"),
    } == expected


# --- a books domain with a ratings file -------------------------------------------------------

BOOKS = """\
id,title,author,genre,year,pages
b1,The Hobbit,J. R. R. Tolkien,fantasy|adventure,1937,310
b2,Dune,Frank Herbert,science fiction|adventure,1965,412
b3,Foundation,Isaac Asimov,science fiction,1951,255
b4,Emma,Jane Austen,romance|classic,1815,474
b5,Dracula,Bram Stoker,horror|classic,1897,418
b6,Carrie,Stephen King,horror,1974,199
b7,The Big Sleep,Raymond Chandler,mystery|crime,1939,231
b8,Persuasion,Jane Austen,romance|classic,1817,249
b9,Misery,Stephen King,horror|thriller,1987,320
"""

DOMAIN = """\
name: books
item_noun: book
items: {path: books.csv, id: id, title: title}
slots:
  genre: {kind: multi, requestable: true, cues: [genre]}
  author: {kind: categorical, requestable: true, cues: [author, writer]}
  pages: {kind: numeric, informable: false, requestable: true, cues: [pages]}
ratings: {path: ratings.csv, name: BookClub, label: bc}
"""


def books_domain(tmp_path: Path) -> Domain:
    """The books domain; readers r1 and r2 rate eight books each on a 1-10 scale, r3 only two."""
    rows = ["user_id,item_id,rating"]
    for reader, offset in (("r1", 0), ("r2", 1)):
        rows += [f"{reader},b{i},{(i * 3 + offset) % 10 + 1}" for i in range(1, 9)]
    rows += ["r3,b1,5", "r3,b2,4"]
    (tmp_path / "books.csv").write_text(BOOKS, encoding="utf-8")
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "books.yaml").write_text(DOMAIN, encoding="utf-8")
    return read_domain_file(tmp_path / "books.yaml")


def test_pepper_users_come_from_the_domain_ratings_file(tmp_path: Path) -> None:
    domain = books_domain(tmp_path)
    config = PopulationConfig(source="pepper", size=2, min_ratings=5, selected_targets=1)
    users = build_users(config, domain, seed=3)
    assert sorted(u.id for u in users) == ["pepper-r1", "pepper-r2"]  # r3 has two ratings
    ratings = read_ratings(domain.ratings)  # type: ignore[arg-type]
    for user in users:
        own = ratings[user.profile.persona["source_user_id"]]
        assert set(user.need.targets) | set(user.profile.item_ratings) == set(own)
        assert min(own[t] for t in user.need.targets) >= max(user.profile.item_ratings.values())
        assert user.profile.persona["source"] == "BookClub"
        assert user.profile.persona["rating_scale"] == [1.0, 10.0]


def test_pepper_without_ratings_says_what_is_missing(tmp_path: Path) -> None:
    domain = dataclasses.replace(books_domain(tmp_path), ratings=None)
    with pytest.raises(ConfigError, match="domain 'books' has no ratings file"):
        build_users(PopulationConfig(source="pepper", size=1), domain, seed=3)


def test_pepper_prompts_on_books_speak_of_books(tmp_path: Path) -> None:
    domain = books_domain(tmp_path)
    config = PopulationConfig(source="pepper", size=1, min_ratings=5, selected_targets=1)
    (user,) = build_users(config, domain, seed=3)
    rendered = render_all(domain, [f"b{i}" for i in range(1, 10)])
    rendered["recusersim_excite"] = excite_prompt(domain, "Dune (1965); science fiction", "space stories")
    # the users the population drew play too (their general preferences, then a dialogue)
    rendered["population_user"] = simulate("pepper", domain, user, [["b1", "b9"]])
    text = "\n".join(part for prompts in rendered.values() for prompt in prompts for part in prompt)
    for word in ("movie", "film", "watch", "viewer", "genre, a person"):
        assert not re.search(rf"\b{word}", text.lower()), word
    assert "You are a person chatting with a book recommender to find books to try." in text
    assert "You are an expert on books who sums up a person's taste." in text
    assert "Describe my taste in books" in text and "Book: " in text  # narrative, review extraction
    assert "(genre: fantasy, adventure; author: J. R. R. Tolkien; pages: 310)" in text  # the slots
    assert "something new about it (a genre, an author)" in text


if __name__ == "__main__":  # writes the fixture (from the tree before the prompts changed)
    FIXTURE.write_text(
        json.dumps(render_all(movie_domain(), movie_ids()), indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
