"""`BaseSimulator`: a new simulator is one decorated class, built and run like the built-ins."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.core.plugins import BUILTINS, Params
from crsim.crs.base import CRSReply
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.model.dialogue import Role
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.sim.base import BaseSimulator, UserTurn, simulator, simulator_registry
from support import ScriptedHub


def test_a_simulator_on_the_base_class_runs_from_a_config(tmp_path: Path) -> None:
    @simulator("base_test_echo")
    class Echo(BaseSimulator):
        """Asks for a recommendation, then accepts the first item it is offered."""

        class Params(Params):
            pass

        async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
            assert self.domain.name and isinstance(self.seed, int)
            return UserTurn("Can you recommend something?")

        async def respond(self, reply: CRSReply) -> UserTurn:
            return UserTurn("I'll take it, thanks!", end=bool(reply.recommended_items))

    config = tmp_path / "c.yaml"
    config.write_text("simulators: [{name: base_test_echo}]\ncrss: [{name: popular}]\nmax_turns: 5\n")
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "r"), "--users", "3"])
    assert result.exit_code == 0, result.output
    dialogues = list(iter_dialogues(tmp_path / "r" / "dialogues.jsonl"))
    assert len(dialogues) == 3
    assert {d.simulator_id for d in dialogues} == {"base_test_echo"}, [d.simulator_id for d in dialogues]
    firsts = [next(u for u in d.utterances if u.role == Role.USER) for d in dialogues]
    assert all(u.text == "Can you recommend something?" for u in firsts)
    reasons = {d.termination.reason.value for d in dialogues if d.termination is not None}
    assert reasons <= {"user_ended", "max_turns"}, reasons


@pytest.mark.parametrize("name", sorted(BUILTINS["simulator"]))
def test_every_built_in_simulator_is_built_by_the_base_class(name: str, domain: Domain) -> None:
    """The base class holds the arguments, domain, seed and hub of every built-in, under one name each."""
    cls = simulator_registry.get(name)
    assert issubclass(cls, BaseSimulator)
    params = simulator_registry.params(name, {})
    hub = ScriptedHub(ScriptedProvider.from_replies(["Hi."]))
    sim = cls(params, BuildContext(domain, hub, 42))
    assert (sim.params, sim.domain, sim.seed, sim.llms) == (params, domain, 42, hub)
    assert not hasattr(sim, "settings")
    if name in ("llm_single", "llm_dual", "pepper", "target_biased"):
        custom = simulator_registry.params(name, {"role": "player"})
        assert cls.llm_roles(params) == ["user"] and cls.llm_roles(custom) == ["player"]


def test_a_simulator_calling_a_model_without_llm_settings_is_a_config_error(domain: Domain) -> None:
    params = simulator_registry.params("llm_single", {})
    with pytest.raises(ConfigError, match="SinglePromptSimulator uses a language model; give LLM settings"):
        simulator_registry.get("llm_single")(params, BuildContext(domain, None, 1))
    abus = simulator_registry.params("abus", {"nlg": "llm"})
    with pytest.raises(ConfigError, match="AgendaBasedSimulator uses a language model"):
        simulator_registry.get("abus")(abus, BuildContext(domain, None, 1))
