"""The GBNF grammar of the act-string form: its text, its checks, and what the real local model
writes under it (every answer parses and uses only the allowed intents and slots)."""

from __future__ import annotations

import re

import pytest

from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.grammar import acts_grammar, gbnf_literal
from crsim.llm.providers.base import create_provider
from crsim.llm.types import GenerationConfig, system, user
from crsim.model.acts import Intent, parse_acts
from support import needs_local_model

# the same settings as tests/llm/test_llm_local.py, so both modules share one llama.cpp server
CONFIG = ModelConfig(provider="local", max_tokens=48, seed=5)
INTENTS = [
    "greeting",
    "disclose",
    "inquire.elicit",
    "request_recommendation",
    "reject",
    "goodbye",
    "préférence",
]
SLOTS = ["genre", "actor", "director", "title", "year"]


def _rules(grammar: str) -> dict[str, str]:
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())
    assert len(rules) == len(grammar.strip().splitlines()), "a rule is defined twice"
    return rules


# --- the grammar text -----------------------------------------------------------------------------


def test_the_grammar_lists_exactly_the_given_intents_and_slots() -> None:
    rules = _rules(acts_grammar(INTENTS, [*SLOTS, "genre"], max_acts=3, max_slots=2, max_value_chars=30))
    assert rules["root"] == 'act ("|" act){0,2}'
    assert rules["intent"] == " | ".join(gbnf_literal(i) for i in INTENTS)
    assert rules["slot-name"] == '"genre" | "actor" | "director" | "title" | "year"'  # duplicates dropped
    assert rules["slots"] == 'slot ("," slot){0,1}'
    assert rules["slot"] == 'slot-name ("=" value)?'
    assert rules["value"] == r'"\"" value-char{0,30} "\""'
    assert rules["value-char"] == r'[^"\\\x00-\x1F\x7F]'
    every_reference = set(re.findall(r"(?<![\"\w-])([a-z][a-z-]*)(?![\"\w-])", " ".join(rules.values())))
    assert every_reference <= set(rules), every_reference - set(rules)


def test_one_act_and_no_slots_make_the_smallest_grammar() -> None:
    rules = _rules(acts_grammar(["greeting", "goodbye"], [], max_acts=1))
    assert rules == {"root": "act", "intent": '"greeting" | "goodbye"', "act": 'intent "()"'}


def test_literals_escape_quotes_backslashes_controls_and_non_ascii() -> None:
    assert gbnf_literal('say "hi"\\now\n\t') == r'"say \"hi\"\\now\n\t"'
    assert gbnf_literal("café ☕ 𝄞\x01") == r'"caf\xE9 \u2615 \U0001D11E\x01"'
    assert gbnf_literal("inquire.elicit") == '"inquire.elicit"'
    assert all(ord(c) < 128 for c in acts_grammar(INTENTS, SLOTS))


@pytest.mark.parametrize(
    ("intents", "slots", "limits", "message"),
    [
        ([], SLOTS, {}, "at least one intent"),
        (["greet me"], SLOTS, {}, "intent 'greet me' cannot appear"),
        (["greeting"], ["genre", "title(s)"], {}, r"slot 'title\(s\)' cannot appear"),
        (["greeting"], SLOTS, {"max_acts": 0}, "max_acts must be at least 1, got 0"),
        (["greeting"], SLOTS, {"max_value_chars": 0}, "max_value_chars must be at least 1"),
    ],
)
def test_bad_grammar_requests_are_refused(
    intents: list[str], slots: list[str], limits: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        acts_grammar(intents, slots, **limits)


# --- under the real local model -----------------------------------------------------------------------


@needs_local_model
async def test_llama_cpp_reads_escaped_literals_back_exactly() -> None:
    tricky = 'say "hi" \\ café ☕'
    llm = LLM("user", CONFIG, create_provider(CONFIG))
    answer = await llm.generate(
        [user("Repeat after me.")], GenerationConfig(grammar=f"root ::= {gbnf_literal(tricky)}")
    )
    assert answer.text == tricky


@needs_local_model
@pytest.mark.parametrize(
    "message",
    [
        "Hi! I'd love a funny movie with Tom Hanks.",
        "No thanks, I have seen Heat already. Bye!",
        "Who directed that one, and what year is it from?",
    ],
)
async def test_every_answer_under_the_grammar_parses_into_allowed_acts(message: str) -> None:
    grammar = acts_grammar(INTENTS, SLOTS, max_acts=2, max_slots=2, max_value_chars=20)
    llm = LLM("user", CONFIG, create_provider(CONFIG))
    prompt = [
        system(
            'Write the dialogue acts of the message, like disclose(genre="comedy")|request_recommendation().'
        ),
        user(message),
    ]
    for seed in (1, 2):
        answer = await llm.generate(prompt, GenerationConfig(grammar=grammar, temperature=1.0, seed=seed))
        assert answer.finish_reason == "stop", answer.text
        acts = parse_acts(answer.text)
        assert 1 <= len(acts) <= 2, answer.text
        assert {a.intent for a in acts} <= set(INTENTS), answer.text
        assert all(
            slot in SLOTS and (value is None or len(value) <= 20) for a in acts for slot, value in a.slots
        )


@needs_local_model
async def test_llama_cpp_accepts_the_grammar_with_default_limits_over_every_intent() -> None:
    grammar = acts_grammar([i.value for i in Intent], [*SLOTS, "plot", "keyword", "decade"])
    llm = LLM("user", CONFIG, create_provider(CONFIG))
    answer = await llm.generate([user("Hello!")], GenerationConfig(grammar=grammar, max_tokens=12))
    # a 400 would have raised LLMBadRequest; the answer is the start of an act string
    assert re.fullmatch(r"[a-z_]+(\(.*)?", answer.text, re.S), answer.text
