"""The Python API (issue 20 item 4): `crsim.run`, `crsim.evaluate`, `crsim.load` return results with
dataframes, work inside a running event loop (a notebook's), keep `import crsim` cheap, and the
example notebook docs/examples/quickstart.ipynb runs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import crsim
from crsim.api import SUMMARY_COLUMNS
from crsim.core.errors import ConfigError, DataError
from support import needs_pandas

NOTEBOOK = Path(__file__).parents[2] / "docs" / "examples" / "quickstart.ipynb"


def run_notebook(path: Path) -> dict[str, Any]:
    """Execute the code cells of a notebook in order in one namespace (as a kernel would, without one)
    and return the namespace; a failing cell raises with its number in the traceback's file name."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    namespace: dict[str, Any] = {"__name__": "__notebook__"}
    for number, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            exec(compile(source, f"{path.name} cell {number}", "exec"), namespace)
    return namespace


@needs_pandas
@pytest.mark.slow
def test_the_example_notebook_runs_twice_in_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = run_notebook(NOTEBOOK)["result"].summary
    namespace = run_notebook(NOTEBOOK)  # a second "Run All" in the same folder: the run is not held again
    again = namespace["result"].summary.query("metric != 'Recall@5'")  # kept from the first evaluate cell
    columns = ["crs", "metric", "mean", "n"]
    assert again[columns].reset_index(drop=True).equals(first[columns].reset_index(drop=True))
    summary = namespace["result"].summary
    assert list(summary.columns) == SUMMARY_COLUMNS
    assert set(summary["crs"]) == {"popular", "retrieval"} and set(summary["n_users"]) == {6}
    assert len(namespace["success"]) == 2
    assert len(namespace["per_dialogue"]) == 12
    assert set(namespace["result"].comparisons["crs_a"]) == {"popular"}
    assert "Recall@5" in set(namespace["again"].summary["metric"])


@needs_pandas
def test_the_summary_frame_is_the_summary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = crsim.run({"users": {"size": 4}}, out=tmp_path / "run", max_turns=6)
    shown = capsys.readouterr()
    assert "dialogues 8/8 (100%)" in shown.err and "scoring 8/8 (100%)" in shown.err and shown.out == ""
    written = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))["groups"]
    rows = {(r.crs, r.metric): r for r in result.summary.itertuples()}
    assert len(rows) == sum(len(group["metrics"]) for group in written)
    for group in written:
        for label, aggregate in group["metrics"].items():
            row = rows[group["crs_id"], label]
            mean = None if math.isnan(row.mean) else row.mean  # a metric with no value at all: NaN in a frame
            assert (mean, row.n, row.missing) == (aggregate["mean"], aggregate["n"], aggregate["missing"])
            assert (row.n_dialogues, row.n_evaluable, row.n_users) == (
                4,
                group["n_evaluable"],
                group["n_users"],
            )
    assert len(result.dialogues) == 8 and set(result.scores["dialogue_id"]) == set(
        result.dialogues["dialogue_id"]
    )
    loaded = crsim.load(tmp_path / "run")
    assert loaded.summary.equals(result.summary)


@needs_pandas
async def test_run_and_evaluate_work_inside_a_running_event_loop(tmp_path: Path) -> None:
    result = crsim.run(None, out=tmp_path / "run", users=2, limit=3, progress=False)
    assert len(result.dialogues) == 3
    again = crsim.evaluate(tmp_path / "run", metrics=["turns"], replace=True)
    assert set(again.summary["metric"]) == {"Turns"}


def test_options_are_checked_and_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown option 'user'"):
        crsim.run(None, out=tmp_path / "a", user=3)
    with pytest.raises(ConfigError, match=r"^users=0: field 'users.size'"):
        crsim.run(None, out=tmp_path / "b", users=0)
    with pytest.raises(DataError, match=r"no manifest\.json"):
        crsim.load(tmp_path)
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    (tmp_path / "dialogues.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="not evaluated yet"):
        crsim.load(tmp_path)


def test_the_run_package_answers_the_call() -> None:
    import crsim.runner.batch

    assert callable(crsim.run) and crsim.runner.batch.run_batch is not None


def test_help_shows_the_functions_not_the_package() -> None:
    import pydoc

    shown = pydoc.render_doc(crsim.run, renderer=pydoc.plaintext)
    assert "Hold the experiment's dialogues and score them" in shown and "resume" in shown
    assert "Score a run folder" in pydoc.render_doc(crsim.evaluate, renderer=pydoc.plaintext)


def test_a_second_run_into_a_folder_is_advised_in_python_words(tmp_path: Path) -> None:
    crsim.run(None, out=tmp_path / "run", users=2, limit=2, progress=False)
    with pytest.raises(ConfigError) as caught:
        crsim.run(None, out=tmp_path / "run", users=2, limit=2, progress=False)
    assert "pass resume=True" in str(caught.value) and "--" not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        crsim.run(None, out=tmp_path / "run", users=2, limit=2, max_turns=3, progress=False, resume=True)
    assert "choose another out=" in str(caught.value) and "--out" not in str(caught.value)
    again = crsim.run(None, out=tmp_path / "run", users=2, limit=2, progress=False, resume=True)
    assert len(again.dialogues) == 2


def test_import_crsim_imports_neither_the_api_nor_its_libraries() -> None:
    probe = "import crsim, json, sys; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(json.loads(done.stdout))
    assert not {"crsim.api", "crsim.run", "pandas", "pydantic", "numpy"} & loaded


def test_crsim_run_is_the_api_path_and_builds_one_llm_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`crsim run` and `crsim.run` hold and score through one function (`RunPlan.execute`), and the
    scoring uses the run's LLM hub instead of building a second one (issue 32)."""
    from typer.testing import CliRunner

    from crsim import api
    from crsim.cli import app
    from crsim.llm.client import LLMHub

    executed: list[Path] = []
    execute = api.RunPlan.execute

    def counted(plan: api.RunPlan, **options: Any) -> api.Result:
        executed.append(plan.folder)
        return execute(plan, **options)

    hubs: list[LLMHub] = []
    init = LLMHub.__init__

    def built(hub: LLMHub, *args: Any, **kwargs: Any) -> None:
        hubs.append(hub)
        init(hub, *args, **kwargs)

    monkeypatch.setattr(api.RunPlan, "execute", counted)
    monkeypatch.setattr(LLMHub, "__init__", built)
    config = tmp_path / "llm.yaml"
    config.write_text(
        "users: {size: 2}\nsimulators: [{name: llm_single}]\ncrss: [{name: popular}]\nmax_turns: 2\n"
        "llm: {default: {provider: scripted, model: m, replies: ['Hi [END]']}}\n",
        encoding="utf-8",
    )
    made = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "cli"), "--json"])
    assert made.exit_code == 0, made.output
    assert executed == [tmp_path / "cli"] and len(hubs) == 1
    result = crsim.run(config, out=tmp_path / "api", progress=False)
    assert executed[-1] == tmp_path / "api" and len(hubs) == 2  # one more command, one more hub
    assert result.held is not None and (result.held.planned, result.held.ran) == (2, 2)
    assert (tmp_path / "api" / "llm_cache.sqlite").is_file()


def test_a_resumed_run_counts_only_the_dialogues_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dialogue phase of a resumed `crsim.run` counts the dialogues missing, as `crsim run` does."""
    run_dir = tmp_path / "run"
    crsim.run(None, out=run_dir, users=3, progress=False)
    records = run_dir / "dialogues.jsonl"
    lines = records.read_text(encoding="utf-8").splitlines(keepends=True)
    records.write_text("".join(lines[:4]), encoding="utf-8")  # as if stopped after four of six
    capsys.readouterr()
    result = crsim.run(None, out=run_dir, users=3, resume=True)
    err = capsys.readouterr().err
    assert "dialogues 2/2 (100%)" in err and "scoring 6/6 (100%)" in err, err
    assert result.held is not None and (result.held.already_done, result.held.ran) == (4, 2)
