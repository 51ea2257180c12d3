"""`crsim.studies.behaviour.report`: rows with n, k, Wilson intervals and examples, a tidy dataframe,
run folders read defensively (a bad record is counted, not fatal), and the report written as CSV or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsim.core.errors import DataError
from crsim.model.annotations import DOMAIN
from crsim.model.domain import Domain
from crsim.model.run_folder import DIALOGUES
from crsim.studies.behaviour import Kind, behaviour_frame, behaviour_report, wilson
from crsim.studies.behaviour.report import write_report
from support import needs_pandas
from test_behaviour_users import GROUNDHOG, HEAT, dialogue


def test_wilson_interval_known_values() -> None:
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)  # z^2 / (n + z^2)
    assert wilson(0, 12)[0] == 0.0 and wilson(12, 12)[1] == 1.0
    low, high = wilson(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)


def _write(folder: Path, lines: list[str]) -> Path:
    folder.mkdir()
    (folder / DIALOGUES).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / DIALOGUES


@needs_pandas
def test_report_rows_frame_and_bad_records(tmp_path: Path, domain: Domain) -> None:
    early = dialogue(
        [("user", "Here are some movies you might like."), ("crs", "Any actor?"), ("user", "Bye.")], did="a"
    )
    fine = dialogue(
        [("user", "A comedy."), ("crs", "Try Groundhog Day (1993).", [GROUNDHOG]), ("user", "Thanks!")],
        did="b",
    )
    cut = dialogue([("user", "A comedy."), ("crs", "You might like the", [HEAT])], did="c", crs="other")
    bare = json.dumps({"id": "d", "utterances": [{"role": "user", "text": "hi"}]})  # no need, no termination
    path = _write(
        tmp_path / "run",
        [early.model_dump_json(), "{not json", fine.model_dump_json(), cut.model_dump_json(), bare],
    )
    report = behaviour_report(path, domain)
    assert report.dialogues == 4 and [(u.line, u.path) for u in report.unreadable] == [(2, str(path))]
    rows = {(r.subject, r.measure): r for r in report.rows}
    stop = rows[("sim", "stop_before_recommendation")]
    assert (stop.k, stop.n, stop.not_evaluable, stop.interval) == (1, 3, 0, "wilson95")
    assert (stop.ci_low, stop.ci_high) == pytest.approx(wilson(1, 3))
    assert stop.examples == ["a"]
    flip = rows[("sim", "role_flip_dialogue")]
    assert flip.examples == ["a: Here are some movies"]
    unnamed = rows[("(unnamed)", "first_turn_end")]
    assert (unnamed.n, unnamed.not_evaluable, unnamed.value) == (0, 1, None)
    assert rows[("other", "truncated")].k == 1 and rows[("crs", "truncated")].k == 0
    named = rows[("other", "text_names_item")]
    assert named.examples == ["c: does not name Heat (1995)"]  # wanted measures show their misses
    assert {r.kind for r in report.rows} == {Kind.SIMULATOR, Kind.CRS}
    frame = behaviour_frame(report)
    assert len(frame) == len(report.rows) and frame.columns[:6].tolist() == [
        "kind",
        "subject",
        "measure",
        "unit",
        "n",
        "k",
    ]
    assert (
        frame.loc[(frame.subject == "sim") & (frame.measure == "role_flip_dialogue"), "examples"].item()
        == "a: Here are some movies"
    )


@needs_pandas
def test_write_report_as_csv_or_json(tmp_path: Path, domain: Domain) -> None:
    path = _write(tmp_path / "run", [dialogue([("user", "Hi."), ("crs", "Hello.")]).model_dump_json()])
    report = behaviour_report(path, domain)
    write_report(report, tmp_path / "rows.csv")
    write_report(report, tmp_path / "report.json")
    assert (
        (tmp_path / "rows.csv").read_text(encoding="utf-8").startswith("kind,subject,measure,unit,n,k,value")
    )
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["dialogues"] == 1


def test_a_dialogue_file_needs_a_domain_and_a_folder_a_manifest(tmp_path: Path) -> None:
    path = _write(tmp_path / "run", [dialogue([("user", "Hi.")]).model_dump_json()])
    with pytest.raises(DataError, match="names no domain"):
        behaviour_report(path)
    named = dialogue([("user", "Hi.")])
    DOMAIN.put(named.metadata, "movies")
    path.write_text(named.model_dump_json() + "\n", encoding="utf-8")
    assert behaviour_report(path).domain == "movies"  # the domain the records name
    with pytest.raises(DataError, match="no manifest"):
        behaviour_report(tmp_path / "run")
    (tmp_path / "run" / "scores.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(DataError, match=r"an evaluation folder .* with --scores"):
        behaviour_report(tmp_path / "run")


def test_every_measure_is_defined_in_the_docs() -> None:
    from crsim.studies.behaviour import MEASURES

    page = (Path(__file__).parents[2] / "docs" / "behaviour.md").read_text(encoding="utf-8")
    assert [name for name in MEASURES if f"**{name}**" not in page] == []
