"""`recusersim`: the RecUserSim-style agent simulator (Chen et al., WWW'25 companion).

Per dialogue: a profile is sampled from the domain's dictionary (seeded by the user id, so a user
has the same profile against every CRS) and checked for contradictions by the `annotator` role.
Per turn, after a CRS message:

0. the checked facts of the message, without an LLM (`evidence.py`);
1. concurrently, the rating questions (language, action, and recommendation when items were
   recommended), each shown the facts, and, when a recommended item lies outside the known
   preferences, the excitation question (`memory.py`); the ratings are then checked against the
   facts (`rating.check_ratings`);
2. action selection (several actions at once, tendencies from the action pattern, the facts and
   where the conversation stands), then the action guard (`guard.py`);
3. the personalised response (ratings as words, the actions' instructions, the linguistic pattern),
   cleaned of meta text and drafted once more if it speaks as the recommender (`voice.py`); when
   nothing of the user's own message is left, the actions said plainly (`plain.py`);
4. the refinement tools in order, unless the user ends the conversation (`refine.py`).

Every call of a dialogue starts with the same system message (the profile), followed by the
conversation so far and only then the task, so a provider with prompt-prefix caching (llama.cpp's
slots, OpenAI's automatic caching) reuses the shared prefix across all calls of a turn and across
turns. Each user utterance records its LLM calls by kind (`llm_calls_by_kind`); the dialogue's
metadata (`RECUSERSIM` of model/annotations.py) and `user_profile.persona` record the profile, the
conflict fixes and the discovered preferences.

The profile's conflict resolution is in `resolve.py`, the system message's persona and style in
`persona.py`, what the memory says about where the dialogue stands in `situation.py`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from typing import Any, ClassVar

from pydantic import BaseModel

from crsim.core.components import BuildContext
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply
from crsim.language.domain_cues import prompt_nouns
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import Structured, generate_json
from crsim.llm.types import GenerationConfig, Message
from crsim.llm.types import system as system_message
from crsim.llm.types import user as user_message
from crsim.model.annotations import RATINGS, RECUSERSIM, RECUSERSIM_PROFILE
from crsim.model.dialogue import Role
from crsim.model.domain import Domain, indefinite
from crsim.model.items import Item
from crsim.model.linking import heard_titles
from crsim.model.user import SimulatedUser
from crsim.sim.base import BaseSimulator, DialogueNotes, UserTurn, simulator
from crsim.sim.recusersim.actions import UserAction, get_action, get_actions
from crsim.sim.recusersim.evidence import Inquiry, TurnFacts
from crsim.sim.recusersim.guard import guard_actions
from crsim.sim.recusersim.memory import Memory
from crsim.sim.recusersim.params import RecUserSimParams
from crsim.sim.recusersim.persona import describe_item, persona_variables, style
from crsim.sim.recusersim.plain import plain_reply
from crsim.sim.recusersim.profile import (
    Profile,
    ProfileDictionary,
    Traits,
    load_dictionary,
    sample_profile,
)
from crsim.sim.recusersim.questions import action_schema, excitation_record, excitation_schema, shown_actions
from crsim.sim.recusersim.rating import DIMENSIONS, check_ratings, describe, rating_record, score_schema
from crsim.sim.recusersim.refine import (
    Outcome,
    RefinementTool,
    Thresholds,
    get_tool,
    refine_in_order,
)
from crsim.sim.recusersim.resolve import resolve_conflicts
from crsim.sim.recusersim.situation import (
    guard_state,
    learn_told,
    message_facts,
    note_inquiry,
    state_lines,
)
from crsim.sim.recusersim.voice import PARROT, named_titles, role_flip, without_flips
from crsim.sim.shared.conversation import (
    CRS_LABEL,
    USER_LABEL,
    Entry,
    need_view,
    recent_turns,
    transcript,
)
from crsim.sim.shared.utterance import clean_utterance

PROMPTS = "crsim.sim.recusersim.prompts"
#: The role-flip cue of a draft of which nothing is left once the recommender's part is cut.
EMPTY_DRAFT = "it wrote the recommender's part"
#: The cue of a draft that names a title the user hopes to get (the system message forbids it).
LEAK = "it named a title you hope to get; never name those yourself"


#: Openings of the task parts of our prompts: a small model that starts repeating them has stopped
#: writing the user's message (stop sequences; a line repeating them is cut by the cleaner's `meta`).
_ECHOES = ("\nIn your next message", "\nRewrite it", "\nYour draft message", "\nThe conversation so far")


@simulator("recusersim")
class RecUserSim(BaseSimulator):
    """One dialogue of a RecUserSim-style simulated user (module docstring)."""

    Params = RecUserSimParams
    params: RecUserSimParams
    needs_llm: ClassVar[bool] = True
    #: Rating, action, response and refinement calls per turn: 5.4 to 6.2 measured (docs/recusersim.md).
    llm_calls_per_turn: ClassVar[float] = 6.0

    @classmethod
    def llm_roles(cls, params: RecUserSimParams) -> list[str]:
        return [params.role, params.profile_role] if params.resolve_conflicts else [params.role]

    def __init__(self, params: RecUserSimParams, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.llm = self.role_llm(params.role)
        self.profile_llm = self.role_llm(params.profile_role) if params.resolve_conflicts else self.llm
        self.dictionary: ProfileDictionary = load_dictionary(self._profile_name(params, self.domain))
        self.actions = get_actions(params.actions, "actions")
        self.opening = get_actions(params.opening_actions, "opening_actions")
        self.tools: list[RefinementTool] = [get_tool(name) for name in params.refinements]
        self._thresholds = Thresholds(params.short_max, params.medium_max, params.low_richness_max)
        self.memory: Memory | None = None
        self.sampled: Profile | None = None
        self.resolution: dict[str, Any] = {}
        self.turn = 0
        self._system: Message | None = None
        self._calls: Counter[str] = Counter()
        self._all_calls: Counter[str] = Counter()
        self._timing: dict[str, float] = {}

    # --- the protocol ---------------------------------------------------------------------------

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        started = time.perf_counter()
        need = need_view(user, self.domain, preferences=self.params.include_preferences)
        rng = random.Random(derive_seed(self.params.profile_seed, "recusersim-profile", user.id))
        self.sampled = sample_profile(self.dictionary, rng)
        profile = self.sampled
        self.memory = Memory(profile, need)  # the resolution prompt reads the need from memory
        if self.params.resolve_conflicts:
            profile = await self._timed("profile", self._resolve(self.sampled))
        self.memory.profile = profile
        self._system = system_message(
            render(
                load_template(PROMPTS, "system.j2"),
                **persona_variables(self.dictionary, self.domain, self._memory(), self.params),
            )
        )
        if greeting is not None:
            self.memory.history.append(Entry(Role.CRS, greeting.text))
            self.memory.note_recommended(self._recommended(greeting))
        self.turn = 1
        notes: dict[str, Any] = {}
        return await self._reply(self.opening, [], notes, started)

    async def respond(self, reply: CRSReply) -> UserTurn:
        memory = self._memory()
        started = time.perf_counter()
        memory.history.append(Entry(Role.CRS, reply.text))
        recommended = self._recommended(reply)
        facts = message_facts(self.domain, memory, reply.text, recommended)
        memory.note_recommended(recommended)
        learn_told(self.domain, memory, reply.text)
        self.turn += 1
        notes: dict[str, Any] = {"facts": facts.record()}
        ratings = await self._timed("rating", self._rate_and_excite(recommended, facts, notes))
        ratings = check_ratings(ratings, facts)
        RATINGS.put(notes, {"turn": self.turn - 1, **ratings})
        described = describe(ratings)
        chosen = await self._timed("action", self._choose(described, facts, ratings, notes))
        return await self._reply(chosen, described, notes, started)

    def dialogue_notes(self) -> DialogueNotes:
        """The profile (persona keys the analyses read) and what happened to it, for the dialogue record."""
        if self.memory is None or self.sampled is None:
            return DialogueNotes()
        profile = self.memory.profile
        persona: dict[str, Any] = {
            **profile.traits.model_dump(),
            **RECUSERSIM_PROFILE.entry(profile.model_dump(mode="json")),
        }
        metadata = RECUSERSIM.entry(
            {
                "profile_dictionary": self.dictionary.domain,
                "sampled_profile": self.sampled.model_dump(mode="json"),
                "conflict_resolution": self.resolution,
                "discovered_preferences": [d.model_dump() for d in self.memory.discovered],
                "llm_calls_by_kind": dict(sorted((self._all_calls + self._calls).items())),
            }
        )
        return DialogueNotes(persona=persona, metadata=metadata)

    # --- steps ----------------------------------------------------------------------------------

    async def _resolve(self, sampled: Profile) -> Profile:
        """Conflict resolution (`resolve.py`): proposed changes applied where valid; everything recorded."""
        fixed, self.resolution, answer = await resolve_conflicts(
            self.profile_llm, self.dictionary, self.domain, self.params, self._memory().need, sampled
        )
        self._count("profile", answer)
        return fixed

    async def _rate_and_excite(
        self, recommended: list[str], facts: TurnFacts, notes: dict[str, Any]
    ) -> dict[str, Any]:
        """The rating questions and the excitation question, concurrently."""
        memory = self._memory()
        items = [item for i in recommended if (item := self.domain.items.get(i)) is not None]
        dimensions = [d for d in DIMENSIONS if d != "recommendation" or items]
        jobs: list[Any] = [self._rate(d, items, facts.lines()) for d in dimensions]
        candidate = (
            memory.excitation_candidate(recommended, self.domain.items) if self.params.excitation else None
        )
        if candidate is not None:
            memory.checked.add(candidate.id)
            jobs.append(self._excite(candidate))
        results = await asyncio.gather(*jobs, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        if candidate is not None:
            notes["excitation"] = results[-1]
        return dict(zip(dimensions, results, strict=False))

    async def _rate(self, dimension: str, items: list[Item], facts: list[str]) -> dict[str, Any]:
        schema = score_schema(dimension, self.params.justification_chars)
        answer = await self.ask_json(
            "rating",
            "rate.j2",
            schema,
            dimension=dimension,
            items=[describe_item(self.domain, i, self.params.plot_chars) for i in items],
            discovered=self._discovered(),
            facts=facts,
        )
        return rating_record(answer)

    async def _excite(self, item: Item) -> dict[str, Any]:
        memory = self._memory()
        schema = excitation_schema(self.params.justification_chars)
        answer = await self.ask_json(
            "excitation",
            "excite.j2",
            schema,
            item=describe_item(self.domain, item, self.params.plot_chars),
            known=sorted(memory.known_preferences()),
            aspects=prompt_nouns(self.domain)["aspects"],
        )
        return excitation_record(answer, item, self.turn, memory)

    async def _choose(
        self, described: list[str], facts: TurnFacts, ratings: dict[str, Any], notes: dict[str, Any]
    ) -> list[UserAction]:
        """The LLM's choice of actions, then the action guard (`guard.py`) when switched on."""
        available = [a for a in self.actions if not a.needs_recommendation or self._memory().recommended]
        chosen = await self._ask_actions(available, described, facts, notes)
        notes["actions"] = chosen
        if self.params.action_guard:
            guarded, rule = guard_actions(
                chosen,
                guard_state(self._memory(), self.turn, self.params.turn_budget, facts, ratings),
                {a.name for a in available},
                self.params.max_actions,
            )
            if rule is not None:
                notes["action_guard"] = {"rule": rule, "chosen": chosen}
                notes["actions"] = chosen = guarded
        return [get_action(name) for name in chosen]

    async def _ask_actions(
        self, available: list[UserAction], described: list[str], facts: TurnFacts, notes: dict[str, Any]
    ) -> list[str]:
        memory = self._memory()
        schema = action_schema(available, self.params)
        pattern = self.dictionary.action_patterns[memory.profile.traits.action_pattern]
        shown = shown_actions(available, pattern, prompt_nouns(self.domain)["details"])
        answer = await self.ask_json(
            "action",
            "act.j2",
            schema,
            ratings=described,
            discovered=self._discovered(),
            actions=shown,
            pattern_name=memory.profile.traits.action_pattern,
            facts=facts.lines(),
            state=state_lines(self.domain, memory, self.turn, self.params.turn_budget),
            reason=self.params.action_reason,
        )
        if answer.value is None:
            raise LLMOutputError(f"{self.llm.describe()}: action selection: {answer.error}", answer.raw)
        if self.params.action_reason:
            notes["action_reasoning"] = answer.value.reasoning
        return list(dict.fromkeys(answer.value.actions))

    async def _reply(
        self, actions: list[UserAction], described: list[str], notes: dict[str, Any], started: float
    ) -> UserTurn:
        memory = self._memory()
        if "actions" not in notes:
            notes["actions"] = [a.name for a in actions]
        inquiry = note_inquiry(self.domain, memory, [a.name for a in actions])
        text = await self._timed("response", self._draft(actions, described, inquiry, notes))
        ends = any(a.ends_dialogue for a in actions)
        if ends:
            notes["refinement"] = "skipped: the user ends the conversation"
        elif self.tools:
            text = await self._timed("refinement", self._refined(text, notes))
        memory.history.append(Entry(Role.USER, text))
        notes["llm_calls_by_kind"] = dict(sorted(self._calls.items()))
        self._all_calls.update(self._calls)
        self._calls.clear()
        if self.params.record_timing:
            self._timing["turn"] = time.perf_counter() - started
            notes["latency_s"] = {k: round(v, 3) for k, v in self._timing.items()}
        self._timing = {}
        return UserTurn(text=text, end=ends, annotations=notes)

    async def _draft(
        self, actions: list[UserAction], described: list[str], inquiry: Inquiry | None, notes: dict[str, Any]
    ) -> str:
        """The reply, cleaned of meta text; drafted once more when it speaks as the recommender
        (`voice.role_flip`), and if the second draft does too, its recommender sentences dropped. When
        nothing of the user's message is left, the chosen actions are said plainly (`plain.py`)."""
        variables: dict[str, Any] = {
            "ratings": described,
            "discovered": self._discovered(),
            "actions": [{"name": a.name, "instruction": a.instruction} for a in actions],
            "inquiry": f"{' and '.join(inquiry.details)} of {inquiry.title}" if inquiry else None,
            "noun": indefinite(self.domain.item_noun),
            "flipped": None,
        }
        text, raw = await self.ask_text("response", "respond.j2", **variables)
        self._note_cleaning(text, raw, notes)
        cue = self._voice_problem(text)
        if cue is not None:
            first = text or raw
            said = cue if cue in (EMPTY_DRAFT, PARROT, LEAK) else f'it spoke as the recommender ("{cue}")'
            text, raw = await self.ask_text(
                "response", "respond.j2", **{**variables, "flipped": said, "redraft": True}
            )
            self._note_cleaning(text, raw, notes)
            persists = self._voice_problem(text)
            if persists is not None:
                text = without_flips(text, self._memory().need.targets) if text else ""
            notes["role_flip"] = {"cue": cue, "draft": first, "persists": persists}
        if not text:  # twice the recommender's part, or nothing: the actions said plainly
            need, seed = self._memory().need, self._seed("response", "plain")
            text = plain_reply(actions, inquiry, need, self.domain, self.turn, seed)
            notes["plain_reply"] = {"raw_answer": raw}
        return text

    def _voice_problem(self, text: str) -> str | None:
        """Why a cleaned draft is not this user's message: empty, the recommender's voice
        (`voice.role_flip`), or a target title named (`LEAK`); None when it is fine."""
        if not text:
            return EMPTY_DRAFT
        cue = role_flip(text, self._last_recommender())
        if cue is None and named_titles(text, self._memory().need.targets):
            return LEAK
        return cue

    def _note_cleaning(self, text: str, raw: str, notes: dict[str, Any]) -> None:
        if text != raw.strip():
            notes["raw_answer"] = raw
            removed = clean_utterance(raw, meta=True).removed
            if removed:
                notes["meta_removed"] = list(dict.fromkeys([*notes.get("meta_removed", []), *removed]))

    async def _refined(self, draft: str, notes: dict[str, Any]) -> str:
        """The refinement tools' result; a rewrite that speaks as the recommender where the draft did
        not is dropped for the draft (`refinement_reverted`)."""
        text, outcomes = await self._refine(draft)
        notes["refinement"] = [o.record() for o in outcomes]
        notes["refinements_fired"] = [o.tool for o in outcomes if o.refined]
        last = self._last_recommender()
        if text != draft and role_flip(text, last) and not role_flip(draft, last):
            notes["refinement_reverted"] = {"text": text, "cue": role_flip(text, last)}
            text = draft
        if text != draft:
            notes["draft"] = draft
        return text

    def _last_recommender(self) -> str | None:
        history = self._memory().history
        return next((e.text for e in reversed(history) if e.role == Role.CRS), None)

    async def _refine(self, text: str) -> tuple[str, list[Outcome]]:
        return await refine_in_order(self, self.tools, text, concurrent_judges=self.params.concurrent_judges)

    # --- what the refinement tools use (crsim.sim.recusersim.refine.Refining) --------------------

    @property
    def traits(self) -> Traits:
        return self._memory().profile.traits

    @property
    def thresholds(self) -> Thresholds:
        return self._thresholds

    async def ask_json(
        self, kind: str, template: str, schema: type[BaseModel], **variables: Any
    ) -> Structured[Any]:
        config = GenerationConfig(
            temperature=self.params.json_temperature,
            max_tokens=self.params.json_max_tokens,
            seed=self._seed(kind, variables.get("dimension", "")),
        )
        answer = await generate_json(self.llm, self._messages(template, variables), schema, config)
        self._count(kind, answer)
        return answer

    async def ask_text(self, kind: str, template: str, **variables: Any) -> tuple[str, str]:
        config = GenerationConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.max_tokens,
            seed=self._seed(kind, "redraft" if variables.get("redraft") else ""),
            stop=(f"\n{CRS_LABEL}:", f"\n{USER_LABEL}:", *_ECHOES),
        )
        self._calls[kind] += 1
        completion = await self.llm.generate(self._messages(template, variables), config)
        return clean_utterance(completion.text, meta=True).text, completion.text

    # --- helpers --------------------------------------------------------------------------------

    def _memory(self) -> Memory:
        if self.memory is None:
            raise RuntimeError("respond() called before start()")
        return self.memory

    def _messages(self, template: str, variables: dict[str, Any]) -> list[Message]:
        """The dialogue's fixed system message, then the conversation, then the task: a stable prefix."""
        assert self._system is not None
        shown, omitted = recent_turns(self._memory().history, self.params.max_history_turns)
        if shown:
            cut = f" (its first {omitted} messages left out)" if omitted else ""
            conversation = f"The conversation so far{cut}:\n{transcript(shown)}"
        else:
            conversation = "The conversation has not started yet; you write the first message."
        task = render(load_template(PROMPTS, template), style=self._style(), **variables)
        return [self._system, user_message(f"{conversation}\n\n{task}")]

    def _count(self, kind: str, answer: Structured[Any]) -> None:
        self._calls[kind] += 1 if answer.ok and not answer.repaired else 2

    def _seed(self, kind: str, detail: str) -> int:
        return derive_seed(self.seed, kind, detail, self.turn) % 2**31

    async def _timed(self, step: str, awaitable: Any) -> Any:
        started = time.perf_counter()
        try:
            return await awaitable
        finally:
            self._timing[step] = self._timing.get(step, 0.0) + time.perf_counter() - started

    @staticmethod
    def _profile_name(params: RecUserSimParams, domain: Domain) -> str:
        """The profile dictionary asked for; left unset, the domain's (its `profiles`), else `movies`."""
        if "profile" not in params.model_fields_set and domain.profiles:
            return domain.profiles
        return params.profile

    def _recommended(self, reply: CRSReply) -> list[str]:
        """Ids the CRS recommended; for a CRS that sends text only, the titles linked in it that were
        not recommended before (a title named again is the item under discussion, as in "I don't have
        details about X", not a new recommendation)."""
        if reply.recommended_items:
            return list(reply.recommended_items)
        if not reply.text:
            return []
        before = set(self.memory.recommended) if self.memory is not None else set()
        linked = dict.fromkeys(m.item_id for m in heard_titles(self.domain.items, reply.text))
        return [item_id for item_id in linked if item_id not in before]

    def _discovered(self) -> list[str]:
        return [d.preference for d in self._memory().discovered]

    def _style(self) -> str:
        return style(self._memory().profile.traits, self.params)
