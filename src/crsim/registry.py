"""Component registries filled by decorators: `@simulator("abus")`, `@crs("retrieval")`, `@metric("srrr")`.

A component is a class with a nested pydantic `Params` model (extra fields forbidden). Configs
name a component and give its arguments; the registry validates them against `Params`, so a
misspelt argument is an error, and the validated arguments (defaults included) go into the run
manifest so the run can be rebuilt exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from crsim.errors import ConfigError


class Params(BaseModel):
    """Base for component arguments: unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ComponentSpec(BaseModel):
    """A component named in a config: registry name plus its arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = {}
    id: str | None = None

    @property
    def label(self) -> str:
        """How records and tables call it: `id` when given (needed when one name appears twice)."""
        return self.id or self.name


class Component(Protocol):
    Params: ClassVar[type[Params]]


C = TypeVar("C")

#: Modules that register the built-in components when imported.
_BUILTIN_MODULES = {
    "crs": (
        "crsim.crs.popular",
        "crsim.crs.retrieval",
        "crsim.crs.http.generic",
        "crsim.crs.http.crs_arena",
        "crsim.crs.http.moviebot",
        "crsim.crs.llm",
    ),
    "simulator": (
        "crsim.sim.agenda.simulator",
        "crsim.sim.prompt.single",
        "crsim.sim.prompt.dual",
        "crsim.sim.recusersim.simulator",
        "crsim.sim.pepper.simulator",
        "crsim.sim.pepper.biased",
    ),
    "metric": (
        "crsim.eval.metrics",
        "crsim.eval.judge.evaluator",
        "crsim.gcdf1.evaluator",
        "crsim.eval.learned.satisfaction",
        "crsim.eval.learned.crsarena",
        "crsim.eval.pepper",
        "crsim.eval.metrics.user_ratings",
    ),
    "annotator": ("crsim.data.augment.rules", "crsim.data.augment.llm"),
    "dataset": (
        "crsim.data.datasets.dialoguekit",
        "crsim.data.datasets.iard",
        "crsim.data.datasets.moviebot",
        "crsim.data.datasets.crsarena",
        "crsim.data.datasets.redial",
        "crsim.data.datasets.inspired",
        "crsim.data.datasets.opendialkg",
    ),
}


class Registry(Generic[C]):
    """Name -> component class, for one kind of component."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, type[C]] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[type[C]], type[C]]:
        def decorator(cls: type[C]) -> type[C]:
            if not isinstance(getattr(cls, "Params", None), type) or not issubclass(cls.Params, BaseModel):  # type: ignore[attr-defined]
                raise TypeError(
                    f"{self.kind} {name!r}: {cls.__name__} needs a nested `Params` pydantic model"
                )
            existing = self._classes.get(name)
            if existing is not None and existing is not cls:
                raise ValueError(f"{self.kind} {name!r} is already registered by {existing.__qualname__}")
            self._classes[name] = cls
            cls.registry_name = name  # type: ignore[attr-defined]
            return cls

        return decorator

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in _BUILTIN_MODULES.get(self.kind, ()):
            import_module(module)
        for entry in entry_points(group=f"crsim.{self.kind}"):
            entry.load()

    def names(self) -> list[str]:
        self._load()
        return sorted(self._classes)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> type[C]:
        self._load()
        try:
            return self._classes[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r}; expected one of: {known}") from None

    def params(self, name: str, args: dict[str, Any], where: str = "") -> BaseModel:
        """Validate `args` for component `name`; errors name the config field (`where`)."""
        try:
            cls = self.get(name)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
        try:
            return cls.Params.model_validate(args)  # type: ignore[attr-defined,no-any-return]
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            prefix = f"{where}." if where else ""
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(cls.Params.model_fields) or "none"  # type: ignore[attr-defined]
                message = f"unknown argument for {self.kind} {name!r}; expected one of: {allowed}"
                raise ConfigError(f"{prefix}args.{field}: {message}") from None
            raise ConfigError(f"{prefix}args.{field}: {err['msg']} (for {self.kind} {name!r})") from None


crs_registry: Registry[Any] = Registry("crs")
simulator_registry: Registry[Any] = Registry("simulator")
metric_registry: Registry[Any] = Registry("metric")

crs = crs_registry.register
simulator = simulator_registry.register
metric = metric_registry.register
