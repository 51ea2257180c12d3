"""What components crsim knows: every registry's names, and a component's arguments (`crsim list`,
`crsim describe`).

The kinds are `crsim.core.plugins.KINDS`; each kind's registry lists its entries without importing them.
Component kinds show their classes' docstrings and `Params`; other kinds their objects' docstrings;
rubrics and domains a richer line of their own.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from crsim.core.errors import ConfigError
from crsim.core.plugins import KINDS, Registry, registry_of

__all__ = [
    "ComponentInfo",
    "ParamInfo",
    "component_infos",
    "describe",
    "kind_names",
    "params_of",
]

#: Plural names people type for a kind (`crsim list metrics`), beside the registry's own kind name.
_ALIASES = {"crss": "crs", "evaluator": "metric", "evaluators": "metric"}


@dataclass(frozen=True)
class ParamInfo:
    """One argument of a component: name, type, default, constraints and what it does."""

    name: str
    type: str
    default: str
    description: str
    constraints: str = ""


@dataclass(frozen=True)
class ComponentInfo:
    """A registered component as `crsim list`/`describe` show it."""

    kind: str
    name: str
    summary: str
    origin: str = ""
    doc: str = ""
    needs_llm: bool = False
    roles: list[str] | None = None
    params: list[ParamInfo] = field(default_factory=list)


def _registries() -> dict[str, Registry[Any]]:
    """Every registry by kind (importing the module that makes each, not its entries)."""
    return {kind: registry_of(kind) for kind in KINDS}


def _catalogue_info(kind: str, catalogue: Registry[Any], name: str, detail: bool) -> ComponentInfo:
    """A catalogue entry (a factory, a function or a constant) as `crsim list`/`describe` show it."""
    value = catalogue.get(name)
    doc = (inspect.getdoc(value) if callable(value) else "") or ""
    origin = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', name)}"
    return ComponentInfo(
        kind, name, _first_line(doc) or catalogue.what, origin=origin if detail else "",
        doc=doc.split("\n\n")[0].strip() if detail else "",
    )  # fmt: skip


def _rubric_infos() -> list[ComponentInfo]:
    from crsim.eval.judge.rubric import load_rubric, shipped_rubrics

    infos = []
    for name in shipped_rubrics():
        rubric = load_rubric(name)
        aspects = ", ".join(rubric.aspect_names)
        infos.append(
            ComponentInfo(
                "rubric", name, _first_line(rubric.description), "crsim.eval.judge.rubrics",
                f"{rubric.description.strip()}\n\nAspects: {aspects}.",
            )
        )  # fmt: skip
    return infos


def _domain_infos() -> list[ComponentInfo]:
    from crsim.domains import known_domains

    return [ComponentInfo("domain", name, "an item domain", "crsim.domains") for name in known_domains()]


#: Kinds listed by their own function (richer than a registry's or catalogue's entries): kind -> it.
_OTHER_KINDS: dict[str, Callable[[], list[ComponentInfo]]] = {
    "rubric": _rubric_infos,
    "domain": _domain_infos,
}


def kind_names() -> list[str]:
    """Every kind, sorted."""
    return sorted(KINDS)


def _kind(name: str) -> str:
    """The kind a user typed (`metrics`, `crss`, `evaluators`, `simulator`) as a kind name."""
    known = kind_names()
    for candidate in (name, _ALIASES.get(name, ""), name.removesuffix("s")):
        if candidate in known:
            return candidate
    raise ConfigError(f"unknown kind {name!r}; expected one of: {', '.join(known)}{_suggest(name, known)}")


def _suggest(name: str, known: list[str]) -> str:
    from rapidfuzz import process

    best = process.extractOne(name, known, score_cutoff=60)
    return f" (did you mean {best[0]!r}?)" if best else ""


def component_infos(kind: str | None = None) -> list[ComponentInfo]:
    """Every component (of `kind` when given), with its one-line summary; sorted by kind and name."""
    kinds = [_kind(kind)] if kind else kind_names()
    registries = _registries()
    infos: list[ComponentInfo] = []
    for name in kinds:
        registry = registries[name]
        if name in _OTHER_KINDS:  # a table's listing says more
            infos += _OTHER_KINDS[name]()
        elif registry.components:
            infos += [_info(name, entry, registry.get(entry), detail=False) for entry in registry]
        else:
            infos += [_catalogue_info(name, registry, entry, detail=False) for entry in registry]
    return infos


def describe(name: str, kind: str | None = None) -> list[ComponentInfo]:
    """Everything about the component(s) called `name` (one per kind that has one; `kind:name` picks)."""
    if kind is None and ":" in name:
        kind, name = name.split(":", 1)
    registries = _registries()
    detailed: list[ComponentInfo] = []
    for each in [_kind(kind)] if kind else kind_names():
        registry = registries[each]
        if each in _OTHER_KINDS:
            detailed += [info for info in _OTHER_KINDS[each]() if info.name == name]
        elif name not in registry:
            continue
        elif registry.components:  # imports that module only
            detailed.append(_info(each, name, registry.get(name), detail=True))
        else:
            detailed.append(_catalogue_info(each, registry, name, detail=True))
    if not detailed:
        known = sorted({info.name for info in component_infos(kind)})
        raise ConfigError(f"unknown component {name!r}{_suggest(name, known)}; `crsim list` shows them all")
    return detailed


def _info(kind: str, name: str, cls: type, detail: bool) -> ComponentInfo:
    doc = inspect.getdoc(cls) or ""
    needs_llm = bool(getattr(cls, "needs_llm", False))
    params_model = getattr(cls, "Params", None)
    if not detail:
        return ComponentInfo(kind, name, _first_line(doc), needs_llm=needs_llm)
    return ComponentInfo(
        kind=kind,
        name=name,
        summary=_first_line(doc),
        origin=f"{cls.__module__}.{cls.__qualname__}",
        doc=doc.split("\n\n")[0].strip(),
        needs_llm=needs_llm,
        roles=_default_roles(cls, params_model) if needs_llm else None,
        params=params_of(params_model) if params_model is not None else [],
    )


def _default_roles(cls: type, params_model: type[BaseModel] | None) -> list[str] | None:
    """The LLM roles the component uses with its default arguments; None when they cannot be built."""
    from crsim.core.components import llm_roles_of

    try:
        params = params_model() if params_model is not None else None
        return llm_roles_of(cls, params) if params is not None else None
    except Exception:  # noqa: BLE001 - required arguments: the roles depend on them
        return None


def params_of(model: type[BaseModel]) -> list[ParamInfo]:
    """Every field of a `Params` model, in declaration order."""
    return [
        ParamInfo(
            name, _type_name(info.annotation), _default(info), info.description or "", _constraints(info)
        )
        for name, info in model.model_fields.items()
    ]


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        try:
            return repr(info.default_factory())  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
    if info.default is PydanticUndefined:
        return "required"
    value = info.default
    if isinstance(value, tuple):
        return repr(list(value))  # shown as a config writes it (`_type_name` says list too)
    return repr(value.value) if hasattr(value, "value") and not isinstance(value, BaseModel) else repr(value)


def _constraints(info: FieldInfo) -> str:
    symbols = {
        "ge": ">=",
        "gt": ">",
        "le": "<=",
        "lt": "<",
        "min_length": "min length",
        "max_length": "max length",
    }
    parts = []
    for item in info.metadata:
        for attribute, symbol in symbols.items():
            value = getattr(item, attribute, None)
            if value is not None:
                parts.append(f"{symbol} {value}")
    return ", ".join(parts)


def _type_name(annotation: Any) -> str:
    """A readable type: `int`, `str | None`, `list[str]` (also for `tuple[str, ...]`), `'a' | 'b'`."""
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is tuple and typing.get_args(annotation)[-1:] == (Ellipsis,):
        return f"list[{_type_name(typing.get_args(annotation)[0])}]"  # a config gives it as a list
    if origin is not None:
        args = ", ".join(_type_name(arg) for arg in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation))


def _first_line(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split()) if text else ""
