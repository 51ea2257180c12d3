"""The built-in `popular` and `retrieval` CRSs, driven by scripted natural-language conversations."""

from __future__ import annotations

import dataclasses

import pytest

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.crs.base import CRSReply, CRSSession, crs_registry
from crsim.crs.popular import PopularCRS
from crsim.crs.retrieval import RetrievalCRS
from crsim.domains.movielens import movie_domain
from crsim.model.acts import format_acts
from crsim.model.domain import Domain
from crsim.model.items import Item, ItemCollection


@pytest.fixture(scope="module")
def domain() -> Domain:
    return movie_domain()


def retrieval(domain: Domain, **args: object) -> RetrievalCRS:
    return RetrievalCRS(RetrievalCRS.Params.model_validate(args), BuildContext(domain))


def popular(domain: Domain, **args: object) -> PopularCRS:
    return PopularCRS(PopularCRS.Params.model_validate(args), BuildContext(domain))


def intents(reply: CRSReply) -> list[str]:
    return [a.intent for a in reply.acts]


async def talk(crs: PopularCRS, session: CRSSession, lines: list[str]) -> list[CRSReply]:
    replies = [await crs.start(session)]
    for line in lines:
        replies.append(await crs.respond(session, line))
    return replies


async def test_retrieval_full_conversation(domain: Domain) -> None:
    crs, session = retrieval(domain), CRSSession(id="d1", seed=7)
    greeting = await crs.start(session)
    assert intents(greeting) == ["greeting", "elicit"] and "movie" in greeting.text
    ask_genre = await crs.respond(session, "Hi! Can you recommend a movie?")
    assert format_acts(ask_genre.acts) == "elicit(genre)" and not ask_genre.recommended_items
    ask_actor = await crs.respond(session, "I'm in the mood for a comedy.")
    assert format_acts(ask_actor.acts) == "elicit(actor)"
    ask_decade = await crs.respond(session, "I like films with Tom Hanks.")
    assert format_acts(ask_decade.acts) == "elicit(decade)"
    first = await crs.respond(session, "I don't mind.")
    assert len(first.recommended_items) == 1
    item = domain.items[first.recommended_items[0]]
    assert "comedy" in item.genres and "Tom Hanks" in item.actors
    assert format_acts(first.acts) == f'recommend(title="{item.display_title}")'
    assert item.display_title in first.text

    director = await crs.respond(session, "Who directed it?")
    assert not director.recommended_items
    assert [v for a in director.acts for _, v in a.slots] == item.directors
    assert all(name in director.text for name in item.directors)
    plot = await crs.respond(session, "What is it about?")
    assert item.plot and item.plot in plot.text and intents(plot) == ["inform"]
    year = await crs.respond(session, "When did it come out?")
    assert format_acts(year.acts) == f'inform(year="{item.year}")' and str(item.year) in year.text
    cast = await crs.respond(session, "Who is in it?")
    assert all(actor in cast.text for actor in item.actors)

    second = await crs.respond(session, "No, that doesn't sound like my thing.")
    assert second.recommended_items and second.recommended_items[0] != item.id
    other = domain.items[second.recommended_items[0]]
    assert "comedy" in other.genres and "Tom Hanks" in other.actors
    accepted = await crs.respond(session, "That sounds great, I'll watch it!")
    assert intents(accepted) == ["ask"] and not accepted.end
    bye = await crs.respond(session, "Thanks, bye!")
    assert bye.end and intents(bye) == ["goodbye"]


async def test_retrieval_honours_director_and_recommends_early_on_request(domain: Domain) -> None:
    crs, session = retrieval(domain), CRSSession(id="d2", seed=1)
    await crs.start(session)
    await crs.respond(session, "Hello, I'm looking for a movie")
    reply = await crs.respond(session, "I'm a fan of Steven Spielberg, just recommend one please")
    assert reply.recommended_items, "a request after a question gets a recommendation right away"
    assert "Steven Spielberg" in domain.items[reply.recommended_items[0]].directors


async def test_retrieval_skips_slots_already_volunteered(domain: Domain) -> None:
    crs, session = retrieval(domain, max_questions=2), CRSSession(id="d3", seed=1)
    await crs.start(session)
    ask = await crs.respond(session, "Some 90s action with Bruce Willis would be great")
    assert format_acts(ask.acts) == "elicit(director)"  # genre, actor and decade are known
    ask_topic = await crs.respond(session, "no idea")
    assert format_acts(ask_topic.acts) == "elicit(keyword)"
    rec = await crs.respond(session, "whatever")  # two questions asked: now it recommends
    item = domain.items[rec.recommended_items[0]]
    assert "action" in item.genres and "Bruce Willis" in item.actors and 1990 <= (item.year or 0) <= 1999


async def test_retrieval_critique_more_recent_and_dislike(domain: Domain) -> None:
    crs, session = retrieval(domain, max_questions=0), CRSSession(id="d4", seed=3)
    await crs.start(session)
    first = await crs.respond(session, "A sci-fi movie please, but no horror")
    first_item = domain.items[first.recommended_items[0]]
    assert "sci-fi" in first_item.genres and "horror" not in first_item.genres
    newer = await crs.respond(session, "something more recent")
    newer_item = domain.items[newer.recommended_items[0]]
    assert (newer_item.year or 0) > (first_item.year or 0) and "sci-fi" in newer_item.genres


async def test_retrieval_uses_free_text_topic(domain: Domain) -> None:
    crs, session = retrieval(domain, max_questions=0), CRSSession(id="d5", seed=3)
    await crs.start(session)
    reply = await crs.respond(session, "Recommend me a movie about time travel")
    item = domain.items[reply.recommended_items[0]]
    described = " ".join([item.plot or "", *item.keywords]).lower()
    assert "time" in described


async def test_popular_conversation(domain: Domain) -> None:
    crs, session = popular(domain), CRSSession(id="p1", seed=2)
    horror = sorted(
        (i for i in domain.items if "horror" in i.genres), key=lambda i: -int(i.extra.get("num_ratings", 0))
    )
    replies = await talk(crs, session, ["Hi! Can you recommend a movie?", "hmm maybe something scary??"])
    assert format_acts(replies[1].acts) == "elicit(genre)"
    assert replies[2].recommended_items == [horror[0].id]
    seen = await crs.respond(session, "nah seen it")
    assert seen.recommended_items == [horror[1].id]
    inquiry = await crs.respond(session, "What is it about?")
    assert inquiry.text and not inquiry.recommended_items and not inquiry.end
    comedy = await crs.respond(session, "No. I'd rather have a comedy.")
    comedy_item = domain.items[comedy.recommended_items[0]]
    assert "comedy" in comedy_item.genres and "horror" not in comedy_item.genres
    await crs.respond(session, "Great, I'll watch that one")
    assert (await crs.respond(session, "bye")).end


@pytest.mark.parametrize("make", [popular, retrieval])
@pytest.mark.parametrize("k", [1, 3])
async def test_never_repeats_an_item(domain: Domain, make: type, k: int) -> None:
    crs, session = make(domain, k=k), CRSSession(id="r", seed=5)
    replies = await talk(
        crs, session, ["I want a thriller, recommend something"] + ["no, something else"] * 15
    )
    shown = [i for r in replies for i in r.recommended_items]
    assert len(shown) >= 15 * k and len(shown) == len(set(shown))
    assert all(len(r.recommended_items) in (0, k) for r in replies)
    assert all(intents(r).count("recommend") == len(r.recommended_items) for r in replies)


@pytest.mark.parametrize("make", [popular, retrieval])
async def test_sessions_do_not_share_state(domain: Domain, make: type) -> None:
    script_a = [
        "I'd like a comedy",
        "with Jim Carrey",
        "no",
        "I don't mind",
        "who directed it?",
        "another one",
    ]
    script_b = ["horror please", "I don't care", "nah", "no", "something else", "is it scary?"]
    alone_a = await talk(make(domain), CRSSession(id="a", seed=11), script_a)
    alone_b = await talk(make(domain), CRSSession(id="b", seed=12), script_b)
    crs = make(domain)
    session_a, session_b = CRSSession(id="a", seed=11), CRSSession(id="b", seed=12)
    mixed_a, mixed_b = [await crs.start(session_a)], [await crs.start(session_b)]
    for line_a, line_b in zip(script_a, script_b, strict=True):
        mixed_a.append(await crs.respond(session_a, line_a))
        mixed_b.append(await crs.respond(session_b, line_b))
    assert mixed_a == alone_a and mixed_b == alone_b


@pytest.mark.parametrize("make", [popular, retrieval])
async def test_same_seed_same_replies(domain: Domain, make: type) -> None:
    script = [
        "hey",
        "a romantic comedy",
        "no preference",
        "nope",
        "what's it about",
        "ok I'll watch it",
        "bye",
    ]
    first = await talk(make(domain), CRSSession(id="s", seed=42), script)
    second = await talk(make(domain), CRSSession(id="s", seed=42), script)
    assert first == second


@pytest.mark.parametrize("make", [popular, retrieval])
@pytest.mark.parametrize("text", ["", "???", "x" * 5000, "🎬" * 100, "no no no yes maybe", "seen it"])
async def test_garbage_never_raises(domain: Domain, make: type, text: str) -> None:
    crs = make(domain)
    session = CRSSession(id="g", seed=0)
    replies = await talk(crs, session, [text, text, "comedy", text, text, text])
    assert all(r.text for r in replies)
    fresh = CRSSession(id="g2", seed=0)  # respond without start still works
    assert (await crs.respond(fresh, text)).text


def tiny_domain() -> Domain:
    items = [
        Item(
            id="a", title="Known Film", year=2001, genres=["drama"], directors=["Ann Dir"], actors=["Bo Act"]
        ),
        Item(id="b", title="Bare Film", genres=["drama"], extra={"num_ratings": 50}),
    ]
    # the movie domain's slots and phrasings (its vocabulary is data) over two items of our own
    return dataclasses.replace(movie_domain(), name="tiny", items=ItemCollection(items, name="tiny"))


async def test_retrieval_is_honest_about_missing_metadata() -> None:
    domain = tiny_domain()
    crs, session = retrieval(domain, max_questions=0), CRSSession(id="t", seed=0)
    await crs.start(session)
    rec = await crs.respond(session, "a drama please")
    assert rec.recommended_items == ["b"]  # more ratings
    for question in ("What is it about?", "Who directed it?", "Who is in it?", "When did it come out?"):
        answer = await crs.respond(session, question)
        assert "don't" in answer.text and intents(answer) == ["other"], question
    rec2 = await crs.respond(session, "something else")
    assert rec2.recommended_items == ["a"]
    exhausted = await crs.respond(session, "something else")
    assert not exhausted.recommended_items and intents(exhausted) == ["ask"]


def test_registered_with_validated_params(domain: Domain) -> None:
    assert crs_registry.get("popular") is PopularCRS and crs_registry.get("retrieval") is RetrievalCRS
    params = crs_registry.params("retrieval", {"k": 2, "weights": {"text": 1.0}})
    assert isinstance(params, RetrievalCRS.Params) and params.k == 2 and params.max_questions == 3
    with pytest.raises(ConfigError):
        crs_registry.params("retrieval", {"k": 11})
    with pytest.raises(ConfigError, match="mood"):  # a slot the domain lacks, asked for explicitly
        retrieval(domain, elicitation_order=["genre", "mood"])
    with pytest.raises(ConfigError):
        crs_registry.params("popular", {"max_questions": 1, "weights": {}})


def test_domain_resources_are_shared_between_instances(domain: Domain) -> None:
    first, second = retrieval(domain), retrieval(domain, k=2)
    assert first.text is second.text and first.index is second.index
    assert popular(domain).index is first.index


@pytest.mark.parametrize("make", [popular, retrieval])
async def test_an_answer_about_the_recommendation_mentions_it_without_recommending_it(
    make, domain: Domain
) -> None:  # type: ignore[no-untyped-def]
    crs, session = make(domain), CRSSession(id="m1", seed=3)
    replies = await talk(crs, session, ["Hi! Can you recommend a movie?", "something scary"])
    while not replies[-1].recommended_items and len(replies) < 6:
        replies.append(await crs.respond(session, "no preference, just recommend something"))
    recommended = replies[-1].recommended_items
    answer = await crs.respond(session, "Who directed it?")
    assert recommended and all(r.items_listed for r in [*replies, answer])
    assert (answer.recommended_items, answer.mentioned_items) == ([], recommended[:1])
