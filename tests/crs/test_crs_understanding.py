"""Rule-based understanding of user text (crsim.language.understanding) on the shipped movie domain."""

from __future__ import annotations

import pytest

from crsim.domains.movielens import movie_domain
from crsim.language.understanding import Context, Understanding, lexicon_for, understand
from crsim.model.acts import format_acts
from crsim.model.domain import Domain

MATRIX = "2571"  # The Matrix (1999)
BIG = "2797"  # Big (1988)
REC = Context(recommended=MATRIX)


@pytest.fixture(scope="module")
def domain() -> Domain:
    return movie_domain()


def parse(domain: Domain, text: str, context: Context | None = None) -> Understanding:
    return understand(text, domain, context)


# (utterance, context, acts that must all be present in the parse)
PHRASINGS: list[tuple[str, Context | None, list[str]]] = [
    # contract phrasings
    ("Hi! Can you recommend a movie?", None, ["greeting()", "request_recommendation()"]),
    ("I'm in the mood for a comedy.", None, ['disclose(genre="comedy")']),
    ("I like films with Tom Hanks.", None, ['disclose(actor="tom hanks")']),
    ("I'm a fan of Steven Spielberg.", None, ['disclose(director="steven spielberg")']),
    ("Something from the 1990s would be nice.", None, ['disclose(decade="1990s")']),
    ("I'd like something about time travel.", None, ['disclose(keyword="time-travel")']),
    ("I don't mind.", Context(elicited="actor"), ["disclose(actor)"]),
    ("What is it about?", REC, ["inquire(plot)"]),
    ("Who directed it?", REC, ["inquire(director)"]),
    ("Who is in it?", REC, ["inquire(actor)"]),
    ("When did it come out?", REC, ["inquire(year)"]),
    ("I've already seen The Matrix (1999).", REC, ['seen(title="The Matrix (1999)")']),
    ("No, that doesn't sound like my thing.", REC, ['reject(title="The Matrix (1999)")']),
    ("Do you have something else?", REC, ["request_recommendation()"]),
    ("That sounds great, I'll watch it!", REC, ['accept(title="The Matrix (1999)")']),
    ("Thanks, bye!", REC, ["goodbye()"]),
    # messy real-user phrasings
    ("hmm maybe something scary??", None, ['disclose(genre="horror")']),
    ("i loved tom hanks in big", None, ['disclose(actor="tom hanks")', 'disclose(title="Big (1988)")']),
    ("nah seen it", REC, ['seen(title="The Matrix (1999)")']),
    ("I want a scary movie", None, ['disclose(genre="horror")']),
    ("sci fi pls", None, ['disclose(genre="sci-fi")']),
    ("any good science fiction?", None, ['disclose(genre="sci-fi")']),
    ("something romantic", None, ['disclose(genre="romance")']),
    ("an animated one for the kids", None, ['disclose(genre="animation")', 'disclose(genre="children")']),
    ("funny stuff", None, ['disclose(genre="comedy")']),
    ("90s action with bruce willis", None, ['disclose(decade="1990s")', 'disclose(actor="bruce willis")']),
    ("from the eighties", None, ['disclose(decade="1980s")']),
    ("something from 1995", None, ['disclose(decade="1990s")']),
    ("Any Tarantino films?", None, ['disclose(director="quentin tarantino")']),
    ("a movie directed by clint eastwood", None, ['disclose(director="clint eastwood")']),
    ("something starring clint eastwood", None, ['disclose(actor="clint eastwood")']),
    ("what's it about", REC, ["inquire(plot)"]),
    ("who's in it", REC, ["inquire(actor)"]),
    ("what year is it from?", REC, ["inquire(year)"]),
    ("what genre is it?", REC, ["inquire(genre)"]),
    ("is it scary?", REC, ["inquire(genre)"]),
    ("Its plot? Its director?", REC, ["inquire(plot)", "inquire(director)"]),  # a 1.5B model's questions
    ("And the year?", REC, ["inquire(year)"]),
    ("perfect, I'll take it", REC, ['accept(title="The Matrix (1999)")']),
    ("yes", REC, ['accept(title="The Matrix (1999)")']),
    ("no", REC, ['reject(title="The Matrix (1999)")']),
    ("no", Context(recommended=MATRIX, yes_no=True), ["deny()"]),
    ("not really", Context(elicited="decade"), ["disclose(decade)"]),
    ("I'm not really interested in that one.", REC, ['reject(title="The Matrix (1999)")']),
    ("watched it already", REC, ['seen(title="The Matrix (1999)")']),
    ("anything else?", REC, ["request_recommendation()"]),
    ("Hello there", None, ["greeting()"]),
    ("ok bye", None, ["goodbye()"]),
    ("no horror please", None, ['reject(genre="horror")']),
    ("anything but horror", None, ['reject(genre="horror")']),
    ("I hate Adam Sandler", None, ['reject(actor="adam sandler")']),
]


@pytest.mark.parametrize(("text", "context", "expected"), PHRASINGS)
def test_phrasings(domain: Domain, text: str, context: Context | None, expected: list[str]) -> None:
    acts = [str(a) for a in parse(domain, text, context).acts]
    missing = [e for e in expected if e not in acts]
    assert not missing, f"{text!r}: missing {missing}, got {acts}"


@pytest.mark.parametrize(
    ("text", "context", "absent"),
    [
        ("I want a scary movie", None, "Scary Movie"),  # genre words are not a title
        ("a funny movie about time travel", None, "About Time"),
        ("I haven't seen it, sounds good", REC, "seen("),
        ("No, I want a comedy", None, 'reject(genre="comedy")'),
        ("I don't mind comedies", None, 'reject(genre="comedy")'),
        ("no horror please", None, 'disclose(genre="horror")'),
        ("Do you have something else?", REC, "reject("),
        ("I like films with Tom Hanks.", None, "accept("),
    ],
)
def test_no_false_readings(domain: Domain, text: str, context: Context | None, absent: str) -> None:
    assert absent not in format_acts(parse(domain, text, context).acts)


def test_person_known_as_actor_and_director_is_disambiguated_by_context(domain: Domain) -> None:
    assert parse(domain, "something directed by Clint Eastwood").likes == {"director": ["clint eastwood"]}
    assert parse(domain, "a western with Clint Eastwood").likes["actor"] == ["clint eastwood"]
    assert parse(domain, "Clint Eastwood", Context(elicited="director")).likes == {
        "director": ["clint eastwood"]
    }


def test_periods(domain: Domain) -> None:
    ninetees = parse(domain, "from the 90s").periods[0]
    assert (ninetees.label, ninetees.start, ninetees.end) == ("1990s", 1990, 1999)
    assert parse(domain, "the 2000s").periods[0].start == 2000
    recent = parse(domain, "something recent").periods[0]
    assert recent.label == "recent" and recent.end == 2018
    classic = parse(domain, "an old classic").periods[0]
    assert classic.label == "classic" and classic.end < 1980
    since = parse(domain, "made after 2010").periods[0]
    assert (since.start, since.end) == (2010, 2018)


def test_critique_relative_to_item_under_discussion(domain: Domain) -> None:
    assert parse(domain, "something more recent", REC).newer
    assert parse(domain, "anything older?", REC).older
    assert not parse(domain, "something more recent").newer  # nothing to compare with yet
    violent = parse(domain, "less violent please", REC)
    assert "war" in violent.dislikes["genre"] and not violent.likes


def test_topics_and_free_words(domain: Domain) -> None:
    zombies = parse(domain, "something with zombies")
    assert zombies.likes == {"keyword": ["zombies"]} and zombies.topic_words == ["zombies"]
    assert parse(domain, "without zombies").dislikes == {"keyword": ["zombies"]}
    heist = parse(domain, "a slick heist with a clever twist")
    assert "twist" in heist.topic_words and "slick" in heist.free_words
    assert parse(domain, "I'd like to watch it with my girlfriend").topic_words == []


def test_item_feedback_on_mentioned_titles(domain: Domain) -> None:
    liked = parse(domain, "Movies like The Matrix please")
    assert liked.liked_items == [MATRIX] and not liked.accepted_items
    assert parse(domain, "I hated Titanic").rejected_items == ["1721"]
    seen_loved = parse(domain, "seen it, it was great", REC)
    assert seen_loved.seen_items == [MATRIX] and seen_loved.liked_items == [MATRIX]
    assert parse(domain, "i loved tom hanks in big").mentioned_items == [BIG]


def test_no_preference_without_context_names_the_slot(domain: Domain) -> None:
    assert parse(domain, "I'm not picky about the decade").no_preference == ["decade"]
    assert parse(domain, "anything is fine").no_preference == ["any"]


@pytest.mark.parametrize(
    "text",
    ["", "   ", "???", "!!!...,,,", "x" * 5000, "é" * 3000, "🎬🍿" * 200, "1999 1999 (1999)", "a " * 2500],
)
def test_garbage_never_raises(domain: Domain, text: str) -> None:
    for context in (None, REC, Context(elicited="genre"), Context(recommended=MATRIX, yes_no=True)):
        result = parse(domain, text, context)
        assert isinstance(result.acts, list)
        assert not result.accepted_items and not result.rejected_items


def test_unrecognised_text_is_other_and_not_understood(domain: Domain) -> None:
    result = parse(domain, "???")
    assert format_acts(result.acts) == "other()" and not result.understood
    assert parse(domain, "").acts == []


def test_lexicon_built_once_per_collection(domain: Domain) -> None:
    assert lexicon_for(domain) is lexicon_for(movie_domain())
