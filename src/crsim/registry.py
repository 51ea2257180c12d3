"""Component registries filled by decorators: `@simulator("abus")`, `@crs("retrieval")`, `@metric("srrr")`.

A component is a class with a nested pydantic `Params` model (extra fields forbidden). Configs
name a component and give its arguments; the registry validates them against `Params`, so a
misspelt argument is an error, and the validated arguments (defaults included) go into the run
manifest so the run can be rebuilt exactly. How every kind is constructed (`Class(params, ctx)`)
is `crsim.components`. Plug-in kinds that are named objects rather than component classes (LLM
providers, population sources, retrievers, ...) are `Catalogue`s over their entry-point groups.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from crsim.errors import ConfigError, did_you_mean


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


#: Every registry made, so tests can snapshot and restore them all (see `temporarily`).
_ALL_REGISTRIES: list[Registry[Any]] = []


class Registry(Generic[C]):
    """Name -> component class, for one kind of component.

    Components come from two places: classes decorated with `register(name)` (registered when their
    module is imported), and the `crsim.<kind>` entry points of installed distributions (crsim's own
    built-ins are declared there too, in `pyproject.toml`). An entry point's name is the component
    name; its value `module:Class` is imported only when that name is looked up, so naming one
    component does not import every other one. Listing the names imports all of them.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, type[C]] = {}
        self._entries: dict[str, EntryPoint] | None = None
        self._all_loaded = False
        _ALL_REGISTRIES.append(self)

    @property
    def group(self) -> str:
        """The entry-point group plug-ins declare their components in."""
        return f"crsim.{self.kind}"

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
            cls.registry_kind = self.kind  # type: ignore[attr-defined]
            return cls

        return decorator

    def entry_points(self) -> dict[str, EntryPoint]:
        """The installed `crsim.<kind>` entry points by name (read once, not loaded)."""
        if self._entries is None:
            self._entries = {entry.name: entry for entry in entry_points(group=self.group)}
        return self._entries

    def _load_entry(self, entry: EntryPoint) -> None:
        """Import one entry point; one naming a class must name the class registered under its name."""
        loaded = entry.load()
        if not isinstance(loaded, type):
            return
        if entry.name not in self._classes and self._decorated_as(loaded, entry.name):
            # Its module was imported before and the class dropped by `restore`: register it again.
            self._classes[entry.name] = loaded
        if self._classes.get(entry.name) is not loaded:
            raise ConfigError(
                f"entry point {self.group} {entry.name} = {entry.value!r} does not name a class "
                f"decorated with @{self.kind}({entry.name!r})"
            )

    def _decorated_as(self, cls: type, name: str) -> bool:
        return (
            getattr(cls, "registry_kind", None) == self.kind and getattr(cls, "registry_name", None) == name
        )

    def _load_all(self) -> None:
        if self._all_loaded:
            return
        self._all_loaded = True
        for entry in self.entry_points().values():
            self._load_entry(entry)

    def _load(self, name: str) -> None:
        """Make `name` registered if any entry point provides it.

        The entry point of that name is imported first; if there is none, every entry point is
        (a plug-in may declare a module that registers several components when imported).
        """
        if name in self._classes:
            return
        entry = self.entry_points().get(name)
        if entry is not None:
            self._load_entry(entry)
        if name not in self._classes:
            self._load_all()

    def snapshot(self) -> dict[str, type[C]]:
        """The registered classes now (for `restore`)."""
        return dict(self._classes)

    def restore(self, snapshot: dict[str, type[C]]) -> None:
        """Forget every class registered since `snapshot` was taken.

        Built-ins dropped this way come back on their next lookup (their entry point still names them).
        """
        self._classes = dict(snapshot)
        self._all_loaded = False

    def names(self) -> list[str]:
        self._load_all()
        return sorted(self._classes)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def get(self, name: str) -> type[C]:
        self._load(name)
        try:
            return self._classes[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            hint = ""
            if not self.entry_points():
                hint = (
                    f" (no {self.group} entry points are installed: reinstall crsim, "
                    "e.g. `pip install -e .`, to declare the built-ins)"
                )
            guess = did_you_mean(name, self.names())
            raise ConfigError(
                f"unknown {self.kind} {name!r}{guess}; expected one of: {known}{hint}"
            ) from None

    def check_construction(self, name: str, where: str, call: str, *args: Any, **kwargs: Any) -> None:
        """Fail now, naming the config field, if `name`'s class cannot be called with these arguments.

        The build layer (`crsim.components.build`) calls this with the arguments it will pass (`call`
        shows them: `Class(params, ctx)`), so a plug-in with a wrong constructor signature is a config
        error before any dialogue instead of a TypeError in every one.
        """
        cls = self.get(name)
        try:
            signature = inspect.signature(cls)
        except (TypeError, ValueError):  # no introspectable signature (e.g. a C type): cannot check
            return
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ConfigError(
                f"{where}: {self.kind} {name!r} ({cls.__module__}.{cls.__qualname__}) cannot be "
                f"constructed as {call}: {exc}; its signature is {cls.__name__}{signature}"
            ) from None

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
                fields = cls.Params.model_fields  # type: ignore[attr-defined]
                guess = did_you_mean(str(err["loc"][-1]), fields)
                allowed = ", ".join(fields) or "none"
                message = f"unknown argument for {self.kind} {name!r}{guess}; expected one of: {allowed}"
                raise ConfigError(f"{prefix}args.{field}: {message}") from None
            raise ConfigError(f"{prefix}args.{field}: {err['msg']} (for {self.kind} {name!r})") from None


def all_registries() -> list[Registry[Any]]:
    """Every registry made so far (those of data/ exist once their modules are imported)."""
    return list(_ALL_REGISTRIES)


def all_catalogues() -> list[Catalogue[Any]]:
    """Every catalogue made so far (each exists once the module that declares it is imported)."""
    return list(_ALL_CATALOGUES)


T = TypeVar("T")

#: Every catalogue made, so tests can snapshot and restore them all (see `temporarily`).
_ALL_CATALOGUES: list[Catalogue[Any]] = []


class Catalogue(Generic[T]):
    """Name -> object for a plug-in kind that is not a decorated component class: LLM providers
    (factories), population sources (builders), candidate retrievers, RecUserSim actions and tools.

    Entries are the `crsim.<kind>` entry points of installed distributions (crsim's built-ins are
    declared there too, in pyproject.toml): the name is the entry's name, the object is what its
    value `module:attr` names, imported only when that name is looked up. `add` registers one in
    code (a test, a notebook); `temporarily()` forgets those again.
    """

    def __init__(self, kind: str, what: str) -> None:
        self.kind = kind
        self.what = what
        self._added: dict[str, T] = {}
        self._loaded: dict[str, T] = {}
        self._entry_points: dict[str, EntryPoint] | None = None
        _ALL_CATALOGUES.append(self)

    @property
    def group(self) -> str:
        """The entry-point group plug-ins declare their entries in."""
        return f"crsim.{self.kind}"

    def _entries(self) -> dict[str, EntryPoint]:
        """The installed entry points of the group by name (read once, not loaded)."""
        if self._entry_points is None:
            self._entry_points = {entry.name: entry for entry in entry_points(group=self.group)}
        return self._entry_points

    def names(self) -> list[str]:
        """Every name, without importing any entry."""
        return sorted({*self._entries(), *self._added})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def add(self, name: str, value: T) -> T:
        """Register `value` under `name` in code; a name already taken is a ValueError."""
        if name in self.names():
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._added[name] = value
        return value

    def get(self, name: str) -> T:
        """The object named `name`; an unknown name is a ConfigError listing the known ones."""
        if name in self._added:
            return self._added[name]
        if name not in self._loaded:
            entry = self._entries().get(name)
            if entry is None:
                known = ", ".join(self.names()) or "none"
                hint = (
                    ""
                    if self._entries()
                    else f" (no {self.group} entry points are installed: reinstall crsim)"
                )
                raise ConfigError(f"unknown {self.what} {name!r}; expected one of: {known}{hint}")
            self._loaded[name] = entry.load()
        return self._loaded[name]

    def snapshot(self) -> dict[str, T]:
        return dict(self._added)

    def restore(self, snapshot: dict[str, T]) -> None:
        self._added = dict(snapshot)


# The registries of the three experiment kinds. Their typed views (the same objects, as
# `Registry[CRS]`, `Registry[UserSimulator]`, `Registry[Metric | Evaluator]`) and typed decorators,
# which mypy checks against the kind's protocol, live beside the protocols: `crsim.crs.base`,
# `crsim.sim.base`, `crsim.eval.metrics.base`. These untyped names stay for plug-ins that import them.
crs_registry: Registry[Any] = Registry("crs")
simulator_registry: Registry[Any] = Registry("simulator")
metric_registry: Registry[Any] = Registry("metric")

crs = crs_registry.register
simulator = simulator_registry.register
metric = metric_registry.register


@contextmanager
def temporarily() -> Iterator[None]:
    """Inside the block, components may be registered; after it every registry is as before.

    For tests (tests/conftest.py wraps every test in it), so a test component never leaks into
    the next test.
    """
    snapshots = [(registry, registry.snapshot()) for registry in _ALL_REGISTRIES]
    catalogues = [(catalogue, catalogue.snapshot()) for catalogue in _ALL_CATALOGUES]
    try:
        yield
    finally:
        for registry, snapshot in snapshots:
            registry.restore(snapshot)
        for catalogue, added in catalogues:
            catalogue.restore(added)
