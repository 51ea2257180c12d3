"""Rule-based NLU of the agenda-based simulator: contract phrasings, variants, and garbage."""

from __future__ import annotations

import random

import pytest

from crsim.domains.movielens import movie_domain
from crsim.language.crs_text import RuleNLU
from crsim.model.acts import DialogueAct, Intent


@pytest.fixture(scope="module")
def nlu() -> RuleNLU:
    return RuleNLU(movie_domain())


def summary(acts: list[DialogueAct]) -> list[str]:
    """Acts without the linked item id, e.g. `recommend(title="Heat (1995)")`."""
    return [str(DialogueAct(intent=a.intent, slots=[p for p in a.slots if p[0] != "item"])) for a in acts]


CONTRACT = [
    ("What kind of movie are you in the mood for?", ["elicit(genre)"]),
    ("Which genre do you enjoy?", ["elicit(genre)"]),
    ("Is there an actor or actress you like?", ["elicit(actor)"]),
    ("Any director you're a fan of?", ["elicit(director)"]),
    ("Do you prefer movies from a particular decade?", ["elicit(decade)"]),
    ("What should the movie be about?", ["elicit(keyword)"]),
    ("You might like The Matrix (1999).", ['recommend(title="The Matrix (1999)")']),
    (
        "How about Heat (1995) or Ronin (1998)?",
        ['recommend(title="Heat (1995)")', 'recommend(title="Ronin (1998)")'],
    ),
    ("It was directed by Michael Mann.", ['inform(director="Michael Mann")']),
    ("It came out in 1995.", ['inform(year="1995")']),
    ("It stars Al Pacino, Robert De Niro.", ['inform(actor="Al Pacino",actor="Robert De Niro")']),
    ("Would you like something else?", ["ask()"]),
    ("Enjoy the movie!", ["goodbye()"]),
]

VARIANTS = [
    ("Hi! What kind of movie are you in the mood for?", ["greeting()", "elicit(genre)"]),
    ("Hello, I can help you find a film. What are you looking for?", ["greeting()", "elicit()"]),
    ("Looking for something to watch? Tell me what kind of movie you feel like.", ["elicit(genre)"]),
    ("What do you like to watch?", ["elicit()"]),
    ("Tell me which actors you like.", ["elicit(actor)"]),
    ("Do you like comedies?", ["elicit(genre)"]),
    ("Do you want something older or more recent?", ["elicit(decade)"]),
    ("Any particular topic or theme?", ["elicit(keyword)"]),
    ("Which actor or director do you like?", ["elicit(actor)", "elicit(director)"]),
    ("Have you seen it?", ["ask(seen)"]),
    ("Have you seen Toy Story (1995)?", ['recommend(title="Toy Story (1995)")', "ask(seen)"]),
    ("How about Heat or Ronin?", ['recommend(title="Heat (1995)")', 'recommend(title="Ronin (1998)")']),
    ("Maybe try the matrix (1999)!", ['recommend(title="The Matrix (1999)")']),
    ("Michael Mann directed it.", ['inform(director="Michael Mann")']),
    ("The director is Michael Mann.", ['inform(director="Michael Mann")']),
    (
        "The cast includes Keanu Reeves and Laurence Fishburne.",
        ['inform(actor="Keanu Reeves",actor="Laurence Fishburne")'],
    ),
    ("It was released in 1999.", ['inform(year="1999")']),
    ("It's a 1995 film.", ['inform(year="1995")']),
    ("Can I help you with anything else?", ["ask()"]),
    ("Thanks for chatting, goodbye!", ["goodbye()"]),
    ("Have a great evening!", ["goodbye()"]),
    ("Great, I hope this helps.", []),
]


@pytest.mark.parametrize(("text", "expected"), CONTRACT + VARIANTS)
def test_phrasings(nlu: RuleNLU, text: str, expected: list[str]) -> None:
    assert summary(nlu.parse(text, [])) == expected


def test_recommend_carries_the_linked_item_id(nlu: RuleNLU) -> None:
    acts = nlu.parse("You might like The Matrix (1999).", [])
    assert acts[0].value("item") == "2571"


def test_plot_answer_is_an_inform_not_a_recommendation(nlu: RuleNLU) -> None:
    text = "Here's the plot: a thief who steals secrets through dreams, a bit like Heat (1995) in places."
    acts = nlu.parse(text, ["79132"])
    assert [a.intent for a in acts] == [Intent.INFORM]
    plot = acts[0].value("plot")
    assert plot is not None and plot.startswith("a thief who steals")


def test_plot_followed_by_a_question_keeps_the_question(nlu: RuleNLU) -> None:
    acts = nlu.parse("It's about toys that come alive. Would you like something else?", ["1"])
    assert summary(acts) == ['inform(plot="toys that come alive.")', "ask()"]


def test_pronoun_alias_is_not_a_recommendation(nlu: RuleNLU) -> None:
    """The catalogue lists "It" as an alias of Goodfellas; "It was ..." must not link to it."""
    acts = nlu.parse("It was directed by Michael Mann.", ["6"])
    assert all(a.intent != Intent.RECOMMEND for a in acts)


def test_answer_naming_the_discussed_item_is_not_a_new_recommendation(nlu: RuleNLU) -> None:
    acts = nlu.parse("Heat (1995) was directed by Michael Mann.", ["6"])
    assert summary(acts) == ['inform(director="Michael Mann")']
    # the same sentence about an item not under discussion is a recommendation with information
    acts = nlu.parse("Heat (1995) was directed by Michael Mann.", ["2571"])
    assert Intent.RECOMMEND in [a.intent for a in acts]


def test_recommendation_with_information(nlu: RuleNLU) -> None:
    acts = nlu.parse("You might like Heat (1995). It was directed by Michael Mann.", [])
    assert summary(acts) == ['recommend(title="Heat (1995)")', 'inform(director="Michael Mann")']


def test_answer_recognised_from_the_focus_items_attributes(nlu: RuleNLU) -> None:
    """No answer pattern, but names of the item in focus: still an answer about it."""
    acts = nlu.parse("Well, Al Pacino and Robert De Niro, mostly.", ["2571", "6"])
    assert summary(acts) == ['inform(actor="Al Pacino",actor="Robert De Niro")']


def test_enjoy_inside_a_recommendation_is_not_goodbye(nlu: RuleNLU) -> None:
    acts = nlu.parse("You might like Heat (1995). I think you will enjoy it.", [])
    assert Intent.GOODBYE not in [a.intent for a in acts]


@pytest.mark.parametrize("text", ["", "   ", "???", "!!!...", "(1999)", ")(", "\n\n", "🙂🙂", "a" * 5000])
def test_garbage_never_raises(nlu: RuleNLU, text: str) -> None:
    assert isinstance(nlu.parse(text, ["1"]), list)


def test_five_kilobytes_of_noise(nlu: RuleNLU) -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ .,?!()'\"-:;0123456789\n"
    text = "".join(rng.choice(alphabet) for _ in range(5000))
    acts = nlu.parse(text, ["6"])
    assert all(isinstance(a, DialogueAct) for a in acts)


def test_talk_about_the_item_in_focus_is_not_a_new_recommendation(nlu: RuleNLU) -> None:
    text = "I don't have details about Heat (1995), but it's one of the most watched movies around."
    assert nlu.parse(text, ["2571", "6"]) == []
    assert summary(nlu.parse(text, ["2571"])) == ['recommend(title="Heat (1995)")']
