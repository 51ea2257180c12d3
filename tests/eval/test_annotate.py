"""Act annotation: the rule-based annotator, the annotator registry, the P/R/F1 evaluation (on the
77 gold IARD dialogues of UserSimCRS), and `crsim data annotate acts|eval`."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli.data import data_app
from crsim.core.errors import ConfigError
from crsim.core.plugins import Params as ComponentParams
from crsim.datasets.intents import map_intent, map_slot
from crsim.eval.annotators import ActAnnotator, annotator, annotator_registry, build_annotator
from crsim.eval.annotators.base import AnnotationReport, annotation_domain
from crsim.eval.annotators.evaluate import AnnotationEval, evaluate_annotator, score_utterance, value_key
from crsim.eval.annotators.rules import RuleAnnotator, user_context
from crsim.model import Dialogue, DialogueAct, Domain, Item, ItemCollection, Utterance

runner = CliRunner()
GOLD = Path(__file__).parents[1] / "fixtures" / "iard" / "formatted_IARD_annotated_gold.json.gz"


def _rules(domain: Domain) -> RuleAnnotator:
    tool = build_annotator("rules", {}, domain)
    assert isinstance(tool, RuleAnnotator)
    return tool


def _item(domain: Domain, title: str) -> Item:
    mention = domain.items.linker.match_title(title)
    assert mention is not None
    return domain.items[mention.item_id]


async def test_fills_only_missing_acts_and_records_the_source(domain: Domain) -> None:
    given = [DialogueAct(intent="greeting")]
    dialogue = Dialogue(
        id="d",
        utterances=[
            Utterance(role="user", text="hello", acts=given),
            Utterance(role="crs", text="What kind of movies do you like?"),
            Utterance(role="user", text="comedy please"),
        ],
    )
    report = AnnotationReport()
    done = await _rules(domain).annotate(dialogue, report=report)
    first, crs, user = done.utterances
    assert first.acts == given and "acts_source" not in first.annotations
    assert crs.acts == [DialogueAct(intent="elicit", slots=[("genre", None)])]
    assert DialogueAct(intent="disclose", slots=[("genre", "comedy")]) in user.acts
    assert crs.annotations["acts_source"] == user.annotations["acts_source"] == "rules"
    assert (report.dialogues, report.annotated, report.kept) == (1, 2, 1)
    again = await _rules(domain).annotate(dialogue, overwrite=True)
    assert again.utterances[0].annotations["acts_source"] == "rules"
    assert dialogue.utterances[1].acts == []  # the input is not modified


async def test_context_comes_from_the_crs_turn_before(domain: Domain) -> None:
    heat = _item(domain, "Heat (1995)")
    recommend = DialogueAct(intent="recommend", slots=[("title", heat.display_title), ("item", heat.id)])
    crs = Utterance(
        role="crs", text=f"Would you like {heat.display_title}?", acts=[recommend, DialogueAct(intent="ask")]
    )
    context = user_context([crs], domain.items)
    assert (context.recommended, context.yes_no, context.elicited) == (heat.id, True, None)
    dialogue = Dialogue(id="d", utterances=[crs, Utterance(role="user", text="sounds great, I'll watch it")])
    done = await _rules(domain).annotate(dialogue)
    assert DialogueAct(intent="accept", slots=[("title", heat.display_title)]) in done.utterances[1].acts
    unknown = crs.model_copy(update={"acts": [], "recommended_items": ["not-an-id"]})
    assert user_context([unknown], domain.items).recommended is None


async def test_crs_text_is_parsed_with_the_items_discussed(domain: Domain) -> None:
    heat, alien = _item(domain, "Heat (1995)"), _item(domain, "Alien (1979)")
    history = [
        Utterance(role="crs", text="x", recommended_items=[alien.id]),
        Utterance(
            role="user", text="y", acts=[DialogueAct(intent="seen", slots=[("title", heat.display_title)])]
        ),
    ]
    tool = _rules(domain)
    assert tool.items_hint(history) == [alien.id, heat.id]
    acts = await tool.utterance_acts(Utterance(role="crs", text="Then try Alien (1979)!"), history[:1])
    assert acts == []  # the item in focus is discussed, not recommended again
    acts = await tool.utterance_acts(Utterance(role="crs", text="Then try Alien (1979)!"), [])
    assert acts == [
        DialogueAct(intent="recommend", slots=[("title", alien.display_title), ("item", alien.id)])
    ]


def test_registry_and_arguments(domain: Domain) -> None:
    assert {"rules", "llm"} <= set(annotator_registry.names())
    with pytest.raises(ConfigError, match=r"unknown annotator 'nope'; expected one of: .*rules"):
        build_annotator("nope", {}, domain)
    with pytest.raises(ConfigError, match=r"annotator\.args\.model: unknown argument"):
        build_annotator("rules", {"model": "x"}, domain)


def test_items_option_builds_a_domain_over_another_collection(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    ItemCollection([Item(id="x1", title="Rare Film", genres=["drama"])]).to_jsonl(path)
    domain = annotation_domain(path)
    assert domain.items.ids == ["x1"] and "genre" in domain.informable_slots


def test_domain_option_annotates_with_another_domains_slots(tmp_path: Path) -> None:
    """`--domain restaurants`: the restaurant slots and catalogue, not the movie default (which reads
    nothing in a restaurant request)."""
    path, out = tmp_path / "d.jsonl", tmp_path / "out.jsonl"
    said = [
        {"role": "user", "text": "I want cheap italian food in the centre."},
        {"role": "crs", "text": "How about Pizza Hut City Centre?"},
    ]
    path.write_text(json.dumps({"id": "r1", "utterances": said}) + "\n", encoding="utf-8")
    result = runner.invoke(
        data_app, ["annotate", "acts", str(path), "-o", str(out), "--domain", "restaurants"]
    )
    assert result.exit_code == 0, result.output
    user, crs = json.loads(out.read_text(encoding="utf-8"))["utterances"]
    assert {tuple(s) for a in user["acts"] for s in a["slots"]} == {
        ("pricerange", "cheap"),
        ("food", "italian"),
        ("area", "centre"),
    }
    assert (
        crs["acts"][0]["intent"] == "recommend"
        and ["title", "Pizza Hut City Centre"] in crs["acts"][0]["slots"]
    )
    default = tmp_path / "movies.jsonl"
    assert runner.invoke(data_app, ["annotate", "acts", str(path), "-o", str(default)]).exit_code == 0
    as_movies = json.loads(default.read_text(encoding="utf-8"))["utterances"][0]["acts"]
    assert not any(s[0] in ("pricerange", "food", "area") for a in as_movies for s in a["slots"])
    over = tmp_path / "items.jsonl"
    ItemCollection([Item(id="r9", title="Little Place")]).to_jsonl(over)
    restaurants = annotation_domain(over, "restaurants")
    assert restaurants.items.ids == ["r9"] and "food" in restaurants.informable_slots


def test_value_key_equivalences() -> None:
    assert value_key("thrillers") == value_key("Thriller") == "thriller"
    assert value_key("It (2017)") == value_key("it") == "it"
    assert value_key("Matrix, The") == value_key("The Matrix (1999)")
    assert value_key("Boss") == "boss" and value_key("his") == "his"  # no plural 's' there


def test_scoring_counts() -> None:
    result = AnnotationEval(annotator="t")
    gold = Utterance(
        role="user",
        text="x",
        acts=[
            DialogueAct(intent="disclose", slots=[("GENRE", "thrillers"), ("KEYWORDS", "heists")]),
            DialogueAct(intent="reject", slots=[("genre", "horror")]),
        ],
    )
    predicted = [
        DialogueAct(intent="disclose", slots=[("genre", "thriller"), ("genre", "drama")]),
        DialogueAct(intent="goodbye"),
    ]
    score_utterance(result, gold, predicted)
    micro = result.micro
    assert (micro.intent.correct, micro.intent.predicted, micro.intent.gold) == (1, 2, 2)
    assert (micro.slot_value.correct, micro.slot_value.predicted, micro.slot_value.gold) == (1, 2, 3)
    assert micro.slot_value.f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert result.per_intent["reject"].intent.recall == 0.0 and result.per_intent["goodbye"].intent.gold == 0
    assert result.per_intent["disclose"].slot_value.precision == 0.5
    assert result.by_role["user"].intent.precision == 0.5


def _gold_dialogues() -> list[Dialogue]:
    """The UserSimCRS gold file read directly, labels mapped with the datasets' intent tables."""
    with gzip.open(GOLD, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    dialogues = []
    for record in raw:
        utterances = []
        for turn in record["conversation"]:
            role = "user" if turn["participant"] == "USER" else "crs"
            acts = [
                DialogueAct(
                    intent=map_intent("iard", act["intent"], role),
                    slots=[(map_slot(slot[0]), slot[1]) for slot in act["slot_values"]],
                )
                for act in turn["dialogue_acts"]
            ]
            utterances.append(Utterance(role=role, text=turn["utterance"], acts=acts))
        dialogues.append(Dialogue(id=f"iard/gold/{record['conversation_id']}", utterances=utterances))
    return dialogues


async def test_rules_on_the_iard_gold_dialogues(domain: Domain) -> None:
    gold = _gold_dialogues()
    result = await evaluate_annotator(_rules(domain), gold)
    assert result.dialogues == 77 == len(gold)
    assert result.utterances == sum(1 for d in gold for u in d.utterances if u.acts) == 1103
    assert result.micro.intent.gold == sum(
        len({a.intent for a in u.acts}) for d in gold for u in d.utterances
    )
    # regression floors for the measured table in docs/datasets.md
    assert result.per_intent["recommend"].intent.f1 > 0.85
    assert result.micro.intent.f1 > 0.45 and result.micro.slot_value.f1 > 0.35


def test_cli_annotate_and_eval(tmp_path: Path) -> None:
    gold = _gold_dialogues()[:5]
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(d.model_dump_json() + "\n" for d in gold), encoding="utf-8")
    out = tmp_path / "annotated.jsonl"
    result = runner.invoke(data_app, ["annotate", "acts", str(path), "-o", str(out), "--overwrite"])
    assert result.exit_code == 0, result.output
    n = sum(len(d.utterances) for d in gold)
    assert f"5 dialogues: {n} utterances annotated by rules, 0 kept" in result.output
    annotated = [Dialogue.model_validate_json(line) for line in out.read_text().splitlines()]
    assert all(u.annotations["acts_source"] == "rules" for d in annotated for u in d.utterances)
    scores = runner.invoke(data_app, ["annotate", "eval", str(path), "--json"])
    assert scores.exit_code == 0, scores.output
    summary = json.loads(scores.output)
    assert summary["dialogues"] == 5 and summary["utterances"] == n
    table = runner.invoke(data_app, ["annotate", "eval", str(path)])
    assert table.exit_code == 0 and "micro" in table.output and "recommend" in table.output


def test_cli_annotate_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n{"id": ""}\n')
    out = tmp_path / "out.jsonl"
    result = runner.invoke(data_app, ["annotate", "acts", str(bad), "-o", str(out)])
    assert result.exit_code == 2 and f"{bad}, record 2, field 'id'" in result.output
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["bad.jsonl"]
    result = runner.invoke(data_app, ["annotate", "eval", str(tmp_path / "gold.json")])
    assert result.exit_code == 2 and "needs --dataset NAME" in result.output
    result = runner.invoke(data_app, ["annotate", "eval", str(bad)])
    assert (
        result.exit_code == 2 and "no utterance of the gold file carries dialogue acts" not in result.output
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text(
        Dialogue(id="a", utterances=[Utterance(role="user", text="hi")]).model_dump_json() + "\n"
    )
    result = runner.invoke(data_app, ["annotate", "eval", str(empty)])
    assert result.exit_code == 2 and "no utterance of the gold file carries dialogue acts" in result.output


def test_a_new_annotator_is_one_registered_class(tmp_path: Path) -> None:
    @annotator("test_echo")
    class Echo(ActAnnotator):
        class Params(ComponentParams):
            intent: str = "other"

        async def utterance_acts(
            self, utterance: Utterance, history: Sequence[Utterance]
        ) -> list[DialogueAct]:
            return [DialogueAct(intent=self.params.intent, slots=[("turn", str(len(history)))])]  # type: ignore[attr-defined]

    path = tmp_path / "d.jsonl"
    dialogue = Dialogue(
        id="a", utterances=[Utterance(role="user", text="a"), Utterance(role="crs", text="b")]
    )
    path.write_text(dialogue.model_dump_json() + "\n")
    out = tmp_path / "o.jsonl"
    args = [
        "annotate",
        "acts",
        str(path),
        "-o",
        str(out),
        "--annotator",
        "test_echo",
        "--arg",
        "intent=inform",
    ]
    result = runner.invoke(data_app, args)
    assert result.exit_code == 0, result.output
    done = Dialogue.model_validate_json(out.read_text())
    assert [str(u.acts[0]) for u in done.utterances] == ['inform(turn="0")', 'inform(turn="1")']
    assert done.utterances[1].annotations["acts_source"] == "test_echo"


def test_cli_eval_reads_gold_through_the_iard_reader(domain: Domain) -> None:
    """`--dataset iard` on the published gold file scores exactly as the directly mapped labels do."""
    import_module("crsim.datasets.iard")
    result = runner.invoke(data_app, ["annotate", "eval", str(GOLD), "--dataset", "iard", "--json"])
    assert result.exit_code == 0, result.output
    direct = asyncio.run(evaluate_annotator(_rules(domain), _gold_dialogues())).summary()
    assert json.loads(result.output) == direct
