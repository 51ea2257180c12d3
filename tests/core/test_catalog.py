"""crsim.cli.catalog: every kind and component is found through the registries, and every argument of every
built-in component says what it does (issue 20 item 2)."""

from __future__ import annotations

import pytest
from pydantic import Field

from crsim.cli.catalog import component_infos, describe, kind_names
from crsim.core.errors import ConfigError
from crsim.core.plugins import BUILTINS, Params, registry_of
from crsim.sim.base import simulator


def _builtin_components() -> list[tuple[str, str, type]]:
    found = []
    for kind, entries in BUILTINS.items():
        registry = registry_of(kind)
        if registry.components:
            found += [(kind, name, registry.get(name)) for name in entries]
    return found


def test_every_kind_of_the_table_is_listed() -> None:
    assert set(BUILTINS) <= set(kind_names())
    assert {"simulator", "crs", "metric", "annotator", "dataset", "rubric", "domain"} <= set(kind_names())


@pytest.mark.parametrize(("kind", "name", "cls"), _builtin_components())
def test_every_argument_of_every_builtin_component_is_described(kind: str, name: str, cls: type) -> None:
    undescribed = [
        field for field, info in cls.Params.model_fields.items() if not (info.description or "").strip()
    ]
    assert not undescribed, f"{kind} {name!r}: Field(description=...) missing for {undescribed}"


def test_a_registered_component_is_listed_and_described_with_its_arguments() -> None:
    @simulator("echo_for_catalog")
    class Echo:
        """Repeats the CRS.

        Second paragraph, not shown."""

        class Params(Params):
            turns: int = Field(3, ge=1, description="Replies before it ends.")
            mode: str | None = Field(None, description="A mode.")

    listed = {(info.kind, info.name): info for info in component_infos("simulators")}
    assert listed["simulator", "echo_for_catalog"].summary.startswith("Repeats the CRS.")
    (info,) = describe("echo_for_catalog")
    assert (info.kind, info.origin, info.doc) == (
        "simulator",
        f"{__name__}.{Echo.__qualname__}",
        "Repeats the CRS.",
    )
    assert [(p.name, p.type, p.default, p.constraints, p.description) for p in info.params] == [
        ("turns", "int", "3", ">= 1", "Replies before it ends."),
        ("mode", "str | None", "None", "", "A mode."),
    ]
    assert not info.needs_llm


def test_a_name_used_by_two_kinds_describes_both_or_the_one_asked_for() -> None:
    assert {info.kind for info in describe("llm")} == {"crs", "annotator"}
    assert [info.kind for info in describe("crs:llm")] == ["crs"]
    (crs,) = describe("llm", kind="crss")
    assert crs.roles == ["crs"] and crs.needs_llm


def test_typos_get_the_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown component 'abuss' \(did you mean 'abus'\?\)"):
        describe("abuss")
    with pytest.raises(ConfigError, match=r"unknown kind 'simulatr'.*did you mean 'simulator'"):
        component_infos("simulatr")
