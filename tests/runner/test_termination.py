"""Who broke the dialogue: termination reasons with a fault, the per-dialogue wall-time budget, and
dialogues left out of the CRS's n when the simulator or the infrastructure broke them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import ConfigError
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.eval.metrics.utility import SuccessRate, Turns
from crsim.eval.scores import NOT_EVALUABLE, score_dialogues
from crsim.eval.summaries import summarize
from crsim.llm.errors import LLMConnectionError, LLMOutputError, LLMServerError
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import (
    Dialogue,
    ErrorInfo,
    Fault,
    Role,
    Termination,
    TerminationReason,
)
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import load_config
from crsim.runner.loop import run_dialogue
from crsim.sim.base import UserTurn
from faults.fault_server import FaultPlan, fault_app
from faults.harness import http_experiment, run_experiment
from faults.servers import running_server
from support import needs_pandas

runner = CliRunner()


class TalkativeCRS(BaseCRS):
    """Answers every message after `delay_s` seconds; raises `fail` at message `fail_at`."""

    def __init__(
        self, delay_s: float = 0.0, fail_at: int | None = None, fail: Exception | None = None
    ) -> None:
        self.delay_s, self.fail_at, self.fail = delay_s, fail_at, fail or RuntimeError("CRS bug")

    async def start(self, session: CRSSession) -> CRSReply | None:
        session.state = 0
        return None

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        session.state += 1
        await asyncio.sleep(self.delay_s)
        if session.state == self.fail_at:
            raise self.fail
        return CRSReply(f"reply {session.state}", recommended_items=["i1"])


class ScriptedSimulator:
    """Talks for ever; at turn `fail_at` raises `fail`; each turn takes `delay_s` seconds."""

    def __init__(
        self, fail_at: int | None = None, fail: Exception | None = None, delay_s: float = 0.0
    ) -> None:
        self.fail_at, self.fail, self.delay_s, self.turn = fail_at, fail, delay_s, 0

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        self.turn = 0
        return await self._next()

    async def respond(self, reply: CRSReply) -> UserTurn:
        return await self._next()

    async def _next(self) -> UserTurn:
        self.turn += 1
        await asyncio.sleep(self.delay_s)
        if self.turn == self.fail_at and self.fail is not None:
            raise self.fail
        acts = [DialogueAct(intent="disclose" if self.turn == 1 else "accept")]
        return UserTurn(f"turn {self.turn}", acts=acts)


async def _talk(
    crs: BaseCRS, sim: ScriptedSimulator, *, max_turns: int = 4, timeout_s: float | None = None
) -> Dialogue:
    return await run_dialogue(
        sim,  # type: ignore[arg-type]
        crs,
        SimulatedUser(id="u1"),
        dialogue_id="d1",
        session=CRSSession("d1", 1),
        max_turns=max_turns,
        timeout_s=timeout_s,
    )


def _ended(dialogue: Dialogue) -> Termination:
    assert dialogue.termination is not None
    return dialogue.termination


async def test_a_crs_that_raises_is_a_crs_error_that_counts_against_it() -> None:
    """The user accepted the first recommendation, then the CRS failed: Success 0, in n."""
    dialogue = await _talk(TalkativeCRS(fail_at=2), ScriptedSimulator())
    assert [u.has_intent("accept") for u in dialogue.by(Role.USER)] == [False, True]
    ended = _ended(dialogue)
    assert ended.reason is TerminationReason.CRS_ERROR and ended.fault is Fault.CRS
    assert ended.error is not None and (ended.error.source, ended.error.type) == ("crs", "RuntimeError")
    assert dialogue.evaluable
    (summary,) = summarize(score_dialogues([dialogue], [SuccessRate(), Turns()]), [dialogue])
    assert (summary.n_evaluable, summary.n_dialogues) == (1, 1)
    assert summary.metrics["Success"].n == 1 and summary.metrics["Success"].mean == 0.0
    assert summary.faults == {"crs": 1}


async def test_a_simulator_that_raises_is_a_user_error_left_out_of_the_crs_metrics() -> None:
    unreadable = LLMOutputError("action selection: unreadable answer", raw="Sure! A movie.")
    dialogue = await _talk(TalkativeCRS(), ScriptedSimulator(fail_at=2, fail=unreadable))
    ended = _ended(dialogue)
    assert ended.reason is TerminationReason.USER_ERROR and ended.fault is Fault.USER
    assert not dialogue.evaluable


async def test_llm_endpoint_failures_are_infrastructure_errors_whoever_called() -> None:
    down = LLMConnectionError("LLM role 'user': could not connect to http://127.0.0.1:9/v1")
    by_user = await _talk(TalkativeCRS(), ScriptedSimulator(fail_at=1, fail=down))
    assert _ended(by_user).reason is TerminationReason.INFRASTRUCTURE_ERROR
    assert _ended(by_user).error.source == "user"  # type: ignore[union-attr]  # whose model it was
    # the `llm` CRS's endpoint failing is not the CRS misbehaving, even when the CRS wraps the error
    try:
        raise LLMServerError("LLM role 'crs': HTTP 503")
    except LLMServerError as exc:
        try:
            raise RuntimeError("could not answer") from exc
        except RuntimeError as wrapped:
            wrapping = wrapped
    by_crs = await _talk(TalkativeCRS(fail_at=1, fail=wrapping), ScriptedSimulator())
    assert _ended(by_crs).reason is TerminationReason.INFRASTRUCTURE_ERROR
    assert not by_user.evaluable and not by_crs.evaluable


async def test_a_slow_crs_runs_out_the_budget_and_the_timeout_is_charged_to_it() -> None:
    started = time.perf_counter()
    dialogue = await _talk(TalkativeCRS(delay_s=0.4), ScriptedSimulator(), max_turns=20, timeout_s=1.0)
    assert time.perf_counter() - started < 6  # not 20 turns x 0.4 s = 8 s (margin for a loaded machine)
    ended = _ended(dialogue)
    assert ended.reason is TerminationReason.TIMEOUT
    assert ended.error is not None and ended.error.source == "crs" and ended.error.type == "DialogueTimeout"
    assert "1 s dialogue budget" in ended.error.message
    assert ended.fault is Fault.CRS and dialogue.evaluable
    assert 1 <= dialogue.num_turns <= 3  # the turns before the budget ran out are kept


class BlockingCRS(TalkativeCRS):
    """Works synchronously inside `respond` (never yields to the event loop), `block_s` per reply."""

    def __init__(self, block_s: float) -> None:
        super().__init__()
        self.block_s = block_s

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        time.sleep(self.block_s)
        return await super().respond(session, text)


async def test_a_crs_that_never_yields_is_still_held_to_the_budget() -> None:
    """asyncio cannot interrupt it, but a reply that comes after the deadline is a timeout charged
    to the CRS: 20 replies of 0.2 s against a 0.5 s budget end by the third reply, not at max_turns
    (a loaded machine only makes the budget run out earlier, still inside the CRS)."""
    dialogue = await _talk(BlockingCRS(block_s=0.2), ScriptedSimulator(), max_turns=20, timeout_s=0.5)
    ended = _ended(dialogue)
    assert ended.reason is TerminationReason.TIMEOUT, ended
    assert ended.error is not None and ended.error.source == "crs" and ended.fault is Fault.CRS
    assert dialogue.num_turns <= 3 and dialogue.evaluable
    assert not any(u.text == "reply 3" for u in dialogue.utterances)  # the late reply is dropped


async def test_a_slow_simulator_runs_out_the_budget_and_is_not_evaluable() -> None:
    dialogue = await _talk(TalkativeCRS(), ScriptedSimulator(delay_s=0.2), max_turns=20, timeout_s=0.5)
    ended = _ended(dialogue)
    assert ended.reason is TerminationReason.TIMEOUT and ended.error is not None
    assert ended.error.source == "user" and ended.fault is Fault.USER and not dialogue.evaluable


async def test_without_a_budget_a_participants_own_timeout_error_is_its_error() -> None:
    dialogue = await _talk(TalkativeCRS(fail_at=1, fail=TimeoutError("own deadline")), ScriptedSimulator())
    assert _ended(dialogue).reason is TerminationReason.CRS_ERROR


async def test_a_real_slow_http_crs_times_out_within_the_dialogue_budget(
    domain: Domain, tmp_path: Path
) -> None:
    """A CRS server on 127.0.0.1 that takes 4 s per message, its adapter allowing 30 s per request:
    the 1 s dialogue budget ends each dialogue, charged to the CRS (without it: 5 turns, 20 s)."""
    with running_server(fault_app(FaultPlan(delay_s=4.0))) as url:
        experiment = http_experiment(domain, url, dialogues=3, max_turns=5, timeout_s=30)
        budgeted = experiment.config.model_copy(update={"dialogue_timeout_s": 1.0})
        started = time.perf_counter()
        _, dialogues = await run_experiment(replace(experiment, config=budgeted), tmp_path / "run")
    assert time.perf_counter() - started < 15  # three dialogues at once, 1 s each (plus closing), not 20 s
    assert len(dialogues) == 3
    for dialogue in dialogues:
        ended = _ended(dialogue)
        assert ended.reason is TerminationReason.TIMEOUT and ended.fault is Fault.CRS, ended
        assert ended.error is not None and ended.error.source == "crs"
        assert dialogue.timing is not None and dialogue.timing.duration_s < 10
    (summary,) = summarize(score_dialogues(dialogues, [Turns()]), dialogues)
    # in n, with the one turn each held before the budget ran out
    assert (summary.n_evaluable, summary.metrics["Turns"].n, summary.metrics["Turns"].mean) == (3, 3, 1.0)


def test_legacy_error_records_are_attributed_by_their_source() -> None:
    def legacy(id: str, source: str) -> Dialogue:
        error = ErrorInfo(source=source, type="RuntimeError", message="boom")
        termination = Termination(reason=TerminationReason.ERROR, error=error)
        return Dialogue(id=id, crs_id="c", simulator_id="s", user_id=id, termination=termination)

    dialogues = [legacy("a", "crs"), legacy("b", "user"), legacy("c", "loop")]
    records = score_dialogues(dialogues, [Turns()])
    assert [r.value for r in records] == [0.0, None, None]
    assert records[1].missing_reason == f"{NOT_EVALUABLE}: error (user)"
    assert records[2].missing_reason == f"{NOT_EVALUABLE}: error (infrastructure)"
    (summary,) = summarize(records, dialogues)
    assert (summary.n_evaluable, summary.n_dialogues, summary.metrics["Turns"].n) == (1, 3, 1)
    assert summary.metrics["Turns"].missing == 0  # not evaluable is not "missing"
    assert summary.metrics["Turns"].not_evaluable == 2
    assert summary.faults == {"crs": 1, "infrastructure": 1, "user": 1}


def test_summaries_from_records_alone_still_leave_unevaluable_dialogues_out() -> None:
    ok = Dialogue(id="a", crs_id="c", simulator_id="s", termination=Termination(reason="user_ended"))
    broken = Dialogue(id="b", crs_id="c", simulator_id="s", termination=Termination(reason="user_error"))
    (summary,) = summarize(score_dialogues([ok, broken], [Turns()]))
    assert (summary.n_evaluable, summary.n_dialogues, summary.metrics["Turns"].n) == (1, 2, 1)
    assert summary.n_users is None  # records do not say who the users were


def test_an_unreadable_simulator_answer_is_not_the_crs_s_zero(tmp_path: Path) -> None:
    """configs/recusersim.yaml with a scripted model whose answers are not the JSON asked for: before,
    each CRS scored Success 0.000 over n = 3; now the dialogues are user errors, outside n."""
    config = tmp_path / "c.yaml"
    config.write_text(
        "users: {size: 3}\nsimulators: [{name: recusersim}]\ncrss: [{name: popular}, {name: retrieval}]\n"
        "max_turns: 3\nmetrics: [{name: turns}, {name: success_rate}]\n"
        "llm: {default: {provider: scripted, replies: ['Sure! I would love a movie.']}}\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    assert {_ended(d).reason for d in dialogues} == {TerminationReason.USER_ERROR}
    from crsim.report.titles import open_run

    for summary in open_run(tmp_path / "run").summaries():
        assert (summary.n_evaluable, summary.n_dialogues, summary.n_users) == (0, 3, 3)
        assert summary.metrics["Success"].n == 0 and summary.metrics["Success"].mean is None
        assert summary.faults == {"user": 3}
    table = runner.invoke(app, ["evaluate", str(tmp_path / "run")])
    assert "0 / 3" in table.output and "3 (user 3)" in table.output


def test_a_simulator_that_cannot_be_built_is_a_user_error(tmp_path: Path) -> None:
    experiment = build_experiment(load_config(None, {"users": 2}))

    def broken(_seed: int) -> object:
        raise ValueError("no such persona")

    failing = replace(experiment, simulator_factories={"abus": broken})  # type: ignore[dict-item]
    asyncio.run(run_batch(failing, tmp_path / "run"))
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    assert len(dialogues) == 4
    assert {(_ended(d).reason, _ended(d).error.source) for d in dialogues} == {  # type: ignore[union-attr]
        (TerminationReason.USER_ERROR, "user")
    }


def test_the_dialogue_budget_is_a_config_field_and_a_cli_option() -> None:
    assert load_config(None, {"dialogue_timeout": 2.5}).dialogue_timeout_s == 2.5
    assert load_config(None).dialogue_timeout_s is None
    with pytest.raises(ConfigError, match="--dialogue-timeout: field 'dialogue_timeout_s'"):
        load_config(None, {"dialogue_timeout": 0})


class _Unreadable:
    """A simulator whose model never answers in the format asked for."""

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        raise LLMOutputError("action selection: unreadable answer", raw="Sure!")

    async def respond(self, reply: CRSReply) -> UserTurn:  # pragma: no cover - never reached
        raise AssertionError


@needs_pandas
def test_tables_report_and_frames_show_evaluable_n_users_and_faults(tmp_path: Path) -> None:
    """5 users x 2 trials; the simulator breaks both dialogues of one user with `popular`."""
    from rich.console import Console

    from crsim.eval.run_scoring import evaluate_path
    from crsim.eval.stats import USER_BOOTSTRAP
    from crsim.report.dataframes import dialogues_df, scores_df
    from crsim.report.html import build_report
    from crsim.report.tables import summary_table
    from crsim.report.titles import open_run

    experiment = build_experiment(load_config(None, {"users": 5, "trials": 2, "max_turns": 4}))
    victim = experiment.users[0].id
    broken = {t.seed for t in experiment.tasks if t.crs_label == "popular" and t.user.id == victim}
    real = experiment.simulator_factories["abus"]
    factories = {"abus": lambda seed: _Unreadable() if seed in broken else real(seed)}
    asyncio.run(run_batch(replace(experiment, simulator_factories=factories), tmp_path / "run"))  # type: ignore[arg-type]
    summaries = evaluate_path(tmp_path / "run").summaries
    popular, retrieval = summaries
    assert (popular.n_dialogues, popular.n_evaluable, popular.n_users, popular.faults) == (
        10,
        8,
        5,
        {"user": 2},
    )
    assert (retrieval.n_evaluable, retrieval.n_users, retrieval.faults) == (10, 5, {})
    assert popular.metrics["Turns"].n == 8 and popular.metrics["Turns"].method == USER_BOOTSTRAP
    assert popular.metrics["Turns"].clusters == 4  # the victim has no evaluable dialogue left

    console = Console(record=True, width=200)
    console.print(summary_table(summaries))
    text = console.export_text()
    assert "8 / 10" in text and "10 / 10" in text and "2 (user 2)" in text and "†" in text
    html = build_report([open_run(tmp_path / "run")])
    assert "<th>evaluable</th><th>users</th>" in html and "8 / 10" in html and "2 (user 2)" in html

    frame = dialogues_df(tmp_path / "run")
    broken_rows = frame[~frame["evaluable"]]
    assert len(broken_rows) == 2 and set(broken_rows["fault"]) == {"user"}
    assert set(broken_rows["termination"]) == {"user_error"} and frame["source_user_id"].nunique() == 5
    scores = scores_df(tmp_path / "run")
    left_out = scores[scores["evaluable"] == False]  # noqa: E712 - a nullable boolean column
    assert len(left_out) > 0 and left_out["value"].isna().all()
    assert left_out["missing_reason"].str.startswith(NOT_EVALUABLE).all()


def test_turn_curves_leave_out_dialogues_the_simulator_broke() -> None:
    from crsim.core.plugins import ComponentSpec
    from crsim.eval.curves import turn_curves
    from crsim.eval.metrics.base import PerTurnMetric
    from crsim.eval.scores import build_metrics
    from crsim.model.dialogue import Utterance
    from crsim.model.user import InformationNeed

    (pc,) = build_metrics([ComponentSpec(name="pc", args={"k": 10})])
    assert isinstance(pc, PerTurnMetric)
    talk = [Utterance(role=Role.USER, text="hi"), Utterance(role=Role.CRS, text="x", recommended_items=["t"])]
    need = InformationNeed(targets=["t"])
    ok = Dialogue(
        id="a", utterances=talk, information_need=need, termination=Termination(reason="user_ended")
    )
    broken = Dialogue(
        id="b", utterances=talk[:1], information_need=need, termination=Termination(reason="user_error")
    )
    curve = turn_curves([ok, broken], pc, 2)
    assert (curve.mean, curve.n) == ([1.0, 1.0], [1, 1])


def test_a_run_started_before_the_new_fields_resumes_unless_they_are_changed(tmp_path: Path) -> None:
    """Manifests written before `dialogue_timeout_s` and `users.allow_reuse` existed lack them."""
    import json

    experiment = build_experiment(load_config(None, {"users": 2, "max_turns": 2}))
    asyncio.run(run_batch(experiment, tmp_path / "r"))
    path = tmp_path / "r" / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest["config"]["dialogue_timeout_s"], manifest["config"]["users"]["allow_reuse"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    resumed = asyncio.run(run_batch(build_experiment(experiment.config), tmp_path / "r", resume=True))
    assert (resumed.already_done, resumed.ran) == (4, 0)
    budgeted = load_config(None, {"users": 2, "max_turns": 2, "dialogue_timeout": 5})
    with pytest.raises(ConfigError, match=r"started with in dialogue_timeout_s;"):
        asyncio.run(run_batch(build_experiment(budgeted), tmp_path / "r", resume=True))
