"""The plug-in contract every kind of component shares: one build context, one signature, one `build`.

A component (a CRS, a simulator, a metric or evaluator, an act annotator) is a class with a nested
`Params` model, constructed as `Class(params, ctx)`: `params` its validated arguments, `ctx` a
`BuildContext` holding what the run provides (the domain, the LLM hub, the seed, the run folder).
A simulator is built once per dialogue, with `ctx.for_dialogue(seed)` (the dialogue's seed). Whether
it calls language models, and in which roles, it declares in its kind's protocol (`needs_llm`,
`llm_roles(params)`; `LanguageModelUse`), so the build layer builds those providers before any
dialogue. `build(registry, spec, ctx, where)` is the one way the build layers make a component; a
wrong constructor signature or an undeclared model use is a `ConfigError` naming the config field.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from pydantic import BaseModel

from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec, Registry

if TYPE_CHECKING:  # types only: the one declared exception to the floors (.importlinter)
    from crsim.llm.client import LLMHub
    from crsim.model.domain import Domain

#: How the build layer calls every component class (shown in the error of a wrong signature).
CALL = "Class(params, ctx)"


@dataclass(frozen=True)
class BuildContext:
    """What a component may take from the run when it is constructed (one object for every kind).

    `domain` is the run's domain (None where no domain is known, e.g. scoring a bare dialogue file
    with metrics that need none); `llms` the run's LLM hub (None where no model settings exist);
    `seed` the run's seed, or the dialogue's in a simulator's context; `run_folder` the folder the
    run writes or the evaluation reads, when there is one.
    """

    domain: Domain | None = None
    llms: LLMHub | None = None
    seed: int = 0
    run_folder: Path | None = None

    def for_dialogue(self, seed: int) -> BuildContext:
        """The context of one dialogue's simulator: the same resources, the dialogue's seed."""
        return replace(self, seed=seed)

    def require_domain(self, who: str) -> Domain:
        """The domain; a ConfigError naming `who` when the context has none."""
        if self.domain is None:
            raise ConfigError(f"{who} needs a domain, and none is given to build it")
        return self.domain

    def require_llms(self, who: str) -> LLMHub:
        """The LLM hub; a ConfigError naming `who` when the context has none."""
        if self.llms is None:
            raise ConfigError(f"{who} uses a language model; give LLM settings")
        return self.llms


class LanguageModelUse(Protocol):
    """What every kind's protocol declares about language models (the one definition).

    `needs_llm` says the component calls models through `ctx.llms`; `llm_roles(params)` names the
    roles it calls with these arguments, so their providers are built (a missing model file fails)
    before any dialogue. A component that calls no model sets `needs_llm = False` and returns no role
    (the kinds' base classes do).
    """

    needs_llm: ClassVar[bool]

    @classmethod
    def llm_roles(cls, params: Any) -> Iterable[str]: ...


class Buildable(LanguageModelUse, Protocol):
    """A component class as `build` sees it: the model declaration and `Class(params, ctx)`.

    (Its nested `Params` model the registry checks when the class is decorated; a protocol member
    cannot state it, since mypy takes a nested class for a read-only attribute.)
    """

    def __init__(self, params: Any, ctx: BuildContext) -> None: ...


B = TypeVar("B", bound=Buildable)


def llm_roles_of(cls: type[Buildable], params: BaseModel) -> list[str]:
    """The model roles a component class calls with these arguments (none when `needs_llm` is False)."""
    return [str(role) for role in cls.llm_roles(params)] if cls.needs_llm else []


def prepare(
    registry: Registry[type[B]], spec: ComponentSpec, ctx: BuildContext, where: str
) -> tuple[type[B], BaseModel]:
    """Everything `build` checks, without constructing: validated params and the class.

    For components built later or many times (a simulator per dialogue): arguments against `Params`,
    the protocol's model declaration, the providers of its roles, and the signature `Class(params, ctx)`.
    Each failure is a ConfigError starting with `where` (the config field).
    """
    params = registry.params(spec.name, spec.args, where=where)
    cls = registry.get(spec.name)
    _check_declares_models(registry, cls, spec.name, where)
    roles = llm_roles_of(cls, params)
    if roles:
        try:
            ctx.require_llms(f"{registry.kind} {spec.name!r}").check(roles)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    registry.check_construction(spec.name, where, CALL, params, ctx)
    return cls, params


def build(registry: Registry[type[B]], spec: ComponentSpec, ctx: BuildContext, where: str) -> B:
    """Validate, check and construct one component: `Class(params, ctx)`."""
    cls, params = prepare(registry, spec, ctx, where)
    return construct(cls, params, ctx)


def construct(cls: type[B], params: BaseModel, ctx: BuildContext) -> B:
    """Call a prepared component class the one way every kind is called."""
    return cls(params, ctx)


def _check_declares_models(registry: Registry[Any], cls: type, name: str, where: str) -> None:
    """A class outside the kind's base classes must still state its model use (the protocol)."""
    needs = inspect.getattr_static(cls, "needs_llm", None)
    roles = inspect.getattr_static(cls, "llm_roles", None)
    missing = [m for m, v in (("needs_llm", needs), ("llm_roles(params)", roles)) if v is None]
    if missing:
        raise ConfigError(
            f"{where}: {registry.kind} {name!r} ({cls.__module__}.{cls.__qualname__}) does not declare "
            f"{' and '.join(missing)} (the {registry.kind} protocol; subclass the kind's base class "
            "or set `needs_llm = False` and define `llm_roles`)"
        )
