"""Plug-ins: one registry per kind, filled from one table of built-ins and from installed packages.

Every kind of plug-in (CRSs, simulators, metrics, annotators, dataset readers, LLM providers,
population sources, retrievers, domains, ...) is a `Registry`: name -> object. Its entries come from
three places, read in this order:

1. `BUILTINS` below: crsim's own, `name -> "module:attribute"` (or a module). Adding a built-in is one
   line here; nothing is reinstalled.
2. The `crsim.<kind>` entry points of installed distributions: third-party plug-ins. A built-in name
   cannot be taken by a plug-in (the built-in wins; `crsim list` shows where each entry comes from).
3. `register(name)` (a class decorator) or `add(name, value)` in code: a notebook, a test, or the
   module a table entry names (its decorator runs when it is imported).

Nothing is imported until its name is looked up, so naming one component does not import the others.
Component kinds (`COMPONENT_KINDS`) hold classes with a nested pydantic `Params` model (extra fields
forbidden); the registry validates a config's arguments against it, so a misspelt argument is an
error, and the validated arguments (defaults included) go into the run manifest.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from crsim.core.errors import ConfigError, did_you_mean


@dataclass(frozen=True)
class Kind:
    """A plug-in kind: what one entry is called, and the module that creates its registry."""

    what: str
    home: str
    components: bool = False


#: Every kind, with the module that holds its registry (imported when the kind is first asked for).
KINDS: dict[str, Kind] = {
    "crs": Kind("crs", "crsim.crs.base", components=True),
    "simulator": Kind("simulator", "crsim.sim.base", components=True),
    "metric": Kind("metric", "crsim.eval.metrics.base", components=True),
    "annotator": Kind("annotator", "crsim.eval.annotators.base", components=True),
    "dataset": Kind("dataset", "crsim.datasets.base", components=True),
    "llm_provider": Kind("LLM provider", "crsim.llm.providers.base"),
    "retriever": Kind("retriever", "crsim.crs.candidates"),
    "population_source": Kind("population source", "crsim.users.population"),
    "domain": Kind("domain", "crsim.domains"),
    "recusersim_action": Kind("user action", "crsim.sim.recusersim.actions"),
    "recusersim_tool": Kind("refinement tool", "crsim.sim.recusersim.refine"),
    "download": Kind("dataset to download", "crsim.datasets.download"),
    "rubric": Kind("rubric", "crsim.eval.judge.rubric"),
}

#: The kinds whose entries are classes with a `Params` model, built as `Class(params, ctx)`.
COMPONENT_KINDS = frozenset(kind for kind, spec in KINDS.items() if spec.components)

#: crsim's own plug-ins: kind -> name -> "module:attribute" (a bare module for domains and rubrics:
#: the package whose folder holds the file).
BUILTINS: dict[str, dict[str, str]] = {
    "crs": {
        "crs_arena": "crsim.crs.http.crs_arena:CRSArenaCRS",
        "degraded": "crsim.crs.degraded:DegradedCRS",
        "generic_http": "crsim.crs.http.generic:GenericHTTPCRS",
        "llm": "crsim.crs.llm:LLMCRS",
        "moviebot": "crsim.crs.http.moviebot:MovieBotCRS",
        "popular": "crsim.crs.popular:PopularCRS",
        "retrieval": "crsim.crs.retrieval:RetrievalCRS",
    },
    "simulator": {
        "abus": "crsim.sim.agenda.simulator:AgendaBasedSimulator",
        "llm_dual": "crsim.sim.prompt.dual:DualPromptSimulator",
        "llm_single": "crsim.sim.prompt.single:SinglePromptSimulator",
        "pepper": "crsim.sim.pepper.simulator:PepperSimulator",
        "recusersim": "crsim.sim.recusersim.simulator:RecUserSim",
        "target_biased": "crsim.sim.pepper.biased:TargetBiasedSimulator",
    },
    "metric": {
        "gcdf1": "crsim.studies.gcdf1.evaluator:Gcdf1Evaluator",
        "jaccard": "crsim.eval.metrics.recommendation:Jaccard",
        "judge": "crsim.eval.judge.evaluator:JudgeEvaluator",
        "learned_crsarena": "crsim.eval.learned.crsarena:LearnedCrsarena",
        "mrr": "crsim.eval.metrics.recommendation:MRR",
        "ndcg": "crsim.eval.metrics.recommendation:NDCG",
        "pc": "crsim.eval.metrics.coverage:PreferenceCoverage",
        "pc_gap": "crsim.eval.pepper:CoverageGap",
        "pc_subset": "crsim.eval.pepper:SubsetCoverage",
        "pcir": "crsim.eval.metrics.coverage:PreferenceCoverageIncreaseRate",
        "rdl": "crsim.eval.metrics.utility:RDL",
        "recall": "crsim.eval.metrics.recommendation:Recall",
        "requests_answered": "crsim.eval.metrics.requests:RequestsAnswered",
        "satisfaction": "crsim.eval.learned.satisfaction:Satisfaction",
        "satisfaction_overall": "crsim.eval.learned.satisfaction:SatisfactionOverall",
        "srrr": "crsim.eval.metrics.utility:SRRR",
        "success_rate": "crsim.eval.metrics.utility:SuccessRate",
        "task_success": "crsim.eval.metrics.requests:TaskSuccess",
        "turns": "crsim.eval.metrics.utility:Turns",
        "user_ratings": "crsim.eval.metrics.user_ratings:UserRatings",
    },
    "annotator": {
        "llm": "crsim.eval.annotators.llm:LLMAnnotator",
        "rules": "crsim.eval.annotators.rules:RuleAnnotator",
    },
    "dataset": {
        "crsarena_dial": "crsim.datasets.crsarena:CrsArenaDialReader",
        "crsarena_eval": "crsim.datasets.crsarena:CrsArenaEvalReader",
        "dialoguekit": "crsim.datasets.dialoguekit:DialogueKitReader",
        "iard": "crsim.datasets.iard:IardReader",
        "inspired": "crsim.datasets.inspired:InspiredReader",
        "moviebot": "crsim.datasets.moviebot:MovieBotReader",
        "opendialkg": "crsim.datasets.opendialkg:OpenDialKGReader",
        "redial": "crsim.datasets.redial:RedialReader",
    },
    "llm_provider": {
        "local": "crsim.llm.providers.local:create",
        "ollama": "crsim.llm.providers.ollama:create",
        "openai": "crsim.llm.providers.openai:create",
        "scripted": "crsim.llm.providers.scripted:create",
    },
    "retriever": {
        "embeddings": "crsim.crs.candidates:EmbeddingRetriever",
        "tfidf": "crsim.crs.candidates:TfidfRetriever",
    },
    "population_source": {
        "goals": "crsim.users.sources:goal_users",
        "iard": "crsim.users.sources:iard_users",
        "movielens": "crsim.users.sources:rating_users",
        "pepper": "crsim.users.sources:pepper_users",
        "ratings": "crsim.users.sources:rating_users",
        "redial": "crsim.users.sources:redial_users",
        "reviews": "crsim.users.sources:pepper_users",
    },
    "domain": {
        "hotels": "crsim.domains.hotels",
        "movies": "crsim.domains.movies",
        "restaurants": "crsim.domains.restaurants",
    },
    "recusersim_action": {
        "chit_chat": "crsim.sim.recusersim.actions:CHIT_CHAT",
        "clarify_preference": "crsim.sim.recusersim.actions:CLARIFY",
        "end_conversation": "crsim.sim.recusersim.actions:END",
        "inquire_attribute": "crsim.sim.recusersim.actions:INQUIRE",
        "negative_feedback": "crsim.sim.recusersim.actions:NEGATIVE",
        "positive_feedback": "crsim.sim.recusersim.actions:POSITIVE",
        "request_recommendation": "crsim.sim.recusersim.actions:REQUEST",
    },
    "recusersim_tool": {
        "formality": "crsim.sim.recusersim.refine:FormalityTool",
        "length": "crsim.sim.recusersim.refine:LengthTool",
        "richness": "crsim.sim.recusersim.refine:RichnessTool",
    },
    "download": {
        "crsarena_dial": "crsim.datasets.download:CRSARENA_DIAL",
        "crsarena_eval": "crsim.datasets.download:CRSARENA_EVAL",
        "iard": "crsim.datasets.download:IARD",
        "inspired": "crsim.datasets.download:INSPIRED",
        "movielens": "crsim.datasets.download:MOVIELENS",
        "opendialkg": "crsim.datasets.download:OPENDIALKG",
        "redial": "crsim.datasets.download:REDIAL",
        "usersimcrs": "crsim.datasets.download:USERSIMCRS",
    },
    "rubric": {
        "crsarena7": "crsim.eval.judge.rubrics",
        "pepper3": "crsim.eval.judge.rubrics",
        "quality5": "crsim.eval.judge.rubrics",
        "recusersim3": "crsim.eval.judge.rubrics",
    },
}


class Params(BaseModel):
    """Base for component arguments: unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ComponentSpec(BaseModel):
    """A component named in a config: registry name plus its arguments. A bare name stands for the
    component with its default arguments (`crss: [popular, retrieval]`)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = {}
    id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @property
    def label(self) -> str:
        """How records and tables call it: `id` when given (needed when one name appears twice)."""
        return self.id or self.name


class Component(Protocol):
    Params: ClassVar[type[Params]]


T = TypeVar("T")

#: kind -> its registry, once made.
_REGISTRIES: dict[str, Registry[Any]] = {}


def _load_target(target: str) -> Any:
    """The object `module:attribute` (or the module `module`) names."""
    module, _, attribute = target.partition(":")
    loaded = import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


class Registry(Generic[T]):
    """Name -> plug-in, for one kind (see the module docstring for where entries come from)."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown plug-in kind {kind!r}; add it to crsim.core.plugins.KINDS")
        if kind in _REGISTRIES:
            raise ValueError(f"the {kind} registry exists already (crsim.core.plugins.registry_of)")
        self.kind = kind
        self.what = KINDS[kind].what
        self.components = KINDS[kind].components
        self._added: dict[str, T] = {}
        self._loaded: dict[str, T] = {}
        self._installed: dict[str, str] | None = None
        _REGISTRIES[kind] = self

    @property
    def group(self) -> str:
        """The entry-point group third-party packages declare their entries in."""
        return f"crsim.{self.kind}"

    def builtins(self) -> dict[str, str]:
        """crsim's own entries: name -> "module:attribute"."""
        return BUILTINS.get(self.kind, {})

    def installed(self) -> dict[str, str]:
        """Third-party entries from installed distributions' entry points (read once, not loaded)."""
        if self._installed is None:
            found = {entry.name: entry.value for entry in entry_points(group=self.group)}
            self._installed = {name: value for name, value in found.items() if name not in self.builtins()}
        return self._installed

    def origin(self, name: str) -> str:
        """Where an entry comes from: "built-in", "plug-in" (an installed package) or "code"."""
        if name in self.builtins():
            return "built-in"
        return "plug-in" if name in self.installed() else "code"

    def register(self, name: str) -> Callable[[T], T]:
        """A class decorator registering a component class (with a nested `Params`) under `name`."""

        def decorator(cls: T) -> T:
            if not isinstance(getattr(cls, "Params", None), type) or not issubclass(cls.Params, BaseModel):  # type: ignore[attr-defined]
                shown = getattr(cls, "__name__", cls)
                raise TypeError(f"{self.kind} {name!r}: {shown} needs a nested `Params` pydantic model")
            existing = self._added.get(name)
            if existing is not None and existing is not cls:
                shown = getattr(existing, "__qualname__", existing)
                raise ValueError(f"{self.kind} {name!r} is already registered by {shown}")
            self._added[name] = cls
            cls.registry_name = name  # type: ignore[attr-defined]
            cls.registry_kind = self.kind  # type: ignore[attr-defined]
            return cls

        return decorator

    def add(self, name: str, value: T) -> T:
        """Register `value` under `name` in code; a name already taken is a ValueError."""
        if name in self.names():
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._added[name] = value
        return value

    def names(self) -> list[str]:
        """Every name, without importing any entry."""
        return sorted({*self.builtins(), *self.installed(), *self._added})

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str) -> T:
        """The entry named `name`, imported on first use; unknown names are a ConfigError."""
        if name in self._loaded:
            return self._loaded[name]
        target = self.builtins().get(name) or self.installed().get(name)
        if target is None:
            if name in self._added:
                return self._added[name]
            known = ", ".join(self.names()) or "none"
            raise ConfigError(
                f"unknown {self.what} {name!r}{did_you_mean(name, self.names())}; expected one of: {known}"
            )
        try:
            loaded = _load_target(target)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{self.what} {name!r} = {target!r} cannot be loaded: {exc}") from None
        if self.components:
            registered = self._added.get(name)
            if registered is None and self._decorated_as(loaded, name):
                registered = loaded  # its module was imported before and the class dropped by `restore`
            if registered is not loaded:
                raise ConfigError(
                    f"{self.what} {name!r} = {target!r} does not name a class decorated with "
                    f"@{self.kind}({name!r})"
                )
        self._loaded[name] = loaded
        return loaded  # type: ignore[no-any-return]

    def _decorated_as(self, cls: object, name: str) -> bool:
        kind, registered_as = getattr(cls, "registry_kind", None), getattr(cls, "registry_name", None)
        return kind == self.kind and registered_as == name

    def snapshot(self) -> dict[str, T]:
        """The entries registered in code now (for `restore`)."""
        return dict(self._added)

    def restore(self, snapshot: dict[str, T]) -> None:
        """Forget every entry registered in code since `snapshot` was taken."""
        self._added = dict(snapshot)

    def check_construction(self, name: str, where: str, call: str, *args: Any, **kwargs: Any) -> None:
        """Fail now, naming the config field, if `name`'s class cannot be called with these arguments.

        The build layer (`crsim.core.components.build`) calls this with the arguments it will pass (`call`
        shows them: `Class(params, ctx)`), so a plug-in with a wrong constructor signature is a config
        error before any dialogue instead of a TypeError in every one.
        """
        cls = self.get(name)
        try:
            signature = inspect.signature(cls)  # type: ignore[arg-type]
        except (TypeError, ValueError):  # no introspectable signature (e.g. a C type): cannot check
            return
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            qualname = f"{cls.__module__}.{cls.__qualname__}"  # type: ignore[attr-defined]
            raise ConfigError(
                f"{where}: {self.kind} {name!r} ({qualname}) cannot be constructed as {call}: {exc}; "
                f"its signature is {cls.__name__}{signature}"  # type: ignore[attr-defined]
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


def registry_of(kind: str) -> Registry[Any]:
    """The registry of `kind`, importing the module that makes it on first use."""
    if kind not in _REGISTRIES:
        if kind not in KINDS:
            raise ConfigError(f"unknown plug-in kind {kind!r}{did_you_mean(kind, KINDS)}")
        import_module(KINDS[kind].home)
    return _REGISTRIES[kind]


@contextmanager
def temporarily() -> Iterator[None]:
    """Inside the block, entries may be registered; after it every registry is as before.

    For tests (tests/conftest.py wraps every test in it), so a test component never leaks into
    the next test.
    """
    snapshots = [(registry, registry.snapshot()) for registry in _REGISTRIES.values()]
    known = set(_REGISTRIES)
    try:
        yield
    finally:
        for registry, snapshot in snapshots:
            registry.restore(snapshot)
        for kind in set(_REGISTRIES) - known:  # made inside the block: forget what was added in code
            _REGISTRIES[kind].restore({})
