"""`llm`: a language model holds the conversation; retrieval keeps its recommendations in the catalogue.

Each turn, the CRS retrieves the top-k items for the conversation so far (the user's utterances,
recent ones weighing more), shows them to the model as a numbered list under the user's message,
and asks for a JSON answer `{"recommend": [numbers], "message": text}`. The JSON schema limits the
numbers to the list (1..k), so with constrained decoding every recommended id is in the collection;
an answer that still breaks the schema is repaired once, then fails the dialogue with the raw text
kept (`LLMOutputError`). Items recommended once are never candidates again in that dialogue.

The visible text and `recommended_items` always agree, because simulators and people read the
text: a listed item whose title the item linker cannot find in the message is appended to it
("Suggestion: Heat (1995)."), and an item the message names without listing it counts as
recommended too when the dialogue names it for the first time (after the listed ones; kept apart
in the reply's `named_in_text` annotation). Items named before, by the user or in an earlier
reply, are `mentioned_items` (the rule of `crsim.model.mentions`, docs/metrics.md).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.candidates import RetrieverName, candidate_retriever
from crsim.crs.phrasings import item_details
from crsim.llm.client import LLMHub
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, assistant, system, user
from crsim.model.acts import DialogueAct, Intent
from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.model.mentions import split_linked
from crsim.registry import Params as RegistryParams
from crsim.registry import crs
from crsim.seeding import derive_seed

_PROMPTS = "crsim.crs.prompts"


class CRSAnswer(BaseModel):
    """What the model answers each turn; per-turn subclasses bound the candidate numbers."""

    model_config = ConfigDict(extra="forbid")  # a closed schema, as OpenAI's strict mode requires

    recommend: list[int]
    message: str

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the message must not be empty")
        return value.strip()


@cache
def answer_model(candidates: int, most: int, max_chars: int) -> type[CRSAnswer]:
    """The answer schema for a turn with `candidates` numbered items: numbers 1..candidates (as an
    enum and as bounds, for grammar converters that read either), at most `most` of them."""
    numbers: Any = list[int]
    if candidates > 0:
        bounds = Field(ge=1, le=candidates, json_schema_extra={"enum": list(range(1, candidates + 1))})
        numbers = list[Annotated[int, bounds]]
    return create_model(
        f"CRSAnswer{candidates}",
        __base__=CRSAnswer,
        recommend=(
            numbers,
            Field(max_length=min(most, candidates), description="Numbers of the recommended candidates."),
        ),
        message=(str, Field(min_length=1, max_length=max_chars, description="What to say to the user.")),
    )


@dataclass
class LLMCRSState:
    """One dialogue: the conversation as the model sees it, and what was recommended."""

    messages: list[Message] = field(default_factory=list)
    recommended: list[str] = field(default_factory=list)
    last_recommended: list[str] = field(default_factory=list)
    #: every item named so far, by the user or in a reply (what makes a named item "mentioned")
    named: set[str] = field(default_factory=set)
    turn: int = 0

    def user_texts(self) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == "user"]


@crs("llm")
class LLMCRS(BaseCRS):
    """An LLM chats and recommends; each turn it may pick only among k retrieved candidates."""

    needs_llm: ClassVar[bool] = True

    class Params(RegistryParams):
        role: str = Field("crs", description="The LLM role this CRS uses.")
        retriever: RetrieverName = Field(
            "tfidf",
            description="Candidate retrieval: tfidf (about a second to index 4,000 items), or embeddings "
            "(needs crsim[embeddings]; embedding 4,000 items takes 1-3 minutes on two cores, once: the "
            "vectors are kept under $CRSIM_CACHE_DIR or ~/.cache/crsim).",
        )
        candidates: int = Field(5, ge=1, le=50, description="Candidates shown to the model each turn.")
        max_recommendations: int = Field(
            3, ge=1, le=50, description="Most candidates the model may recommend in one reply."
        )
        recency_decay: float = Field(
            0.6,
            gt=0.0,
            le=1.0,
            description="Weight of a user utterance in the retrieval query per turn of age (latest: 1).",
        )
        plot_chars: int = Field(240, ge=0, description="Plot shown per item, cut at a word (0: none).")
        max_message_chars: int = Field(
            600,
            ge=20,
            description="Longest message the schema allows; with the JSON around it, it must fit in the "
            "role's max_tokens (about 4 characters a token), or answers get cut off.",
        )
        temperature: float | None = Field(None, ge=0.0, le=2.0, description="Default: the role's.")
        max_tokens: int | None = Field(None, ge=1, description="Default: the role's.")
        prompt: str = Field(
            "llm_system.j2",
            description="System prompt template (shipped name or file); variables: domain, "
            "max_recommendations, candidates.",
        )
        turn_prompt: str = Field(
            "llm_turn.j2",
            description="Template of the user's message with the candidates; variables: text, "
            "candidates and recent (lists of title, genres, directors, actors, plot).",
        )
        greet: bool = Field(False, description="Open the dialogue with `greeting` instead of waiting.")
        greeting: str = Field("Hi! What are you in the mood for today?", min_length=1)

        @model_validator(mode="after")
        def _at_most_candidates(self) -> LLMCRS.Params:
            if self.max_recommendations > self.candidates:
                raise ValueError(
                    f"max_recommendations ({self.max_recommendations}) cannot exceed candidates "
                    f"({self.candidates})"
                )
            return self

    @classmethod
    def llm_roles(cls, params: Params) -> list[str]:
        return [params.role]

    def __init__(self, params: Params, domain: Domain, *, llms: LLMHub) -> None:
        self.params, self.domain = params, domain
        self.llm = llms.role(params.role)
        self.system_template = load_template(_PROMPTS, params.prompt)
        self.turn_template = load_template(_PROMPTS, params.turn_prompt)
        self.retriever = candidate_retriever(domain, params.retriever)
        _ = domain.items.linker  # build the shared linker now, not in the first reply

    async def start(self, session: CRSSession) -> CRSReply | None:
        state = session.state = LLMCRSState()
        if not self.params.greet:
            return None
        state.messages.append(assistant(self.params.greeting))
        return CRSReply(
            text=self.params.greeting, acts=[DialogueAct(intent=Intent.GREETING)], items_listed=True
        )

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        if not isinstance(session.state, LLMCRSState):
            session.state = LLMCRSState()
        state: LLMCRSState = session.state
        state.turn += 1
        state.messages.append(user(text))
        state.named.update(m.item_id for m in self.domain.items.linker.link(text))
        candidates = await asyncio.to_thread(self._candidates, state)
        answer, repaired = await self._ask(session.seed, state, candidates)
        listed = [candidates[n - 1] for n in dict.fromkeys(answer.recommend)]
        reply_text, unlisted = self._visible(answer.message, listed)
        fresh, mentioned = split_linked(unlisted, state.named | set(state.recommended))
        named = [self.domain.items[i] for i in fresh]
        chosen = listed + named
        state.named.update([item.id for item in chosen], mentioned)
        state.messages.append(assistant(reply_text))
        ids = [item.id for item in chosen]
        state.recommended += ids
        if ids:
            state.last_recommended = ids
        acts = [
            DialogueAct(intent=Intent.RECOMMEND, slots=[("title", item.display_title)]) for item in chosen
        ]
        annotations = {
            "candidates": [item.id for item in candidates],
            "named_in_text": [item.id for item in named],
            "repaired": repaired,
        }
        return CRSReply(
            text=reply_text,
            recommended_items=ids,
            acts=acts,
            annotations=annotations,
            mentioned_items=mentioned,
            items_listed=True,
        )

    # --- steps ---------------------------------------------------------------------------------

    def _candidates(self, state: LLMCRSState) -> list[Item]:
        """The top-k items for the user's utterances (newest weight 1, older ones decayed)."""
        texts = state.user_texts()
        decay = self.params.recency_decay
        weighted = [(t, decay**age) for age, t in enumerate(reversed(texts))]
        return self.retriever.top_weighted(weighted, self.params.candidates, set(state.recommended))

    def _messages(self, state: LLMCRSState, candidates: list[Item]) -> list[Message]:
        p = self.params
        prompt = render(
            self.system_template,
            domain=self.domain.name,
            item=self.domain.item_noun,
            items=self.domain.item_noun_plural,
            max_recommendations=p.max_recommendations,
            candidates=p.candidates,
        )
        recent = [self.domain.items[i] for i in state.last_recommended if i in self.domain.items]
        turn = render(
            self.turn_template,
            text=state.messages[-1]["content"],
            candidates=[self._describe(item) for item in candidates],
            recent=[self._describe(item, people=True) for item in recent],
        )
        return [system(prompt), *state.messages[:-1], user(turn)]

    async def _ask(self, seed: int, state: LLMCRSState, candidates: list[Item]) -> tuple[CRSAnswer, bool]:
        p = self.params
        schema = answer_model(len(candidates), p.max_recommendations, p.max_message_chars)
        config = GenerationConfig(
            temperature=p.temperature,
            max_tokens=p.max_tokens,
            seed=derive_seed(seed, "turn", state.turn) % 2**31,
        )
        result = await generate_json(self.llm, self._messages(state, candidates), schema, config)
        if result.value is None or result.error is not None:
            raise LLMOutputError(f"llm CRS, turn {state.turn}: {result.error or 'no answer'}", result.raw)
        return result.value, result.repaired

    def _describe(self, item: Item, *, people: bool = False) -> dict[str, Any]:
        """What the prompt shows of an item."""
        return {
            "title": item.display_title,
            "genres": item.genres,
            "directors": item.directors if people else [],
            "actors": item.actors[:3] if people else [],
            "plot": _shorten(item.plot or "", self.params.plot_chars),
            "details": item_details(self.domain, item, self.params.plot_chars),
        }

    def _visible(self, message: str, listed: list[Item]) -> tuple[str, list[str]]:
        """The text the user sees, and the ids of the items it names besides the listed ones (the
        caller splits them into recommended and mentioned by what the dialogue named before).

        Listed items the linker cannot find in the message are appended by display title.
        """
        linked = list(dict.fromkeys(m.item_id for m in self.domain.items.linker.link(message)))
        listed_ids = {item.id for item in listed}
        unlisted = [i for i in linked if i not in listed_ids]
        missing = [item.display_title for item in listed if item.id not in linked]
        if not missing:
            return message, unlisted
        label = "Suggestion" if len(missing) == 1 else "Suggestions"
        return f"{message} {label}: {'; '.join(missing)}.", unlisted


def _shorten(text: str, limit: int) -> str:
    """`text` cut at the last word boundary within `limit` characters, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:.")
    return f"{cut}…" if cut else ""
