"""The plug-in contract: built-ins are entry points, reachable by name, loaded lazily; tests clean up.

Where the entry points are read from: `pyproject.toml` is the declaration. The installed metadata
(`importlib.metadata`) is what the registry reads at run time, but it reflects this tree only when the
installed `crsim` distribution was installed from this tree (an editable install of another checkout,
or one made before `pyproject.toml` last changed, shows other entry points). So the tests check the
declaration parsed with `tomllib` against the decorated classes, and additionally check the installed
metadata equals the declaration when the installed distribution points at this tree.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib import import_module
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import pytest

from crsim import registry
from crsim.errors import ConfigError
from crsim.registry import Params, Registry

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("crs", "simulator", "metric", "annotator", "dataset")


def _declared() -> dict[str, dict[str, str]]:
    """`[project.entry-points."crsim.<kind>"]` of pyproject.toml, by kind."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = project.get("entry-points", {})
    return {kind: dict(groups.get(f"crsim.{kind}", {})) for kind in KINDS}


def _decorated() -> dict[str, dict[str, str]]:
    """Every `@<kind>("name")` class under src/, as name -> "module:Class", found with ast."""
    found: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
    for path in sorted((ROOT / "src").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Name)
                    and deco.func.id in KINDS
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    name = str(deco.args[0].value)
                    assert name not in found[deco.func.id], f"{deco.func.id} {name!r} decorated twice"
                    found[deco.func.id][name] = f"{module}:{node.name}"
    return found


def _registry(kind: str) -> Registry[Any]:
    modules = {
        "crs": "crsim.registry",
        "simulator": "crsim.registry",
        "metric": "crsim.registry",
        "annotator": "crsim.data.augment.base",
        "dataset": "crsim.data.datasets.base",
    }
    reg = getattr(import_module(modules[kind]), f"{kind}_registry")
    assert isinstance(reg, Registry)
    return reg


def test_the_scan_finds_the_builtins() -> None:
    # Guards the ast scan itself: if it found nothing the next test would pass vacuously.
    decorated = _decorated()
    assert decorated["simulator"]["abus"] == "crsim.sim.agenda.simulator:AgendaBasedSimulator"
    assert all(decorated[kind] for kind in KINDS)


def test_every_decorated_class_is_declared_as_its_entry_point() -> None:
    assert _declared() == _decorated()


@pytest.mark.parametrize("kind", KINDS)
def test_every_entry_point_resolves_to_the_class_decorated_with_its_name(kind: str) -> None:
    reg = _registry(kind)
    for name, target in _declared()[kind].items():
        module, _, qualname = target.partition(":")
        cls = getattr(import_module(module), qualname)
        assert reg.get(name) is cls
        assert cls.registry_name == name


def test_installed_metadata_matches_the_declaration_when_installed_from_this_tree() -> None:
    try:
        dist = distribution("crsim")
    except PackageNotFoundError:
        pytest.skip("crsim is not installed")
    direct_url = dist.read_text("direct_url.json")
    url = json.loads(direct_url)["url"] if direct_url else ""
    if url.removeprefix("file://").rstrip("/") != str(ROOT):
        pytest.skip(f"the installed crsim comes from {url or 'a wheel'}, not this tree")
    installed: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
    for entry in dist.entry_points:
        if entry.group.startswith("crsim."):
            installed[entry.group.removeprefix("crsim.")][entry.name] = entry.value
    assert installed == _declared(), "reinstall (`pip install -e .`): the metadata is stale"


def test_naming_one_component_imports_only_its_module() -> None:
    code = (
        "import sys\n"
        "from crsim.registry import simulator_registry\n"
        "simulator_registry.get('abus')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('crsim.sim.', 'crsim.crs.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert "crsim.sim.agenda.simulator" in out
    assert "crsim.sim.recusersim" not in out
    assert "crsim.sim.prompt" not in out
    assert "crsim.crs.llm" not in out


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown simulator 'nope'; expected one of: .*abus"):
        _registry("simulator").get("nope")


def test_temporarily_unregisters_what_was_registered_inside() -> None:
    reg = _registry("simulator")
    reg.get("abus")
    with registry.temporarily():

        @registry.simulator("plugins_test_echo")
        class Echo:
            class Params(Params):
                pass

        assert reg.get("plugins_test_echo") is Echo
    with pytest.raises(ConfigError, match="unknown simulator 'plugins_test_echo'"):
        reg.get("plugins_test_echo")
    # A built-in loaded before survives; one dropped by a restore comes back from its entry point.
    assert reg.get("abus").registry_name == "abus"
    reg.restore({})
    assert reg.get("abus").registry_name == "abus"


_LEAK_NAME = "plugins_test_leak"


def test_a_component_registered_by_a_test_is_gone_in_the_next_part1() -> None:
    @registry.metric(_LEAK_NAME)
    class Leak:
        class Params(Params):
            pass

    assert registry.metric_registry.get(_LEAK_NAME) is Leak


def test_a_component_registered_by_a_test_is_gone_in_the_next_part2() -> None:
    # Runs after part1 (pytest keeps file order): the autouse fixture in conftest restored the registry.
    with pytest.raises(ConfigError, match=_LEAK_NAME):
        registry.metric_registry.get(_LEAK_NAME)


def _run(tmp_path: Path, config_text: str) -> tuple[int, str, Path]:
    from typer.testing import CliRunner

    from crsim.cli import app

    config = tmp_path / "c.yaml"
    config.write_text(config_text, encoding="utf-8")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(run_dir), "--users", "2"])
    return result.exit_code, result.output, run_dir


def _no_dialogue_written(run_dir: Path) -> bool:
    records = run_dir / "dialogues.jsonl"
    return not records.exists() or records.read_bytes() == b""


def test_a_simulator_with_a_wrong_constructor_is_a_located_config_error(tmp_path: Path) -> None:
    from crsim.sim.agenda.simulator import AgendaBasedSimulator

    @registry.simulator("plugins_test_no_seed")
    class NoSeed(AgendaBasedSimulator):
        def __init__(self, params: Any, domain: Any) -> None:  # the build layer also passes a seed
            super().__init__(params, domain, 0)

    code, out, run_dir = _run(tmp_path, "simulators: [{name: abus}, {name: plugins_test_no_seed}]\n")
    assert code == 2, out
    assert "simulators[1]: simulator 'plugins_test_no_seed'" in out and "NoSeed" in out, out
    assert "cannot be constructed as Class(params, domain, seed" in out and "Traceback" not in out
    assert _no_dialogue_written(run_dir)


def test_a_crs_with_a_wrong_constructor_is_a_located_config_error(tmp_path: Path) -> None:
    from crsim.crs.popular import PopularCRS

    @registry.crs("plugins_test_crs_kw")
    class KeywordOnly(PopularCRS):
        def __init__(self, *, params: Any, domain: Any) -> None:
            super().__init__(params, domain)

    code, out, run_dir = _run(tmp_path, "crss: [{name: popular}, {name: plugins_test_crs_kw}]\n")
    assert code == 2, out
    assert "crss[1]: crs 'plugins_test_crs_kw'" in out and "KeywordOnly" in out, out
    assert _no_dialogue_written(run_dir)


def test_a_metric_with_a_wrong_constructor_is_a_located_config_error(tmp_path: Path) -> None:
    from crsim.eval.metrics.utility import Turns

    @registry.metric("plugins_test_metric_extra")
    class NeedsDomain(Turns):
        def __init__(self, params: Any, domain: Any) -> None:
            super().__init__(params)

    code, out, run_dir = _run(tmp_path, "metrics: [{name: turns}, {name: plugins_test_metric_extra}]\n")
    assert code == 2, out
    assert "metrics[1]: metric 'plugins_test_metric_extra'" in out and "NeedsDomain" in out, out
    assert _no_dialogue_written(run_dir)


def test_needs_llm_without_llm_roles_is_a_located_config_error(tmp_path: Path) -> None:
    from crsim.crs.popular import PopularCRS

    @registry.crs("plugins_test_no_roles")
    class NoRoles(PopularCRS):
        needs_llm = True  # but no llm_roles(params): the build cannot know which models to check

    code, out, run_dir = _run(tmp_path, "crss: [{name: plugins_test_no_roles}]\n")
    assert code == 2, out
    assert "crss[0]: " in out and "NoRoles sets `needs_llm` but defines no `llm_roles(params)`" in out, out
    assert _no_dialogue_written(run_dir)


@pytest.mark.parametrize("kind", KINDS)
def test_builtins_that_use_models_name_their_roles(kind: str) -> None:
    reg = _registry(kind)
    for name in reg.names():
        cls = reg.get(name)
        try:
            params = cls.Params()
        except Exception:  # noqa: BLE001  (arguments without defaults: nothing to call llm_roles with)
            continue
        roles = registry.llm_roles_of(cls, params, name)
        # An empty list is fine: abus declares `needs_llm` but its default (rule-based) NLU/NLG call none.
        assert roles is None or all(isinstance(r, str) and r for r in roles), (kind, name, roles)
