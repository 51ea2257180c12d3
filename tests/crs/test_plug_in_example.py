"""docs/plug-in-your-crs.md as a user follows it: the example server in docs/examples/ passes
`crsim crs check`, and the documented configuration runs against it (with 3 users)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

from typer.testing import CliRunner

from crsim.cli import app
from crsim.model.io import iter_dialogues
from faults.servers import running_server

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "plug-in-your-crs.md"
runner = CliRunner()


def _example_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generic_crs_server", ROOT / "docs/examples/generic_crs_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _documented_config() -> str:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    return next(block for block in blocks if "generic_http" in block and "simulators" in block)


def test_the_example_server_passes_the_check_and_runs_the_documented_config(tmp_path: Path) -> None:
    server = _example_server()
    with running_server(server.app) as url:
        checked = runner.invoke(app, ["crs", "check", url, "--protocol", "generic"])
        config = tmp_path / "my-crs.yaml"
        config.write_text(_documented_config().replace("http://127.0.0.1:8765", url), encoding="utf-8")
        via_config = runner.invoke(app, ["crs", "check", "--config", str(config), "--turns", "2"])
        ran = runner.invoke(
            app, ["run", str(config), "--out", str(tmp_path / "run"), "--users", "3", "--json"]
        )
    assert checked.exit_code == 0, checked.output
    assert "passed every check" in checked.output
    assert via_config.exit_code == 0, via_config.output
    assert ran.exit_code == 0, ran.output
    dialogues = [d for d in iter_dialogues(tmp_path / "run" / "dialogues.jsonl") if d.crs_id == "my-crs"]
    assert len(dialogues) == 3
    assert all(d.termination is not None and d.termination.error is None for d in dialogues)
    recommended = [i for d in dialogues for u in d.by("crs") for i in u.recommended_items]
    assert recommended and set(recommended) <= {i for items in server.CATALOGUE.values() for i, _ in items}
    assert all("recommended_items_source" not in u.annotations for d in dialogues for u in d.by("crs"))
    summary = json.loads(ran.output)
    assert {s["crs_id"] for s in summary} == {"my-crs", "popular"}
