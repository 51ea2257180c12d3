"""The built-in CRSs and the agenda simulator on domains that are not movies: a small book domain
written here, and the shipped restaurants and hotels. Their vocabulary comes from the domain file
(slots, cues, synonyms), never from words of the movie domain."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.components import BuildContext
from crsim.crs.base import CRSReply, CRSSession
from crsim.crs.popular import PopularCRS
from crsim.crs.retrieval import RetrievalCRS
from crsim.domains import domain_named, read_domain_file
from crsim.language.crs_text import RuleNLU
from crsim.language.understanding import Context, understand
from crsim.model.acts import format_acts
from crsim.model.domain import Domain

BOOKS = """\
id,title,author,genre,pages,blurb
b1,The Quiet Orchard,Ann Lee,mystery,320,A detective solves a murder in a village of apple growers.
b2,Salt and Stars,Ben Ray,fantasy,540,A young sailor finds a map of the stars and follows it.
b3,Cold Harbour,Ann Lee,thriller,210,A heist goes wrong in a seaside town in winter.
b4,Paper Moons,Cara Diaz,fantasy,410,Two sisters open a shop that sells moonlight by the jar.
"""

BOOK_DOMAIN = """\
name: books
item_noun: book
items: {path: books.csv, id: id, title: title}
slots:
  genre:
    cues: [genre, kind of book]
    synonyms: {fantasy: [magical, wizards], mystery: [whodunit, detective story]}
  author: {requestable: true, cues: [author, writer]}
  length: {attribute: pages, kind: numeric, informable: false, requestable: true, cues: [pages]}
  blurb: {kind: text, requestable: true, cues: [blurb, summary]}
"""


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Domain:
    folder = tmp_path_factory.mktemp("books")
    (folder / "books.csv").write_text(BOOKS, encoding="utf-8")
    (folder / "books.yaml").write_text(BOOK_DOMAIN, encoding="utf-8")
    return read_domain_file(folder / "books.yaml")


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def acts(domain: Domain, text: str, context: Context | None = None) -> str:
    return format_acts(understand(text, domain, context).acts)


# --- the CRSs' understanding of user text ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "context", "expected"),
    [
        ("something magical please", None, 'disclose(genre="fantasy")'),
        ("I don't want a whodunit", None, 'reject(genre="mystery")'),
        ("a book by Ann Lee", None, 'disclose(author="ann lee")'),
        ("I don't mind", Context(elicited="author"), "disclose(author)"),
        ("who is the author of it?", Context(recommended="b1"), "inquire(author)"),
        ("how many pages does it have?", Context(recommended="b1"), "inquire(length)"),
        ("can you recommend a book?", None, "request_recommendation()"),
        ("no, not for me", Context(recommended="b1"), 'reject(title="The Quiet Orchard")'),
    ],
)
def test_user_text_is_understood_from_the_domain_data(
    books: Domain, text: str, context: Context | None, expected: str
) -> None:
    assert expected in acts(books, text, context)


def test_synonyms_and_requestables_of_the_shipped_restaurants(restaurants: Domain) -> None:
    said = acts(restaurants, "somewhere inexpensive in the center, maybe curry")
    for act in ('disclose(pricerange="cheap")', 'disclose(area="centre")', 'disclose(food="indian")'):
        assert act in said
    assert "inquire(phone)" in acts(restaurants, "What's the phone number?", Context(recommended="508"))
    assert "inquire(address)" in acts(
        restaurants, "Do you know the address of it?", Context(recommended="508")
    )


def test_yes_and_no_values_are_named_only_by_their_synonyms() -> None:
    hotels = domain_named("hotels")
    assert 'disclose(parking="yes")' in acts(hotels, "I need free parking")
    assert "parking" not in acts(hotels, "no, I don't mind")
    # a yes/no question about the item under discussion asks for the slot; it states no wish
    about = Context(recommended=next(iter(hotels.items.ids)))
    for question, slot in (
        ("Does it have parking?", "parking"),
        ("Does that one offer free wifi?", "internet"),
    ):
        said = acts(hotels, question, about)
        assert f"inquire({slot})" in said and "disclose" not in said, said
    assert 'disclose(parking="yes")' in acts(hotels, "Is there a hotel with free parking?", about)


# --- the CRSs' questions and answers -----------------------------------------------------------------


async def _talk(crs: PopularCRS, texts: list[str]) -> list[CRSReply]:
    session = CRSSession(id="s", seed=1)
    replies = [await crs.start(session)]
    for text in texts:
        replies.append(await crs.respond(session, text))
    return replies


async def test_retrieval_asks_each_informable_slot_and_answers_requestables(books: Domain) -> None:
    crs = RetrievalCRS(RetrievalCRS.Params(), BuildContext(domain=books))
    opening, first, second, rec, author, pages = await _talk(
        crs,
        ["hello", "something magical", "no preference", "who is the author of it?", "how many pages?"],
    )
    assert "book" in opening.text
    assert [a.slots for a in first.acts if a.intent == "elicit"] == [[("genre", None)]]
    assert [a.slots for a in second.acts if a.intent == "elicit"] == [[("author", None)]]
    assert rec.recommended_items and rec.recommended_items[0] in ("b2", "b4")  # the fantasy books
    named = books.items[rec.recommended_items[0]]
    assert named.values("author")[0] in author.text and "inform(author=" in format_acts(author.acts)
    assert named.values("pages")[0] in pages.text


async def test_popular_asks_the_first_slot_and_answers_generically(books: Domain) -> None:
    crs = PopularCRS(PopularCRS.Params(), BuildContext(domain=books))
    opening, question, rec, answer = await _talk(crs, ["hi", "fantasy", "who is the author?"])
    assert "book" in opening.text
    assert [a.slots for a in question.acts if a.intent == "elicit"] == [[("genre", None)]]  # the first slot
    assert rec.recommended_items and rec.recommended_items[0] in ("b2", "b4")
    # no ratings: it says it keeps the catalogue order, not that the book is popular
    assert "the books that fit" in answer.text and "popular" not in answer.text and "movie" not in answer.text


# --- the agenda simulator's understanding of CRS text ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hint", "expected"),
    [
        ("Which genre do you like?", [], "elicit(genre)"),
        ("Who is your favourite writer?", [], "elicit(author)"),
        ("Do you like fantasy?", [], "elicit(genre)"),
        ("How about Paper Moons?", [], 'recommend(title="Paper Moons",item="b4")'),
        ("Its author: Cara Diaz.", ["b4"], 'inform(author="Cara Diaz")'),
        ("It has 410 pages.", ["b4"], 'inform(length="410")'),
        ("Enjoy the book! Goodbye.", [], "goodbye()"),
    ],
)
def test_abus_reads_crs_text_with_the_domain_cues(
    books: Domain, text: str, hint: list[str], expected: str
) -> None:
    assert expected in format_acts(RuleNLU(books).parse(text, hint))


def test_abus_reads_restaurant_questions_and_answers(restaurants: Domain) -> None:
    nlu = RuleNLU(restaurants)
    assert format_acts(nlu.parse("What kind of food would you like?", [])) == "elicit(food)"
    assert format_acts(nlu.parse("Which part of town would you like to eat in?", [])) == "elicit(area)"
    assert "inform(phone=" in format_acts(nlu.parse("Its phone: 01223323737.", ["508"]))


# --- whole runs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", ["restaurants", "hotels"])
def test_abus_against_popular_and_retrieval_succeeds(domain: str, tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        f"name: {domain}\ndomain: {domain}\nseed: 5\nusers: {{size: 6}}\nsimulators: [{{name: abus}}]\n"
        "crss: [{name: popular}, {name: retrieval}]\nmax_turns: 12\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    for group in summary["groups"]:
        assert group["metrics"]["Success"]["mean"] > 0, group["crs_id"]
    dialogues = (tmp_path / "out" / "dialogues.jsonl").read_text(encoding="utf-8")
    assert not re.search(r"\b(movie|movies|film|watch)\b", dialogues, re.I)


# --- no movie words in the generic modules -----------------------------------------------------------

GENERIC_MODULES = [
    "language/cues.py",
    "language/domain_cues.py",
    "language/lexicon.py",
    "language/understanding.py",
    "language/intents.py",
    "language/results.py",
    "crs/nlg.py",
    "crs/popular.py",
    "crs/item_index.py",
    "crs/ranked_top.py",
    "crs/dialogue_state.py",
    "crs/candidates.py",
    "language/crs_text.py",
    "language/nlu_vocabulary.py",
    "sim/shared/nlg.py",
    "sim/agenda/policy.py",
    "sim/agenda/preferences.py",
]


@pytest.mark.parametrize("module", GENERIC_MODULES)
def test_generic_modules_hold_no_movie_words_in_their_strings(module: str) -> None:
    source = (Path(__file__).parents[2] / "src" / "crsim" / module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    strings = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]
    movie = re.compile(r"\b(movies?|films?|watch\w*|genres?|actors?|directors?|decade|keyword)\b")
    assert [s for s in strings if movie.search(s)] == []


# --- movies: one domain among the others, its vocabulary in its data files ---------------------------


def test_the_movie_vocabulary_lives_in_the_movie_domain_files() -> None:
    from crsim.crs.nlg import sentences_for
    from crsim.language.lexicon import lexicon_for, synonym_table

    movies = domain_named("movies")
    table = synonym_table(movies, "genre")
    # a phrase under several genres keeps the order understanding has always reported them in
    assert table["romcom"] == ("romance", "comedy") and table["dark"] == ("thriller", "crime", "horror")
    assert table["violent"] == ("action", "crime", "war") and table["kids"] == ("children", "family")
    lex = lexicon_for(movies)
    assert (lex.value_slots, lex.people_slots, lex.period_slot, lex.topic_slot) == (
        ("genre",),
        ("actor", "director"),
        "decade",
        "keyword",
    )
    assert (
        sentences_for(movies)
        .closing(__import__("random").Random(0), accepted=True)
        .startswith(("Enjoy the movie!", "Have fun watching!"))
    )


def test_cues_are_built_once_per_domain_object(books: Domain) -> None:
    """An LLM user builds its policy (and asks for the cues) per dialogue: the domain's cues are
    shared, and a domain with other phrasings over the same items gets its own."""
    from dataclasses import replace

    from crsim.language.domain_cues import domain_cues

    assert domain_cues(books) is domain_cues(books)
    phrased = replace(books, phrasings={**books.phrasings, "understanding": {"item_words": ["volume"]}})
    assert domain_cues(phrased) is not domain_cues(books)
    assert domain_cues(phrased).request.search("a different volume please") is not None
    assert domain_cues(books).request.search("a different volume please") is None
