"""Template NLG of the agenda-based simulator."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from crsim.core.errors import DataError
from crsim.model.acts import DialogueAct, Intent, parse_acts
from crsim.sim.shared.nlg import NLGContext, TemplateNLG, load_templates

COMMON = [
    ("greeting", "default"),
    ("request_recommendation", "default"),
    ("request_recommendation", "more"),
    ("disclose", "genre"),
    ("disclose", "actor"),
    ("disclose", "director"),
    ("disclose", "decade"),
    ("disclose", "keyword"),
    ("disclose", "none"),
    ("inquire", "plot"),
    ("inquire", "director"),
    ("inquire", "actor"),
    ("inquire", "year"),
    ("accept", "default"),
    ("reject", "default"),
    ("seen", "liked"),
    ("seen", "disliked"),
    ("goodbye", "default"),
]


def nlg(seed: int = 0) -> TemplateNLG:
    return TemplateNLG(load_templates("movies"), random.Random(seed))


@pytest.mark.parametrize(("intent", "variant"), COMMON)
def test_common_acts_have_three_phrasings(intent: str, variant: str) -> None:
    assert len(load_templates("movies").phrases[intent][variant]) >= 3


@pytest.mark.parametrize(
    "acts",
    [
        "greeting()|request_recommendation()",
        'disclose(genre="comedy")',
        'disclose(actor="Tom Hanks",actor="Meg Ryan")',
        "disclose(decade)",
        "inquire(plot)",
        "inquire(year)",
        'reject(title="Heat (1995)")|request_recommendation()',
        'seen(title="Heat (1995)",liked="yes")',
        'accept(title="Heat (1995)")|goodbye()',
        "affirm()|request_recommendation()",
        "deny()",
    ],
)
def test_every_policy_act_renders(acts: str) -> None:
    for seed in range(8):
        text = nlg(seed).generate(parse_acts(acts), NLGContext(focus_title="Heat (1995)"))
        assert text and "{" not in text and "}" not in text


def test_values_are_filled_with_articles_and_display_forms() -> None:
    texts = {nlg(s).generate(parse_acts('disclose(genre="action")'), NLGContext()) for s in range(40)}
    assert any("an action" in t for t in texts) and not any("a action" in t for t in texts)
    texts = {nlg(s).generate(parse_acts('disclose(genre="children")'), NLGContext()) for s in range(40)}
    assert any("children's" in t for t in texts)
    text = nlg().generate(parse_acts('disclose(actor="Tom Hanks",actor="Meg Ryan")'), NLGContext())
    assert "Tom Hanks and Meg Ryan" in text


def test_items_other_than_the_topic_are_named() -> None:
    acts = parse_acts('reject(title="Ronin (1998)")|accept(title="Heat (1995)")')
    text = nlg().generate(acts, NLGContext(topic_title="Ronin (1998)"))
    assert "Heat (1995)" in text and "Ronin (1998)" not in text
    inquiry = nlg().generate(
        [DialogueAct(intent=Intent.INQUIRE, slots=[("director", None)])],
        NLGContext(focus_title="Heat (1995)", topic_title=None),
    )
    assert "Heat (1995)" in inquiry


def test_acknowledgement_comes_first() -> None:
    plain = nlg(5).generate(parse_acts("inquire(plot)"), NLGContext())
    acked = nlg(5).generate(parse_acts("inquire(plot)"), NLGContext(acknowledge=True))
    assert acked != plain and acked.endswith("?")


def test_same_seed_same_text_and_seeds_vary() -> None:
    acts = parse_acts("greeting()|request_recommendation()")
    assert nlg(4).generate(acts, NLGContext()) == nlg(4).generate(acts, NLGContext())
    assert len({nlg(s).generate(acts, NLGContext()) for s in range(10)}) > 3


def test_template_file_by_path(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text('greeting: ["Howdy!"]\ngoodbye:\n  default: ["Later."]\n', encoding="utf-8")
    mini = TemplateNLG(load_templates(str(path)), random.Random(0))
    assert mini.generate(parse_acts("greeting()|goodbye()"), NLGContext()) == "Howdy! Later."


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("greeting: []\n", "greeting.default"),
        ("disclose:\n  genre: ['I like {genres}.']\n", "unknown placeholder"),
        ("- just a list\n", "mapping of intents"),
    ],
)
def test_bad_template_files_say_what_is_wrong(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_templates(str(path))


def test_unknown_template_set() -> None:
    with pytest.raises(DataError, match="no packaged template set"):
        load_templates("klingon")
