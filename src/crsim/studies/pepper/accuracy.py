"""How well a preference representation predicts a user's own ratings (PEPPER Table 2).

For pairs of a user's targets with different true ratings, the LLM, given one representation of
the user's preferences, picks the movie it would enjoy more (A or B, the order drawn per pair).
Accuracy is the share of answered pairs where it picked the higher-rated one. Representations:
`general` (the general-preferences narrative), `raw` (the seen items with the user's own
feedback: ratings and reviews or tags) and `binary` (the like/dislike phrases). The targets are
unknown to every representation. An answer that is neither A nor B is counted as unreadable with
its raw text, never as a choice. With `both_orders`, each pair is asked in both orders and counts
only when both answers pick the same movie (a model that always answers "A" then answers nothing).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import jinja2
from pydantic import BaseModel

from crsim.core.progress import Progress
from crsim.core.seeding import derive_seed
from crsim.llm.client import LLM
from crsim.llm.prompts import load_template, render
from crsim.llm.types import GenerationConfig, system, user
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser
from crsim.sim.pepper.profile import PROMPTS, domain_words, general_preferences, item_view

REPRESENTATIONS = ("general", "raw", "binary")
ANSWER_GRAMMAR = 'root ::= "A" | "B"'


class PairChoice(BaseModel):
    """One pair put to one representation."""

    user_id: str
    representation: str
    a: str
    b: str
    higher: str  #: the item with the higher true rating
    choice: str | None  #: the item picked, None when the answer was unreadable
    correct: bool | None
    raw: str
    error: str | None = None


class RepresentationScore(BaseModel):
    representation: str
    pairs: int
    answered: int
    correct: int
    accuracy: float | None
    picked_first: float | None  #: share of answers naming the first-shown movie (position bias)


class AccuracyReport(BaseModel):
    users: int
    scores: list[RepresentationScore]
    choices: list[PairChoice]


@dataclass
class AccuracyOptions:
    representations: tuple[str, ...] = REPRESENTATIONS
    pairs_per_user: int = 5
    narrative_items: int = 9
    plot_chars: int = 160
    narrative_max_tokens: int = 160
    seed: int = 0
    #: Ask each pair in both orders; a pair counts only when both answers pick the same movie.
    both_orders: bool = False


def target_pairs(ratings: dict[str, float], count: int, rng: random.Random) -> list[tuple[str, str]]:
    """Up to `count` random pairs of items with different ratings, each in a random order."""
    pairs = [(a, b) for a, b in combinations(sorted(ratings), 2) if ratings[a] != ratings[b]]
    chosen = rng.sample(pairs, min(count, len(pairs)))
    return [(a, b) if rng.random() < 0.5 else (b, a) for a, b in chosen]


def read_choice(raw: str) -> str | None:
    """ "A" or "B" from an answer (its first letter after optional punctuation/words like "Answer:")."""
    text = raw.strip().strip("*\"'`").strip()
    for prefix in ("answer:", "answer", "option", "movie"):
        if text.lower().startswith(prefix):
            text = text[len(prefix) :].strip(" :.")
    if text[:1] in ("A", "B") and (len(text) == 1 or not text[1].isalpha()):
        return text[:1]
    return None


async def preference_accuracy(
    llm: LLM,
    users: list[SimulatedUser],
    true_ratings: dict[str, dict[str, float]],
    domain: Domain,
    options: AccuracyOptions,
    progress: Progress | None = None,
) -> AccuracyReport:
    """Put pairs of each user's targets to each representation (`true_ratings`: user -> item -> rating);
    `progress` advances with each user done (an error when an answer of theirs could not be used)."""
    template = load_template(PROMPTS, "choose.j2")
    choices: list[PairChoice] = []
    for person in users:
        ratings = {
            t: true_ratings[person.id][t] for t in person.need.targets if t in true_ratings.get(person.id, {})
        }
        pairs = target_pairs(
            ratings, options.pairs_per_user, random.Random(derive_seed(options.seed, person.id))
        )
        if not pairs:
            if progress is not None:
                progress.advance()
            continue
        asked = len(choices)
        base = await _representations(llm, person, domain, options)
        for representation in options.representations:
            variables = {**base, "representation": representation}
            for a, b in pairs:
                picked, raw, error = await _choose(llm, template, variables, a, b, options)
                higher = a if ratings[a] > ratings[b] else b
                choices.append(
                    PairChoice(
                        user_id=person.id,
                        representation=representation,
                        a=a,
                        b=b,
                        higher=higher,
                        choice=picked,
                        correct=None if picked is None else picked == higher,
                        raw=raw,
                        error=error,
                    )
                )
        if progress is not None:
            progress.advance(error=any(choice.error is not None for choice in choices[asked:]))
    return AccuracyReport(users=len(users), scores=score(choices, options.representations), choices=choices)


async def _representations(
    llm: LLM, person: SimulatedUser, domain: Domain, options: AccuracyOptions
) -> dict[str, Any]:
    """The prompt's variables for one user: every representation of their preferences (the general
    narrative, written by the LLM, the seen items with feedback, the like/dislike phrases)."""
    general = await general_preferences(
        llm,
        person,
        domain,
        narrative_items=options.narrative_items,
        plot_chars=options.plot_chars,
        max_tokens=options.narrative_max_tokens,
    )
    return {
        "words": domain_words(domain),
        "domain": domain,
        "general": general.narrative,
        "seen": general.seen,
        "likes": general.binary.likes,
        "dislikes": general.binary.dislikes,
    }


async def _choose(
    llm: LLM, template: jinja2.Template, variables: dict[str, Any], a: str, b: str, options: AccuracyOptions
) -> tuple[str | None, str, str | None]:
    """The item picked from the pair (None: no usable answer), the raw answer(s) and why none was
    usable; with `both_orders` both orders must pick the same item."""
    first, raw_first = await _ask(llm, template, variables, a, b, options)
    picked, raw, error = first, raw_first, None if first else "the answer is neither A nor B"
    if options.both_orders:
        second, raw_second = await _ask(llm, template, variables, b, a, options)
        raw = f"{raw_first} | {raw_second}"
        if first is None or second is None:
            picked, error = None, "an answer is neither A nor B"
        elif first != second:
            picked, error = None, "the choice changes with the order"
    return picked, raw, error


async def _ask(
    llm: LLM, template: jinja2.Template, variables: dict[str, Any], a: str, b: str, options: AccuracyOptions
) -> tuple[str | None, str]:
    """The item picked when `a` is shown as A and `b` as B (None: unreadable), and the raw answer."""
    domain_items = variables["domain"].items
    variables = {
        **variables,
        "a": item_view(domain_items[a], options.plot_chars, variables["domain"]),
        "b": item_view(domain_items[b], options.plot_chars, variables["domain"]),
    }
    messages = [
        system(render(template, part="system", **variables)),
        user(render(template, part="task", **variables)),
    ]
    config = GenerationConfig(temperature=0.0, max_tokens=4, seed=0, grammar=ANSWER_GRAMMAR)
    completion = await llm.generate(messages, config)
    letter = read_choice(completion.text)
    return (None if letter is None else (a if letter == "A" else b)), completion.text


def score(choices: list[PairChoice], representations: tuple[str, ...]) -> list[RepresentationScore]:
    out = []
    for representation in representations:
        mine = [c for c in choices if c.representation == representation]
        answered = [c for c in mine if c.choice is not None]
        correct = sum(1 for c in answered if c.correct)
        first = sum(1 for c in answered if c.choice == c.a)
        out.append(
            RepresentationScore(
                representation=representation,
                pairs=len(mine),
                answered=len(answered),
                correct=correct,
                accuracy=correct / len(answered) if answered else None,
                picked_first=first / len(answered) if answered else None,
            )
        )
    return out
