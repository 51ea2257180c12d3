"""`llm`: a language model holds the conversation; retrieval keeps its recommendations in the catalogue.

Each turn, the CRS retrieves the top-k items for the conversation so far (the user's utterances,
recent ones weighing more), shows them to the model as a numbered list under the user's message
(title, year, genres, directors, leading actors, plot, and the values of the domain's other slots:
the only facts the prompt lets it state),
and asks for a JSON answer `{"recommend": [numbers], "message": text}`. The JSON schema limits the
numbers to the list (1..k), so with constrained decoding every recommended id is in the collection;
an answer that still breaks the schema is repaired once, then fails the dialogue with the raw text
kept (`LLMOutputError`). Items recommended once are never candidates again in that dialogue.

A message longer than `max_message_chars` is cut after its last sentence within the limit (the
schema leaves room past the limit so the model can finish its sentence; annotation `shortened`: the
length before the cut). A message ending on an ellipsis (a small model copies the "…" of a plot shown
cut) loses its unfinished last sentence when a complete one precedes it, and one whose last word
lacks a full stop gets one (annotation `tidied`).

The visible text and `recommended_items` always agree, because simulators and people read the text
(`crsim.crs.llm_checks`, annotation `agreement`):

- every listed item is named in the message: recommended as answered;
- the message names items, but not all listed ones: what it names new (listed or not) is
  recommended, the listed items it does not name are not (`not_named`; agreement `named`). A
  message about items discussed before (a closing "glad you liked X") thus recommends nothing;
- the message names no item at all: the model is asked once more, told which titles its message
  left out (`reasked`); if the second answer still names none, a sentence recommending the listed
  titles in the domain's phrasing follows its words ("How about Heat (1995)?"; `appended`).

A message that nearly repeats an earlier reply (the behaviour report's rule,
`crsim.model.text.near_duplicate`) or begins with one (a small model's loop) is asked again once too
(`repeated`), and so is a message that still stops mid-sentence once tidied (`unfinished`: a lone
sentence cut with an ellipsis), one in the seeker's voice ("I'm looking for a cheap Italian place";
`role_flip`: the cue) and one whose claims about the one item it recommends and names contradict the
catalogue ("serves Italian cuisine" of a British restaurant; `contradicting_claims`), by the behaviour
report's rules (`crsim.language.message_rules.crs_role_flip`, `crsim.language.claims`; years stay
recorded, not asked again). The retry is kept when its text names an item, else the first answer
unless that was the repeat, the flip or the contradiction (then the retry gets the recommendation
sentence). When the retry repeats an earlier reply as well, speaks as the seeker or contradicts its
item again, or the reply kept still stops mid-sentence, the reply is composed without the model: a
recommendation of the listed items (else the best candidate), a single item with its genres and
leading actors from the catalogue (`composed`). Each turn makes at most two calls.

A question about a requestable slot of the item under discussion (the last recommended; the CRSs'
rule-based understanding of the user's text) that the message does not answer with the catalogue's
value is answered from the catalogue: the domain's answer sentence follows the model's words, with
its `inform` acts, and the annotation `answered_from_catalogue` names the item and slot. The model
sees every slot value of the candidates and of the items under discussion; only values longer than
`description_chars` (a plot, a description) are cut.

An item the message names without listing it counts as recommended when the dialogue names it for
the first time (after the listed ones; kept apart in `named_in_text`). Items named before, by the
user or in an earlier reply, are `mentioned_items` (the rule of `crsim.model.mentions`,
docs/metrics.md). Years and decades the message states about a recommended item that its
catalogue year contradicts are recorded (`year_conflicts`), not rewritten.

The answer schema is in `llm_answer`, what the prompt shows of an item in `llm_prompt`, how an answer
is made to agree with its text in `llm_reply` and `llm_checks`.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pydantic import Field, model_validator

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as RegistryParams
from crsim.core.seeding import derive_seed
from crsim.crs.base import BaseCRS, CRSReply, CRSSession, crs
from crsim.crs.candidates import RetrieverName, candidate_retriever
from crsim.crs.llm_answer import CRSAnswer, answer_model, answer_tokens, schema_chars
from crsim.crs.llm_checks import ends_unfinished, year_conflicts
from crsim.crs.llm_prompt import describe
from crsim.crs.llm_reply import ReplyMaker, Settled
from crsim.language.claims import claim_phrases, contradicting_claims
from crsim.language.domain_cues import prompt_nouns
from crsim.language.message_rules import crs_role_flip
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, assistant, system, user
from crsim.model.acts import DialogueAct, Intent
from crsim.model.annotations import ANSWERED_FROM_CATALOGUE
from crsim.model.items import Item

_PROMPTS = "crsim.crs.prompts"


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

    def replies(self) -> list[str]:
        """The CRS's messages so far, as shown."""
        return [m["content"] for m in self.messages if m["role"] == "assistant"]


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
        description_chars: int = Field(
            240,
            ge=0,
            description="An item's description (a movie's plot) and details shown per item, each cut at a "
            "word (0: no description).",
        )
        max_message_chars: int = Field(
            600,
            ge=20,
            description="Longest message shown: a longer one is cut after its last sentence within the "
            "limit (annotation `shortened`). The schema lets the model write up to 1.5 times as much (less "
            "when max_tokens could not hold it), so it can finish a sentence.",
        )
        cast: int = Field(
            2, ge=0, le=10, description="Leading actors shown per candidate, with its directors (0: none)."
        )
        reask: bool = Field(
            True,
            description="Ask once more when the message names none of the recommended items (else the "
            "titles are appended at once).",
        )
        temperature: float | None = Field(None, ge=0.0, le=2.0, description="Default: the role's.")
        max_tokens: int | None = Field(
            None,
            ge=1,
            description="Token cap per answer. Default: enough for the longest message the schema allows "
            "(1.5 x max_message_chars at 3 characters a token) and the JSON around it.",
        )
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
        correction_prompt: str = Field(
            "llm_correction.j2",
            description="Template asking again when the message names none of the recommended items or "
            "repeats an earlier reply; variables: item, items (the domain's nouns), titles, repeated.",
        )
        greet: bool = Field(False, description="Open the dialogue with `greeting` instead of waiting.")
        greeting: str = Field(
            "Hi! What are you in the mood for today?",
            min_length=1,
            description="The opening line when `greet` is on.",
        )

        @model_validator(mode="before")
        @classmethod
        def _renamed(cls, data: Any) -> Any:
            if isinstance(data, dict) and "plot_chars" in data:
                raise ValueError(
                    "`plot_chars` is now called `description_chars` (it cuts any item's description, "
                    "not only a movie's plot); rename it in the config"
                )
            return data

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

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        domain = ctx.require_domain(type(self).__name__)
        self.params, self.domain = params, domain
        self.llm = ctx.require_llms(type(self).__name__).role(params.role)
        self.system_template = load_template(_PROMPTS, params.prompt)
        self.turn_template = load_template(_PROMPTS, params.turn_prompt)
        self.correction_template = load_template(_PROMPTS, params.correction_prompt)
        self.retriever = candidate_retriever(domain, params.retriever)
        self.replies = ReplyMaker(domain, params.max_message_chars, params.max_recommendations)
        self.phrases = claim_phrases(domain)
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
        notes: dict[str, Any] = {"candidates": [item.id for item in candidates]}
        settled = await self._answer(session.seed, state, candidates, notes)
        shown, answered, informs = self.replies.catalogue_answers(settled.text, text, state.last_recommended)
        if answered:
            settled = replace(settled, text=shown)
            ANSWERED_FROM_CATALOGUE.put(notes, answered)
        chosen = settled.listed + [self.domain.items[i] for i in settled.fresh]
        state.named.update([item.id for item in chosen], settled.mentioned)
        state.messages.append(assistant(settled.text))
        ids = [item.id for item in chosen]
        state.recommended += ids
        if ids:
            state.last_recommended = ids
        conflicts = year_conflicts(settled.text, settled.mentions, {item.id: item for item in chosen})
        if conflicts:
            notes["year_conflicts"] = [c.record() for c in conflicts]
        acts = [
            DialogueAct(intent=Intent.RECOMMEND, slots=[("title", item.display_title)]) for item in chosen
        ] + informs
        return CRSReply(
            text=settled.text,
            recommended_items=ids,
            acts=acts,
            annotations={**notes, "named_in_text": list(settled.fresh)},
            mentioned_items=settled.mentioned,
            items_listed=True,
        )

    async def _answer(
        self, seed: int, state: LLMCRSState, candidates: list[Item], notes: dict[str, Any]
    ) -> Settled:
        """The model's answer made to agree with its text (see the module docstring); at most two
        calls, each repaired at most once."""
        replies, named, said = self.replies, state.named | set(state.recommended), state.replies()
        rng = random.Random(derive_seed(seed, "turn", state.turn, "recommendation"))
        messages = self._messages(state, candidates)
        answer, notes["repaired"] = await self._ask(seed, state, messages, candidates)
        first: dict[str, Any] = {}
        settled = replies.settle(answer.message, self._listed(answer, candidates), named, first)
        repeated = replies.repeats(answer.message, said)
        unfinished = settled is not None and ends_unfinished(settled.text)
        slips = self._slips(answer.message, settled)
        if settled is not None and not ((repeated or unfinished or slips) and self.params.reask):
            notes.update(first)
            return settled
        if not self.params.reask:
            return replies.appended(answer.message, self._listed(answer, candidates), named, rng, notes)
        correction = self._correction(self._listed(answer, candidates), repeated, unfinished, slips)
        again = [*messages, assistant(answer.model_dump_json()), user(correction)]
        second, repaired = await self._ask(seed, state, again, candidates, attempt=1)
        notes["repaired"] = notes["repaired"] or repaired
        notes["first_message"] = answer.message
        for flag, raised in (("repeated", repeated), ("unfinished", unfinished)):
            if raised:
                notes[flag] = True
        notes.update(slips)
        retry: dict[str, Any] = {}
        listed = self._listed(second, candidates)
        again_settled = replies.settle(second.message, listed, named, retry, agreement="reasked")
        fallback = listed or self._listed(answer, candidates) or candidates[:1]
        if repeated and replies.repeats(second.message, said):  # a loop the model does not leave
            return replies.composed(fallback, rng, notes)
        if self._slips(second.message, again_settled):  # the retry speaks as the seeker or contradicts too
            return replies.composed((again_settled.listed if again_settled else []) or fallback, rng, notes)
        # the retry when its text names an item, else the first answer unless that was the repeat
        first_kept = None if (repeated or slips) else settled
        for kept, kept_notes in ((again_settled, retry), (first_kept, first)):
            if kept is not None:
                if ends_unfinished(kept.text):  # neither answer finishes its sentence
                    return replies.composed(kept.listed or fallback, rng, notes)
                notes.update(kept_notes)
                return kept
        if ends_unfinished(replies.shown(second.message, {})):
            return replies.composed(fallback, rng, notes)
        return replies.appended(second.message, listed, named, rng, notes)

    def _slips(self, message: str, settled: Settled | None) -> dict[str, Any]:
        """What is wrong with an answer besides repeats and cut endings, as annotations: `role_flip`
        (the cue by which the message, as shown, speaks as the seeker) and `contradicting_claims` (the
        attribute claims about the one item it recommends and names that the catalogue contradicts); the rules
        `crsim analyze behaviour` counts (`crs_role_flip`, `claim_contradicts_item`)."""
        found: dict[str, Any] = {}
        cue = crs_role_flip(self.replies.shown(message, {}))
        if cue is not None:
            found["role_flip"] = cue
        if settled is not None:
            items = settled.listed + [self.domain.items[i] for i in settled.fresh if i in self.domain.items]
            # years stay recorded (`year_conflicts`), not asked again: a release year is often off by one
            claimed = contradicting_claims(settled.text, items, self.domain, self.phrases, years=False)
            if claimed is not None and claimed[1]:
                found["contradicting_claims"] = [f"{claimed[0].display_title}: {c}" for c in claimed[1]]
        return found

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
            facts=prompt_nouns(self.domain)["facts"],
        )
        recent = [self.domain.items[i] for i in state.last_recommended if i in self.domain.items]
        turn = render(
            self.turn_template,
            text=state.messages[-1]["content"],
            candidates=[self._describe(item) for item in candidates],
            recent=[self._describe(item, people=True) for item in recent],
        )
        return [system(prompt), *state.messages[:-1], user(turn)]

    async def _ask(
        self,
        seed: int,
        state: LLMCRSState,
        messages: list[Message],
        candidates: list[Item],
        attempt: int = 0,
    ) -> tuple[CRSAnswer, bool]:
        p = self.params
        room = schema_chars(p.max_message_chars, p.max_tokens, p.max_recommendations)
        schema = answer_model(len(candidates), p.max_recommendations, room)
        where: tuple[str | int, ...] = ("turn", state.turn) if attempt == 0 else ("turn", state.turn, attempt)
        config = GenerationConfig(
            temperature=p.temperature,
            max_tokens=p.max_tokens or answer_tokens(p.max_message_chars, p.max_recommendations),
            seed=derive_seed(seed, *where) % 2**31,
        )
        result = await generate_json(self.llm, messages, schema, config)
        if result.value is None or result.error is not None:
            raise LLMOutputError(f"llm CRS, turn {state.turn}: {result.error or 'no answer'}", result.raw)
        return result.value, result.repaired

    @staticmethod
    def _listed(answer: CRSAnswer, candidates: list[Item]) -> list[Item]:
        return [candidates[n - 1] for n in dict.fromkeys(answer.recommend)]

    def _correction(
        self,
        listed: list[Item],
        repeated: bool,
        unfinished: bool = False,
        slips: dict[str, Any] | None = None,
    ) -> str:
        """The request to answer again: the message named none of the recommended items, repeated an
        earlier reply, stopped mid-sentence, spoke as the seeker or contradicted its item's details."""
        slips = slips or {}
        return render(
            self.correction_template,
            item=self.domain.item_noun,
            items=self.domain.item_noun_plural,
            titles=[item.display_title for item in listed],
            repeated=repeated,
            unfinished=unfinished,
            role_flip=slips.get("role_flip"),
            claims=[c.split(": ", 1)[-1] for c in slips.get("contradicting_claims", [])],
        )

    def _describe(self, item: Item, *, people: bool = False) -> dict[str, Any]:
        """What the prompt shows of an item (`llm_prompt.describe`)."""
        p = self.params
        return describe(item, self.domain, cast=p.cast, description_chars=p.description_chars, people=people)
