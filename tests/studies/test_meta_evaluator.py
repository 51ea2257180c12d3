"""`crsim meta-eval --evaluator`: a registered evaluator run over the gold conversations, its values
mapped to the seven aspects (names, aliases, turns), failures kept, LLM settings and cache."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from crsim.cli.meta_eval import meta_app
from crsim.core.components import BuildContext
from crsim.core.plugins import Params
from crsim.eval.metrics import Turns
from crsim.eval.metrics.base import Evaluator, Value, metric
from crsim.llm.cache import cache_stats
from crsim.llm.types import user as user_message
from crsim.model import Dialogue, Role
from crsim.studies.meta import GoldSet, load_gold, meta_evaluate, predict_with

FIXTURE = Path(__file__).parents[1] / "fixtures" / "crsarena_eval" / "crs_arena_eval.json.gz"
FAILING = "kbrd_redial_dfc62638-0660-4413-81d4-75bef5ca0745"
runner = CliRunner()


class CountingEvaluator(Evaluator):
    """Deterministic scores from the dialogue's shape: relevance of turn t = t, task completion =
    number of turns, understanding per turn = reply length (averaged), overall = words of the CRS."""

    class Params(Params):
        fail_on: str = FAILING

    def default_label(self) -> str:
        return "counts"

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        assert isinstance(self.params, CountingEvaluator.Params)
        if "human" in dialogue.metadata or any("human" in u.annotations for u in dialogue.utterances):
            raise AssertionError("the evaluator was shown the human labels")
        if self.params.fail_on in dialogue.id:
            raise RuntimeError("judge crashed")
        values = []
        users = 0
        for utterance in dialogue.utterances:
            if utterance.role is Role.USER:
                users += 1
            else:
                values.append(Value("relevance", float(users), turn=users))
                values.append(Value("understanding", float(len(utterance.text)), turn=users))
        crs_words = sum(len(u.text.split()) for u in dialogue.utterances if u.role is Role.CRS)
        values.append(Value("Task Completion", float(users)))
        values.append(Value("overall_impression", float(crs_words)))
        values.append(Value("verbosity", 1.0))
        values.append(Value("efficiency", None, error="LLMOutputError: not a number", raw="many"))
        return values


class AskingEvaluator(Evaluator):
    """Asks the `judge` role for the overall score; an answer that is not a number is an error value."""

    needs_llm: ClassVar[bool] = True

    def __init__(self, params: Params | None = None, ctx: BuildContext | None = None) -> None:
        super().__init__(params, ctx)
        assert ctx is not None
        self.llm = ctx.require_llms("test evaluator").role("judge")

    @classmethod
    def llm_roles(cls, params: Params) -> list[str]:
        return ["judge"]

    def default_label(self) -> str:
        return "asking"

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        answer = await self.llm.generate([user_message(f"rate {dialogue.id}")])
        try:
            return [Value("overall", float(answer.text))]
        except ValueError:
            return [Value("overall", None, error="LLMOutputError: not a number", raw=answer.text)]


@pytest.fixture(autouse=True)
def _test_components() -> None:
    """This module's test components, registered for each test (the conftest fixture unregisters them)."""
    metric("meta_test_counts")(CountingEvaluator)
    metric("meta_test_llm")(AskingEvaluator)


@pytest.fixture(scope="module")
def gold() -> GoldSet:
    return load_gold()


def raw_pairs(split: str) -> tuple[list[float], list[float]]:
    """(t, relevance label) straight from the file: the t-th CRS reply is turn_ind 2t - 1."""
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    ts: list[float] = []
    labels: list[float] = []
    for record in data:
        if f"_{split}_" not in record["conv_id"] or record["conv_id"] == FAILING:
            continue
        for turn in record["dialogue"]:
            label = turn.get("turn_level_aggregated", {}).get("relevance")
            if label is not None:
                ts.append((turn["turn_ind"] + 1) / 2)
                labels.append(label)
    return ts, labels


async def test_evaluator_values_map_to_aspects_and_turns(gold: GoldSet) -> None:
    predictions, records = await predict_with(CountingEvaluator(), gold, concurrency=4)
    assert len({r.dialogue_id for r in records}) == 467
    result = meta_evaluate(gold, predictions, "counts")
    for split in ("redial", "opendialkg"):
        ts, labels = raw_pairs(split)
        cell = result.cell(split, "relevance")
        assert cell.n == len(ts)
        assert cell.pearson == pytest.approx(stats.pearsonr(ts, labels)[0])
        assert cell.spearman == pytest.approx(stats.spearmanr(ts, labels)[0])
    failing = gold.by_id[FAILING]
    relevance = result.cell("redial", "relevance")
    rated = sum("relevance" in labels for labels in failing.turn_labels.values())
    assert relevance.missing_reasons == {"error: RuntimeError": rated}
    assert result.cell("redial", "overall").missing_reasons == {"error: RuntimeError": 1}
    assert result.cell("opendialkg", "overall").missing == 0
    efficiency = result.cell("opendialkg", "efficiency")
    assert efficiency.missing_reasons == {"error: LLMOutputError": 200}
    assert efficiency.pearson is None and efficiency.undefined == "fewer than two pairs"
    assert predictions.notes == {"aspect 'verbosity' is not a CRSArena-Eval aspect (ignored)": 466}


async def test_turn_values_of_dialogue_aspects_are_averaged(gold: GoldSet) -> None:
    predictions, _ = await predict_with(CountingEvaluator(), gold)
    conversation = gold.conversations[0]
    replies = [u.text for u in conversation.dialogue.utterances if u.role is Role.CRS]
    key = (conversation.conv_id, None, "understanding")
    assert predictions.values[key] == pytest.approx(np.mean([len(t) for t in replies]))
    assert predictions.values[(conversation.conv_id, None, "task_completion")] == len(replies)
    for ind, t in conversation.turn_of.items():
        assert predictions.values[(conversation.conv_id, ind, "relevance")] == t


async def test_a_plain_metric_maps_to_overall_or_the_chosen_aspect(gold: GoldSet) -> None:
    predictions, _ = await predict_with(Turns(), gold)
    assert predictions.aspects() == {"overall"}
    first = gold.conversations[0]
    assert predictions.values[(first.conv_id, None, "overall")] == first.dialogue.num_turns
    chosen, _ = await predict_with(Turns(), gold, default_aspect="understanding")
    assert chosen.aspects() == {"understanding"}
    result = meta_evaluate(gold, chosen, "turns")
    assert result.cell("redial", "understanding").n == 267
    assert result.cell("redial", "overall").missing == 267


def test_cli_evaluator_save_run_and_rescore_agree(tmp_path: Path) -> None:
    saved = tmp_path / "counts_run.json"
    args = ["--evaluator", "meta_test_counts", "--arg", "fail_on=nothing", "--limit", "6", "--json"]
    first = runner.invoke(meta_app, [*args, "--save-run", str(saved), "--work-dir", str(tmp_path), "--rank"])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["result"]["evaluator"] == "counts"
    assert report["result"]["conversations"] == {"redial": 6, "opendialkg": 6}
    again = runner.invoke(meta_app, ["--run-file", str(saved), "--limit", "6", "--json", "--rank"])
    assert again.exit_code == 0, again.output
    rescored = json.loads(again.output)
    for ours, theirs in zip(report["result"]["cells"], rescored["result"]["cells"], strict=True):
        assert (ours["n"], ours["pearson"], ours["spearman"]) == (
            theirs["n"],
            theirs["pearson"],
            theirs["spearman"],
        )
    assert report["ranking"] == rescored["ranking"]
    assert not (tmp_path / "llm_cache.sqlite").exists()  # no LLM, no cache


def test_cli_evaluator_with_llm_settings_and_cache(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text(
        "llm:\n  default:\n    provider: scripted\n    replies: ['3', 'oops']\n", encoding="utf-8"
    )
    work = tmp_path / "work"
    args = ["--evaluator", "meta_test_llm", "--config", str(config), "--work-dir", str(work)]
    result = runner.invoke(meta_app, [*args, "--limit", "3", "--concurrency", "1", "--json"])
    assert result.exit_code == 0, result.output
    cells = {(c["split"], c["aspect"]): c for c in json.loads(result.output)["result"]["cells"]}
    overall = [cells[(split, "overall")] for split in ("redial", "opendialkg")]
    assert sum(c["n"] for c in overall) == 3
    assert sum(c["missing_reasons"].get("error: LLMOutputError", 0) for c in overall) == 3
    assert cache_stats(work / "llm_cache.sqlite").entries == 6
    again = runner.invoke(meta_app, [*args, "--limit", "3", "--concurrency", "1"])
    assert again.exit_code == 0, again.output
    assert "LLM calls made (cache hits excluded): judge: 0" in again.output  # all from the cache
    assert "3 gold label(s) missing a prediction: error: LLMOutputError" in again.output


def test_cli_bad_evaluator_arguments_and_config(tmp_path: Path) -> None:
    bad_arg = runner.invoke(meta_app, ["--evaluator", "meta_test_counts", "--arg", "colour=red"])
    assert bad_arg.exit_code == 2
    assert "--evaluator.args.colour: unknown argument" in bad_arg.output.replace("\n", "")
    config = tmp_path / "bad.yaml"
    config.write_text("llm:\n  default:\n    provider: telepathy\n", encoding="utf-8")
    bad_config = runner.invoke(
        meta_app, ["--evaluator", "meta_test_llm", "--config", str(config), "--limit", "1"]
    )
    assert bad_config.exit_code == 2
    assert "field 'llm.default.provider'" in bad_config.output.replace("\n", "")
