"""The report's Sensitivity and Fidelity sections, from a real study folder (`crsim validate
sensitivity` with a fidelity study of the same users): the tables, the figures on the page and as
vector files, and a clear error for a study file that does not parse."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import CrsimError
from crsim.report.export_figures import print_figures
from crsim.report.html import build_report, report_context
from crsim.report.paper_style import DOUBLE, FONT, print_style
from crsim.report.titles import open_run
from report_support import study_folder

runner = CliRunner()

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return study_folder(tmp_path_factory.mktemp("studies") / "study")


def _section(html: str, name: str) -> str:
    match = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
    assert match is not None, f"no {name} section"
    return match.group(1)


def test_sensitivity_and_fidelity_sections_render_tables_and_figures(study: Path) -> None:
    html = build_report([open_run(study)])
    assert '<a href="#sensitivity">Sensitivity</a>' in html and '<a href="#fidelity">Fidelity</a>' in html
    sensitivity = _section(html, "sensitivity")
    written = json.loads((study / "sensitivity.json").read_text(encoding="utf-8"))
    rows = re.findall(r'<tr class="sens-([a-z-]+)">', sensitivity)
    assert len(rows) == len(written["rows"]) == 6  # 3 twins × 2 metrics
    assert [r["verdict"].replace(" ", "-") for r in written["rows"]] == rows
    assert sensitivity.count('rowspan="2" class="twin"') == 3  # the twin's name spans its metrics
    for n in (10, 30, 100):
        assert f"<th>acc@{n}</th>" in sensitivity
    first = written["rows"][0]
    assert f"[{first['ci_low']:.3f}, {first['ci_high']:.3f}]" in sensitivity
    mute = [r for r in written["rows"] if r["degradation"] == "mute" and r["metric"] == "Success"]
    if mute[0]["verdict"] == "blind":  # retrieval answers; abus's Success does not depend on it
        assert "cannot see" in sensitivity
    assert sensitivity.count('<img src="data:image/png;base64,') == 1  # one simulator × one CRS

    fidelity = _section(html, "fidelity")
    found = json.loads((study / "fidelity_redial.json").read_text(encoding="utf-8"))
    (sim,) = found["simulators"]
    assert "Against redial (40 human dialogues" in fidelity
    assert f"<strong>{sim['summary_distance']:.3f}</strong>" in fidelity
    low, high = sim["summary_ci"]
    assert f"[{low:.3f}, {high:.3f}]" in fidelity
    assert f"<strong>{sim['auc']:.3f}</strong>" in fidelity
    for row in sim["rows"]:
        assert f"<td>{row['measure']}</td>" in fidelity
    assert "50 bootstrap replicates per interval" in fidelity
    assert fidelity.count('<img src="data:image/png;base64,') == 2  # distances, then values


def test_study_figures_for_print(study: Path) -> None:
    context = report_context([open_run(study)])
    with print_style():
        figures = dict(print_figures(context, "Success"))
        stems = ("sensitivity-retrieval-abus", "fidelity-redial", "fidelity-values-redial")
        assert set(stems) <= set(figures)
        for stem in stems:
            figure = figures[stem]
            width, height = figure.get_size_inches()
            assert width == DOUBLE and 1.0 < height < 9.5, stem
            figure.draw_without_rendering()
            small = [
                t.get_text()
                for t in figure.findobj(lambda a: hasattr(a, "get_fontsize"))
                if t.get_visible() and t.get_text() and t.get_fontsize() < FONT  # type: ignore[attr-defined]
            ]
            assert not small, (stem, small)
    sensitivity = figures["sensitivity-retrieval-abus"]
    titles = [a.get_title() for a in sensitivity.axes if a.get_visible()]
    assert titles == ["twin: random", "twin: mute", "twin: garbled"]
    assert [t.get_text() for t in sensitivity.axes[0].get_yticklabels()] == ["Success", "Turns"]
    fidelity = figures["fidelity-redial"]
    panels = [a.get_title() for a in fidelity.axes if a.get_visible()]
    assert panels[-2:] == ["summary distance", "classifier AUC"] and "question_share" in panels
    labels = [t.get_text() for t in fidelity.axes[0].get_yticklabels()]
    assert labels == ["abus", "control: half A vs B"]
    values = figures["fidelity-values-redial"]
    assert [t.get_text() for t in values.axes[0].get_yticklabels()] == ["abus", "people", "half A", "half B"]
    assert "dialogue_acts" not in [a.get_title() for a in values.axes]  # a distribution, no value


def test_report_command_writes_study_figures(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(study), "-o", str(out), "--figures", "svg"])
    assert result.exit_code == 0, result.output
    stems = {p.stem for p in (tmp_path / "figures").glob("*.svg")}
    assert {"sensitivity-retrieval-abus", "fidelity-redial", "fidelity-values-redial"} <= stems


def test_a_broken_study_file_is_named(study: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(study, copy)
    broken: dict[str, Any] = json.loads((copy / "fidelity_redial.json").read_text(encoding="utf-8"))
    del broken["simulators"][0]["rows"]
    (copy / "fidelity_redial.json").write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(CrsimError, match=r"fidelity_redial\.json: field simulators\.0\.rows: Field required"):
        build_report([open_run(copy)])
