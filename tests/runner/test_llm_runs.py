"""LLM components inside whole runs: the real local model end to end, the cache across runs and trials,
and endpoints that fail (one error per dialogue, the run goes on, the summary says how many and why)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.eval.summaries import summarize
from crsim.model.dialogue import Role, TerminationReason
from crsim.model.io import iter_dialogues
from crsim.runner.batch import run_batch
from crsim.runner.build import Experiment, build_experiment
from crsim.runner.config import ExperimentConfig
from llm_servers import OpenAILikeServer, Reply, closed_port_url
from support import needs_local_model, records_without_timing

runner = CliRunner()


def _config(out: Path, llm: dict[str, Any], **fields: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "users": {"size": 3},
        "simulators": [{"name": "llm_single"}],
        "crss": [{"name": "popular"}],
        "max_turns": 2,
        "concurrency": 3,
        "llm": llm,
        "out": str(out),
        **fields,
    }
    return ExperimentConfig.model_validate(data)


def _run(config: ExperimentConfig) -> Experiment:
    assert config.out is not None
    experiment = build_experiment(config)
    asyncio.run(run_batch(experiment, config.out))
    return experiment


def _provider_calls(experiment: Experiment) -> int:
    return sum(llm.calls for llm in experiment.llms._roles.values())


@needs_local_model
@pytest.mark.slow
def test_three_dual_prompt_dialogues_with_the_local_model_then_again_from_the_cache(tmp_path: Path) -> None:
    llm = {
        "default": {"provider": "local", "max_tokens": 32, "max_concurrency": 1},
        "cache": {"path": str(tmp_path / "cache.sqlite")},
    }
    args = {"max_history_turns": 2, "include_preferences": False, "decision_max_tokens": 96}
    simulators = [{"name": "llm_dual", "args": args}]
    first = _run(_config(tmp_path / "a", llm, simulators=simulators))
    records = list(iter_dialogues(tmp_path / "a" / "dialogues.jsonl"))
    assert len(records) == 3 and _provider_calls(first) > 0
    for dialogue in records:
        assert dialogue.termination is not None
        if dialogue.termination.reason == TerminationReason.USER_ERROR:  # a tiny model may fail a decision
            assert dialogue.termination.error and dialogue.termination.error.type == "LLMOutputError"
            continue
        users = dialogue.by(Role.USER)
        assert users and all(u.text.strip() for u in users)
        assert all(call.completion_tokens > 0 and call.role == "user" for u in users for call in u.llm_calls)
        assert dialogue.llm_usage["user"].calls == sum(len(u.llm_calls) for u in users)
    second = _run(_config(tmp_path / "b", llm, simulators=simulators))
    assert _provider_calls(second) == 0
    assert records_without_timing(tmp_path / "a" / "dialogues.jsonl") == records_without_timing(
        tmp_path / "b" / "dialogues.jsonl"
    )


def test_another_trial_makes_new_calls_and_a_rerun_none(tmp_path: Path) -> None:
    llm = {
        "default": {
            "provider": "scripted",
            "replies": ["A comedy please.", "Something else?", "Thanks [END]"],
        },
        "cache": {"path": str(tmp_path / "cache.sqlite")},
    }
    one = _run(_config(tmp_path / "one", llm, concurrency=1))
    calls_one = _provider_calls(one)
    two = _run(_config(tmp_path / "two", llm, concurrency=1, trials=2))
    # trial 0 of each pairing is answered from the cache; trial 1 asks the model again
    assert _provider_calls(two) == calls_one > 0
    ids = [d.id for d in iter_dialogues(tmp_path / "two" / "dialogues.jsonl")]
    assert len(ids) == 6 and sum(i.endswith("#1") for i in ids) == 3
    again = _run(_config(tmp_path / "again", llm, concurrency=1, trials=2))
    assert _provider_calls(again) == 0
    by_usage = [d.llm_usage["user"] for d in iter_dialogues(tmp_path / "again" / "dialogues.jsonl")]
    assert all(u.cached_calls == u.calls > 0 for u in by_usage)


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAILikeServer]:
    fake = OpenAILikeServer()
    with fake.running():
        yield fake


def _failing(
    kind: str, server: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], str]:
    server.reset()
    base: dict[str, Any] = {"provider": "openai", "model": "tiny-chat", "max_retries": 1, "backoff": 0}
    if kind == "wrong_url":
        return {**base, "base_url": closed_port_url()}, "LLMConnectionError"
    if kind == "missing_key":
        monkeypatch.delenv("CRSIM_TEST_KEY", raising=False)
        return {**base, "api_key_env": "CRSIM_TEST_KEY"}, "LLMAuthError"
    if kind == "unknown_model":
        return {**base, "base_url": server.base_url + "/v1", "model": "no-such-model"}, "LLMModelNotFound"
    if kind in ("no_choices", "not_json"):  # a 200 that is no chat completion: the endpoint's fault
        body = '{"object": "chat.completion", "choices": []}' if kind == "no_choices" else "<html></html>"
        server.plan = [Reply(raw_body=body) for _ in range(20)]
        return {**base, "base_url": server.base_url + "/v1"}, "LLMProtocolError"
    server.plan = [Reply(delay=2.0) for _ in range(20)]
    return {**base, "base_url": server.base_url + "/v1", "timeout": 0.2, "max_retries": 0}, "LLMTimeout"


@pytest.mark.parametrize(
    "kind", ["wrong_url", "missing_key", "unknown_model", "no_choices", "not_json", "timeout"]
)
def test_a_failing_endpoint_ends_each_dialogue_with_its_error(
    kind: str, server: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model, error_type = _failing(kind, server, monkeypatch)
    _run(_config(tmp_path / "run", {"default": model}))
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    assert len(dialogues) == 3
    for dialogue in dialogues:
        assert dialogue.termination is not None and dialogue.termination.error is not None
        # an endpoint that cannot be reached, refuses the key, does not serve the model or does not
        # answer in time is the infrastructure's fault (docs/metrics.md, "Who failed")
        assert dialogue.termination.reason == "infrastructure_error"
        assert not dialogue.evaluable
        assert (dialogue.termination.error.source, dialogue.termination.error.type) == ("user", error_type)
        assert "LLM role 'user'" in dialogue.termination.error.message
        assert dialogue.llm_usage["user"].failed_calls >= 1
    (summary,) = summarize([], dialogues)
    assert summary.errors == {f"user: {error_type}": 3}
    assert (summary.n_evaluable, summary.n_dialogues) == (0, 3)
    if kind == "missing_key":
        assert "CRSIM_TEST_KEY" in summary.error_examples[f"user: {error_type}"]
    if kind == "unknown_model":
        assert "no-such-model" in summary.error_examples[f"user: {error_type}"]


def test_the_cli_reports_llm_errors_by_kind_with_a_message(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "users: {size: 2}\nsimulators: [{name: llm_single}]\ncrss: [{name: popular}]\nmax_turns: 2\n"
        f"llm: {{default: {{provider: openai, model: m, base_url: '{closed_port_url()}', max_retries: 0}}}}\n"
    )
    result = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "run"), "--no-preflight"])
    assert result.exit_code == 3, result.output  # every dialogue failed: the pairing was not tested
    assert "popular × llm_single: 2/2 dialogues failed, mostly infrastructure_error" in result.output
    assert "user: LLMConnectionError ×2" in result.output
    assert "could not connect" in result.output.lower() or "connection" in result.output.lower()


def test_a_missing_gguf_fails_before_the_run(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    missing = tmp_path / "nowhere.gguf"
    config.write_text(
        "simulators: [{name: llm_single}]\ncrss: [{name: popular}]\n"
        f"llm: {{default: {{provider: local, model_path: '{missing}'}}}}\n"
    )
    result = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "simulators[0]" in result.output and "nowhere.gguf" in result.output
    assert not (tmp_path / "run").exists()


def test_cache_commands(tmp_path: Path) -> None:
    llm = {"default": {"provider": "scripted", "model": "m", "replies": ["Hi [END]"]}}
    # patience 1: each user may end on its first message, so each dialogue makes exactly one call
    users = [{"name": "llm_single", "args": {"patience": 1}}]
    _run(_config(tmp_path / "run", llm, simulators=users))
    stats = runner.invoke(app, ["cache", "stats", str(tmp_path / "run"), "--json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.output)["by_model"] == {"m": 3}
    kept = runner.invoke(app, ["cache", "clear", str(tmp_path / "run" / "llm_cache.sqlite")], input="n\n")
    assert (
        kept.exit_code == 1
        and "delete 3 cached answers from" in kept.output
        and "nothing deleted" in kept.output
    )
    assert (
        json.loads(runner.invoke(app, ["cache", "stats", str(tmp_path / "run"), "--json"]).output)["entries"]
        == 3
    )
    asked = runner.invoke(app, ["cache", "clear", str(tmp_path / "run")], input="y\n")
    assert asked.exit_code == 0 and "removed 3 cached answers" in asked.output
    _run(_config(tmp_path / "again", llm, simulators=users))
    cleared = runner.invoke(app, ["cache", "clear", str(tmp_path / "again" / "llm_cache.sqlite"), "--yes"])
    assert cleared.exit_code == 0 and "removed 3 cached answers" in cleared.output
    missing = runner.invoke(app, ["cache", "stats", str(tmp_path / "nothing.sqlite")])
    assert missing.exit_code == 2 and "no LLM cache" in missing.output
