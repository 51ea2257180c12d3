"""summary.json records each metric's metadata (label, registry name, 0/1, per-turn, K, direction) and
the per-turn curves, so that `crsim report` and `crsim compare` never build a metric again; a summary
written before that is still read (the report then computes PC and Recall curves as it used to)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crsim.core.plugins import BUILTINS, ComponentSpec
from crsim.eval.curves import turn_curves
from crsim.eval.metrics.base import Evaluator, Metric
from crsim.eval.scores import build_metrics
from crsim.model.run_folder import RunPaths, open_run
from crsim.model.run_folder.summary import read_summary_file
from crsim.report.collect import collect_run
from report_support import restamp, small_run

#: Every built-in metric's direction (docs/metrics.md#directions says why for each).
DIRECTIONS = {
    "gcdf1": "higher",
    "jaccard": "none",
    "judge": "higher",
    "learned_crsarena": "higher",
    "mrr": "higher",
    "ndcg": "higher",
    "pc": "higher",
    "pc_gap": "none",
    "pc_subset": "higher",
    "pcir": "higher",
    "rdl": "higher",
    "recall": "higher",
    "satisfaction": "higher",
    "satisfaction_overall": "higher",
    "requests_answered": "higher",
    "srrr": "higher",
    "success_rate": "higher",
    "task_success": "higher",
    "turns": "lower",
    "user_ratings": "higher",
}


def test_every_built_in_metric_declares_its_direction_in_its_own_class() -> None:
    from crsim.core.plugins import _load_target

    assert set(BUILTINS["metric"]) == set(DIRECTIONS), "a new built-in metric needs a direction here"
    for name, target in BUILTINS["metric"].items():
        cls = _load_target(target)
        assert issubclass(cls, Metric | Evaluator)
        assert "direction" in vars(cls), f"{name} inherits its direction instead of declaring it"
        assert cls.direction == DIRECTIONS[name], name


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_run(tmp_path_factory.mktemp("metadata") / "run", users=6, crss=["popular", "retrieval"])


def test_the_summary_records_metadata_and_curves(run: Path) -> None:
    summary = read_summary_file(RunPaths(run).summary)
    assert summary.metrics is not None
    infos = summary.metrics
    assert (infos["Success"].name, infos["Success"].binary, infos["Success"].direction) == (
        "success_rate",
        True,
        "higher",
    )
    assert (infos["Turns"].per_turn, infos["Turns"].direction, infos["Turns"].k) == (False, "lower", None)
    recall = next(i for i in infos.values() if i.name == "recall")
    assert (recall.per_turn, recall.k, recall.direction) == (True, 10, "higher")
    per_turn = {label for label, info in infos.items() if info.per_turn}
    assert {c.metric for c in summary.curves} == per_turn
    folder = open_run(run)
    (pc,) = build_metrics([ComponentSpec(name="pc", args={"k": 10})])
    assert isinstance(pc, Metric)
    for crs in ("popular", "retrieval"):
        dialogues = [d for d in folder.dialogues() if d.crs_id == crs]
        expected = turn_curves(dialogues, pc, folder.typed_manifest.max_turns)
        (recorded,) = [c for c in summary.curves if c.crs_id == crs and c.metric == pc.label]
        assert recorded.n == expected.n
        # the same running sums; numpy's pairwise summation may differ in the last bits
        assert recorded.mean == pytest.approx(expected.mean, rel=1e-12, abs=1e-15)


def test_the_report_draws_a_curve_for_every_recorded_per_turn_metric(run: Path, tmp_path: Path) -> None:
    """A curve comes from the metadata's per-turn flag, not from a fixed list (NDCG here)."""
    from crsim.eval.run_scoring import EvaluateOptions, evaluate_path

    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("manifest.json", "dialogues.jsonl"):
        (copy / name).write_bytes((run / name).read_bytes())
    evaluate_path(copy, EvaluateOptions(metrics=[ComponentSpec(name="ndcg", args={"k": 5})]))
    view = collect_run(open_run(copy), "run", max_dialogues=10)
    assert set(view.curves) == {"NDCG@(t,5)"}
    assert view.metrics["NDCG@(t,5)"].per_turn


def test_a_summary_without_metadata_is_still_read(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "old"
    copy.mkdir()
    for name in ("manifest.json", "dialogues.jsonl", "scores.jsonl", "summary.json"):
        (copy / name).write_bytes((run / name).read_bytes())
    path = RunPaths(copy).summary
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["metrics"], data["curves"]
    path.write_text(json.dumps(data), encoding="utf-8")
    restamp(copy)
    folder = open_run(copy)
    assert folder.metric_metadata() is None
    old = collect_run(folder, "old", max_dialogues=10)
    new = collect_run(open_run(run), "new", max_dialogues=10)
    assert set(old.curves) == {"PC_t@10", "Recall@(t,10)"}  # as reports drew them before
    names = {"PC_t@10": "pc", "Recall@(t,10)": "recall"}
    for label, groups in old.curves.items():
        (recorded,) = [k for k, i in new.metrics.items() if i.name == names[label] and i.per_turn]
        for group, curve in groups.items():
            assert new.curves[recorded][group].means(8) == pytest.approx(curve.means(8), rel=1e-12)


def test_report_and_compare_build_no_metric(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the metadata recorded, the report (tables, figures, curves, comparisons) and `compare`
    construct no metric: every `Metric`/`Evaluator.__init__` call is counted."""
    from crsim.report.compare import compare_folders
    from crsim.report.html import build_report

    built: list[str] = []
    for base in (Metric, Evaluator):
        original = base.__init__

        def counting(self: Any, *args: Any, _original: Any = original, **kw: Any) -> None:
            built.append(type(self).__name__)
            _original(self, *args, **kw)

        monkeypatch.setattr(base, "__init__", counting)
    build_report([open_run(run)])
    compare_folders([open_run(run)])
    assert built == []
