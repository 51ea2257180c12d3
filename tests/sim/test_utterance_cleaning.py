"""The one cleaner of an LLM user's answer (`crsim.sim.shared.utterance`) and who uses it how.

The cases of the three cleaners it replaces (`llm_single`/`llm_dual`/`pepper`, `abus`'s `nlg: llm`,
`recusersim`) are kept here with the arguments each simulator passes, so their behaviour is checked
where it is defined.
"""

from __future__ import annotations

import pytest

from crsim.sim.agenda.llm_nlg import parse_utterance
from crsim.sim.shared.utterance import Cleaned, clean_utterance


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("User: I want a comedy.", "I want a comedy."),
        ("**User:** I want a comedy.", "I want a comedy."),
        ('"I want a comedy."', "I want a comedy."),
        ("I want a comedy.\nRecommender: Sure, how about Jumanji?", "I want a comedy."),
        ("I want a comedy.\n\nAssistant: ok\nUser: more", "I want a comedy."),
        ("User: I want a comedy.\nUser: And a short one.", "I want a comedy."),
        ("I want a comedy,\nsomething light.", "I want a comedy,\nsomething light."),
        ("Userland is a fine word: keep it", "Userland is a fine word: keep it"),
        ("The user's next message is: A comedy, please.", "A comedy, please."),
        ("The user: A comedy, please.", "A comedy, please."),
        ("You: A comedy, please.", "A comedy, please."),
        ("Recommender: How can I help?", ""),
        ("   ", ""),
        # labels that only abus's cleaner knew, quotes of every kind, and two quoted titles kept
        ("Me: A comedy, please.", "A comedy, please."),
        ("Your reply: A comedy, please.", "A comedy, please."),
        ("'I'd like a comedy.'", "I'd like a comedy."),
        ("“A comedy, please.”", "A comedy, please."),
        ('"Heat" or "Ronin", I cannot decide.', '"Heat" or "Ronin", I cannot decide.'),
        ('"Heat" or "Ronin"', '"Heat" or "Ronin"'),
    ],
)
def test_the_users_words_without_labels_other_speakers_and_quotes(raw: str, clean: str) -> None:
    """What `llm_single`, `llm_dual`, `pepper` and `target_biased` keep (no arguments)."""
    assert clean_utterance(raw) == Cleaned(clean)


def test_abus_keeps_the_first_line() -> None:
    """`abus` (`nlg: llm`) asks for one line: only the first non-empty one is the utterance."""
    assert (
        clean_utterance('\n\nMe: "Sounds good!"\nRecommender: great', first_line=True).text == "Sounds good!"
    )
    assert clean_utterance("I want a comedy,\nsomething light.", first_line=True).text == "I want a comedy,"
    assert clean_utterance('""\nA comedy.', first_line=True).text == "A comedy."
    assert parse_utterance("I'd like a comedy.") == "I'd like a comedy."
    for empty in ("User:   ", "Recommender: great\nUser: hi"):
        with pytest.raises(ValueError, match="empty"):
            parse_utterance(empty)


def test_recusersim_also_removes_assistant_framing_and_says_what() -> None:
    """`recusersim` (`meta=True`): echoed instructions, a preamble, a note and quotes go, and are named."""

    def meta(raw: str) -> tuple[str, list[str]]:
        cleaned = clean_utterance(raw, meta=True)
        return cleaned.text, list(cleaned.removed)

    assert meta('Sure, here\'s my next message:\n\n"I want a sci-fi film."\n\n(This message is short.)') == (
        "I want a sci-fi film.",
        ["preamble", "note", "quotes"],
    )
    assert meta("Response time is no problem: any film works.") == (
        "Response time is no problem: any film works.",
        [],
    )
    assert meta('"Heat" is great, but "Ronin" too?')[0] == '"Heat" is great, but "Ronin" too?'
    assert meta("My reply to the recommender: Is it long?") == ("Is it long?", ["preamble"])
    assert meta("Here's a more formal version: Is it long?") == ("Is it long?", ["preamble"])
    assert meta("Here is what I think: it is fine.") == ("Here is what I think: it is fine.", [])
    assert meta('Rewrite it to 20 words:\n"Just a comedy, thanks."')[0] == "Just a comedy, thanks."
    assert meta("Here is your next message:\n\nUser: A thriller, please.")[0] == "A thriller, please."
    assert meta("Here is what I want: a comedy.")[0] == "Here is what I want: a comedy."
    assert (
        clean_utterance("Sure, here's my next message: A comedy.").text
        == "Sure, here's my next message: A comedy."
    )
