"""Who is speaking and what is said again: the role-flip and meta-text cues, repeats and parroting of
crsim.language.message_rules, on made-up sentences of movies, restaurants and hotels."""

from __future__ import annotations

import pytest

from crsim.language.message_rules import (
    first_cue,
    indifferent,
    meta_text,
    parrots,
    repeated,
    repeats,
    shared_run,
    user_voice_patterns,
)

NOUNS = {
    "movies": ("movie", "movies"),
    "restaurants": ("restaurant", "restaurants"),
    "hotels": ("hotel", "hotels"),
}


def flips(text: str, domain: str = "restaurants") -> bool:
    return first_cue(text, user_voice_patterns(*NOUNS[domain])) is not None


@pytest.mark.parametrize(
    "text",
    [
        # an assistant describing itself or its service
        "Sure thing, I'm a virtual assistant built for travel questions.",
        "As a friendly chatbot, I answer whatever you ask.",
        "I'm always ready to assist with bookings.",
        "I'm happy to provide recommendations for tonight.",
        "Glad to be of service, I'm here for you.",
        "I would be delighted to suggest a few spots.",
        "I'm about to recommend three thrillers.",
        "Let me know and I can help you choose a hotel.",
        "I picked a quiet guesthouse for you.",
        # its own recommendations, the other side's request
        "I hope my suggestions were useful.",
        "Sadly there is nothing matching your request.",
        "This matches what you asked for.",
        # asking the other side what it wants
        "Hello there, what's on your mind tonight?",
        "Please tell me a bit about yourself.",
        "You can ask me about any hotel in town.",
        # summing up the other side's wish, as a recommender does
        "Fine. You're looking for a quiet hotel near the station.",
        "You need a place with free parking.",
    ],
)
def test_recommender_voice_flips_role(text: str) -> None:
    assert flips(text)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("movies", "I'd recommend it to my friends, it was great."),
        ("movies", "I'd like to watch a thriller from the nineties."),
        ("movies", "Could you help me find something funny?"),
        ("movies", "Thanks for helping me, that was quick."),
        ("movies", "Are there any films like that you'd suggest?"),
        ("movies", "I'm not a fan of horror, sorry."),
        ("movies", "You want me to pick one? Fine, the second."),
        ("movies", "Something lighter, maybe a comedy?"),
        ("restaurants", "I want a cheap place for my family, do you know one?"),
        ("restaurants", "What's the phone number of it?"),
        ("restaurants", "Can you book a table for two?"),
        ("restaurants", "I'm happy with that one, thanks for your help!"),
        ("restaurants", "As a vegetarian, I need meat-free dishes."),
        ("hotels", "I need a hotel with free wifi."),
        ("hotels", "I'd love to stay somewhere in the north."),
        ("hotels", "Which area is the guesthouse in?"),
        ("hotels", "Is it a guesthouse or a hotel?"),
        ("hotels", "I don't mind the price."),
    ],
)
def test_ordinary_user_messages_of_three_domains_are_neither_flip_nor_meta(domain: str, text: str) -> None:
    assert not flips(text, domain)
    assert meta_text(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, I'm only a bot and cannot eat.",
        "Well, I'm not a recommender system, I'm just a person who likes films.",
        "You are the one looking for a hotel here.",
        "Remember that you're supposed to keep replies short.",
        "Never end the chat before you have a booking.",
        "Being in the role of asking is hard.",
        "Here is an improved version of my reply: a cheap hotel please.",
        "Could I make this reply shorter?",
        "My response to the chat message follows.",
        '"Maybe later" is a polite way to decline.',
        "Please reply in your own words.",
        "Now I'm going to ask you about the parking.",
    ],
)
def test_text_about_the_message_the_task_or_the_role_is_meta_text(text: str) -> None:
    assert meta_text(text) is not None


def test_a_sentence_said_again_inside_a_longer_message_repeats_with_a_run() -> None:
    first = "Sorry, I could not open the menu you sent me earlier today. Which area?"
    second = "Hmm. I could not open the menu you sent me earlier today. What about parking?"
    assert shared_run(first, second) == 11  # "i could not open the menu you sent me earlier today"
    assert not repeats(first, second)  # no near-duplicate
    assert repeats(first, second, run_words=10)
    assert repeated(["A hotel please.", first, second], run_words=10) == [3]
    assert repeated(["A hotel please.", first, second]) == []  # the CRS's rule: near-duplicates only
    assert not repeats("I like the east of town, please.", "No, I like the north of town, please.", 10)


@pytest.mark.parametrize(
    ("text", "none"),
    [
        ("I don't mind.", True),
        ("No particular preference.", True),
        ("Honestly, anything would be fine.", True),
        ("Either one works.", True),
        ("I'd like a cheap place.", False),
        ("I don't mind the price, but it must be in the west of town near the river.", False),
    ],
)
def test_replies_stating_no_preference(text: str, none: bool) -> None:
    assert indifferent(text) is none


def test_copying_a_clause_of_the_crs_message_parrots_but_quoting_a_title_does_not() -> None:
    crs = "Well, I am not sure which of these hotels you would prefer to book. Try the Grand Plaza."
    assert parrots("Yes! I am not sure which of these hotels you would prefer to book either.", crs)
    title = "The Lord of the Rings: The Return of the King (2003)"
    said = f"How about {title}? It is long."
    assert not parrots(f"{title}? I loved that one, thanks.", said, (title,))
    assert parrots(f"{title}? I loved that one, thanks.", said)  # counted as a copy without the title rule
    assert not parrots("A cheap hotel in the north, yes.", "Would you like a cheap hotel in the north?")
