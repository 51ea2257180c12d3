"""`BaseSimulator`: a new simulator is one decorated class, built and run like the built-ins."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from crsim.cli import app
from crsim.crs.base import CRSReply
from crsim.model.dialogue import Role
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.registry import Params
from crsim.sim.base import BaseSimulator, UserTurn, simulator


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
