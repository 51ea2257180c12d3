"""Information-need extraction (`crsim data annotate need`): the recipe over acts, keeping given needs,
and its measured quality on IARD accepted-recommendation labels and on simulated dialogues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli.data import data_app
from crsim.datasets.base import convert_dataset
from crsim.datasets.iard import IardParams, IardReader
from crsim.eval.annotators import build_annotator
from crsim.eval.annotators.need import NEED_SOURCE, NeedExtractor, NeedReport, need_from_acts
from crsim.eval.annotators.need_eval import evaluate_needs, gold_need, strip_acts
from crsim.model import Dialogue, DialogueAct, Domain, InformationNeed, Utterance
from crsim.model.io import iter_dialogues
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig

runner = CliRunner()
IARD = Path(__file__).parents[1] / "fixtures" / "iard" / "umap2020_IARD_Cai.json.gz"


def act(intent: str, *slots: tuple[str, str | None]) -> DialogueAct:
    return DialogueAct(intent=intent, slots=list(slots))


def user(*acts: DialogueAct, mentioned: list[str] | None = None) -> Utterance:
    annotations = {"mentioned_items": mentioned} if mentioned else {}
    return Utterance(role="user", text="...", acts=list(acts), annotations=annotations)


def crs(*recommended: str) -> Utterance:
    return Utterance(role="crs", text="...", acts=[act("recommend")], recommended_items=list(recommended))


def test_recipe_over_acts(domain: Domain) -> None:
    dialogue = Dialogue(
        id="d",
        utterances=[
            user(act("disclose", ("genre", "comedy")), act("disclose", ("genre", "Thrillers"))),
            crs("a", "b"),
            user(act("request_recommendation", ("decade", "1990s")), act("disclose", ("actor", None))),
            crs("c", "d"),
            user(act("accept"), mentioned=["d"]),
            user(act("reject", ("genre", "thriller")), act("inquire", ("plot", None))),
            user(act("inquire", ("plot", None)), act("inquire", ("colour", None))),
            crs("e", "f"),
            user(act("accept"), act("disclose", ("title", "Heat (1995)"))),
            user(act("reject", ("item", "e")), act("accept", ("item", "g"))),
        ],
    )
    need = need_from_acts(dialogue, domain)
    # "Thrillers" is rejected as "thriller"; a slot without a value and a title are no constraints
    assert need.constraints == {"genre": "comedy", "decade": "1990s"}
    assert need.requests == ["plot"]
    # accept after c,d mentions d -> d; the bare accept after e,f takes both; e is rejected later
    assert need.targets == ["d", "f", "g"]


def test_several_values_make_a_list_and_titles_resolve(domain: Domain) -> None:
    dialogue = Dialogue(
        id="d",
        utterances=[
            user(act("disclose", ("genre", "comedy")), act("disclose", ("genre", "drama"))),
            crs(),
            user(act("accept", ("title", "Toy Story (1995)"))),
        ],
    )
    need = need_from_acts(dialogue, domain)
    assert need.constraints == {"genre": ["comedy", "drama"]}
    assert [domain.items[t].title for t in need.targets] == ["Toy Story"]


async def test_extractor_annotates_missing_acts_and_keeps_given_needs(domain: Domain) -> None:
    extractor = NeedExtractor(build_annotator("rules", {}, domain))
    dialogue = Dialogue(
        id="d",
        utterances=[
            Utterance(role="user", text="Hi! I'd like to watch a comedy from the 1990s."),
            Utterance(role="crs", text="How about Toy Story (1995)?", recommended_items=["1"]),
            Utterance(role="user", text="Great, I'll watch it! Who directed it?"),
        ],
    )
    report = NeedReport()
    done = await extractor.annotate(dialogue, report=report)
    assert done.information_need == InformationNeed(
        constraints={"genre": "comedy", "decade": "1990s"}, requests=["director"], targets=["1"]
    )
    assert done.metadata[NEED_SOURCE] == "rules"
    assert all(not u.acts for u in done.utterances)  # acts are used, not written
    assert (report.extracted, report.kept, report.utterances_annotated) == (1, 0, 3)
    given = dialogue.model_copy(update={"information_need": InformationNeed(requests=["plot"])})
    assert await extractor.annotate(given, report=report) is given
    redone = await extractor.annotate(given, overwrite=True)
    assert redone.information_need == done.information_need
    assert (report.dialogues, report.kept) == (2, 1)


def test_gold_targets_from_iard_accept_labels(domain: Domain) -> None:
    dialogues = {d.metadata["conversation_id"]: d for d in convert_dataset(IardReader(IardParams()), IARD)}
    gold = gold_need(dialogues["474"], domain)
    assert gold is not None and gold[1] == {"targets"}
    assert gold[0].targets == ["185171"]  # "I think I will check out The Conjuring (2013)"
    unsatisfied = next(d for d in dialogues.values() if d.metadata["accepted_recommendation"] == [])
    assert gold_need(unsatisfied, domain) == (InformationNeed(), frozenset({"targets"}))
    extracted = dialogues["474"].model_copy(update={"metadata": {NEED_SOURCE: "rules"}})
    assert gold_need(extracted, domain) is None


def test_iard_target_scores_from_text_cli() -> None:
    result = runner.invoke(
        data_app, ["annotate", "need-eval", str(IARD), "--dataset", "iard", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    targets = summary["parts"]["targets"]
    assert summary["from_text"] and summary["dialogues"] == targets["dialogues"] == 336
    assert targets["gold"] == 477  # items accepted at the 427 labelled positions
    # the figures in docs/datasets.md
    assert (targets["precision"], targets["recall"]) == pytest.approx((0.507, 0.371), abs=0.002)
    own = runner.invoke(data_app, ["annotate", "need-eval", str(IARD), "--dataset", "iard", "--no-from-text"])
    assert "1.000" in own.output  # IARD's own ACC labels sit exactly at its accepted positions


async def test_simulated_dialogues_constraints_and_requests(tmp_path: Path, domain: Domain) -> None:
    await run_batch(build_experiment(ExperimentConfig(users={"size": 20})), tmp_path / "run")
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    extractor = NeedExtractor(build_annotator("rules", {}, domain))
    from_text = await evaluate_needs(extractor, dialogues)
    own_acts = await evaluate_needs(extractor, dialogues, from_text=False)
    assert from_text.dialogues == 40 and from_text.scored["targets"] == 0
    constraints, requests = from_text.scores["constraints"], from_text.scores["requests"]
    # every true constraint is said and found; users also disclose liked actors and decades that
    # are not constraints, and ask only some of their requests before the dialogue ends
    assert constraints.recall >= 0.95 and constraints.precision >= 0.5
    assert requests.precision >= 0.95 and requests.recall >= 0.3
    assert from_text.scores["constraints"].precision <= own_acts.scores["constraints"].precision + 1e-9
    stripped = strip_acts(dialogues[0])
    assert stripped.information_need is None and not any(u.acts for u in stripped.utterances)


def test_annotate_need_cli(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    dialogues = [
        Dialogue(id="a", utterances=[Utterance(role="user", text="I want a horror movie please")]),
        Dialogue(id="b", utterances=[], information_need=InformationNeed(requests=["plot"])),
    ]
    source.write_text("".join(d.model_dump_json() + "\n" for d in dialogues))
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        data_app, ["annotate", "need", str(source), "-o", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "1 needs extracted" in result.output and "1 kept" in result.output
    first, second = iter_dialogues(out)
    assert first.information_need == InformationNeed(constraints={"genre": "horror"})
    assert (
        second.information_need == InformationNeed(requests=["plot"]) and NEED_SOURCE not in second.metadata
    )
    again = tmp_path / "again.jsonl"
    runner.invoke(data_app, ["annotate", "need", str(source), "-o", str(again), "--overwrite"])
    assert [d.information_need for d in iter_dialogues(again)][1] == InformationNeed()
