"""One vocabulary across the commands: `--metrics` by name or label in every form, `-o/--out` for
every output, help without Python's type names, `crss: [popular]`, server replies described by what
the server sent, and an export format the install can write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from fastapi import FastAPI
from typer.testing import CliRunner

import crsim
from crsim.cli import COMMANDS, app
from crsim.cli._metrics import metric_labels, metric_specs, split_values
from crsim.core.components import BuildContext
from crsim.core.errors import CrsimError
from crsim.crs.base import CRSSession
from crsim.crs.http import GenericHTTPCRS
from crsim.crs.http.crs_arena import CRSArenaCRS, CRSArenaParams
from crsim.crs.http.errors import CRSInvalidResponse, sent
from crsim.crs.http.generic import GenericParams
from crsim.model.domain import Domain
from crsim.runner.config import load_config
from faults.servers import running_server
from support import needs_pandas

runner = CliRunner()


def test_metrics_values_split_at_commas_outside_brackets_and_quotes() -> None:
    assert split_values(["Success,SRRR", "Recall@(t,10)", "'Recall@(t,10)', turns", "recall:k=5,id=R5"]) == [
        "Success",
        "SRRR",
        "Recall@(t,10)",
        "Recall@(t,10)",
        "turns",
        "recall:k=5,id=R5",
    ]
    with pytest.raises(CrsimError, match="quote is not closed"):
        split_values(["'Recall@(t,10)"])


def test_evaluate_metrics_take_names_labels_and_the_runs_own_labels() -> None:
    own = [{"name": "recall", "args": {"k": 5}, "id": "R5"}]
    specs = metric_specs(["Success,'Recall@(t,10)'", "turns", "R5", "srrr:rounds=usersimcrs"], own)
    assert [(s.name, s.args, s.id) for s in specs] == [
        ("success_rate", {}, None),
        ("recall", {}, None),
        ("turns", {}, None),
        ("recall", {"k": 5}, "R5"),
        ("srrr", {"rounds": "usersimcrs"}, None),
    ]
    with pytest.raises(CrsimError, match=r"no metric named or labelled 'Sucess'.*success_rate"):
        metric_specs(["Sucess"])


def test_compare_metrics_take_labels_or_names() -> None:
    scored = ["Success", "Recall@(t,10)", "R5", "Turns"]
    own = [{"name": "recall", "args": {"k": 5}, "id": "R5"}, {"name": "recall"}]
    assert metric_labels(["success_rate", "Recall@(t,10)"], scored, own) == ["Success", "Recall@(t,10)"]
    assert metric_labels(["recall"], scored, own) == ["R5", "Recall@(t,10)"]  # every label of the metric
    assert metric_labels(["Nothing"], scored, own) == ["Nothing"]  # refused by the comparison, by name


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("vocabulary") / "run"
    done = runner.invoke(app, ["run", "-o", str(run_dir), "--users", "4", "--max-turns", "6", "--json"])
    assert done.exit_code == 0, done.output
    return run_dir


@needs_pandas  # the comparison's tests come from statsmodels, which imports pandas
def test_compare_takes_a_label_with_a_comma_and_a_metric_name(scored_run: Path) -> None:
    done = runner.invoke(
        app,
        [
            "compare",
            str(scored_run),
            "--metrics",
            "Recall@(t,10)",
            "--metrics",
            "turns,success_rate",
            "--json",
        ],
    )
    assert done.exit_code == 0, done.output
    compared = {row["metric"] for row in json.loads(done.output)["results"]}
    assert compared == {"Recall@(t,10)", "Turns", "Success"}


def test_metrics_separated_by_a_space_are_explained(scored_run: Path) -> None:
    done = runner.invoke(app, ["compare", str(scored_run), "--metrics", "Success", "Turns"])
    assert done.exit_code == 2
    assert "Turns: no such run folder; several metrics are given as --metrics a,b" in done.output


def test_evaluate_takes_labels(scored_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    done = runner.invoke(
        app, ["evaluate", str(scored_run), "--metrics", "'Recall@(t,10)',Success", "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))["groups"][0]["metrics"]
    assert set(summary) == {"Recall@(t,10)", "Success"}


def _commands() -> list[tuple[str, Any]]:
    root = typer.main.get_command(app)
    found = []
    with root.context_class(root) as ctx:
        for name in COMMANDS:
            command = root.get_command(ctx, name)  # type: ignore[attr-defined]
            subs = getattr(command, "commands", None)
            found += [(f"{name} {s}", c) for s, c in subs.items()] if subs else [(name, command)]
    return found


def test_every_output_path_is_dash_o_and_dash_dash_out() -> None:
    outputs = [
        (name, param.opts)
        for name, command in _commands()
        for param in command.params
        if param.param_type_name == "option" and param.name in ("out", "output")
    ]
    assert len(outputs) >= 10
    assert [(name, opts) for name, opts in outputs if sorted(opts) != ["--out", "-o"]] == []


def test_help_shows_no_python_type_names() -> None:
    for name, _command in _commands():
        shown = runner.invoke(app, [*name.split(), "--help"], env={"COLUMNS": "200"}).output
        for internal in ("<bool>", "list[", "tuple[", "Ellipsis", "<str>", "<int>"):
            assert internal not in shown, f"crsim {name} --help shows {internal}"


def test_describe_shows_no_ellipsis() -> None:
    shown = runner.invoke(app, ["describe", "retrieval"], env={"COLUMNS": "200"}).output
    assert "elicitation_order: list[str] = ['genre', 'actor'" in shown and "Ellipsis" not in shown


def test_a_component_list_takes_bare_names(tmp_path: Path) -> None:
    config = tmp_path / "short.yaml"
    config.write_text(
        "crss: [popular]\nsimulators: [abus]\nmetrics: [success_rate, {name: recall, args: {k: 5}}]\n"
    )
    loaded = load_config(config, {})
    assert [(c.name, c.args) for c in loaded.crss] == [("popular", {})]
    assert [m.name for m in loaded.metrics] == ["success_rate", "recall"]
    config.write_text("crss: [popular, 3]\n")
    with pytest.raises(CrsimError, match=r"short.yaml: field 'crss.1'"):
        load_config(config, {})


def test_sent_describes_what_a_server_sent() -> None:
    assert sent({"reply": "x", "items": []}) == "an object with fields 'reply', 'items'"
    assert sent({f"k{i}": i for i in range(10)}).endswith("and 2 more")
    assert sent({"bad\x1bkey": 1}) == "an object with field 'bad?key'"
    assert (sent([1, 2]), sent("no"), sent(None), sent(True)) == (
        "a list of 2",
        "the string 'no'",
        "null (or no body)",
        "true",
    )


def _replying(reply: Any, path: str = "/") -> FastAPI:
    server = FastAPI()

    @server.post(path)
    async def answer() -> Any:
        return reply

    return server


async def test_a_wrong_field_reply_lists_the_fields_the_server_sent(domain: Domain) -> None:
    with running_server(_replying({"reply": "Hi", "movies": []}, "/")) as url:
        crs = CRSArenaCRS(CRSArenaParams(base_url=url, path="/"), BuildContext(domain))
        session = CRSSession("d", 1)
        await crs.start(session)
        with pytest.raises(
            CRSInvalidResponse, match=r"no field 'response'; it sent an object with fields 'reply', 'movies'"
        ):
            await crs.respond(session, "hello")
        await crs.close(session)


async def test_a_generic_reply_of_the_wrong_shape_is_described(domain: Domain) -> None:
    server = FastAPI()

    @server.post("/sessions")
    async def start() -> dict[str, Any]:
        return {"session_id": "s"}

    @server.post("/sessions/s/messages")
    async def message() -> list[str]:
        return ["Hi"]

    with running_server(server) as url:
        crs = GenericHTTPCRS(GenericParams(base_url=url), BuildContext(domain))
        session = CRSSession("d", 1)
        await crs.start(session)
        with pytest.raises(
            CRSInvalidResponse, match=r"expected a JSON object with 'text'; it sent a list of 1"
        ):
            await crs.respond(session, "hello")


def _crsim_without(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`crsim ARGS` in a fresh process in which `module` cannot be imported (as if not installed)."""
    source = str(Path(crsim.__file__).parents[1])
    code = f"import sys; sys.modules[{module!r}] = None; from crsim.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@needs_pandas
def test_export_writes_csv_when_pyarrow_is_missing(scored_run: Path, tmp_path: Path) -> None:
    done = _crsim_without("pyarrow", "export", str(scored_run), "-o", str(tmp_path / "tables"))
    assert done.returncode == 0, done.stderr
    assert "pyarrow is not installed: writing CSV (pip install 'crsim[analysis]' for Parquet)" in done.stderr
    written = sorted(p.name for p in (tmp_path / "tables").iterdir())
    assert written == ["dialogues.csv", "scores.csv", "utterances.csv"]
    asked = _crsim_without(
        "pyarrow", "export", str(scored_run), "--format", "parquet", "-o", str(tmp_path / "p")
    )
    assert asked.returncode == 2 and "pip install 'crsim[analysis]'" in asked.stderr


def test_export_names_the_extra_when_pandas_is_missing(scored_run: Path, tmp_path: Path) -> None:
    done = _crsim_without("pandas", "export", str(scored_run), "-o", str(tmp_path / "tables"))
    assert done.returncode == 2 and "needs pandas" in done.stderr and "crsim[analysis]" in done.stderr
