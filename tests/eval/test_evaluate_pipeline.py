"""`crsim evaluate`: act annotation before intent metrics, evaluators with aspects and turns, judges' LLM
settings and cache, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.cli.evaluate import parse_metric_specs
from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError, CrsimError, DataError
from crsim.core.plugins import ComponentSpec, Params
from crsim.eval import read_scores, summarize
from crsim.eval.metrics import SuccessRate
from crsim.eval.metrics.base import NO_ACTS, Evaluator, NotApplicable, Value, metric
from crsim.eval.run_scoring import EvaluateOptions, JudgeConfig, evaluate_path, load_judge_config
from crsim.eval.scores import ScoreRecord
from crsim.eval.scoring import score_all
from crsim.llm.types import user as user_message
from crsim.model import Dialogue, Role, Utterance
from support import CountingProgress

runner = CliRunner()


class TurnScores(Evaluator):
    """Per CRS turn: the number of words; per dialogue: an error value when the dialogue id says so."""

    class Params(Params):
        fail_on: str = "bad"

    def default_label(self) -> str:
        return "words"

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        assert isinstance(self.params, TurnScores.Params)
        if dialogue.id == "raise":
            raise RuntimeError("judge crashed")
        if dialogue.id == "skip":
            raise NotApplicable("nothing to judge")
        values = [
            Value("length", float(len(u.text.split())), turn=t)
            for t, u in enumerate((u for u in dialogue.utterances if u.role is Role.CRS), start=1)
        ]
        if self.params.fail_on in dialogue.id:
            values.append(Value("overall", None, error="LLMOutputError: not JSON", raw="???"))
        else:
            values.append(Value("overall", 3.0, explanation="fine"))
        return values


class EchoJudge(Evaluator):
    """Asks the `judge` role for a number and returns it."""

    needs_llm: ClassVar[bool] = True

    def __init__(self, params: Params | None = None, ctx: BuildContext | None = None) -> None:
        super().__init__(params, ctx)
        assert ctx is not None
        self.llm = ctx.require_llms("test evaluator").role("judge")

    @classmethod
    def llm_roles(cls, params: Params) -> list[str]:
        return ["judge"]

    def default_label(self) -> str:
        return "echo"

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        answer = await self.llm.generate([user_message(f"score {dialogue.id}")])
        return [Value(None, float(answer.text))]


@pytest.fixture(autouse=True)
def _test_components() -> None:
    """This module's test components, registered for each test (the conftest fixture unregisters them)."""
    metric("test_turns")(TurnScores)
    metric("test_llm_echo")(EchoJudge)


def dialogue(id: str, *texts: str, sim: str = "llm_single") -> Dialogue:
    """Alternating user/CRS utterances without acts (as an LLM simulator writes them)."""
    utterances = [
        Utterance(role=Role.USER if i % 2 == 0 else Role.CRS, text=text) for i, text in enumerate(texts)
    ]
    return Dialogue(id=id, utterances=utterances, crs_id="popular", simulator_id=sim)


ACCEPTING = dialogue(
    "accepts",
    "I'd like a science fiction movie.",
    "How about The Matrix (1999)?",
    "Great, I'll watch it, thanks!",
    "Enjoy!",
)
REJECTING = dialogue(
    "rejects",
    "I'd like a comedy.",
    "How about Toy Story (1995)?",
    "No, I don't like that one.",
    "Sorry.",
)


def write_run(
    folder: Path, dialogues: list[Dialogue], metrics: list[dict[str, object]] | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config: dict[str, object] = {"seed": 3, "domain": "movies"}
    if metrics is not None:
        config["metrics"] = metrics
    (folder / "manifest.json").write_text(json.dumps({"config": config}), encoding="utf-8")
    lines = "".join(d.model_dump_json() + "\n" for d in dialogues)
    (folder / "dialogues.jsonl").write_text(lines, encoding="utf-8")
    return folder


def by_metric(records: list[ScoreRecord], dialogue_id: str) -> dict[str, ScoreRecord]:
    return {r.metric: r for r in records if r.dialogue_id == dialogue_id and r.turn is None}


def test_act_less_dialogues_are_annotated_before_intent_metrics_and_say_by_whom(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING, REJECTING], [{"name": "success_rate"}, {"name": "srrr"}])
    scored = CountingProgress()
    result = evaluate_path(run, progress=scored)
    assert (scored.total, scored.done, scored.errors) == (2, 2, 0)
    accepted, rejected = by_metric(result.records, "accepts"), by_metric(result.records, "rejects")
    assert accepted["Success"].value == 1.0 and rejected["Success"].value == 0.0
    assert accepted["SRRR"].value == 1.0 and rejected["SRRR"].value == 0.0
    assert {r.annotator for r in result.records} == {"rules"}
    assert result.annotation.annotated == 2
    (summary,) = result.summaries
    assert summary.annotated == {"rules": 2}
    assert summary.metrics["Success"].mean == 0.5
    # the run's own records are not rewritten: annotation exists only for scoring
    assert all(
        not u.acts
        for line in (run / "dialogues.jsonl").read_text().splitlines()
        for u in Dialogue.model_validate_json(line).utterances
    )
    assert read_scores(run / "scores.jsonl") == result.records


def test_without_an_annotator_intent_metrics_are_missing_with_the_reason(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING], [{"name": "success_rate"}])
    result = evaluate_path(run, EvaluateOptions(annotator="none"))
    (record,) = result.records
    assert record.value is None and record.missing_reason == NO_ACTS and record.annotator is None
    assert result.summaries[0].missing_reasons == {"Success": {NO_ACTS: 1}}


def test_dialogues_that_keep_their_acts_are_not_reannotated(tmp_path: Path) -> None:
    from crsim.model import DialogueAct

    with_acts = ACCEPTING.model_copy(
        update={
            "id": "own",
            "utterances": [
                u.model_copy(update={"acts": [DialogueAct(intent="reject")]}) if u.role is Role.USER else u
                for u in ACCEPTING.utterances
            ],
        }
    )
    result = evaluate_path(write_run(tmp_path / "run", [with_acts], [{"name": "success_rate"}]))
    (record,) = result.records
    assert record.value == 0.0 and record.annotator is None  # its own (reject) acts were used
    assert result.annotation.annotated == 0


async def test_evaluator_values_become_records_and_one_failure_stays_with_its_dialogue() -> None:
    evaluator = TurnScores()
    dialogues = [
        ACCEPTING,
        dialogue("bad-one", "hi", "two words"),
        dialogue("raise", "x"),
        dialogue("skip", "x"),
    ]
    scored = CountingProgress()
    records = await score_all(dialogues, [evaluator, SuccessRate()], progress=scored)
    assert (scored.done, scored.errors) == (4, 2)  # an unreadable judge answer, a crashed judge
    turns = [(r.turn, r.value) for r in records if r.dialogue_id == "accepts" and r.metric == "words/length"]
    assert turns == [(1, 5.0), (2, 1.0)]
    overall = by_metric(records, "accepts")["words/overall"]
    assert overall.value == 3.0 and overall.explanation == "fine"
    bad = by_metric(records, "bad-one")["words/overall"]
    assert bad.value is None and bad.missing_reason == "error: LLMOutputError" and bad.raw == "???"
    crashed = by_metric(records, "raise")["words"]
    assert crashed.value is None and crashed.missing_reason == "error: RuntimeError"
    assert crashed.error is not None and "'raise'" in crashed.error and "judge crashed" in crashed.error
    assert by_metric(records, "skip")["words"].missing_reason == "nothing to judge"
    # the sync metric still ran on every dialogue, after the failing evaluator
    assert sum(r.metric == "Success" for r in records) == 4


async def test_turn_values_are_averaged_per_dialogue_before_the_population_mean() -> None:
    long = dialogue("long", "a", "one", "b", "one", "c", "one", "d", "one")  # 4 turns of length 1
    short = dialogue("short", "a", "five words are said here")  # 1 turn of length 5
    summary = summarize(await score_all([long, short], [TurnScores()]))[0]
    assert summary.metrics["words/length"].mean == 3.0  # (1 + 5) / 2, not (4*1 + 5) / 5
    assert summary.metrics["words/length"].n == 2


async def test_a_dialogue_whose_turns_all_failed_is_missing_with_their_reason() -> None:
    records = [
        ScoreRecord(
            dialogue_id="d",
            crs_id="c",
            simulator_id="s",
            metric="j/rel",
            value=None,
            turn=t,
            missing_reason="error: LLMTimeout",
            error="LLMTimeout: slow",
        )
        for t in (1, 2)
    ]
    (summary,) = summarize(records)
    assert summary.metrics["j/rel"].mean is None and summary.metrics["j/rel"].missing == 1
    assert summary.missing_reasons == {"j/rel": {"error: LLMTimeout": 1}}


def test_judge_config_adds_llm_evaluators_and_a_second_evaluation_is_served_from_the_cache(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING, REJECTING], [{"name": "turns"}])
    config = tmp_path / "judge.yaml"
    config.write_text(
        "llm:\n  default: {provider: scripted, model: m, replies: ['4']}\n"
        "judges:\n  - {name: test_llm_echo}\n",
        encoding="utf-8",
    )
    options = EvaluateOptions(judge=load_judge_config(config))
    first = evaluate_path(run, options)
    assert first.llm_calls == 2 and first.llm_roles == {"judge": 2}
    assert [r.value for r in first.records if r.metric == "echo"] == [4.0, 4.0]
    # The LLM evaluator's values are marked as judged by a model; the formula's are not.
    assert {r.metric: r.llm_judged for r in first.records} == {"echo": True, "Turns": False}
    assert (run / "llm_cache.sqlite").exists()
    again = evaluate_path(run, options)
    assert again.llm_calls == 0 and again.records == first.records


def test_an_llm_evaluator_without_llm_settings_uses_the_runs_and_fails_early_on_bad_ones(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING], [{"name": "test_llm_echo"}])
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["config"]["llm"] = {"default": {"provider": "scripted", "model": "m", "replies": ["2"]}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert [r.value for r in evaluate_path(run).records] == [2.0]
    manifest["config"]["llm"] = {"default": {"provider": "local", "model_path": str(tmp_path / "no.gguf")}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match=r"no\.gguf"):
        evaluate_path(run)


def test_judge_config_errors_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_judge_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("judges:\n  - {name: judge, argz: {}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.yaml: field 'judges.0.argz'"):
        load_judge_config(bad)
    assert JudgeConfig().judges[0].args == {"rubric": "quality5"}


def test_metric_specs_from_the_command_line() -> None:
    specs = parse_metric_specs(["success_rate,srrr", "recall:k=5,turn=2,id=R5"])
    assert [(s.name, s.args, s.id) for s in specs] == [
        ("success_rate", {}, None),
        ("srrr", {}, None),
        ("recall", {"k": 5, "turn": 2}, "R5"),
    ]
    with pytest.raises(CrsimError, match="--metrics"):
        parse_metric_specs([","])


def test_cli_evaluates_a_dialogue_file_with_chosen_metrics(tmp_path: Path) -> None:
    file = tmp_path / "human.jsonl"
    file.write_text(ACCEPTING.model_dump_json() + "\n" + REJECTING.model_dump_json() + "\n", encoding="utf-8")
    result = runner.invoke(app, ["evaluate", str(file), "--metrics", "success_rate,turns"])
    assert result.exit_code == 0, result.output
    assert "acts filled in by 'rules' for 2 dialogues" in result.output
    scores = read_scores(tmp_path / "human-eval" / "scores.jsonl")
    assert sorted({r.metric for r in scores}) == ["Success", "Turns"]
    bad = runner.invoke(app, ["evaluate", str(file), "--metrics", "no_such_metric"])
    assert bad.exit_code != 0 and "no_such_metric" in bad.output


def test_cli_unknown_annotator_is_named(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING])
    result = runner.invoke(app, ["evaluate", str(run), "--annotator", "oracle"])
    assert result.exit_code != 0 and "oracle" in result.output


def test_evaluators_need_the_async_path() -> None:
    from crsim.eval import score_dialogues

    with pytest.raises(TypeError, match="score_all"):
        score_dialogues([ACCEPTING], [TurnScores()])
    assert ComponentSpec(name="test_turns").label == "test_turns"


def test_evaluating_some_metrics_again_keeps_the_scores_of_the_others(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING, REJECTING])
    first = evaluate_path(run)
    before = (run / "summary.json").read_text(encoding="utf-8")
    assert {"Success", "SRRR", "Turns"} <= set(json.loads(before)["groups"][0]["metrics"])
    result = runner.invoke(app, ["evaluate", str(run), "--metrics", "turns"])
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())  # rich wraps at the terminal width
    others = ", ".join(label for label in json.loads(before)["groups"][0]["metrics"] if label != "Turns")
    assert f"earlier scores kept: {others} (--replace drops them)" in printed
    merged = read_scores(run / "scores.jsonl")
    key = lambda r: (r.dialogue_id, r.metric, r.turn)  # noqa: E731
    # Every earlier record is still there once, Turns re-scored (same values), nothing doubled.
    assert sorted(map(key, merged)) == sorted(map(key, first.records))
    assert {key(r): r.value for r in merged} == {key(r): r.value for r in first.records}
    # The summary is rebuilt from the merged scores: the same groups as the first one, in the same
    # order (what it was built from differs: the merged scores.jsonl holds the records in another order).
    after = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert after["groups"] == json.loads(before)["groups"]
    assert after["built_from"]["scores"]["sha256"] != json.loads(before)["built_from"]["scores"]["sha256"]


def test_rescored_records_replace_their_own_and_replace_drops_the_rest(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING, REJECTING], [{"name": "success_rate"}, {"name": "turns"}])
    evaluate_path(run)
    with (run / "scores.jsonl").open("a", encoding="utf-8") as handle:  # a dialogue no longer in the run
        handle.write(json.dumps({"dialogue_id": "gone", "crs_id": "popular", "simulator_id": "llm_single",
                                 "metric": "Success", "value": 1.0}) + "\n")  # fmt: skip
    turns = evaluate_path(run, EvaluateOptions(metrics=[ComponentSpec(name="turns", id="Success")]))
    values = {(r.dialogue_id, r.metric): r.value for r in turns.records}
    assert values == {("accepts", "Success"): 2.0, ("rejects", "Success"): 2.0,
                      ("accepts", "Turns"): 2.0, ("rejects", "Turns"): 2.0}  # fmt: skip
    (summary,) = turns.summaries
    assert summary.metrics["Success"].mean == 2.0 and summary.metrics["Success"].n == 2
    replaced = evaluate_path(run, EvaluateOptions(metrics=[ComponentSpec(name="srrr")], replace=True))
    assert {r.metric for r in replaced.records} == {"SRRR"}
    assert set(json.loads((run / "summary.json").read_text())["groups"][0]["metrics"]) == {"SRRR"}


def test_a_bad_earlier_scores_line_is_named_and_keeps_the_old_file(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [ACCEPTING], [{"name": "turns"}])
    (run / "scores.jsonl").write_text('{"dialogue_id": "accepts"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"scores\.jsonl.*record 1"):
        evaluate_path(run, EvaluateOptions(metrics=[ComponentSpec(name="success_rate")]))
    assert (run / "scores.jsonl").read_text(encoding="utf-8") == '{"dialogue_id": "accepts"}\n'
