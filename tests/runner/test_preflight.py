"""Preflight: a dead CRS server or LLM endpoint ends `crsim run` (and `crsim.run`) before anything is
written, with one line naming the component, the URL and the failure; a healthy one lets the run go on.
Real servers on 127.0.0.1 (the fault suite's generic-protocol CRS, the OpenAI-like LLM server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from typer.testing import CliRunner

import crsim
from crsim.cli import app
from crsim.runner.preflight import PreflightFailed
from faults.fault_server import FaultPlan, ServerLog, fault_app
from faults.servers import running_server
from llm_servers import OpenAILikeServer, closed_port_url

runner = CliRunner()


def _wrong_field_app() -> FastAPI:
    """Answers the generic protocol's `POST /sessions` with `id` instead of `session_id`."""
    wrong = FastAPI()

    @wrong.post("/sessions")
    async def start() -> dict[str, Any]:
        return {"id": "s1", "greeting": {"text": "Hi"}}

    return wrong


def _http_config(url: str, **fields: Any) -> dict[str, Any]:
    crs = {"name": "generic_http", "id": "remote", "args": {"base_url": url, "max_retries": 0}}
    return {"users": {"size": 3}, "crss": [crs], "max_turns": 3, "metrics": [{"name": "turns"}], **fields}


def _llm_config(url: str) -> dict[str, Any]:
    llm = {"default": {"provider": "openai", "model": "tiny-chat", "base_url": f"{url}/v1", "max_retries": 0}}
    return {
        "users": {"size": 2},
        "simulators": [{"name": "llm_single"}],
        "crss": [{"name": "popular"}],
        "max_turns": 2,
        "llm": llm,
        "metrics": [{"name": "turns"}],
    }


def _run(tmp_path: Path, config: dict[str, Any], *extra: str) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "run"), "--json", *extra])


@pytest.fixture
def wrong_field() -> Iterator[str]:
    with running_server(_wrong_field_app()) as url:
        yield url


def _one_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in output, output
    return lines[0]


def test_a_refused_port_ends_the_run_before_anything_is_written(tmp_path: Path) -> None:
    url = closed_port_url()
    result = _run(tmp_path, _http_config(url))
    assert result.exit_code == 2, result.output
    line = _one_line(result.output)
    assert f"preflight: CRS 'remote' at {url}" in line and "CRSConnectionError" in line
    assert not (tmp_path / "run").exists()


def test_a_server_answering_with_the_wrong_field_ends_the_run(tmp_path: Path, wrong_field: str) -> None:
    result = _run(tmp_path, _http_config(wrong_field))
    assert result.exit_code == 2, result.output
    line = _one_line(result.output)
    assert f"CRS 'remote' at {wrong_field}" in line and "CRSInvalidResponse" in line and "session_id" in line
    assert not (tmp_path / "run").exists()


def test_a_dead_llm_endpoint_names_the_component_and_the_url_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFLIGHT_TEST_API_KEY", "sk-preflighttestsecret0123456789")
    url = closed_port_url()
    config = _llm_config(url)
    config["llm"]["default"]["api_key_env"] = "PREFLIGHT_TEST_API_KEY"
    result = _run(tmp_path, config)
    assert result.exit_code == 2, result.output
    line = _one_line(result.output)
    assert f"LLM 'tiny-chat' at {url}/v1" in line and "simulators[0] 'llm_single'" in line
    assert "LLMConnectionError" in line and "sk-preflight" not in result.output
    assert not (tmp_path / "run").exists()


def test_the_api_raises_preflight_failed_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(PreflightFailed, match="CRS 'remote'"):
        crsim.run(_http_config(closed_port_url()), out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_no_preflight_skips_it(tmp_path: Path) -> None:
    result = _run(tmp_path, _http_config(closed_port_url()), "--no-preflight")
    assert result.exit_code != 2, result.output
    assert (tmp_path / "run" / "dialogues.jsonl").is_file()


def test_healthy_servers_pass_and_the_run_goes_on(tmp_path: Path) -> None:
    log = ServerLog()
    model = OpenAILikeServer()
    with running_server(fault_app(FaultPlan(end_at=2), log)) as crs_url, model.running() as llm_url:
        config = _llm_config(llm_url)
        config["crss"] = _http_config(crs_url)["crss"]
        result = _run(tmp_path, config)
    assert result.exit_code == 0, result.output
    assert log.received["crsim-preflight-remote", 1] == 1  # one session, one message
    assert (tmp_path / "run" / "dialogues.jsonl").read_bytes().count(b"\n") == 2
    # one preflight call, and the dialogues' calls (simulator turns) after it
    assert len(model.requests) > 1 and model.requests[0]["max_tokens"] == 4


def test_a_resume_with_nothing_to_hold_needs_no_server(tmp_path: Path) -> None:
    with running_server(fault_app(FaultPlan(end_at=2))) as url:
        config = _http_config(url)
        assert _run(tmp_path, config).exit_code == 0
    resumed = _run(tmp_path, config, "--resume")  # the server is gone: only the scoring is left
    assert resumed.exit_code == 0, resumed.output


def test_only_the_crss_of_planned_dialogues_are_tried(tmp_path: Path) -> None:
    config = _http_config(closed_port_url())
    config["crss"] = [{"name": "popular"}, *config["crss"]]
    result = _run(tmp_path, config, "--limit", "3")  # the plan's first 3 dialogues: popular's
    assert result.exit_code == 0, result.output
    (tmp_path / "all").mkdir()
    dead = _run(tmp_path / "all", config)
    assert dead.exit_code == 2 and "CRS 'remote'" in dead.output
