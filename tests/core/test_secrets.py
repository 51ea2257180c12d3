"""Secrets never reach output: keys are trimmed and checked when read, every recorded, printed or
logged text is redacted, and the LLM providers refuse redirects to another host (real servers on
127.0.0.1; the `crsim` commands as real processes)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI, Request

from crsim.core.errors import ConfigError
from crsim.core.secrets import MASK, RedactingFilter, redact, redact_json_text
from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig, ProviderName
from crsim.llm.errors import LLMAuthError, LLMRedirectRefused
from crsim.llm.providers.base import create_provider
from crsim.llm.types import user
from crsim.model.domain import Domain
from faults.harness import http_experiment, run_experiment
from faults.servers import running_server
from llm_servers import DEFAULT_TEXT, OllamaLikeServer, OpenAILikeServer, Reply, redirecting_app

#: Not shaped like any known key (no `sk-`), so only its registration as a configured secret can mask it.
KEY = "leak-7Hq2mZ9xKc4Rw8Vb3Tn6"
KEY_ENV = "CRSIM_LEAK_TEST_KEY"  # not named like a secret either: it is masked because a provider read it
MESSAGES = [user("What should I watch tonight?")]


@pytest.fixture(scope="module")
def openai_server() -> Iterator[OpenAILikeServer]:
    fake = OpenAILikeServer()
    with fake.running():
        yield fake


def _llm(provider: ProviderName, base_url: str, **settings: Any) -> LLM:
    model = "tiny-chat" if provider == "openai" else "smollm2:135m"
    config = ModelConfig(provider=provider, model=model, base_url=base_url, max_retries=0, **settings)
    return LLM("user", config, create_provider(config))


async def test_a_key_with_a_trailing_carriage_return_is_trimmed_and_works(
    openai_server: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_server.reset()
    openai_server.api_key = KEY
    monkeypatch.setenv(KEY_ENV, f"  {KEY}\r")  # a CRLF .env file, and stray spaces
    llm = _llm("openai", openai_server.base_url + "/v1", api_key_env=KEY_ENV)
    try:
        completion = await llm.generate(MESSAGES)
    finally:
        await llm.provider.aclose()
    assert completion.text == DEFAULT_TEXT
    assert openai_server.authorizations == [f"Bearer {KEY}"]


@pytest.mark.parametrize("provider", ["openai", "ollama"])
@pytest.mark.parametrize(("bad", "what"), [("\x01", "a control character"), ("é", "a non-ASCII character")])
def test_a_key_a_header_cannot_carry_is_a_config_error_that_names_the_variable_only(
    provider: ProviderName, bad: str, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, f"{KEY[:10]}{bad}{KEY[10:]}")
    config = ModelConfig(provider=provider, model="m", base_url="http://127.0.0.1:1", api_key_env=KEY_ENV)
    with pytest.raises(ConfigError) as caught:
        create_provider(config)
    message = str(caught.value)
    assert KEY_ENV in message and what in message and "\n" not in message
    assert KEY[:10] not in message and KEY[10:] not in message


def _crsim(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crsim", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _env(**extra: str) -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    path = os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200", **extra}


def _write_config(path: Path, model: dict[str, Any], out: Path) -> Path:
    config = {
        "users": {"size": 3},
        "simulators": [{"name": "llm_single"}],
        "crss": [{"name": "popular"}],
        "max_turns": 2,
        "concurrency": 3,
        "llm": {"default": model},
        "out": str(out),
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_key_with_an_inner_control_character_stops_crsim_run_in_one_line(tmp_path: Path) -> None:
    model = {
        "provider": "openai",
        "model": "tiny-chat",
        "base_url": "http://127.0.0.1:1/v1",
        "api_key_env": KEY_ENV,
    }
    config = _write_config(tmp_path / "run.yaml", model, tmp_path / "run")
    result = _crsim("run", str(config), env=_env(**{KEY_ENV: f"{KEY[:10]}\x1b{KEY[10:]}"}), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and KEY_ENV in lines[0] and "control character" in lines[0]
    assert KEY[:10] not in result.stderr + result.stdout and KEY[10:] not in result.stderr + result.stdout
    assert not (tmp_path / "run" / "dialogues.jsonl").exists()


@pytest.mark.slow
def test_a_server_that_quotes_the_key_leaks_it_into_no_output(
    openai_server: OpenAILikeServer, tmp_path: Path
) -> None:
    """The whole pipeline (run, evaluate, report, export) as real processes: the key the server
    quotes in its error message is in no file of the run folder and in none of their output."""
    openai_server.reset()
    quoted = f"Incorrect API key provided: {KEY}. Request had header 'Authorization: Bearer {KEY}'."
    openai_server.plan = [Reply(status=401, error=quoted) for _ in range(50)]
    model = {"provider": "openai", "model": "tiny-chat", "base_url": openai_server.base_url + "/v1"}
    run_dir = tmp_path / "run"
    config = _write_config(tmp_path / "run.yaml", {**model, "api_key_env": KEY_ENV}, run_dir)
    env = _env(**{KEY_ENV: KEY + "\r"})
    # The preflight stops the run first (exit 2, nothing written), naming the endpoint without the key.
    refused = _crsim("run", str(config), env=env, cwd=tmp_path)
    assert refused.returncode == 2 and "preflight" in refused.stderr, refused.stderr
    assert KEY not in refused.stdout and KEY not in refused.stderr
    assert not run_dir.exists() or not any(run_dir.iterdir())
    # Without it every dialogue fails at the endpoint: the pairing failed (exit 3), nothing leaks.
    held = _crsim("run", str(config), "--no-preflight", env=env, cwd=tmp_path)
    assert held.returncode == 3, held.stderr
    assert KEY not in held.stdout and KEY not in held.stderr
    outputs = [
        _crsim("evaluate", str(run_dir), env=env, cwd=tmp_path),
        _crsim("report", str(run_dir), "-o", str(run_dir / "report.html"), env=env, cwd=tmp_path),
        _crsim("export", str(run_dir), "--format", "csv", env=env, cwd=tmp_path),
    ]
    for result in outputs:
        assert result.returncode == 0, [*result.args[3:4], result.stderr]
        assert KEY not in result.stdout and KEY not in result.stderr
    assert openai_server.authorizations and set(openai_server.authorizations) == {f"Bearer {KEY}"}
    files = [path for path in run_dir.rglob("*") if path.is_file()]
    names = {path.relative_to(run_dir).as_posix() for path in files}
    assert {"dialogues.jsonl", "summary.json", "report.html", "export/dialogues.csv"} <= names
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    dialogues = (run_dir / "dialogues.jsonl").read_text(encoding="utf-8")
    assert "LLMAuthError" in dialogues and f"Incorrect API key provided: {MASK}" in dialogues
    assert MASK in outputs[0].stdout  # the error example is printed, masked


async def test_a_crs_that_echoes_the_key_in_its_replies_leaves_it_in_no_record(
    domain: Domain, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The HTTP CRS adapters read their key the same way; what a CRS says is masked on the way to disk."""
    monkeypatch.setenv(KEY_ENV, KEY + "\r\n")
    app, seen = FastAPI(), list[str]()

    @app.post("/sessions")
    async def start() -> dict[str, Any]:
        return {"session_id": "s1", "greeting": {"text": "Hello!"}}

    @app.post("/sessions/{session_id}/messages")
    async def message(request: Request) -> dict[str, Any]:
        seen.append(request.headers.get("authorization", ""))
        return {"text": f"Your header was {request.headers.get('authorization')}; key {KEY}.", "end": True}

    with running_server(app) as url:
        experiment = http_experiment(domain, url, dialogues=2, api_key_env=KEY_ENV, link_titles=False)
        _, dialogues = await run_experiment(experiment, tmp_path / "run")
    assert seen and set(seen) == {f"Bearer {KEY}"}
    assert all(d.termination and d.termination.error is None for d in dialogues)
    texts = [u.text for d in dialogues for u in d.utterances if u.role == "crs" and "header" in u.text]
    assert texts and all(text == f"Your header was Bearer {MASK}; key {MASK}." for text in texts)
    assert KEY not in "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "run").glob("*.json*"))


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_a_redirect_to_another_host_is_refused_and_the_other_host_gets_nothing(
    provider: ProviderName,
) -> None:
    other: OpenAILikeServer | OllamaLikeServer = (
        OpenAILikeServer() if provider == "openai" else OllamaLikeServer()
    )
    path = "/v1/chat/completions" if provider == "openai" else "/api/chat"
    with other.running() as other_url, running_server(redirecting_app(path, other_url + path)) as url:
        llm = _llm(provider, url + ("/v1" if provider == "openai" else ""))
        try:
            with pytest.raises(LLMRedirectRefused, match="another host") as caught:
                await llm.generate(MESSAGES)
        finally:
            await llm.provider.aclose()
    assert other.requests == []
    assert other_url.rsplit(":", 1)[1] in str(caught.value)  # says where it would have gone


async def test_an_auth_error_message_is_redacted_where_it_is_made(
    openai_server: OpenAILikeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_server.reset()
    openai_server.plan = [Reply(status=401, error=f"bad key {KEY}")]
    monkeypatch.setenv(KEY_ENV, KEY)
    llm = _llm("openai", openai_server.base_url + "/v1", api_key_env=KEY_ENV)
    try:
        with pytest.raises(LLMAuthError) as caught:
            await llm.generate(MESSAGES)
    finally:
        await llm.provider.aclose()
    assert KEY not in str(caught.value) and f"bad key {MASK}" in str(caught.value)


def test_shapes_and_variables_named_like_secrets_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-secret-value-1")
    text = (
        "Illegal header value b'Bearer sk-proj-0123456789abcdef\\r' from tok-secret-value-1;\n"
        "bearer eyJhbGciOiJIUzI1NiJ9.payload and hf_abcdefghijklmnopqrstuvwx"
    )
    masked = redact(text)
    assert masked == (f"Illegal header value b'Bearer {MASK}\\r' from {MASK};\nbearer {MASK} and {MASK}")
    ordinary = "the bearer of good news; sk-learn; short sk-1234"
    assert redact(ordinary) == ordinary


def test_serialised_json_is_redacted_value_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", 'quote"back\\slash')
    text = '{"a":"line\\nsk-0123456789abcdefghij","b":["x quote\\"back\\\\slash y"],"c":1.5}'
    assert redact_json_text(text) == f'{{"a":"line\\n{MASK}","b":["x {MASK} y"],"c":1.5}}'
    assert redact_json_text('{"a":"clean"}\n') == '{"a":"clean"}\n'


def test_the_logging_filter_masks_messages_arguments_and_tracebacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTHER_API_KEY", "abcdefgh12345678")
    try:
        raise RuntimeError("boom abcdefgh12345678")
    except RuntimeError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "key %s", ("abcdefgh12345678",), sys.exc_info()
        )
    assert RedactingFilter().filter(record)
    assert record.getMessage() == f"key {MASK}"
    assert record.exc_text and "abcdefgh12345678" not in record.exc_text and MASK in record.exc_text
