"""What a PEPPER user knows about themselves: seen items with their own feedback, binary likes and
dislikes, and the general-preferences narrative an LLM writes from them.

Only the seen part of a profile is read here (`profile.item_ratings`, the reviews or own tags of
seen items in `profile.persona`); the targets live in the information need and never reach a
prompt. Binary preferences come from review text through the LLM when the user has reviews,
otherwise from the liked/disliked attribute values the population derived from the ratings.
The narrative prompt is the same for the same user and model, so the response cache (and the
client's sharing of identical requests in flight) gives every dialogue of a user one narrative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crsim.core.seeding import derive_seed
from crsim.language.domain_cues import prompt_nouns, prompt_words
from crsim.language.phrasings import item_details
from crsim.llm.client import LLM
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, system
from crsim.llm.types import user as user_message
from crsim.model import annotations as keys
from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.model.user import SimulatedUser

PROMPTS = "crsim.sim.pepper.prompts"


def domain_words(domain: Domain) -> SimpleNamespace:
    """What the PEPPER prompts call the domain's items and people (`words.item`, `.items`, `.consume`,
    `.consumed`, `.seen`, `.user`, `.user_role`, `.expert`, `.kind`, `.aspects`; movies: movie,
    watch, viewer, a film expert), from the domain's `understanding` phrasing or generic words. A
    namespace, not a dict: in a template `words.items` would be the dict's method."""
    return SimpleNamespace(**prompt_words(domain), **prompt_nouns(domain))


@dataclass(frozen=True)
class ItemView:
    """An item as a prompt shows it: title, year, the built-in attributes, plot (cut to `plot_chars`),
    and `details`, the values of the domain's other slots ("author: Jane Austen"; '' for movies)."""

    id: str
    title: str
    genres: list[str]
    directors: list[str]
    actors: list[str]
    plot: str
    details: str = ""


def item_view(item: Item, plot_chars: int, domain: Domain | None = None) -> ItemView:
    """`item` as prompts show it; with `domain`, its values of the domain's non-built-in slots too."""
    plot = " ".join((item.plot or "").split())
    if len(plot) > plot_chars:
        plot = plot[: max(0, plot_chars - 3)].rsplit(" ", 1)[0] + "..."
    return ItemView(
        id=item.id,
        title=item.display_title,
        genres=item.genres[:3],
        directors=item.directors[:2],
        actors=item.actors[:3],
        plot=plot,
        details=item_details(domain, item, max(plot_chars, 80)) if domain is not None else "",
    )


@dataclass(frozen=True)
class Feedback:
    """The user's own feedback on a seen item: the rating on its scale, and review text or tags."""

    rating: float
    scale: tuple[float, float]
    review: str = ""
    tags: list[str] = field(default_factory=list)

    @property
    def rating_text(self) -> str:
        return f"{self.rating:g} out of {self.scale[1]:g}"

    @property
    def liked(self) -> bool:
        low, high = self.scale
        return self.rating >= low + 0.7 * (high - low)


def rating_scale(user: SimulatedUser) -> tuple[float, float]:
    given = keys.user_persona(keys.RATING_SCALE, user.id, user.profile.persona)
    return given if given is not None else (0.5, 5.0)


def seen_feedback(user: SimulatedUser, item_id: str) -> Feedback | None:
    """The user's feedback on `item_id` if they have seen it (it is among their known ratings)."""
    rating = user.profile.item_ratings.get(item_id)
    if rating is None:
        return None
    reviews = keys.user_persona(keys.REVIEWS, user.id, user.profile.persona) or {}
    tags = keys.user_persona(keys.TAGS, user.id, user.profile.persona) or {}
    review = reviews.get(item_id, "")
    own_tags = tags.get(item_id, [])
    return Feedback(rating, rating_scale(user), str(review), [str(t) for t in own_tags])


@dataclass(frozen=True)
class SeenItem:
    item: ItemView
    feedback: Feedback


def salient_seen(user: SimulatedUser, domain: Domain, count: int, plot_chars: int) -> list[SeenItem]:
    """Up to `count` seen items: two thirds the best rated, one third the worst (ties by id)."""
    rated = [(r, i) for i, r in user.profile.item_ratings.items() if i in domain.items]
    best = sorted(rated, key=lambda p: (-p[0], p[1]))
    worst = sorted(rated, key=lambda p: (p[0], p[1]))
    n_worst = count // 3
    chosen = [i for _, i in best[: count - n_worst]]
    chosen += [i for _, i in worst if i not in chosen][:n_worst]
    out = []
    for item_id in chosen:
        feedback = seen_feedback(user, item_id)
        if feedback is not None:
            out.append(SeenItem(item_view(domain.items[item_id], plot_chars, domain), feedback))
    return out


class ReviewPreferences(BaseModel):
    """Likes and dislikes read from one review."""

    model_config = ConfigDict(extra="forbid")

    likes: list[str] = Field(max_length=3)
    dislikes: list[str] = Field(max_length=3)


@dataclass
class BinaryPreferences:
    """Short like/dislike phrases; `errors` keeps reviews whose answer could not be read (with raw text)."""

    likes: list[str] = field(default_factory=list)
    dislikes: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"likes": self.likes, "dislikes": self.dislikes}
        if self.errors:
            record["errors"] = self.errors
        return record


def rule_preferences(user: SimulatedUser) -> BinaryPreferences:
    """Likes/dislikes from the population's attribute values (`profile.preferences`)."""
    prefs = BinaryPreferences()
    for slot, values in user.profile.preferences.items():
        name = {"keyword": "tag"}.get(slot, slot)
        prefs.likes += [f"{value} ({name})" for value in values.likes]
        prefs.dislikes += [f"{value} ({name})" for value in values.dislikes]
    return prefs


async def review_preferences(
    llm: LLM, user: SimulatedUser, domain: Domain, seen: list[SeenItem], *, max_tokens: int, review_chars: int
) -> BinaryPreferences:
    """Likes/dislikes the LLM reads from the reviews of `seen` items (one call per review)."""
    template = load_template(PROMPTS, "extract.j2")
    words = domain_words(domain)
    prefs = BinaryPreferences()
    for entry in seen:
        review = entry.feedback.review[:review_chars]
        if not review:
            continue
        variables = {"words": words, "item": entry.item, "feedback": entry.feedback, "review": review}
        messages = [
            system(render(template, part="system", **variables)),
            user_message(render(template, part="task", **variables)),
        ]
        config = GenerationConfig(
            temperature=0.0, max_tokens=max_tokens, seed=derive_seed(0, "extract", entry.item.id) % 2**31
        )
        answer = await generate_json(llm, messages, ReviewPreferences, config)
        if answer.value is None:
            prefs.errors.append({"item": entry.item.id, "error": answer.error, "raw": answer.raw})
            continue
        prefs.likes += [f"{p.strip()} ({entry.item.title})" for p in answer.value.likes if p.strip()]
        prefs.dislikes += [f"{p.strip()} ({entry.item.title})" for p in answer.value.dislikes if p.strip()]
    return prefs


def narrative_messages(seen: list[SeenItem], prefs: BinaryPreferences, domain: Domain) -> list[Message]:
    """The prompt of the general-preferences narrative, in the domain's words."""
    template = load_template(PROMPTS, "narrative.j2")
    variables = {
        "words": domain_words(domain),
        "seen": seen,
        "likes": prefs.likes,
        "dislikes": prefs.dislikes,
    }
    return [
        system(render(template, part="system", **variables)),
        user_message(render(template, part="task", **variables)),
    ]


async def write_narrative(
    llm: LLM, seen: list[SeenItem], prefs: BinaryPreferences, domain: Domain, *, max_tokens: int
) -> str:
    """The general-preferences narrative (second person) from seen items and binary preferences."""
    messages = narrative_messages(seen, prefs, domain)
    config = GenerationConfig(temperature=0.0, max_tokens=max_tokens, seed=0)
    completion = await llm.generate(messages, config)
    text = " ".join(completion.text.split())
    if not text:
        raise LLMOutputError(f"{llm.describe()}: the general-preferences narrative is empty", completion.text)
    return text


@dataclass(frozen=True)
class GeneralPreferences:
    """A user's general preferences as the simulator plays them, and what they came from."""

    narrative: str
    binary: BinaryPreferences
    seen: list[SeenItem]
    generated: bool  #: written by the LLM now (False: given in the user's persona)


async def general_preferences(
    llm: LLM,
    user: SimulatedUser,
    domain: Domain,
    *,
    narrative_items: int,
    plot_chars: int,
    max_tokens: int,
    review_chars: int = 600,
) -> GeneralPreferences:
    """The user's general preferences: the persona's `general_preferences` text when given, else
    binary preferences (reviews through the LLM, or the rules) and an LLM-written narrative."""
    seen = salient_seen(user, domain, narrative_items, plot_chars)
    has_reviews = any(entry.feedback.review for entry in seen)
    if has_reviews:
        binary = await review_preferences(
            llm, user, domain, seen, max_tokens=max_tokens, review_chars=review_chars
        )
    else:
        binary = rule_preferences(user)
    given = keys.user_persona(keys.GENERAL_PREFERENCES, user.id, user.profile.persona)
    if isinstance(given, str) and given.strip():
        return GeneralPreferences(given.strip(), binary, seen, generated=False)
    narrative = await write_narrative(llm, seen, binary, domain, max_tokens=max_tokens)
    return GeneralPreferences(narrative, binary, seen, generated=True)


def played_profile(user: SimulatedUser, prefs: GeneralPreferences) -> Any:
    """The user's profile with the general preferences the simulator played, for the record
    (the judge reads persona `GENERAL_PREFERENCES`)."""
    persona = {
        **user.profile.persona,
        **keys.GENERAL_PREFERENCES.entry(prefs.narrative),
        **keys.BINARY_PREFERENCES.entry(prefs.binary.as_record()),
    }
    return user.profile.model_copy(update={"persona": persona})
