"""The plug-in contract: built-ins are listed in one table in code (`crsim.registry.BUILTINS`), third-party
plug-ins are entry points; both are reachable by name and loaded lazily; tests clean up."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
import tomllib
from importlib import import_module
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from crsim import registry
from crsim.components import BuildContext, llm_roles_of
from crsim.crs.base import crs
from crsim.errors import ConfigError
from crsim.eval.metrics.base import metric
from crsim.registry import BUILTINS, KINDS, Params, Registry, registry_of
from crsim.sim.base import simulator

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ("crs", "simulator", "metric", "annotator", "dataset")


def _declared() -> dict[str, dict[str, str]]:
    """The built-in table's component kinds."""
    return {kind: dict(BUILTINS[kind]) for kind in COMPONENTS}


def _decorated() -> dict[str, dict[str, str]]:
    """Every `@<kind>("name")` class under src/, as name -> "module:Class", found with ast."""
    found: dict[str, dict[str, str]] = {kind: {} for kind in COMPONENTS}
    for path in sorted((ROOT / "src").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Name)
                    and deco.func.id in COMPONENTS
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    name = str(deco.args[0].value)
                    assert name not in found[deco.func.id], f"{deco.func.id} {name!r} decorated twice"
                    found[deco.func.id][name] = f"{module}:{node.name}"
    return found


def _registry(kind: str) -> Registry[Any]:
    reg = registry_of(kind)
    assert isinstance(reg, Registry) and reg.kind == kind
    return reg


def test_the_scan_finds_the_builtins() -> None:
    # Guards the ast scan itself: if it found nothing the next test would pass vacuously.
    decorated = _decorated()
    assert decorated["simulator"]["abus"] == "crsim.sim.agenda.simulator:AgendaBasedSimulator"
    assert all(decorated[kind] for kind in COMPONENTS)


def test_every_decorated_class_is_in_the_builtins_table() -> None:
    assert _declared() == _decorated()


@pytest.mark.parametrize("kind", COMPONENTS)
def test_every_builtin_resolves_to_the_class_decorated_with_its_name(kind: str) -> None:
    reg = _registry(kind)
    for name, target in _declared()[kind].items():
        module, _, qualname = target.partition(":")
        cls = getattr(import_module(module), qualname)
        assert reg.get(name) is cls
        assert cls.registry_name == name


def test_crsim_declares_no_entry_points_of_its_own() -> None:
    # Built-ins live in the table, so adding one needs no reinstall; entry points are for third parties.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(group.startswith("crsim.") for group in project.get("entry-points", {}))


def test_a_stale_installed_entry_point_of_a_builtin_name_does_not_shadow_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reg = _registry("simulator")
    monkeypatch.setattr(reg, "_installed", None)
    from importlib.metadata import EntryPoint

    stale = [EntryPoint(name="abus", value="crsim.old.place:Gone", group="crsim.simulator")]
    monkeypatch.setattr(registry, "entry_points", lambda group: stale)
    assert reg.installed() == {} and reg.origin("abus") == "built-in"
    assert reg.get("abus").registry_name == "abus"


def test_naming_one_component_imports_only_its_module() -> None:
    code = (
        "import sys\n"
        "from crsim.sim.base import simulator_registry\n"
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

        @simulator("plugins_test_echo")
        class Echo:
            class Params(Params):
                pass

        assert reg.get("plugins_test_echo") is Echo
    with pytest.raises(ConfigError, match="unknown simulator 'plugins_test_echo'"):
        reg.get("plugins_test_echo")
    # A built-in loaded before survives; one dropped by a restore comes back from the table.
    assert reg.get("abus").registry_name == "abus"
    reg.restore({})
    assert reg.get("abus").registry_name == "abus"


_LEAK_NAME = "plugins_test_leak"


def test_a_component_registered_by_a_test_is_gone_in_the_next_part1() -> None:
    @metric(_LEAK_NAME)
    class Leak:
        class Params(Params):
            pass

    assert _registry("metric").get(_LEAK_NAME) is Leak


def test_a_component_registered_by_a_test_is_gone_in_the_next_part2() -> None:
    # Runs after part1 (pytest keeps file order): the autouse fixture in conftest restored the registry.
    with pytest.raises(ConfigError, match=_LEAK_NAME):
        _registry("metric").get(_LEAK_NAME)


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

    @simulator("plugins_test_old_style")
    class OldStyle(AgendaBasedSimulator):
        # The former simulator signature: the build layer now passes one context, not domain and seed.
        def __init__(self, params: Any, domain: Any, seed: int) -> None:
            super().__init__(params, BuildContext(domain, seed=seed))

    code, out, run_dir = _run(tmp_path, "simulators: [{name: abus}, {name: plugins_test_old_style}]\n")
    assert code == 2, out
    assert "simulators[1]: simulator 'plugins_test_old_style'" in out and "OldStyle" in out, out
    assert "cannot be constructed as Class(params, ctx)" in out and "Traceback" not in out
    assert _no_dialogue_written(run_dir)


def test_a_crs_with_a_wrong_constructor_is_a_located_config_error(tmp_path: Path) -> None:
    from crsim.crs.popular import PopularCRS

    @crs("plugins_test_crs_kw")
    class KeywordOnly(PopularCRS):
        def __init__(self, *, params: Any, ctx: Any) -> None:
            super().__init__(params, ctx)

    code, out, run_dir = _run(tmp_path, "crss: [{name: popular}, {name: plugins_test_crs_kw}]\n")
    assert code == 2, out
    assert "crss[1]: crs 'plugins_test_crs_kw'" in out and "KeywordOnly" in out, out
    assert _no_dialogue_written(run_dir)


def test_a_metric_with_a_wrong_constructor_is_a_located_config_error(tmp_path: Path) -> None:
    from crsim.eval.metrics.utility import Turns

    @metric("plugins_test_metric_extra")
    class NeedsDomain(Turns):
        def __init__(self, params: Any, ctx: Any, domain: Any) -> None:
            super().__init__(params, ctx)

    code, out, run_dir = _run(tmp_path, "metrics: [{name: turns}, {name: plugins_test_metric_extra}]\n")
    assert code == 2, out
    assert "metrics[1]: metric 'plugins_test_metric_extra'" in out and "NeedsDomain" in out, out
    assert _no_dialogue_written(run_dir)


def test_a_component_that_does_not_declare_its_model_use_is_a_located_config_error(tmp_path: Path) -> None:
    @crs("plugins_test_no_roles")
    class NoRoles:  # follows no base class and leaves out the protocol's `needs_llm` / `llm_roles`
        class Params(Params):
            pass

        def __init__(self, params: Any, ctx: Any) -> None:
            self.params = params

    code, out, run_dir = _run(tmp_path, "crss: [{name: plugins_test_no_roles}]\n")
    assert code == 2, out
    assert "crss[0]: crs 'plugins_test_no_roles'" in out and "does not declare needs_llm and llm_roles" in out
    assert _no_dialogue_written(run_dir)


def test_a_model_role_the_settings_cannot_build_fails_before_any_dialogue(tmp_path: Path) -> None:
    from crsim.crs.popular import PopularCRS

    @crs("plugins_test_model_user")
    class ModelUser(PopularCRS):
        needs_llm = True

        @classmethod
        def llm_roles(cls, params: Any) -> list[str]:
            return ["crs"]

    missing = tmp_path / "missing.gguf"
    code, out, run_dir = _run(
        tmp_path,
        f"crss: [{{name: plugins_test_model_user}}]\n"
        f"llm: {{default: {{provider: local, model_path: {missing}}}}}\n",
    )
    assert code == 2, out
    assert "crss[0]: " in out and "Traceback" not in out, out
    assert _no_dialogue_written(run_dir)


def test_every_kind_is_built_the_same_way_with_the_context(domain: Any) -> None:
    from crsim.components import build
    from crsim.crs.base import crs_registry
    from crsim.eval.metrics.base import metric_registry
    from crsim.registry import ComponentSpec
    from crsim.sim.base import simulator_registry

    ctx = BuildContext(domain, seed=5)
    crs = build(crs_registry, ComponentSpec(name="popular"), ctx, "crss[0]")
    assert crs.domain is domain  # type: ignore[attr-defined]
    sim = build(simulator_registry, ComponentSpec(name="abus"), ctx.for_dialogue(11), "simulators[0]")
    assert sim.seed == 11 and sim.domain is domain  # type: ignore[attr-defined]
    metric = build(metric_registry, ComponentSpec(name="recall", args={"k": 3}), ctx, "metrics[0]")
    assert metric.label == "Recall@(t,3)"
    with pytest.raises(ConfigError, match=r"crss\[0\]: crs 'llm' uses a language model; give LLM settings"):
        build(crs_registry, ComponentSpec(name="llm"), ctx, "crss[0]")
    with pytest.raises(ConfigError, match="needs a domain"):
        build(crs_registry, ComponentSpec(name="popular"), BuildContext(), "crss[0]")


@pytest.mark.parametrize("kind", [kind for kind in COMPONENTS if kind != "dataset"])
def test_builtins_that_use_models_name_their_roles(kind: str) -> None:
    reg = _registry(kind)
    for name in reg.names():
        cls = reg.get(name)
        try:
            params = cls.Params()
        except Exception:  # noqa: BLE001  (arguments without defaults: nothing to call llm_roles with)
            continue
        assert isinstance(cls.needs_llm, bool), (kind, name)  # the protocol's declaration, no getattr
        roles = llm_roles_of(cls, params)
        # An empty list is fine: abus declares `needs_llm` but its default (rule-based) NLU/NLG call none.
        assert all(isinstance(r, str) and r for r in roles), (kind, name, roles)
        assert cls.needs_llm or not roles, (kind, name, roles)


# --- the catalogues: plug-in kinds that are named objects rather than decorated component classes ---


def _declared_catalogue(kind: str) -> dict[str, Any]:
    """The objects the built-in table names for `kind`, imported here."""
    found = {}
    for name, target in BUILTINS[kind].items():
        module, _, attr = target.partition(":")
        found[name] = getattr(import_module(module), attr) if attr else import_module(module)
    return found


def test_every_builtin_entry_is_what_its_kind_needs() -> None:
    from crsim.crs.candidates import CandidateRetriever
    from crsim.data.download import DatasetSource
    from crsim.sim.recusersim.actions import UserAction
    from crsim.sim.recusersim.refine import RefinementTool

    providers = _declared_catalogue("llm_provider")
    assert set(providers) == {"openai", "ollama", "local", "scripted"} and all(
        map(callable, providers.values())
    )
    sources = _declared_catalogue("population_source")
    assert set(sources) == {"movielens", "ratings", "goals", "redial", "iard", "pepper", "reviews"}
    assert all(map(callable, sources.values()))
    retrievers = _declared_catalogue("retriever")
    assert set(retrievers) == {"tfidf", "embeddings"}
    assert all(issubclass(cls, CandidateRetriever) for cls in retrievers.values())
    for name, action in _declared_catalogue("recusersim_action").items():
        assert isinstance(action, UserAction) and action.name == name
    for name, tool in _declared_catalogue("recusersim_tool").items():
        assert issubclass(tool, RefinementTool) and tool.name == name
    for name, source in _declared_catalogue("download").items():
        assert isinstance(source, DatasetSource) and source.name == name
    for name, package in _declared_catalogue("rubric").items():
        assert files(package).joinpath(f"{name}.yaml").is_file(), name
    for name, package in _declared_catalogue("domain").items():
        assert files(package).joinpath("domain.yaml").is_file(), name


def test_no_builtin_catalogue_entry_is_left_undeclared() -> None:
    # What the modules define must be reachable by name through the entry points, as the built-in
    # components are: every module-level UserAction, every named RefinementTool, every retriever.
    from crsim.crs import candidates
    from crsim.data import download
    from crsim.sim.recusersim import actions, refine

    defined_actions = {v.name for v in vars(actions).values() if isinstance(v, actions.UserAction)}
    assert defined_actions == set(_declared_catalogue("recusersim_action"))
    defined_tools = {
        v.name
        for v in vars(refine).values()
        if isinstance(v, type) and issubclass(v, refine.RefinementTool) and v is not refine.RefinementTool
    }
    assert defined_tools == set(_declared_catalogue("recusersim_tool"))
    defined_retrievers = {
        v
        for v in vars(candidates).values()
        if isinstance(v, type) and issubclass(v, candidates.CandidateRetriever) and not inspect.isabstract(v)
    }
    assert defined_retrievers == set(_declared_catalogue("retriever").values())
    # openai_protocol, openai_sdk: the `openai` provider's wire protocol and SDK path; direct_client:
    # the providers' HTTP client
    not_providers = ("__init__", "base", "openai_protocol", "openai_sdk", "direct_client")
    providers = {
        p.stem for p in (ROOT / "src/crsim/llm/providers").glob("*.py") if p.stem not in not_providers
    }
    assert providers == set(_declared_catalogue("llm_provider"))
    defined_sources = {v.name for v in vars(download).values() if isinstance(v, download.DatasetSource)}
    assert defined_sources == set(_declared_catalogue("download"))
    shipped = {p.stem for p in (ROOT / "src/crsim/eval/judge/rubrics").glob("*.yaml")}
    assert shipped == set(_declared_catalogue("rubric"))
    domains = {p.parent.name for p in (ROOT / "src/crsim/data/domains").glob("*/domain.yaml")}
    assert domains == set(_declared_catalogue("domain"))


def test_every_kind_has_one_registry_reading_its_group() -> None:
    for kind, spec in KINDS.items():
        reg = registry_of(kind)
        assert reg.group == f"crsim.{kind}" and reg.components == spec.components
        assert set(BUILTINS[kind]) <= set(reg.names())


def test_an_entry_added_in_code_is_gone_after_temporarily() -> None:
    from crsim.sim.recusersim.actions import UserAction, get_action, register_action

    with registry.temporarily():
        action = register_action(UserAction("plugins_test_wave", "wave", "Wave at the recommender."))
        assert get_action("plugins_test_wave") is action
    with pytest.raises(ConfigError, match="actions\\[0\\]: unknown user action 'plugins_test_wave'"):
        get_action("plugins_test_wave", "actions[0]")


PLUGIN_PROVIDER = """
from crsim.llm.providers.scripted import create as scripted


def create(config):
    return scripted(config.model_copy(update={"provider": "scripted", "replies": ["from the plug-in"]}))
"""


def test_a_third_party_provider_is_found_through_its_entry_point(tmp_path: Path) -> None:
    # A separate distribution on the path declares `crsim.llm_provider`; a config may then name it.
    (tmp_path / "echo_provider.py").write_text(PLUGIN_PROVIDER, encoding="utf-8")
    info = tmp_path / "echo_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: echo-provider\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[crsim.llm_provider]\necho = echo_provider:create\n", encoding="utf-8"
    )
    code = (
        "import asyncio\n"
        "from crsim.llm.config import ModelConfig\n"
        "from crsim.llm.providers.base import create_provider\n"
        "from crsim.llm.types import ResolvedGeneration, user\n"
        "provider = create_provider(ModelConfig(provider='echo'))\n"
        "print(type(provider).__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(tmp_path), *sys.path])}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ScriptedProvider"
    bad = code.replace("provider='echo'", "provider='nope'")
    result = subprocess.run(
        [sys.executable, "-c", bad], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert "unknown LLM provider 'nope'; expected one of:" in result.stderr and "echo" in result.stderr


def test_the_run_builds_every_component_from_one_context_and_each_simulator_with_its_dialogue_seed(
    tmp_path: Path,
) -> None:
    from crsim.crs.popular import PopularCRS
    from crsim.model import annotations as keys
    from crsim.model.io import iter_dialogues
    from crsim.sim.agenda.simulator import AgendaBasedSimulator

    seen: dict[str, list[Any]] = {"crs": [], "sim": []}

    @crs("plugins_test_ctx_crs")
    class ContextCRS(PopularCRS):
        def __init__(self, params: Any, ctx: BuildContext) -> None:
            super().__init__(params, ctx)
            seen["crs"].append(ctx)

    @simulator("plugins_test_ctx_sim")
    class ContextSim(AgendaBasedSimulator):
        def __init__(self, params: Any, ctx: BuildContext) -> None:
            super().__init__(params, ctx)
            seen["sim"].append(ctx)

    code, out, run_dir = _run(
        tmp_path,
        "seed: 3\ncrss: [{name: plugins_test_ctx_crs}]\nsimulators: [{name: plugins_test_ctx_sim}]\n",
    )
    assert code == 0, out
    (crs_ctx,) = seen["crs"]
    assert crs_ctx.seed == 3 and crs_ctx.run_folder == run_dir and crs_ctx.llms is not None
    dialogues = list(iter_dialogues(run_dir / "dialogues.jsonl"))
    assert len(seen["sim"]) == len(dialogues) == 2
    recorded = sorted(keys.SEED.get(d.metadata, where=d.id) for d in dialogues)
    assert sorted(ctx.seed for ctx in seen["sim"]) == recorded
    assert all(ctx.domain is crs_ctx.domain and ctx.run_folder == run_dir for ctx in seen["sim"])
