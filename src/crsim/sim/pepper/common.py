"""What the two PEPPER simulators share: arguments, the conversation as chat messages, cleaning."""

from __future__ import annotations

import random
from typing import Annotated, Any, ClassVar

import jinja2
from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as BaseParams
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render, template_check
from crsim.llm.types import GenerationConfig, Message, assistant, system, user
from crsim.model import annotations as keys
from crsim.model.dialogue import Role
from crsim.model.user import SimulatedUser
from crsim.sim.base import BaseSimulator, DialogueNotes, UserTurn
from crsim.sim.pepper.profile import PROMPTS, GeneralPreferences, domain_words, general_preferences
from crsim.sim.prompt.params import PROMPTS as USER_PROMPTS
from crsim.sim.shared import checks
from crsim.sim.shared.conversation import Entry, recent_turns
from crsim.sim.shared.utterance import clean_utterance

TemplateName = Annotated[str, template_check(PROMPTS)]


class PepperParams(BaseParams):
    """Arguments shared by `pepper` and `target_biased`."""

    role: str = Field("user", min_length=1, description="Model role whose LLM plays the user.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature of every call.")
    max_tokens: int | None = Field(
        None, ge=1, description="Token cap per user message (default: the role's)."
    )
    max_history_turns: int | None = Field(
        3, ge=1, description="Only the last N turns go into the prompt (small context windows); None: all."
    )
    narrative_items: int = Field(
        9,
        ge=1,
        le=50,
        description="Seen items (best and worst rated) the general preferences are written from.",
    )
    narrative_max_tokens: int = Field(
        160, ge=16, description="Token cap of the general-preferences narrative."
    )
    plot_chars: int = Field(160, ge=0, description="Plots are cut to this many characters in prompts.")


class ChatUser(BaseSimulator):
    """One dialogue of an LLM-played user whose prompt is a system message plus the conversation as
    chat messages (the recommender's as `user`, the simulated user's own as `assistant`)."""

    params: PepperParams
    needs_llm: ClassVar[bool] = True

    def __init__(self, params: PepperParams, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.llm = self.role_llm(params.role)
        #: What the prompts call the domain's items and people (`profile.domain_words`).
        self.words = domain_words(self.domain)
        self.history: list[Entry] = []
        self.turn = 0
        self.user: SimulatedUser | None = None
        self.general: GeneralPreferences | None = None
        self.notes = DialogueNotes()
        self.checker = checks.DraftChecker.build(vars(self.words))
        self.corrections = load_template(USER_PROMPTS, "guidance.j2")

    def dialogue_notes(self) -> DialogueNotes:
        return self.notes

    async def load_general_preferences(self, user: SimulatedUser) -> GeneralPreferences:
        """The user's general preferences (one narrative per user and model, through the cache); kept
        in the record's persona, which is where the pepper3 judge reads them."""
        general = await general_preferences(
            self.llm,
            user,
            self.domain,
            narrative_items=self.params.narrative_items,
            plot_chars=self.params.plot_chars,
            max_tokens=self.params.narrative_max_tokens,
        )
        self.notes.persona.update(
            {
                **keys.GENERAL_PREFERENCES.entry(general.narrative),
                **keys.BINARY_PREFERENCES.entry(general.binary.as_record()),
            }
        )
        return general

    def messages(self, template: jinja2.Template, variables: dict[str, Any], latest: str) -> list[Message]:
        """System part, the recent conversation, and `latest` (the cue after the last CRS message)."""
        shown, _ = recent_turns(self.history, self.params.max_history_turns)
        chat: list[Message] = [system(render(template, part="system", **{"words": self.words, **variables}))]
        for entry in shown:
            chat.append(user(entry.text) if entry.role == Role.CRS else assistant(entry.text))
        if chat[-1]["role"] == "user":
            chat[-1] = user(f"{chat[-1]['content']}\n\n{latest}".strip())
        else:
            chat.append(user(latest))
        return chat

    async def write(self, messages: list[Message], notes: dict[str, Any], shown: list[str]) -> UserTurn:
        """Generate, check, clean and record one user message; an empty one is an error with the raw
        text. A message failing a check (`problem`) is asked again once with a correction, then
        replaced by `fallback_text`; both are recorded under `draft_checks`."""
        text, raw = await self._generate(messages, "turn")
        problem = self.problem(text)
        if problem is not None:
            checks.note(notes, problem[0], "retried", draft=raw, detail=problem[1])
            correction = render(
                self.corrections,
                item=self.words.item,
                items=self.words.items,
                shown=None,
                pending=[],
                options=[],
                wait=False,
                correction=problem[0],
            )
            retry = [*messages[:-1], user(f"{messages[-1]['content']}\n\n[{correction}]")]
            text, raw = await self._generate(retry, "retry")
            problem = self.problem(text)
            if problem is not None:
                checks.note(notes, problem[0], "fallback", draft=raw, detail=problem[1])
                text = self.fallback_text()
        if text != raw.strip():
            notes["raw_answer"] = raw
        self.history.append(Entry(Role.USER, text))
        return UserTurn(text=text, annotations=notes, shown_items=shown)

    async def _generate(self, messages: list[Message], purpose: str) -> tuple[str, str]:
        """(cleaned text, raw answer); an answer empty once cleaned is an error."""
        config = GenerationConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.max_tokens,
            seed=derive_seed(self.seed, purpose, self.turn) % 2**31,
            stop=("\nRecommender:", "\nUser:"),
        )
        completion = await self.llm.generate(messages, config)
        text = clean_utterance(completion.text).text
        if not text:
            raise LLMOutputError(
                f"{self.llm.describe()}: the user message is empty once cleaned", completion.text
            )
        return text, completion.text

    def problem(self, text: str) -> tuple[str, str] | None:
        """(check, detail) of the first check the message fails: the recommender's voice, a title
        the user must not name, the recommender's last message or one of its own repeated."""
        meta = self.checker.meta_text(text)
        if meta:
            return "meta_text", meta
        flipped = self.checker.role_flip(text)
        if flipped:
            return "role_flip", flipped
        named = self.checker.named_titles(text, [e.text for e in self.history if e.role == Role.CRS])
        if named:
            return "target_named", "; ".join(named)
        crs = [e.text for e in self.history[-1:] if e.role == Role.CRS]
        if checks.parrots(text, crs):
            return "parrot", crs[0]
        own = [e.text for e in self.history if e.role == Role.USER]
        earlier = checks.repeats(text, own)
        return ("repeat", earlier) if earlier else None

    def fallback_text(self) -> str:
        """What the user says when both drafts failed a check (subclasses say more)."""
        return f"Could you suggest some other {self.words.items} that fit my taste?"

    def hear(self, reply: CRSReply) -> None:
        self.history.append(Entry(Role.CRS, reply.text))
        self.turn += 1


def split_targets(targets: list[str], count: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """(selected, residual): `count` random targets (at most all but one, at least one) and the rest."""
    count = max(1, min(count, len(targets) - 1))
    chosen = set(rng.sample(targets, min(count, len(targets))))
    return [t for t in targets if t in chosen], [t for t in targets if t not in chosen]
