"""The dialogue-act string form: what `parse_acts` reads, the errors it gives, and that
`format_acts` round-trips with it for any acts (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crsim.model.acts import NAME_PATTERN, DialogueAct, format_acts, is_act_name, parse_acts, quote_value


def act(intent: str, *slots: tuple[str, str | None]) -> DialogueAct:
    return DialogueAct(intent=intent, slots=list(slots))


# --- reading --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "acts"),
    [
        # the forms the first parser read, read the same way
        (
            'elicit(genre)|recommend(title="Heat",year="1995")',
            [act("elicit", ("genre", None)), act("recommend", ("title", "Heat"), ("year", "1995"))],
        ),
        ("greeting()|goodbye()", [act("greeting"), act("goodbye")]),
        (
            'disclose(actor="Tom Hanks",actor="Meg Ryan")',
            [act("disclose", ("actor", "Tom Hanks"), ("actor", "Meg Ryan"))],
        ),
        ('reject(title="Ronin (1998)")', [act("reject", ("title", "Ronin (1998)"))]),
        ('inform(title="The "Best" Movie")', [act("inform", ("title", 'The "Best" Movie'))]),
        # (so a missing comma after a value is read as part of the value, as the first parser did)
        ('a(x="1" y="2")', [act("a", ("x", '1" y="2'))]),
        ('a(x="v",)', [act("a", ("x", "v"))]),
        ('inform(path="C:\\dir")', [act("inform", ("path", "C:\\dir"))]),
        ("a()||b()|", [act("a"), act("b")]),
        ("", []),
        ("  \n ", []),
        # new: dotted names, single quotes, commas, `|` and `)` inside values, escapes, whitespace
        ("inquire.elicit(genre)", [act("inquire.elicit", ("genre", None))]),
        ('disclose(genre="action, comedy")', [act("disclose", ("genre", "action, comedy"))]),
        ("disclose(genre='action, comedy')", [act("disclose", ("genre", "action, comedy"))]),
        ('inform(title="a|b)c(")|bye()', [act("inform", ("title", "a|b)c(")), act("bye")]),
        (
            'inform(quote="she said \\"no\\" \\\\ twice")',
            [act("inform", ("quote", 'she said "no" \\ twice'))],
        ),
        ("inform(title='Schindler\\'s List')", [act("inform", ("title", "Schindler's List"))]),
        ("inform(title='Schindler's List')", [act("inform", ("title", "Schindler's List"))]),
        ("inform(q='say \"hi\"')", [act("inform", ("q", 'say "hi"'))]),
        (
            ' inquire.elicit ( genre = "drama" ,\n plot ) |  goodbye ( ) ',
            [act("inquire.elicit", ("genre", "drama"), ("plot", None)), act("goodbye")],
        ),
        ('min-year(value="  spaced  ")', [act("min-year", ("value", "  spaced  "))]),
        ('x(v="")', [act("x", ("v", ""))]),
        ('x(v="line\nbreak")', [act("x", ("v", "line\nbreak"))]),
    ],
)
def test_act_strings_are_read(text: str, acts: list[DialogueAct]) -> None:
    assert parse_acts(text) == acts


@pytest.mark.parametrize(
    ("text", "part", "expected"),
    [
        ("elicit(genre", "elicit(genre", "',' or ')' after a slot at character 12"),
        ("recommend(title=Heat)", "recommend(title=Heat)", "a quoted value after '=' at character 16"),
        ("(x)", "(x)", "an intent name at character 0"),
        ("greeting", "greeting", "'(' after the intent"),
        ("a() b()", "a() b()", "'|' before the next act at character 4"),
        ('ok()|inform(title="Heat)', 'inform(title="Heat)', 'a closing "'),
        ("ok()|a(,)|b()", "a(,)", "a slot name or ')' at character 7"),
        ("a(x y)", "a(x y)", "',' or ')' after a slot"),
        ('a(x="1") junk', 'a(x="1") junk', "'|' before the next act at character 9"),
    ],
)
def test_unreadable_strings_name_the_act_and_what_was_expected(text: str, part: str, expected: str) -> None:
    with pytest.raises(ValueError, match="cannot read dialogue act") as caught:
        parse_acts(text)
    assert f"{part!r}" in str(caught.value) and expected in str(caught.value)


# --- writing and the round trip --------------------------------------------------------------------


def test_values_are_quoted_with_escapes() -> None:
    assert quote_value('say "hi" \\ now') == '"say \\"hi\\" \\\\ now"'
    acts = [act("inform", ("title", 'The "Best" (2001)|x')), act("elicit", ("genre", None)), act("bye")]
    text = format_acts(acts)
    assert text == 'inform(title="The \\"Best\\" (2001)|x")|elicit(genre)|bye()'
    assert str(acts[0]) == text.split("|elicit")[0]
    assert parse_acts(text) == acts


# seeded: every run checks the same examples
SEEDED = settings(max_examples=150, deadline=None, derandomize=True)
names = st.from_regex(NAME_PATTERN, fullmatch=True)
values = st.one_of(st.none(), st.text(), st.text(alphabet="\"'\\|(),= \n"))
acts_lists = st.lists(
    st.builds(DialogueAct, intent=names, slots=st.lists(st.tuples(names, values), max_size=4)), max_size=4
)


@SEEDED
@given(acts_lists)
def test_any_acts_survive_format_then_parse(acts: list[DialogueAct]) -> None:
    assert parse_acts(format_acts(acts)) == acts


@SEEDED
@given(acts_lists)
def test_formatted_acts_read_the_same_with_spaces_around_the_punctuation(acts: list[DialogueAct]) -> None:
    spaced = " | ".join(
        f" {a.intent} ( "
        + " , ".join(slot if value is None else f"{slot} = {quote_value(value)}" for slot, value in a.slots)
        + " ) "
        for a in acts
    )
    assert parse_acts(spaced) == acts


@SEEDED
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
    | st.text(alphabet="ab(),=\"'|\\ ", max_size=30)
)
def test_any_text_parses_or_raises_a_value_error(text: str) -> None:
    try:
        acts = parse_acts(text)
    except ValueError as exc:
        assert str(exc).startswith("cannot read dialogue act")
    else:
        assert all(is_act_name(a.intent) and all(is_act_name(s) for s, _ in a.slots) for a in acts)
        assert parse_acts(format_acts(acts)) == acts
