"""Per-CRS measures of one dialogue: cut messages, text that does not name the recommended item, claims
about a named item that its metadata contradicts, messages in the seeker's voice, repeated messages
(docs/behaviour.md)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from rapidfuzz import fuzz

from crsim.language.claims import ClaimPhrases, contradicting_claims
from crsim.language.message_rules import body, crs_role_flip, ends_cut, scrambled, title_words_in
from crsim.model.dialogue import Utterance
from crsim.model.items import Item
from crsim.model.text import REPEAT_RATIO, normalize
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Kind, Observation


def _obs(
    facts: Facts, measure: str, hit: bool | None, note: str = "", message: int | None = None
) -> Observation:
    return Observation(Kind.CRS, facts.crs, measure, facts.dialogue.id, hit, note, message)


def _listed(facts: Facts, u: Utterance) -> list[Item]:
    return [item for i in u.recommended_items if (item := facts.item(i)) is not None]


#: CRS messages of a dialogue with shuffled word order (`scrambled`) from which the CRS counts as one
#: that shuffles its words (one such message may be a model's slip).
SCRAMBLED_MESSAGES = 2


def truncated(facts: Facts, caps: dict[str, int]) -> Iterator[Observation]:
    """CRS messages cut: without a complete ending (`ends_cut`). A CRS that shuffles its words
    (`SCRAMBLED_MESSAGES` of its messages `scrambled`) loses its endings by chance, so its messages are
    not judged. Reaching the configured character cap is named in the note; a message that reaches it
    and still ends complete is not cut."""
    cap = caps.get(facts.crs)
    indices = facts.crs_indices()
    shuffles = sum(scrambled(facts.utterances[i].text) for i in indices) >= SCRAMBLED_MESSAGES
    for index in indices:
        u = facts.utterances[index]
        if not u.text.strip():
            yield _obs(facts, "truncated", None, "empty message", index)
            continue
        if shuffles:
            yield _obs(facts, "truncated", None, "the CRS shuffles its words: a cut cannot be told", index)
            continue
        own = body(u.text, _listed(facts, u)).rstrip()
        if ends_cut(own):
            at_cap = (
                f", at the configured cap of {cap} characters" if cap is not None and len(own) >= cap else ""
            )
            yield _obs(facts, "truncated", True, f"ends {own[-20:]!r}{at_cap}", index)
        else:
            yield _obs(facts, "truncated", False, "", index)


def text_names_item(facts: Facts) -> Iterator[Observation]:
    """CRS messages whose own text names every item they recommend, its title's words in any order
    (`title_words_in`)."""
    for index in facts.crs_indices():
        u = facts.utterances[index]
        if not u.recommended_items:
            continue
        listed = _listed(facts, u)
        if not listed:
            yield _obs(facts, "text_names_item", None, "no recommended item is in the catalogue", index)
            continue
        own = body(u.text, listed)
        missing = [item.display_title for item in listed if not title_words_in(own, item)]
        note = "does not name " + "; ".join(missing[:3]) if missing else ""
        yield _obs(facts, "text_names_item", not missing, note, index)


def claims(facts: Facts, phrases: ClaimPhrases) -> Iterator[Observation]:
    """CRS messages naming one item with a year, decade or attribute claim its metadata contradicts
    (`crsim.language.claims`)."""
    for index in facts.crs_indices():
        u = facts.utterances[index]
        ids = list(dict.fromkeys([*u.recommended_items, *u.mentioned_items]))
        items = [item for i in ids if (item := facts.item(i)) is not None]
        found = contradicting_claims(body(u.text, _listed(facts, u)), items, facts.domain, phrases)
        if found is None:
            continue  # no item, or several: a claim could not be pinned to one
        item, wrong = found
        note = f"{item.display_title}: {wrong[0]}" if wrong else ""
        yield _obs(facts, "claim_contradicts_item", bool(wrong), note, index)


def crs_role_flips(facts: Facts) -> Iterator[Observation]:
    """CRS messages in the seeker's voice (`crsim.language.message_rules.crs_role_flip`)."""
    for index in facts.crs_indices():
        text = facts.utterances[index].text
        if not text.strip():
            yield _obs(facts, "crs_role_flip", None, "empty message", index)
            continue
        cue = crs_role_flip(text)
        yield _obs(facts, "crs_role_flip", cue is not None, cue or "", index)


def same_words(a: str, b: str) -> bool:
    """Whether two messages say nearly the same words, in the same or another order: `fuzz.ratio` of
    their normalised forms with the words sorted at least `REPEAT_RATIO` (a CRS that shuffles its words
    repeats itself as much as one that does not)."""
    x, y = normalize(a), normalize(b)
    return bool(x and y) and fuzz.token_sort_ratio(x, y) >= REPEAT_RATIO


def crs_repeats(facts: Facts) -> Iterator[Observation]:
    """Consecutive CRS messages with nearly the same words (`same_words`)."""
    texts = [facts.utterances[i].text for i in facts.crs_indices()]
    if len(texts) < 2:
        yield _obs(facts, "crs_repeats", None, "fewer than 2 CRS messages")
        return
    pairs = [n + 2 for n, (a, b) in enumerate(pairwise(texts)) if same_words(a, b)]
    yield _obs(facts, "crs_repeats", bool(pairs), f"CRS message {pairs[0]}" if pairs else "")


def crs_observations(facts: Facts, caps: dict[str, int], phrases: ClaimPhrases) -> Iterator[Observation]:
    """Every CRS measure of one dialogue."""
    yield from truncated(facts, caps)
    yield from text_names_item(facts)
    yield from claims(facts, phrases)
    yield from crs_role_flips(facts)
    yield from crs_repeats(facts)
