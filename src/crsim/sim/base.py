"""The user-simulator protocol. A simulator object lives for exactly one dialogue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from crsim.core.components import Buildable, BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import Params, Registry
from crsim.crs.base import CRSReply
from crsim.llm.client import LLM, LLMHub
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import ReplyOption
from crsim.model.domain import Domain
from crsim.model.user import SimulatedUser


@dataclass
class UserTurn:
    """What the simulated user says; `end=True` closes the dialogue after this utterance.

    `option` is the offered option (of the CRS reply just answered) the user picked: `text` is then its
    label, and the loop hands the option to the CRS (`CRSSession.chosen_option`) so that a CRS whose
    protocol takes a choice sends its payload. `end_reason` says why the user ended (kept as the
    record's `termination.detail`).
    """

    text: str
    acts: list[DialogueAct] = field(default_factory=list)
    end: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)
    #: Item ids the user was shown (an item interface) before writing this utterance.
    shown_items: list[str] = field(default_factory=list)
    option: ReplyOption | None = None
    end_reason: str | None = None


@dataclass
class DialogueNotes:
    """What a simulator adds to the dialogue record once the dialogue is over (optional hook
    `dialogue_notes()`): `persona` entries merged into the record's `user_profile.persona` (e.g. a
    profile the simulator sampled itself) and `metadata` merged into `Dialogue.metadata`."""

    persona: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class UserSimulator(Buildable, Protocol):
    """A simulated user. Build a new one per dialogue: its state belongs to that dialogue.

    Built as `Class(params, ctx)` with the dialogue's context (`ctx.seed` is the dialogue's seed;
    `crsim.core.components`); `needs_llm` / `llm_roles(params)` declare the models it calls via `ctx.llms`.
    """

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        """First user utterance; `greeting` is the CRS's opening, if it spoke first."""
        ...

    async def respond(self, reply: CRSReply) -> UserTurn:
        """React to one CRS reply."""
        ...


class BaseSimulator:
    """What every simulator needs, once: its arguments, the run's domain and LLM hub, the dialogue's seed.

    A subclass nests its `Params` (and annotates `params: Params` for the type checker), writes
    `start` and `respond`, and, when it calls a model, sets `needs_llm = True` and gets the model of
    each role it calls (`llm_roles(params)`) with `role_llm`. One object serves one dialogue.
    """

    Params: ClassVar[type[Params]] = Params
    needs_llm: ClassVar[bool] = False

    def __init__(self, params: Any, ctx: BuildContext) -> None:
        self.params = params
        self.domain: Domain = ctx.require_domain(type(self).__name__)
        self.seed = ctx.seed
        self.llms: LLMHub | None = ctx.llms

    @classmethod
    def llm_roles(cls, params: Any) -> list[str]:
        """The model roles the simulator calls: none unless `needs_llm`, else the one its `role`
        argument names (`user` when it has none); a simulator calling other roles overrides this."""
        return [getattr(params, "role", "user")] if cls.needs_llm else []

    def role_llm(self, role: str, use: str = "") -> LLM:
        """The model playing `role`; a ConfigError naming the simulator (and `use`, the argument that
        asks for a model, when given) when the run has no LLM settings."""
        if self.llms is None:
            what = f" ({use})" if use else ""
            raise ConfigError(f"{type(self).__name__} uses a language model{what}; give LLM settings")
        return self.llms.role(role)

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        raise NotImplementedError

    async def respond(self, reply: CRSReply) -> UserTurn:
        raise NotImplementedError


#: The simulator registry: `get` gives a simulator class.
simulator_registry: Registry[type[UserSimulator]] = Registry("simulator")

_SimulatorClass = TypeVar("_SimulatorClass", bound=type[UserSimulator])


def simulator(name: str) -> Callable[[_SimulatorClass], _SimulatorClass]:
    """Register a simulator class under `name` (`@simulator("abus")`); mypy checks the protocol."""
    return simulator_registry.register(name)  # type: ignore[return-value]
