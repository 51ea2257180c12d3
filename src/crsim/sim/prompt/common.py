"""What the prompt-based simulators share: the simulator base, its prompt variables, history and checks.

Messages. A prompt is one jinja2 template rendered per part: `part == "system"` (the task, the
persona, the information need, few-shot examples) and `part == "conversation"` (the
conversation so far and what to write next). How the conversation reaches the model is the
`history_format` argument:

- `transcript` (default, the paper's single prompt): a system message and one user message
  holding the labelled transcript (`User: ...` / `Recommender: ...`) and the request for the
  user's next message.
- `messages`: the system message, then the conversation as alternating chat messages, the
  recommender's as `user` and the simulated user's own as `assistant`, so the model simply
  replies to the recommender; the conversation part is sent only as the opening cue when the
  recommender has not spoken. Measured on SmolLM2-135M, this keeps a tiny model in the
  conversation, where with a transcript it often comments on it ("The user's next message
  is: ..."). With `max_history_turns`, the shown messages may begin with an `assistant` one.

The stopping prompt of `llm_dual` is always a transcript: it judges the conversation from outside.

Buttons and progress. A message that repeats an offered button's label (ignoring case and
punctuation) picks that button (`UserTurn.option`; `crsim.sim.options.chosen_label`). A CRS reply
makes no progress when it reports a setback (`crsim.sim.progress`: it found nothing, it cannot help)
or repeats its previous reply nearly word for word; after `no_progress_patience` such replies the
user ends (`giving_up_utterance`; `end_reason` `no_progress`) without asking the model: the rule
the agenda user follows, taken as the stop decision.

Template variables: `part`, `history_format`, `domain` (the domain's name), `persona` (text or
None), `need` (a `NeedView`), `examples` (list of transcripts), `stop_token` (text or None),
`transcript` (the shown history, "" before anyone spoke), `omitted` (utterances left out of
it), `user_label`, `crs_label`, `item` and `items` (the domain's item nouns), `options` (the labels
of the buttons the recommender's latest reply offers), `stalled` (its replies without progress so
far). The turn's guidance (`guidance.j2`: the item just suggested and whether it fits, requests
still to ask, the buttons offered, a correction) is added in brackets to the end of the last
message, whatever the template. Undefined variables are errors, so a custom template cannot
silently lose part of the prompt.

The arguments are in `params`, the pieces of a prompt (persona, history, examples) in `prompt_parts`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from crsim.core.components import BuildContext
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply
from crsim.crs.llm_checks import complete_sentences
from crsim.language.cues import REJECT
from crsim.language.domain_cues import prompt_words
from crsim.llm.errors import LLMOutputError
from crsim.llm.prompts import load_template, render
from crsim.llm.types import GenerationConfig, Message
from crsim.llm.types import assistant as assistant_message
from crsim.llm.types import user as user_message
from crsim.model.dialogue import ReplyOption, Role
from crsim.model.domain import SlotKind, indefinite
from crsim.model.text import near_duplicate, normalize
from crsim.model.user import SimulatedUser
from crsim.sim.base import BaseSimulator, UserTurn
from crsim.sim.options import chosen_label
from crsim.sim.progress import setback
from crsim.sim.prompt.params import PROMPTS, PromptParams
from crsim.sim.prompt.policy import NeedTracker, question
from crsim.sim.prompt.prompt_parts import (
    load_examples,
    persona_text,
    prompt_messages,
    split_at_stop,
)
from crsim.sim.shared import checks
from crsim.sim.shared.conversation import (
    CRS_LABEL,
    USER_LABEL,
    Entry,
    NeedView,
    need_view,
    recent_turns,
    transcript,
)
from crsim.sim.shared.utterance import clean_utterance

#: Checks a draft can fail, in the order they are tried (`checks` module and `NeedTracker.accepts_unfit`;
#: `guidance.j2` words the correction of each).
DRAFT_CHECKS = ("meta_text", "role_flip", "target_named", "accepts_unfit", "parrot", "repeat")


class PromptSimulator(BaseSimulator):
    """One dialogue of an LLM-played user: keeps the history, builds prompts, checks and cleans answers.

    Subclasses decide what happens before each user turn (`_next_turn`). One object per
    dialogue; every sampling seed is derived from the dialogue seed and the turn number. Each draft
    is checked (`DRAFT_CHECKS`): a failing one is re-asked once with a correction, and a second
    failure falls back to a deterministic utterance; both are recorded under `draft_checks`.
    """

    params: PromptParams
    needs_llm: ClassVar[bool] = True

    def __init__(self, params: PromptParams, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.llm = self.role_llm(params.role)
        self.template = load_template(PROMPTS, params.prompt)
        self.guidance_template = load_template(PROMPTS, "guidance.j2")
        self.examples = load_examples(params.examples, params.num_examples) if params.examples else ()
        self.words = prompt_words(self.domain)
        self.history: list[Entry] = []
        self.turn = 0
        self._need: NeedView | None = None
        self._persona: str | None = None
        self.tracker = NeedTracker(self.domain, {}, [])
        self.checker = checks.DraftChecker.build(self.words)
        #: The buttons of the recommender's latest reply, and its replies without progress so far.
        self.options: list[ReplyOption] = []
        self.stalled = 0

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        """The user's first utterance (answering the CRS's greeting, if it spoke first)."""
        self._need = need_view(user, self.domain, preferences=self.params.include_preferences)
        self._persona = persona_text(user, self.params.persona)
        constraints = {c.slot: c.values for c in self._need.constraints}
        self.tracker = NeedTracker(self.domain, constraints, list(self._need.requests))
        self.checker = checks.DraftChecker.build(self.words, self._need.targets)
        if greeting is not None:
            self._heard(greeting)
        self.turn = 1
        return await self._next_turn()

    async def respond(self, reply: CRSReply) -> UserTurn:
        """The user's next utterance after a CRS reply (its text, and the ids of the items it recommends)."""
        if self._need is None:
            raise RuntimeError("respond() called before start()")
        self._heard(reply)
        self.turn += 1
        if self.stalled >= self.params.no_progress_patience:
            return self.give_up()
        return await self._next_turn()

    def give_up(self) -> UserTurn:
        """End after `no_progress_patience` replies without progress, with `giving_up_utterance`."""
        notes: dict[str, Any] = {"closing_utterance": True, "stalled_turns": self.stalled}
        return self.say(self.params.giving_up_utterance, None, notes, end=True, reason="no_progress")

    def _heard(self, reply: CRSReply) -> None:
        """Take in a recommender reply: history, items, buttons, and whether it made progress."""
        previous = next((e.text for e in reversed(self.history) if e.role == Role.CRS), None)
        if setback(reply.text) is not None or (previous is not None and near_duplicate(previous, reply.text)):
            self.stalled += 1
        self.history.append(Entry(Role.CRS, reply.text))
        self.tracker.heard(reply)
        self.options = list(reply.options)

    async def _next_turn(self) -> UserTurn:
        raise NotImplementedError

    def variables(self, **extra: Any) -> dict[str, Any]:
        """Template variables common to every prompt of this dialogue, plus `extra`."""
        return {
            "history_format": self.params.history_format,
            "domain": self.domain.name,
            "persona": self._persona,
            "need": self._need,
            "user_label": USER_LABEL,
            "crs_label": CRS_LABEL,
            "item": self.words["item"],
            "items": self.words["items"],
            "options": [o.label for o in self.options],
            "stalled": self.stalled,
            **extra,
        }

    def call_seed(self, purpose: str) -> int:
        return derive_seed(self.seed, purpose, self.turn) % 2**31

    def waiting(self) -> bool:
        """Nothing recommended yet and the user's patience not spent: the user must not end now."""
        return not self.tracker.recommended and self.turn < self.params.patience

    def settling_for_a_miss(self) -> bool:
        """The item just recommended misses the need, the recommender has missed fewer than
        `give_up_after` times and the user's patience is not spent: ending now would settle for an
        item that does not fit (a small model thanks and leaves after the first suggestion)."""
        shown = self.tracker.shown()
        missed = shown is not None and bool(shown.mismatched)
        return missed and self.tracker.misses < self.params.give_up_after and self.turn < self.params.patience

    def closing(self) -> str:
        """The fixed last words: a goodbye that turns the item down after a miss, else the closing."""
        shown = self.tracker.shown()
        if shown is not None and shown.mismatched:
            return self.params.giving_up_utterance
        return self.params.closing_utterance

    def guidance(self, *, wait: bool, correction: str | None = None) -> str:
        """The notes for this turn (`guidance.j2`): the item just suggested, requests to ask, a correction."""
        return render(
            self.guidance_template,
            item=self.words["item"],
            items=self.words["items"],
            shown=self.tracker.shown(),
            pending=self.tracker.pending(),
            ask=[question(slot, self.domain) for slot in self.tracker.pending()],
            options=[o.label for o in self.options],
            wait=wait,
            correction=correction,
        )

    async def generate_utterance(
        self, stop_token: str | None, guidance: str = "", purpose: str = "turn"
    ) -> tuple[str, str, dict[str, Any]]:
        """(cleaned text, raw answer, annotations) from the response prompt over the recent history,
        with this turn's guidance at the end of the prompt."""
        shown, omitted = recent_turns(self.history, self.params.max_history_turns)
        variables = self.variables(examples=list(self.examples), stop_token=stop_token, omitted=omitted)
        if self.params.history_format == "messages":
            messages = self._chat_messages(shown, variables)
        else:
            variables["transcript"] = transcript(shown)
            messages = prompt_messages(self.template, self.params.prompt, variables)
        if guidance and messages[-1]["role"] == "user":
            messages[-1] = user_message(f"{messages[-1]['content']}\n\n[{guidance}]")
        elif guidance:
            messages.append(user_message(f"[{guidance}]"))
        config = GenerationConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.max_tokens,
            seed=self.call_seed(purpose),
            stop=(f"\n{CRS_LABEL}:", f"\n{USER_LABEL}:"),
        )
        completion = await self.llm.generate(messages, config)
        notes: dict[str, Any] = {"history_omitted": omitted} if omitted else {}
        text = clean_utterance(completion.text).text
        whole = complete_sentences(text) if completion.finish_reason == "length" else None
        if whole:  # the token limit cut the last sentence: keep the whole ones before it
            notes["cut_to_sentence"] = len(text)
            text = whole
        return text, completion.text, notes

    async def draft(self, stop_token: str | None) -> tuple[str, bool, str, dict[str, Any]]:
        """(the words before any stop token, whether it was written, raw answer, annotations) of a
        checked draft: re-asked once with a correction when a check fails, then a fallback."""
        wait = stop_token is not None and self.waiting()
        text, raw, notes = await self.generate_utterance(stop_token, self.guidance(wait=wait))
        body, seen = split_at_stop(text, stop_token) if stop_token else (text, False)
        problem = self.problem(body)
        if problem is None:
            return body, seen, raw, notes
        checks.note(notes, problem[0], "retried", draft=text, detail=problem[1])
        guidance = self.guidance(wait=wait, correction=problem[0])
        text, raw, more = await self.generate_utterance(stop_token, guidance, purpose="retry")
        notes.update(more)
        body, seen = split_at_stop(text, stop_token) if stop_token else (text, False)
        problem = self.problem(body)
        if problem is not None:
            body = self.fallback(problem, body, text, notes)
        return body, seen, raw, notes

    def problem(self, body: str) -> tuple[str, str] | None:
        """(check, detail) of the first check the draft fails, or None; an empty draft passes."""
        if not body:
            return None
        meta = self.checker.meta_text(body)
        if meta:
            return "meta_text", meta
        flipped = self.checker.role_flip(body)
        if flipped:
            return "role_flip", flipped
        named = self.checker.named_titles(body, [e.text for e in self.history if e.role == Role.CRS])
        if named:
            return "target_named", "; ".join(named)
        unfit = self.tracker.accepts_unfit(body)
        if unfit:
            return "accepts_unfit", unfit
        crs = [e.text for e in self.history[-1:] if e.role == Role.CRS]
        if checks.parrots(body, crs):
            return "parrot", crs[0]
        own = [e.text for e in self.history if e.role == Role.USER][-2:]
        earlier = checks.repeats(body, own)
        return ("repeat", earlier) if earlier else None

    def fallback(self, problem: tuple[str, str], body: str, draft: str, notes: dict[str, Any]) -> str:
        """The draft with target titles cut out when that is all that is wrong, else a fixed utterance."""
        if problem[0] == "target_named":
            redacted = checks.redact_titles(body, self.checker.forbidden, indefinite(self.words["item"]))
            if redacted is not None and self.problem(redacted) is None:
                checks.note(notes, problem[0], "redacted", draft=draft, detail=problem[1])
                return redacted
        checks.note(notes, problem[0], "fallback", draft=draft, detail=problem[1])
        return self.fallback_text()

    def fallback_text(self) -> str:
        """A plain utterance from the need: a pending question, a refusal of an item that does not
        fit, a constraint (one per turn, in turn), or a request for a recommendation."""
        item = self.words["item"]
        pending, shown = self.tracker.pending(), self.tracker.shown()
        if pending:
            return question(pending[0], self.domain)
        if shown is not None and shown.mismatched:
            return f"That is not quite what I am looking for; could you suggest a different {item}?"
        constraints = self._need.constraints if self._need else []
        if constraints:
            wanted = constraints[self.turn % len(constraints)]
            known = self.domain.slots.get(wanted.slot)
            if known is not None and known.kind is SlotKind.NUMERIC:
                said = " or ".join(known.amount(v) for v in wanted.values)
            else:
                said = f"{wanted.slot.replace('_', ' ')} {' or '.join(wanted.values)}"
            return f"I am looking for {indefinite(item)} with {said}."
        return f"Could you recommend {indefinite(item)} for me?"

    def ask_pending(self, body: str, notes: dict[str, Any]) -> tuple[str, bool]:
        """(text, whether a question was added): a fitting item was just recommended and the draft does
        not turn it down, so every request still open that the draft does not ask is asked, in the
        domain's phrasing (`request_unasked`). A sentence of the draft stating the very value asked
        about (the model answering its own question) is dropped first (`request_self_answered`)."""
        pending = self.tracker.pending()
        if not pending or REJECT.search(normalize(body)):  # turning the item down: no question about it
            return body, False
        unasked = [slot for slot in pending if not self.tracker.asks_about(body, slot)]
        if not unasked:
            return body, False
        kept = self.tracker.without_own_answers(body, unasked)
        if kept != body.strip():
            checks.note(notes, "request_self_answered", "removed", draft=body, detail=", ".join(unasked))
        checks.note(notes, "request_unasked", "appended", detail=", ".join(unasked))
        questions = " ".join(question(slot, self.domain) for slot in unasked)
        return f"{kept} {questions}".strip(), True

    def _chat_messages(self, shown: list[Entry], variables: dict[str, Any]) -> list[Message]:
        """System message, then the recommender's utterances as `user` and the simulated user's as
        `assistant`; before the recommender has spoken, the conversation part opens the dialogue."""
        variables["transcript"] = ""
        opening = prompt_messages(self.template, self.params.prompt, variables)
        if not shown:
            return opening
        turns = [user_message(e.text) if e.role == Role.CRS else assistant_message(e.text) for e in shown]
        return [opening[0], *turns]

    def empty_answer(self, raw: str) -> LLMOutputError:
        return LLMOutputError(
            f"{self.llm.describe()}: the user utterance is empty once cleaned "
            "(role labels and any part written for the recommender removed)",
            raw,
        )

    def say(
        self,
        text: str,
        raw: str | None,
        notes: dict[str, Any],
        *,
        end: bool = False,
        reason: str | None = None,
    ) -> UserTurn:
        """Record the utterance in the history; keep the raw answer when the text differs from it. A
        text that is an offered button's label picks that button; `reason` says why the user ends."""
        if raw is not None and text != raw.strip():
            notes["raw_answer"] = raw
        self.history.append(Entry(Role.USER, text))
        self.tracker.said(text)
        option = chosen_label(text, self.options)
        return UserTurn(text=text, end=end, annotations=notes, option=option, end_reason=reason)
