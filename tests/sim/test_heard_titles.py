"""The simulated user hears every recommendation, whatever the title looks like (issue 34, item 1).

Every item of every shipped domain, of the docs' bookshop and of a generated catalogue of awkward
titles (one lower-case word, digits, punctuation, capitals: bench/awkward_catalogue.py) is named in
typical CRS sentences, written as catalogued, in lower case and in capitals; the agenda simulator's
rule NLU must read a recommendation of it, and the LLM users' item detection (`NeedTracker`) must
find the same items, because both use the one rule `heard_titles`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from catalogues import awkward_domain, bookshop_domain
from crsim.crs.base import CRSReply
from crsim.data.domains import domain_named
from crsim.model.domain import Domain
from crsim.model.linking import heard_titles
from crsim.model.text import normalize
from crsim.sim.agenda.nlu import RuleNLU
from crsim.sim.prompt.policy import NeedTracker

SENTENCES = (
    "How about {t}?",
    "You might like {t}. It matches what you asked for.",
    "{t} is a good choice for you.",
    "I'd suggest {t}, it is lovely.",
    "Okay, let's try something else. Have a look at {t}!",
)


@pytest.fixture(scope="module")
def domains(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Domain]:
    tmp = tmp_path_factory.mktemp("heard")
    found = {name: domain_named(name) for name in ("movies", "restaurants", "hotels")}
    found["books"] = bookshop_domain(tmp / "books")
    found["awkward"] = awkward_domain(tmp / "awkward", count=120, seed=3)
    return found


def _variants(title: str) -> Iterator[str]:
    yield title
    yield title.lower()
    yield title.upper()


def _same_title(domain: Domain, item_id: str) -> set[str]:
    """Items the text cannot tell apart from `item_id` (catalogues list some titles twice)."""
    key = normalize(domain.items[item_id].display_title)
    return {i.id for i in domain.items if normalize(i.display_title) == key}


@pytest.mark.parametrize("name", ["awkward", "books", "restaurants", "hotels", "movies"])
def test_every_title_is_heard_in_typical_sentences(domains: dict[str, Domain], name: str) -> None:
    domain = domains[name]
    nlu = RuleNLU(domain)
    sentences = SENTENCES if name != "movies" else SENTENCES[:2]  # 4,041 movies: two frames suffice
    missed = []
    for item in domain.items:
        accepted = _same_title(domain, item.id)
        for variant in _variants(item.display_title):
            for frame in sentences:
                text = frame.format(t=variant)
                heard = {a.value("item") for a in nlu.parse(text, []) if a.intent == "recommend"}
                if not heard & accepted:
                    missed.append(text)
                tracker = NeedTracker(domain, {}, [])  # what an LLM user registers as recommended
                tracker.heard(CRSReply(text=text))
                if not set(tracker.latest) & accepted:
                    missed.append(f"LLM user: {text}")
    assert not missed, f"{len(missed)} not heard, e.g. {missed[:5]}"


@pytest.mark.parametrize(
    "text",
    [
        "What kind of place would you like?",
        "Which part of town would you like?",
        "Do you have a preference for the entrance fee?",
        "Sorry, I didn't quite get that. Would you like something else?",
        "Hi! I can help you find an attraction. What are you looking for?",
        "Its phone: 01223356666.",
    ],
)
def test_ordinary_crs_sentences_name_no_awkward_title(domains: dict[str, Domain], text: str) -> None:
    assert heard_titles(domains["awkward"].items, text) == []


def test_one_word_titles_that_are_ordinary_words_still_need_marking(domains: dict[str, Domain]) -> None:
    movies = domains["movies"].items
    assert heard_titles(movies, "I like the heat up here, and my weekend was fine.") == []
    assert [m.surface for m in heard_titles(movies, "Have you seen Heat?")] == ["Heat"]
