"""The LLM annotators: acts per utterance (`llm`) and information needs from whole dialogues.

The scripted provider stands in for the model (its script sees every request, so the tests check
what was asked: prompt, grammar, schema); one test drives the real local model over two
utterances and checks only the structure of what comes back.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli.data import data_app
from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.datasets.intents import IARD_CRS_INTENTS, IARD_USER_INTENTS, SLOTS, map_intent, map_slot
from crsim.eval.annotators.base import build_annotator
from crsim.eval.annotators.evaluate import evaluate_annotator
from crsim.eval.annotators.llm import ACTS_ERROR, EXAMPLES, LLMAnnotator, vocabulary
from crsim.eval.annotators.llm_need import (
    NEED_ERROR,
    UNLINKED_TITLES,
    LLMNeedExtractor,
    LLMNeedReport,
    evaluate_llm_needs,
)
from crsim.eval.annotators.need import NEED_SOURCE
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.grammar import acts_grammar
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model import Dialogue, DialogueAct, Domain, InformationNeed, Utterance
from crsim.model.dialogue import Role
from support import needs_local_model

runner = CliRunner()
GOLD = Path(__file__).parents[1] / "fixtures" / "iard" / "formatted_IARD_annotated_gold.json.gz"
Script = Callable[[list[Message], ResolvedGeneration], str]


def scripted(tmp_path: Path | None, script: Script | None = None) -> tuple[LLMHub, ScriptedProvider]:
    """A hub whose every role is the scripted provider (cache in `tmp_path` when given)."""
    settings = LLMSettings(default=ModelConfig(provider="scripted", replies=["other()"]))
    hub = LLMHub(settings, cache_path=tmp_path / "cache.sqlite" if tmp_path is not None else None)
    provider = hub.role("annotator").provider
    assert isinstance(provider, ScriptedProvider)
    if script is not None:
        provider.script = script
    return hub, provider


def by_speaker(user_answer: str, crs_answer: str) -> Script:
    """Answers by the role of the utterance the prompt asks about (repairs included)."""

    def script(messages: list[Message], _generation: ResolvedGeneration) -> str:
        query = next(m["content"] for m in reversed(messages) if "Label this" in m["content"])
        return user_answer if "Label this User utterance" in query else crs_answer

    return script


def llm_annotator(domain: Domain, hub: LLMHub, **args: object) -> LLMAnnotator:
    params = LLMAnnotator.Params.model_validate(args)
    return LLMAnnotator(params, BuildContext(domain, hub))


def chat() -> Dialogue:
    return Dialogue(
        id="chat",
        utterances=[
            Utterance(role="user", text="Hi, I'd like a movie for tonight."),
            Utterance(role="crs", text="What genre do you like?"),
            Utterance(role="user", text="Something   scary,\nlike a horror film."),
        ],
    )


async def test_prompt_shows_vocabulary_examples_and_recent_context(tmp_path: Path, domain: Domain) -> None:
    hub, provider = scripted(None, by_speaker('disclose(genre="horror")', "elicit(genre)"))
    tool = llm_annotator(domain, hub, context=1)
    done = await tool.annotate(chat())
    assert len(provider.requests) == 3  # one call per utterance, no repair needed
    words = vocabulary("crsim", domain)
    messages, generation = provider.requests[2]
    system_text = messages[0]["content"]
    for role in (Role.USER, Role.CRS):
        assert all(f"- {intent}" in system_text for intent in words.intents[role])
    assert all(f"- {slot}" in system_text for slot in ("title", *domain.informable_slots, "plot", "year"))
    # the worked examples come as earlier chat turns, each answered by the assistant
    assert [m["content"] for m in messages[2 : 2 * len(EXAMPLES) + 1 : 2]] == [e.acts for e in EXAMPLES]
    query = messages[-1]["content"]
    assert "Recommender: What genre do you like?" in query  # context=1: only the utterance before
    assert "I'd like a movie" not in query and "earlier utterances left out" in query
    assert "User: Something scary, like a horror film." in query  # whitespace collapsed
    assert generation.grammar == acts_grammar(list(words.intents[Role.USER]), list(words.slots), max_acts=3)
    assert provider.requests[1][1].grammar == acts_grammar(
        list(words.intents[Role.CRS]), list(words.slots), max_acts=3
    )
    assert generation.temperature == 0.0 and generation.json_schema is None
    assert "This utterance opens the conversation." in provider.requests[0][0][-1]["content"]
    first, crs, last = done.utterances
    assert last.acts == [DialogueAct(intent="disclose", slots=[("genre", "horror")])]
    assert crs.acts == [DialogueAct(intent="elicit", slots=[("genre", None)])]
    assert all(
        u.annotations["acts_source"] == "llm" and ACTS_ERROR not in u.annotations for u in done.utterances
    )
    assert tool.failed == 0 and first.acts[0].intent == "disclose"


async def test_unreadable_answer_is_recorded_not_invented(domain: Domain) -> None:
    hub, provider = scripted(None, by_speaker("The user wants a scary film.", "elicit(genre)"))
    tool = llm_annotator(domain, hub)
    done = await tool.annotate(chat())
    first, crs, last = done.utterances
    assert crs.acts and crs.annotations["acts_source"] == "llm"
    for failed in (first, last):
        assert failed.acts == [] and "acts_source" not in failed.annotations
        error = failed.annotations[ACTS_ERROR]
        assert error["raw"] == "The user wants a scary film." and error["annotator"] == "llm"
        assert "unreadable answer after one repair" in error["error"]
    assert tool.failed == 2 and len(provider.requests) == 5  # each failure had its one repair
    repair = provider.requests[1][0]
    assert repair[-2] == {"role": "assistant", "content": "The user wants a scary film."}
    assert "could not be read" in repair[-1]["content"]
    # a later successful pass over the same dialogue drops the old error
    provider.script = by_speaker("other()", "elicit(genre)")
    redone = await tool.annotate(done, overwrite=True)
    assert all(ACTS_ERROR not in u.annotations and u.acts for u in redone.utterances)


async def test_answers_outside_the_vocabulary_are_repaired_or_refused(domain: Domain) -> None:
    answers = iter(['greeting()|disclose(colour="red")', 'request_recommendation(genre="horror")'])
    hub, provider = scripted(None, lambda _m, _g: next(answers))
    tool = llm_annotator(domain, hub, scheme="iard")
    acts = await tool.utterance_acts(Utterance(role="user", text="hi! any horror?"), [])
    assert acts == [DialogueAct(intent="request_recommendation", slots=[("genre", "horror")])]
    assert "intent 'greeting' is not one of" in provider.requests[1][0][-1]["content"]  # IARD has no greeting
    provider.script = lambda _m, _g: 'recommend(colour="red")'
    assert await tool.utterance_acts(Utterance(role="crs", text="Try It (2017)"), []) == []
    provider.script = lambda _m, _g: "other()|other()|other()|other()"
    assert await tool.utterance_acts(Utterance(role="crs", text="ok"), []) == []
    assert tool.failed == 2


def test_iard_scheme_matches_the_gold_label_set(domain: Domain) -> None:
    words = vocabulary("iard", domain)
    assert set(words.intents[Role.USER]) == set(IARD_USER_INTENTS.values())
    assert set(words.intents[Role.CRS]) == set(IARD_CRS_INTENTS.values())
    assert "greeting" not in words.intents[Role.USER] and "ask" not in words.intents[Role.CRS]
    assert set(words.slots) == set(SLOTS.values()) and "rating" in words.slots
    crsim = vocabulary("crsim", domain)
    assert crsim.slots == ("title", "genre", "actor", "director", "decade", "keyword", "plot", "year")
    assert vocabulary("crsim", domain, ["genre"]).slots == ("genre",)
    with pytest.raises(ConfigError, match="unknown act scheme 'x'"):
        vocabulary("x", domain)


def test_arguments_are_validated(domain: Domain) -> None:
    hub, _ = scripted(None)
    with pytest.raises(ConfigError, match=r"annotator\.args\.scheme: .*unknown scheme 'redial'"):
        build_annotator("llm", {"scheme": "redial"}, domain)
    with pytest.raises(ConfigError, match=r"annotator\.args\.slots: .*non-empty words"):
        build_annotator("llm", {"slots": ["genre", "bad slot"]}, domain)
    with pytest.raises(ConfigError, match=r"annotator\.args\.prompt: .*neither a file nor a template"):
        build_annotator("llm", {"prompt": "missing.j2"}, domain)
    only_genre = llm_annotator(domain, hub, slots=["genre"], examples=10)
    # examples naming slots outside the vocabulary are not shown
    assert only_genre.examples and all("title=" not in e.acts for e in only_genre.examples)
    assert LLMAnnotator.llm_roles(LLMAnnotator.Params(role="tagger")) == ["tagger"]


async def test_cache_makes_a_rerun_free(tmp_path: Path, domain: Domain) -> None:
    hub, provider = scripted(tmp_path, by_speaker('disclose(genre="horror")', "elicit(genre)"))
    first = await llm_annotator(domain, hub).annotate(chat())
    await hub.aclose()
    assert len(provider.requests) == 3
    again_hub, again = scripted(tmp_path, by_speaker("other()", "other()"))
    tool = llm_annotator(domain, again_hub)
    second = await tool.annotate(chat())
    await again_hub.aclose()
    assert again.requests == [] and tool.llm.calls == 0 and second == first


def _gold(limit: int) -> list[Dialogue]:
    with gzip.open(GOLD, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)[:limit]
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


async def test_evaluation_scores_failures_as_missing_acts(domain: Domain) -> None:
    gold = _gold(2)
    hub, _ = scripted(None, by_speaker("not an act", "other()"))
    tool = llm_annotator(domain, hub, scheme="iard")
    result = await evaluate_annotator(tool, gold)
    users = sum(u.role == Role.USER for d in gold for u in d.utterances)
    assert tool.failed == users and result.by_role["user"].intent.predicted == 0
    crs_other = sum(u.role == Role.CRS and u.has_intent("other") for d in gold for u in d.utterances)
    assert result.by_role["crs"].intent.correct == crs_other


NEED_ANSWER = {
    "constraints": [
        {"slot": "genre", "value": "horror"},
        {"slot": "genre", "value": "Horror "},
        {"slot": "actor", "value": "Tom Hanks"},
        {"slot": "actor", "value": "Meg Ryan"},
    ],
    "requests": ["plot", "plot"],
    "targets": ["The Conjuring", "A Film That Does Not Exist Anywhere"],
}


async def test_need_from_the_whole_dialogue(domain: Domain) -> None:
    hub, provider = scripted(None, lambda _m, _g: json.dumps(NEED_ANSWER))
    extractor = LLMNeedExtractor(None, BuildContext(domain, hub))
    report = LLMNeedReport()
    done = await extractor.annotate(chat(), report=report)
    conjuring = domain.items.linker.match_title("The Conjuring (2013)")
    assert conjuring is not None
    assert done.information_need == InformationNeed(
        constraints={"genre": "horror", "actor": ["Tom Hanks", "Meg Ryan"]},
        requests=["plot"],
        targets=[conjuring.item_id],
    )
    assert done.metadata[NEED_SOURCE] == "llm"
    assert done.metadata[UNLINKED_TITLES] == ["A Film That Does Not Exist Anywhere"]
    assert (report.extracted, report.failed) == (1, 0)
    ((messages, generation),) = provider.requests
    transcript = messages[-1]["content"]
    assert "User: Hi, I'd like a movie for tonight.\nRecommender: What genre do you like?" in transcript
    schema = generation.json_schema
    assert schema is not None and generation.grammar is None
    assert schema["$defs"]["Constraint"]["properties"]["slot"]["enum"] == list(domain.informable_slots)
    requests = schema["properties"]["requests"]
    assert set(requests["items"]["enum"]) == {*domain.requestable_slots, *domain.informable_slots}
    assert schema["properties"]["targets"]["maxItems"] == 5
    assert all(f"- {slot}" in messages[0]["content"] for slot in domain.informable_slots)


async def test_unreadable_need_is_recorded_not_defaulted(domain: Domain) -> None:
    bad = {**NEED_ANSWER, "constraints": [{"slot": "colour", "value": "red"}]}
    hub, provider = scripted(None, lambda _m, _g: json.dumps(bad))
    extractor = LLMNeedExtractor(None, BuildContext(domain, hub))
    report = LLMNeedReport()
    done = await extractor.annotate(chat(), report=report)
    assert done.information_need is None and NEED_SOURCE not in done.metadata
    error = done.metadata[NEED_ERROR]
    assert error["raw"] == json.dumps(bad) and "constraints.0.slot" in error["error"]
    assert (report.failed, report.extracted, extractor.failed) == (1, 0, 1) and len(provider.requests) == 2
    kept = chat().model_copy(update={"information_need": InformationNeed(requests=["plot"])})
    assert await extractor.annotate(kept) == kept  # a given need is kept without a call
    assert len(provider.requests) == 2


async def test_need_evaluation_counts_failures_as_empty_needs(domain: Domain) -> None:
    gold = Dialogue(
        id="sim",
        utterances=chat().utterances,
        information_need=InformationNeed(constraints={"genre": "horror"}, requests=["plot", "actor"]),
    )
    answers = iter([json.dumps(NEED_ANSWER), "no JSON here", "still none"])
    hub, _ = scripted(None, lambda _m, _g: next(answers))
    extractor = LLMNeedExtractor(None, BuildContext(domain, hub))
    result = await evaluate_llm_needs(extractor, [gold, gold.model_copy(update={"id": "sim2"})])
    assert result.dialogues == 2 and result.failed == 1
    constraints, requests = result.scores["constraints"], result.scores["requests"]
    assert (constraints.correct, constraints.predicted, constraints.gold) == (1, 3, 2)
    assert (requests.correct, requests.predicted, requests.gold) == (1, 1, 4)
    assert result.summary()["failed"] == 1 and "targets" not in result.summary()["parts"]


def _write(path: Path, dialogues: list[Dialogue]) -> Path:
    path.write_text("".join(d.model_dump_json() + "\n" for d in dialogues), encoding="utf-8")
    return path


def _llm_config(path: Path, replies: list[str]) -> Path:
    path.write_text(json.dumps({"llm": {"default": {"provider": "scripted", "replies": replies}}}))
    return path


def test_cli_annotate_acts_with_the_llm_and_its_cache(tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", [chat()])
    config = _llm_config(tmp_path / "llm.yaml", ["other()", "oops", "oops"])
    out = tmp_path / "out" / "annotated.jsonl"
    args = ["annotate", "acts", str(source), "-o", str(out), "--annotator", "llm", "--llm", str(config)]
    result = runner.invoke(data_app, args)
    assert result.exit_code == 0, result.output
    # replies in turn: other() | oops, repair: oops (unreadable) | other()
    assert "1 dialogues: 3 utterances annotated by llm (1 unreadable" in result.output
    assert "LLM: 4 provider calls (role annotator); 0 answers from the cache" in result.output
    done = Dialogue.model_validate_json(out.read_text())
    assert [str(u.acts[0]) if u.acts else None for u in done.utterances] == ["other()", None, "other()"]
    assert done.utterances[1].annotations[ACTS_ERROR]["raw"] == "oops"
    assert (out.parent / "llm_cache.sqlite").exists()
    again = runner.invoke(data_app, args)
    assert again.exit_code == 0, again.output
    assert "LLM: 0 provider calls (role annotator); 4 answers from the cache" in again.output
    assert out.read_text() == done.model_dump_json() + "\n"


def test_cli_eval_and_need_with_the_llm(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.jsonl", _gold(3))
    config = _llm_config(tmp_path / "llm.yaml", ["other()"])
    cache = tmp_path / "c.sqlite"
    args = ["annotate", "eval", str(gold), "--annotator", "llm", "--arg", "scheme=iard", "--limit", "2"]
    result = runner.invoke(data_app, [*args, "--llm", str(config), "--cache", str(cache), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    n = sum(len(d.utterances) for d in _gold(2))
    assert summary["dialogues"] == 2 and summary["utterances"] == n
    assert summary["llm"]["failed_utterances"] == 0 and summary["llm"]["provider_calls"] == {"annotator": n}
    assert summary["micro"]["intent"]["predicted"] == n and cache.exists()
    table = runner.invoke(data_app, [*args, "--llm", str(config), "--cache", str(cache)])
    assert table.exit_code == 0 and "0 utterances unreadable" in table.output
    assert f"0 provider calls (role annotator); {n} answers from the cache" in table.output

    answer = json.dumps(
        {"constraints": [{"slot": "genre", "value": "comedy"}], "requests": [], "targets": []}
    )
    need_config = _llm_config(tmp_path / "need.yaml", [answer])
    out = tmp_path / "needs.jsonl"
    need = ["annotate", "need", str(gold), "-o", str(out), "--extractor", "llm", "--llm", str(need_config)]
    result = runner.invoke(data_app, need)
    assert result.exit_code == 0, result.output
    assert "3 dialogues: 3 needs extracted by llm, 0 unreadable" in result.output
    needs = [Dialogue.model_validate_json(line) for line in out.read_text().splitlines()]
    assert all(d.information_need == InformationNeed(constraints={"genre": "comedy"}) for d in needs)

    simulated = _write(tmp_path / "sim.jsonl", [d.model_copy(update={"metadata": {}}) for d in needs])
    scored = runner.invoke(
        data_app,
        [
            *("annotate", "need-eval", str(simulated), "--extractor", "llm", "--limit", "1"),
            *("--llm", str(need_config), "--cache", str(tmp_path / "need.sqlite")),
        ],
    )
    assert scored.exit_code == 0, scored.output
    assert "needs from text: 1 dialogues" in scored.output and "0 dialogues unreadable" in scored.output
    assert "1 provider calls (role annotator); 0 answers from the cache" in scored.output
    assert (tmp_path / "need.sqlite").exists()


def test_cli_rule_based_need_over_llm_acts(tmp_path: Path) -> None:
    source = _write(tmp_path / "in.jsonl", [chat()])
    config = _llm_config(tmp_path / "llm.yaml", ['disclose(genre="comedy")'])
    out = tmp_path / "needs.jsonl"
    args = ["annotate", "need", str(source), "-o", str(out), "--annotator", "llm", "--llm", str(config)]
    result = runner.invoke(data_app, args)
    assert result.exit_code == 0, result.output
    # the CRS utterance cannot be a disclosure: refused twice, so it has no acts
    assert "1 needs extracted (3 utterances given acts by llm, 1 of them unreadable)" in result.output
    done = Dialogue.model_validate_json(out.read_text())
    assert done.information_need == InformationNeed(constraints={"genre": "comedy"})
    assert done.metadata[NEED_SOURCE] == "rules"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["acts", "IN", "-o", "OUT", "--llm", "CFG"], "--llm: 'rules' uses no LLM"),
        (["acts", "IN", "-o", "OUT", "--cache", "C"], "--cache: 'rules' uses no LLM"),
        (["need", "IN", "-o", "OUT", "--extractor", "llm", "--annotator", "rules"], "uses no act annotator"),
        (["need", "IN", "-o", "OUT", "--extractor", "gpt"], "--extractor 'gpt': expected one of rules, llm"),
        (["need-eval", "IN", "--extractor", "llm", "--no-from-text"], "reads the text only"),
        (
            ["need", "IN", "-o", "OUT", "--extractor", "llm", "--arg", "max_targets=0", "--llm", "CFG"],
            "max_targets",
        ),
        (["acts", "IN", "-o", "OUT", "--annotator", "llm", "--llm", "BAD"], "field 'llm.default.provider'"),
        (["acts", "IN", "-o", "OUT", "--annotator", "llm", "--llm", "IN"], "with an `llm:` section"),
    ],
)
def test_cli_errors(tmp_path: Path, args: list[str], message: str) -> None:
    source = _write(tmp_path / "in.jsonl", [chat()])
    config = _llm_config(tmp_path / "llm.yaml", ["other()"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm:\n  default:\n    provider: gpt\n")
    paths = {"IN": source, "OUT": tmp_path / "out.jsonl", "CFG": config, "BAD": bad, "C": tmp_path / "c"}
    result = runner.invoke(data_app, ["annotate", *(str(paths.get(a, a)) for a in args)])
    assert result.exit_code == 2, result.output
    assert message in result.output and not (tmp_path / "out.jsonl").exists()


@needs_local_model
async def test_two_utterances_with_the_real_local_model(domain: Domain) -> None:
    hub = LLMHub(
        LLMSettings(default=ModelConfig(provider="local", max_tokens=40), cache=CacheConfig(mode="off"))
    )
    dialogue = Dialogue(id="real", utterances=chat().utterances[1:])
    try:
        tool = llm_annotator(domain, hub, scheme="iard", examples=1, context=1, max_tokens=40)
        done = await tool.annotate(dialogue)
    finally:
        await hub.aclose()
    words = vocabulary("iard", domain)
    for utterance in done.utterances:
        if ACTS_ERROR in utterance.annotations:  # a tiny model may fail; then nothing is invented
            assert utterance.acts == [] and isinstance(utterance.annotations[ACTS_ERROR]["raw"], str)
            continue
        assert utterance.annotations["acts_source"] == "llm" and 1 <= len(utterance.acts) <= 3
        assert all(a.intent in words.intents[utterance.role] for a in utterance.acts)
        assert all(s in words.slots for a in utterance.acts for s, _ in a.slots)
    assert tool.failed == sum(ACTS_ERROR in u.annotations for u in done.utterances)
