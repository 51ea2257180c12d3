"""Utterances, dialogues and why a dialogue ended: the records crsim writes and reads."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from crsim.core.secrets import redact
from crsim.model.acts import DialogueAct
from crsim.model.text import clean_text
from crsim.model.user import InformationNeed, UserProfile

#: 1.1: llm_calls per utterance, llm_usage per dialogue; 1.2: mentioned_items per utterance;
#: 1.3: options per CRS utterance, chosen_option per user utterance, termination detail
FORMAT_VERSION = "1.3"


class Role(StrEnum):
    USER = "user"
    CRS = "crs"


class TerminationReason(StrEnum):
    """Why a dialogue stopped. The error kinds say whose fault it was (after tau2-bench)."""

    USER_ENDED = "user_ended"
    CRS_ENDED = "crs_ended"
    MAX_TURNS = "max_turns"
    TIMEOUT = "timeout"
    CRS_ERROR = "crs_error"
    USER_ERROR = "user_error"
    INFRASTRUCTURE_ERROR = "infrastructure_error"
    #: Records of format 1.1 and older: one error kind, attributed through `ErrorInfo.source`.
    ERROR = "error"


class Fault(StrEnum):
    """Who a dialogue that did not end normally is charged to."""

    CRS = "crs"
    USER = "user"
    INFRASTRUCTURE = "infrastructure"


class ErrorInfo(BaseModel):
    """An exception kept in a record: which participant raised it, its type and message.

    The message is redacted (`crsim.core.secrets`) when the record is made: error texts quote headers and
    server answers, which may hold a key.
    """

    source: str = Field(description="'user', 'crs', 'infrastructure' or 'loop'.")
    type: str
    message: str

    @field_validator("message")
    @classmethod
    def _writable_and_redacted(cls, value: str) -> str:
        """Exception texts may quote what a server sent: keep them writable (say when changed) and
        mask secrets in them."""
        cleaned, replaced = clean_text(value)
        if replaced:
            cleaned = f"{cleaned} [{replaced} unwritable code point(s) replaced]"
        return redact(cleaned)


_FAULT_OF_REASON = {
    TerminationReason.CRS_ERROR: Fault.CRS,
    TerminationReason.USER_ERROR: Fault.USER,
    TerminationReason.INFRASTRUCTURE_ERROR: Fault.INFRASTRUCTURE,
}
_FAULT_OF_SOURCE = {"crs": Fault.CRS, "user": Fault.USER}
#: Faults after which a dialogue says nothing about the CRS (`Termination.evaluable`).
UNEVALUABLE_FAULTS = frozenset({Fault.USER, Fault.INFRASTRUCTURE})


class Termination(BaseModel):
    """Why the dialogue stopped; `detail` is the ending participant's own word for it when it gave
    one (the agenda user: `accepted`, `patience`, `no_progress`, `crs_goodbye`; format 1.3+)."""

    reason: TerminationReason
    error: ErrorInfo | None = None
    detail: str | None = None

    @model_serializer(mode="wrap")
    def _omit_no_detail(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Records without a detail stay as they were before the field existed."""
        data: dict[str, Any] = handler(self)
        if self.detail is None:
            data.pop("detail", None)
        return data

    @property
    def fault(self) -> Fault | None:
        """Who broke the dialogue: None when it ended normally (user, CRS or turn limit).

        A timeout is charged to the participant that was being awaited (`error.source`), the CRS
        when the record does not say; a format-1.1 `error` to its `error.source` (anything else
        than 'user' or 'crs' is infrastructure).
        """
        reason = self.reason
        fault = _FAULT_OF_REASON.get(reason)
        if fault is not None:
            return fault
        if reason is TerminationReason.TIMEOUT:
            source = self.error.source if self.error else "crs"
            return _FAULT_OF_SOURCE.get(source, Fault.INFRASTRUCTURE)
        if reason is TerminationReason.ERROR:
            source = self.error.source if self.error else "loop"
            return _FAULT_OF_SOURCE.get(source, Fault.INFRASTRUCTURE)
        return None

    @property
    def evaluable(self) -> bool:
        """Whether the dialogue says something about the CRS: not when the simulator or the
        infrastructure broke it. CRS errors and CRS timeouts count against the CRS."""
        return self.fault not in UNEVALUABLE_FAULTS


class LLMCall(BaseModel):
    """One language-model call made while producing an utterance (or scoring it)."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(description="Model role: user, crs, judge, annotator, ...")
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = Field(0.0, description="Seconds waiting for the provider; 0 for a cache hit.")
    cached: bool = False
    error: str | None = Field(None, description="Error type when the call failed.")
    replaced_code_points: int = Field(
        0,
        ge=0,
        description="Characters of the answer that cannot be written (lone surrogates), replaced with "
        "U+FFFD; left out of the record when 0.",
    )

    @model_serializer(mode="wrap")
    def _omit_no_replacements(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Records of calls whose answers needed no repair stay as they were before the field existed."""
        data: dict[str, Any] = handler(self)
        if not self.replaced_code_points:
            data.pop("replaced_code_points", None)
        return data


class LLMUsage(BaseModel):
    """LLM calls of one role in one dialogue, summed."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    @classmethod
    def summarize(cls, calls: list[LLMCall]) -> dict[str, LLMUsage]:
        """Per-role totals of a list of calls."""
        totals: dict[str, LLMUsage] = {}
        for call in calls:
            total = totals.setdefault(call.role, cls())
            total.calls += 1
            total.cached_calls += call.cached
            total.failed_calls += call.error is not None
            total.prompt_tokens += call.prompt_tokens
            total.completion_tokens += call.completion_tokens
            total.latency_s = round(total.latency_s + call.latency_s, 6)
        return totals


class ReplyOption(BaseModel):
    """A button or quick reply a CRS offers with its reply: the `label` shown to the user and the
    `payload` the CRS expects back when it is chosen (None: the label itself is sent). Both are text
    from outside: untrusted, escaped wherever they are shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    payload: str | None = None


class Utterance(BaseModel):
    """One turn of one participant. `recommended_items` are the item ids the CRS recommended in
    this utterance (each opens a recommendation round); `mentioned_items` are ids it names without
    recommending them (answering a question about an earlier recommendation, an item the user
    named); `shown_items` are ids displayed alongside it (e.g. an item interface). Records of
    format 1.1 and older have no `mentioned_items`: everything they named is in `recommended_items`.
    `options` are the buttons a CRS utterance offered, in the CRS's order; `chosen_option` is the one
    a user utterance picked (its text is then the option's label). Both are left out of the JSON when
    empty, so records of format 1.2 and older read and write back unchanged."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    text: str
    acts: list[DialogueAct] = Field(default_factory=list)
    recommended_items: list[str] = Field(default_factory=list)
    mentioned_items: list[str] = Field(
        default_factory=list, description="Item ids named without being recommended (format 1.2+)."
    )
    shown_items: list[str] = Field(default_factory=list)
    annotations: dict[str, Any] = Field(default_factory=dict)
    llm_calls: list[LLMCall] = Field(
        default_factory=list, description="LLM calls made to produce this utterance."
    )
    options: list[ReplyOption] = Field(
        default_factory=list,
        description="Buttons or quick replies the CRS offered with this utterance (format 1.3+).",
    )
    chosen_option: ReplyOption | None = Field(
        None, description="The offered option this user utterance picked (format 1.3+)."
    )

    @model_serializer(mode="wrap")
    def _omit_no_options(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Utterances without options stay as they were before the fields existed."""
        data: dict[str, Any] = handler(self)
        if not self.options:
            data.pop("options", None)
        if self.chosen_option is None:
            data.pop("chosen_option", None)
        return data

    def has_intent(self, intent: str) -> bool:
        return any(a.intent == intent for a in self.acts)


class Timing(BaseModel):
    """Wall-clock facts: the only part of a record that differs between two runs with one seed."""

    started_at: str
    duration_s: float


class Dialogue(BaseModel):
    """A complete conversation with everything needed to score it again later."""

    model_config = ConfigDict(extra="forbid")

    format_version: str = FORMAT_VERSION
    id: str = Field(min_length=1)
    utterances: list[Utterance] = Field(default_factory=list)
    user_id: str | None = None
    crs_id: str | None = None
    simulator_id: str | None = None
    information_need: InformationNeed | None = None
    user_profile: UserProfile | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    termination: Termination | None = None
    timing: Timing | None = None
    llm_usage: dict[str, LLMUsage] = Field(
        default_factory=dict, description="LLM calls, tokens and latency per model role, summed."
    )

    @field_validator("format_version")
    @classmethod
    def _readable_version(cls, value: str) -> str:
        """A new major version means old readers cannot read the record: refuse it, never guess."""
        major = FORMAT_VERSION.split(".")[0]
        if value.split(".")[0] != major:
            raise ValueError(f"format version {value!r} is not readable by this crsim (reads {major}.x)")
        return value

    @property
    def evaluable(self) -> bool:
        """Whether CRS metrics count this dialogue (see `Termination.evaluable`); a record without a
        termination (an imported dataset) is evaluable."""
        return self.termination is None or self.termination.evaluable

    def by(self, role: Role) -> list[Utterance]:
        return [u for u in self.utterances if u.role == role]

    @property
    def num_turns(self) -> int:
        """Turns are user utterances: one user message and the CRS reply that follows it."""
        user = Role.USER
        return sum(u.role is user for u in self.utterances)

    def crs_turn_numbers(self) -> dict[int, int]:
        """Position of every CRS utterance -> its turn t: the user utterances before it, at least 1
        (a CRS opening belongs to turn 1)."""
        turns: dict[int, int] = {}
        users = 0
        for position, utterance in enumerate(self.utterances):
            if utterance.role is Role.USER:
                users += 1
            elif utterance.role is Role.CRS:
                turns[position] = max(users, 1)
        return turns
