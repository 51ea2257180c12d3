"""Hostile text and bodies from outside (issue 16): one character or one reply never sinks a run.

A lone surrogate (the valid JSON escape "\\ud800") is replaced with U+FFFD and counted wherever text
enters crsim (CRS replies, dataset records, item files); a record that still cannot be written
becomes an `infrastructure_error` dialogue; a gzip bomb is stopped at the decoded-size cap. Real
processes and real servers on 127.0.0.1.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest
import yaml
from fastapi import FastAPI, Response

from crsim.core.seeding import derive_seed
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.http.client import ExchangeLog, HTTPClient
from crsim.crs.http.errors import CRSHTTPError, CRSInvalidResponse, CRSResponseTooLarge
from crsim.crs.http.params import HTTPParams
from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import ModelConfig
from crsim.llm.errors import LLMError
from crsim.llm.providers.base import create_provider
from crsim.llm.types import user
from crsim.model.dialogue import ErrorInfo, Role
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.items import ItemCollection
from crsim.model.user import SimulatedUser
from crsim.runner.batch import run_batch
from crsim.runner.build import DialogueTask, Experiment
from crsim.runner.config import ExperimentConfig
from faults.fault_server import FaultPlan, is_affected, serve_faults
from faults.harness import ScriptedUser, http_experiment, run_experiment
from faults.servers import running_server
from llm_servers import OllamaLikeServer, Reply

FIXTURES = Path(__file__).parents[1] / "fixtures"
REPLACED = "replaced_code_points"


def _crsim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crsim", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def test_a_lone_surrogate_from_an_http_crs_is_replaced_counted_and_the_run_resumes(tmp_path: Path) -> None:
    plan = FaultPlan(kind="lone_surrogate", every=7, at_turn=2, end_at=3)
    with serve_faults(plan) as url:
        config = {
            "name": "surrogate",
            "users": {"size": 20},
            "crss": [{"name": "generic_http", "id": "remote", "args": {"base_url": url}}],
            "max_turns": 6,
            "concurrency": 4,
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        run_dir = tmp_path / "run"
        first = _crsim("run", str(path), "--out", str(run_dir), "--json")
        assert first.returncode == 0, first.stderr
        written = (run_dir / "dialogues.jsonl").read_bytes()
        resumed = _crsim("run", str(path), "--out", str(run_dir), "--json", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert (run_dir / "dialogues.jsonl").read_bytes() == written  # nothing left to do, nothing rewritten
    dialogues = list(iter_dialogues(run_dir / "dialogues.jsonl"))
    assert len(dialogues) == 20 == len({d.id for d in dialogues})
    affected = [d for d in dialogues if is_affected(d.id, plan.every)]
    assert 0 < len(affected) < 20
    for dialogue in dialogues:
        assert dialogue.termination is not None and dialogue.termination.error is None, dialogue.id
        counted = [u.annotations.get(REPLACED, 0) for u in dialogue.by(Role.CRS)]
        marked = [u.text.count("\ufffd") for u in dialogue.by(Role.CRS)]
        assert counted == marked
        assert (sum(counted) > 0) == (dialogue in affected)


class _UnwritableCRS(BaseCRS):
    """An in-process plug-in whose replies no boundary cleans: one dialogue gets a lone surrogate,
    another an annotation that is not JSON; both records cannot be serialised."""

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        if session.id.endswith("u001"):
            return CRSReply("How about Heat \ud800?", end=True)
        if session.id.endswith("u003"):
            return CRSReply("How about Heat?", end=True, annotations={"score": object()})
        return CRSReply("How about Heat (1995)?", end=True)


def _in_process(domain: Domain, dialogues: int) -> Experiment:
    config = ExperimentConfig.model_validate(
        {"name": "unwritable", "users": {"size": dialogues}, "crss": [{"name": "popular", "id": "odd"}]}
    )
    users = [SimulatedUser(id=f"u{i:03d}") for i in range(dialogues)]
    tasks = [
        DialogueTask(i, f"odd/scripted/{u.id}", "odd", "scripted", u, derive_seed(config.seed, u.id))
        for i, u in enumerate(users)
    ]
    return Experiment(
        config=config,
        domain=domain,
        users=users,
        crss={"odd": _UnwritableCRS()},
        simulator_factories={"scripted": lambda _seed: ScriptedUser()},  # type: ignore[dict-item,return-value]
        tasks=tasks,
        components={"crss": [{"id": "odd", "name": "popular", "args": {}}]},
        llms=LLMHub(config.llm),
    )


async def test_a_record_that_cannot_be_written_becomes_an_infrastructure_error(
    domain: Domain, tmp_path: Path
) -> None:
    result = await run_batch(_in_process(domain, 6), tmp_path / "run")
    again = await run_batch(_in_process(domain, 6), tmp_path / "run", resume=True)
    dialogues = {d.id: d for d in iter_dialogues(tmp_path / "run" / "dialogues.jsonl")}
    assert (result.ran, again.already_done, again.ran) == (6, 6, 0)
    assert len(dialogues) == 6
    for dialogue_id, dialogue in dialogues.items():
        assert dialogue.termination is not None
        if dialogue_id.endswith(("u001", "u003")):
            assert dialogue.termination.reason == "infrastructure_error"
            assert dialogue.termination.error is not None and dialogue.termination.error.source == "loop"
            assert "could not be written" in dialogue.termination.error.message
            assert "'crs_ended' after 2 utterances" in dialogue.termination.error.message
            assert dialogue.utterances == [] and not dialogue.evaluable
            assert dialogue.user_id == dialogue_id.rsplit("/", 1)[1]
        else:
            assert dialogue.termination.reason == "crs_ended" and len(dialogue.utterances) == 2
    assert result.terminations == {"infrastructure_error": 2, "crs_ended": 4}


async def test_a_gzip_bomb_is_stopped_at_the_decoded_size_cap(domain: Domain, tmp_path: Path) -> None:
    """100 MB inflated from a ~100 KB body: the read stops at the 200 KB cap of decoded bytes."""
    plan = FaultPlan(kind="gzip_bomb", every=1, at_turn=1)
    with serve_faults(plan) as url:
        experiment = http_experiment(
            domain, url, dialogues=3, timeout_s=30.0, max_retries=0, max_response_bytes=200_000
        )
        tracemalloc.start()
        try:
            _, dialogues = await run_experiment(experiment, tmp_path / "bomb")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    errors = [d.termination.error for d in dialogues if d.termination and d.termination.error]
    assert [e.type for e in errors] == ["CRSResponseTooLarge"] * 3
    assert all("limit (decoded)" in e.message for e in errors)
    assert peak < 30 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB while reading capped replies"


def _redial_with_a_surrogate(folder: Path) -> Path:
    """The ReDial fixture folder with a lone-surrogate escape in one message of the first dialogue
    and a second line nested too deeply to read."""
    shutil.copy(FIXTURES / "redial" / "movies_with_mentions.csv.gz", folder)
    with gzip.open(FIXTURES / "redial" / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        lines = [next(handle), next(handle), next(handle)]
    first = json.loads(lines[0])
    first["messages"][0]["text"] += " \ud800"
    lines[0] = json.dumps(first) + "\n"  # ensure_ascii: the surrogate travels as the escape "\ud800"
    assert "\\ud800" in lines[0]
    lines.insert(1, "[" * 5_000 + "]" * 5_000 + "\n")
    path = folder / "test_data.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_data_convert_replaces_and_counts_lone_surrogates(tmp_path: Path) -> None:
    src = _redial_with_a_surrogate(tmp_path)
    out = tmp_path / "out.jsonl"
    done = _crsim("data", "convert", "redial", str(src), "--out", str(out), "--skip-invalid")
    assert done.returncode == 0, done.stderr
    assert "3 dialogues written" in done.stdout and "1 skipped" in done.stdout
    assert "1 unwritable code points replaced with U+FFFD" in done.stdout
    assert "nested too deeply" in done.stderr
    first = next(iter(iter_dialogues(out)))
    assert first.utterances[0].text.endswith(" \ufffd")


def test_an_item_file_with_a_lone_surrogate_is_read_replaced_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"id": "m1", "title": "Heat \\ud800", "genres": ["crime\\udfff"]}\n{"id": "m2", "title": "Alien"}\n',
        encoding="utf-8",
    )
    items = ItemCollection.from_jsonl(path)
    assert items.replaced_code_points == 2
    assert (items["m1"].title, items["m1"].genres) == ("Heat \ufffd", ["crime\ufffd"])
    items.to_jsonl(tmp_path / "copy.jsonl")  # writable now
    assert ItemCollection.from_jsonl(tmp_path / "copy.jsonl").replaced_code_points == 0


def _encoded_app(coding: str, payload: bytes) -> FastAPI:
    app = FastAPI()

    @app.post("/reply")
    async def reply() -> Response:
        if coding == "gzip":
            body = gzip.compress(payload)
        elif coding == "deflate":
            body = zlib.compress(payload)
        elif coding == "deflate-raw":  # "deflate" sent without the zlib header, as some servers do
            squeeze = zlib.compressobj(wbits=-zlib.MAX_WBITS)
            body = squeeze.compress(payload) + squeeze.flush()
        else:
            body = payload
        header = "deflate" if coding == "deflate-raw" else coding
        return Response(body, media_type="application/json", headers={"content-encoding": header})

    return app


@pytest.mark.parametrize("coding", ["gzip", "deflate", "deflate-raw", "identity"])
async def test_compressed_replies_under_the_cap_are_read(coding: str) -> None:
    payload = json.dumps({"text": "How about Heat (1995)? " * 200}).encode()
    with running_server(_encoded_app(coding, payload)) as url:
        http = HTTPClient(HTTPParams(base_url=url, max_response_bytes=len(payload)))
        async with http.open_client() as client:
            data = await http.request_json(client, "POST", "/reply", {}, ExchangeLog())
    assert data == json.loads(payload)


@pytest.mark.parametrize("coding", ["gzip", "identity", "br"])
async def test_a_reply_one_byte_over_the_cap_or_in_an_unknown_coding_fails_its_exchange(coding: str) -> None:
    payload = json.dumps({"text": "How about Heat (1995)? " * 200}).encode()
    with running_server(_encoded_app(coding, payload)) as url:
        http = HTTPClient(HTTPParams(base_url=url, max_response_bytes=len(payload) - 1, max_retries=0))
        async with http.open_client() as client:
            with pytest.raises(CRSHTTPError) as caught:
                await http.request_json(client, "POST", "/reply", {}, ExchangeLog())
    expected = CRSInvalidResponse if coding == "br" else CRSResponseTooLarge
    assert type(caught.value) is expected, caught.value


async def test_an_error_message_quoting_a_lone_surrogate_stays_writable(domain: Domain) -> None:
    """An LLM server's error text lands in the record's `error.message`: it is made writable there."""
    server = OllamaLikeServer()
    server.plan.append(Reply(status=400, raw_body='{"error": "cannot parse \\ud800"}'))
    with server.running() as url:
        config = ModelConfig(provider="ollama", model="smollm2:135m", base_url=url, max_retries=0)
        llm = LLM("user", config, create_provider(config))
        try:
            with pytest.raises(LLMError) as caught:
                await llm.generate([user("Hi")])
        finally:
            await llm.provider.aclose()
    error = ErrorInfo(source="user", type=type(caught.value).__name__, message=str(caught.value))
    assert error.message.endswith("cannot parse \ufffd [1 unwritable code point(s) replaced]")
    assert "\ufffd" in json.loads(error.model_dump_json())["message"]


def test_keys_that_differ_only_in_a_lone_surrogate_both_survive_cleaning() -> None:
    """`{"k\\ud800": 1, "k\\udc00": 2}` (a CRS reply's annotations, a dataset record, an LLM answer):
    both keys become "k\\ufffd"; the first value was dropped silently while the count said 2."""
    from crsim.model.text import clean_value

    parsed = json.loads(r'{"k\ud800": 1, "k\udc00": 2, "k\ufffd #2": 3, "plain": {"x\ud800": 4}}')
    cleaned, replaced = clean_value(parsed)
    assert replaced == 3
    assert cleaned == {"k\ufffd": 1, "k\ufffd #3": 2, "k\ufffd #2": 3, "plain": {"x\ufffd": 4}}
    assert sorted(cleaned.values(), key=str) == sorted([1, 2, 3, {"x\ufffd": 4}], key=str)
