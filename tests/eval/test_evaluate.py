"""The evaluation layer: building metrics, scoring, summaries, curves and files."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from crsim.core.errors import ConfigError, DataError
from crsim.core.plugins import ComponentSpec
from crsim.eval import (
    GroupSummary,
    Metric,
    ScoreRecord,
    aggregate,
    build_metrics,
    default_metrics,
    read_scores,
    score_dialogues,
    summarize,
    turn_curves,
    write_scores,
    write_summary,
)
from crsim.eval.metrics import PreferenceCoverage, SuccessRate, Turns
from crsim.eval.metrics.base import NO_ACTS, NO_TARGETS
from crsim.model import (
    Dialogue,
    DialogueAct,
    ErrorInfo,
    InformationNeed,
    Role,
    Termination,
    TerminationReason,
    Utterance,
)
from crsim.report.tables import wide_table


def user(*intents: str) -> Utterance:
    return Utterance(role=Role.USER, text="u", acts=[DialogueAct(intent=i) for i in intents])


def crs(*items: str) -> Utterance:
    return Utterance(role=Role.CRS, text="c", recommended_items=list(items))


def make(
    id: str,
    *utterances: Utterance,
    crs_id: str = "popular",
    sim: str = "abus",
    targets: tuple[str, ...] = ("a", "b"),
    reason: TerminationReason = TerminationReason.USER_ENDED,
) -> Dialogue:
    error = ErrorInfo(source="crs", type="RuntimeError", message="boom") if reason == "error" else None
    return Dialogue(
        id=id,
        utterances=list(utterances),
        crs_id=crs_id,
        simulator_id=sim,
        information_need=InformationNeed(targets=list(targets)),
        termination=Termination(reason=reason, error=error),
    )


ACCEPTED = (user("disclose"), crs("a", "x"), user("accept"))
REJECTED = (user("disclose"), crs("x"), user("reject"))


class Exploding(Metric):
    """Raises on dialogues whose id starts with 'bad'."""

    def default_label(self) -> str:
        return "Exploding"

    def compute(self, dialogue: Dialogue) -> float:
        if dialogue.id.startswith("bad"):
            raise KeyError("missing field")
        return 1.0


def test_default_metrics_build() -> None:
    metrics = build_metrics(default_metrics())
    labels = [m.label for m in metrics]
    assert labels == [
        "Success",
        "SRRR",
        "RDL(turns)",
        "Turns",
        "Recall@(t,10)",
        "PC@10",
        "Requests answered",
        "Task success",
    ]


def test_build_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown metric 'hit_ratio'"):
        build_metrics([ComponentSpec(name="hit_ratio")])
    with pytest.raises(ConfigError, match=r"metrics\[1\]\.args\.cutoff: unknown argument"):
        build_metrics([ComponentSpec(name="turns"), ComponentSpec(name="recall", args={"cutoff": 5})])
    with pytest.raises(ConfigError, match=r"metrics\[0\]\.args\.k"):
        build_metrics([ComponentSpec(name="pc", args={"k": "many"})])
    with pytest.raises(ConfigError, match="used twice"):
        build_metrics([ComponentSpec(name="recall"), ComponentSpec(name="recall", args={"k": 10})])


def test_ids_tell_two_instances_apart() -> None:
    specs = [ComponentSpec(name="recall", id="r10"), ComponentSpec(name="recall", args={"k": 10}, id="r10b")]
    assert [m.label for m in build_metrics(specs)] == ["r10", "r10b"]


def test_score_records_and_errors_do_not_stop_scoring() -> None:
    dialogues = [make("ok", *ACCEPTED), make("bad1", *REJECTED), make("ok2", *REJECTED)]
    records = score_dialogues(dialogues, [Exploding(), Turns()])
    assert [(r.dialogue_id, r.metric, r.value) for r in records] == [
        ("ok", "Exploding", 1.0),
        ("ok", "Turns", 2.0),
        ("bad1", "Exploding", None),
        ("bad1", "Turns", 2.0),
        ("ok2", "Exploding", 1.0),
        ("ok2", "Turns", 2.0),
    ]
    failed = records[2]
    assert failed.error is not None
    assert "'bad1'" in failed.error and "'Exploding'" in failed.error and "missing field" in failed.error
    assert failed.missing_reason == "error: KeyError"
    assert records[0].termination == "user_ended" and records[0].crs_id == "popular"


def test_missing_values_are_counted_with_reasons() -> None:
    unannotated = make("raw", user("disclose"), crs("a"), Utterance(role=Role.USER, text="great"))
    dialogues = [make("d1", *ACCEPTED), unannotated, make("d3", *REJECTED, targets=())]
    records = score_dialogues(dialogues, build_metrics(default_metrics()))
    (summary,) = summarize(records)
    assert summary.metrics["SRRR"].n == 2 and summary.metrics["SRRR"].missing == 1
    assert summary.missing_reasons["SRRR"] == {NO_ACTS: 1}
    assert summary.missing_reasons["PC@10"] == {NO_TARGETS: 1}
    assert "Turns" not in summary.missing_reasons
    assert summary.metrics["Success"].mean == 0.5
    assert summary.metrics["PC@10"].mean == 0.5


def test_summary_groups_sorted_with_terminations() -> None:
    dialogues = [
        make("1", *ACCEPTED, crs_id="retrieval"),
        make("2", *REJECTED, crs_id="popular", reason=TerminationReason.MAX_TURNS),
        make("3", *ACCEPTED, crs_id="popular"),
        make("4", *ACCEPTED, crs_id="popular", reason=TerminationReason.ERROR),
        make("5", *ACCEPTED, crs_id="popular", sim="llm"),
    ]
    summaries = summarize(score_dialogues(dialogues, [SuccessRate(), Turns()]), seed=1)
    assert [(s.crs_id, s.simulator_id, s.n_dialogues) for s in summaries] == [
        ("popular", "abus", 3),
        ("popular", "llm", 1),
        ("retrieval", "abus", 1),
    ]
    first = summaries[0]
    assert first.terminations == {"error": 1, "max_turns": 1, "user_ended": 1}
    # "4" is a (format 1.1) error of the CRS: in n, and a failure whatever the user accepted before
    assert (first.n_evaluable, first.faults) == (3, {"crs": 1})
    assert first.metrics["Success"].mean == pytest.approx(1 / 3)
    assert list(first.metrics) == ["Success", "Turns"]


def test_summary_is_deterministic_for_a_seed() -> None:
    dialogues = [make(str(i), *(ACCEPTED if i % 3 else REJECTED)) for i in range(30)]
    records = score_dialogues(dialogues, [SuccessRate()])
    assert summarize(records, seed=5) == summarize(records, seed=5)


def test_turn_curves_average_over_the_population() -> None:
    d1 = make("1", user("disclose"), crs("a", "x"), user("disclose"), crs("b"))
    d2 = make("2", user("disclose"), crs("x"), user("disclose"))
    d3 = make("3", user("disclose"), crs("a"), targets=())
    curve = turn_curves([d1, d2, d3], PreferenceCoverage(), 3)
    assert curve.metric == "PC@10"
    assert curve.mean == [0.25, 0.5, 0.5]
    assert curve.n == [2, 2, 2]
    empty = turn_curves([d3], PreferenceCoverage(), 2)
    assert empty.mean == [None, None] and empty.n == [0, 0]
    assert turn_curves([], PreferenceCoverage(), 2).n == [0, 0]
    with pytest.raises(ConfigError, match="no per-turn values"):
        turn_curves([d1], Turns(), 3)


def test_write_and_read_scores_and_summary(tmp_path: Path) -> None:
    records = score_dialogues([make("1", *ACCEPTED), make("2", *REJECTED)], build_metrics(default_metrics()))
    path = tmp_path / "scores.jsonl"
    write_scores(records, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 * len(default_metrics())
    assert json.loads(lines[0])["metric"] == "Success"
    assert read_scores(path) == records
    summary_path = tmp_path / "summary.json"
    summaries = summarize(records)
    write_summary(summaries, summary_path)
    data = json.loads(summary_path.read_text(encoding="utf-8"))
    assert data["summary_format_version"] == 2 and data["built_from"] is None
    loaded = [GroupSummary.model_validate(s) for s in data["groups"]]
    assert loaded == summaries


def test_read_scores_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    path.write_text('{"dialogue_id": "1"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"scores.jsonl, record 1, field 'crs_id'"):
        read_scores(path)


def test_summary_counts_dialogues_given_alongside_records() -> None:
    dialogues = [
        make("1", *ACCEPTED),
        make("2", *REJECTED, reason=TerminationReason.ERROR),
        make("3", *ACCEPTED, crs_id="retrieval"),
    ]
    records = score_dialogues(dialogues[:2], [SuccessRate()])
    summaries = summarize(records, dialogues)
    assert [(s.crs_id, s.n_dialogues, s.terminations) for s in summaries] == [
        ("popular", 2, {"error": 1, "user_ended": 1}),
        ("retrieval", 1, {"user_ended": 1}),
    ]
    assert summaries[1].metrics == {}
    assert summarize([], dialogues[:1])[0].n_dialogues == 1


class Wordy(Metric):
    """A faulty metric that returns text instead of a number."""

    def default_label(self) -> str:
        return "Wordy"

    def compute(self, dialogue: Dialogue) -> float:
        return "0.5"  # type: ignore[return-value]


def test_a_metric_returning_a_non_number_has_no_value_only_an_error() -> None:
    (record,) = score_dialogues([make("1", *ACCEPTED)], [Wordy()])
    assert record.value is None
    assert record.missing_reason == "error: TypeError" and record.error is not None


def test_an_interrupted_write_keeps_the_previous_scores(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    records = score_dialogues([make("1", *ACCEPTED), make("2", *REJECTED)], [Turns()])
    write_scores(records, path)
    before = path.read_bytes()

    def interrupted() -> Iterator[ScoreRecord]:
        yield records[0]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_scores(interrupted(), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["scores.jsonl"]


def test_table_cells_say_when_there_are_too_few_values_for_an_interval() -> None:
    from crsim.report.tables import format_aggregate

    assert format_aggregate(aggregate([0.5])) == "0.500 (n=1, no CI)"
    assert format_aggregate(aggregate([1.0, 1.0, 1.0, 1.0, None])) == "1.000 [1.000, 1.000] (1 missing)"


def test_ambiguous_links_are_counted_per_crs_and_shown_beside_the_metrics() -> None:
    vague = Utterance(
        role=Role.CRS,
        text='Try "Hamlet" or "Heat".',
        recommended_items=["h1", "heat"],
        annotations={"ambiguous_links": {"h1": ["h1", "h0"], "heat": ["heat", "heat2"]}},
    )
    dialogues = [
        make("1", user("disclose"), vague, user("accept")),
        make("2", *ACCEPTED),
        make("3", user("disclose"), vague, user("reject"), crs_id="retrieval"),
        make("4", *REJECTED, crs_id="retrieval"),
    ]
    summaries = summarize(score_dialogues(dialogues, [SuccessRate()]), dialogues)
    assert [(s.crs_id, s.ambiguous_links) for s in summaries] == [("popular", 2), ("retrieval", 2)]
    assert summarize(score_dialogues(dialogues, [SuccessRate()]))[0].ambiguous_links is None
    console = Console(width=200, record=True)
    console.print(wide_table(summaries))
    assert re.search(r"ambiguous links\s+│\s+2\s+│\s+2", console.export_text())
