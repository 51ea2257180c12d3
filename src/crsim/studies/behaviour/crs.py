"""Per-CRS measures of one dialogue: cut messages, text that does not name the recommended item, claims
about a named item that its metadata contradicts, messages in the seeker's voice, repeated messages
(docs/behaviour.md)."""

from __future__ import annotations

from collections.abc import Iterator

from crsim.language.claims import ClaimPhrases, contradicting_claims
from crsim.language.message_rules import body, crs_role_flip, ends_cut, repeated, title_in
from crsim.model.dialogue import Utterance
from crsim.model.items import Item
from crsim.studies.behaviour.facts import Facts
from crsim.studies.behaviour.observation import Kind, Observation


def _obs(
    facts: Facts, measure: str, hit: bool | None, note: str = "", message: int | None = None
) -> Observation:
    return Observation(Kind.CRS, facts.crs, measure, facts.dialogue.id, hit, note, message)


def _listed(facts: Facts, u: Utterance) -> list[Item]:
    return [item for i in u.recommended_items if (item := facts.item(i)) is not None]


def truncated(facts: Facts, caps: dict[str, int]) -> Iterator[Observation]:
    """CRS messages cut: at the configured character cap, or without a complete ending."""
    cap = caps.get(facts.crs)
    for index in facts.crs_indices():
        u = facts.utterances[index]
        if not u.text.strip():
            yield _obs(facts, "truncated", None, "empty message", index)
            continue
        own = body(u.text, _listed(facts, u))
        if cap is not None and len(own.rstrip()) >= cap:
            note = f"{len(own.rstrip())} characters, the configured cap is {cap}"
            yield _obs(facts, "truncated", True, note, index)
        elif ends_cut(own):
            yield _obs(facts, "truncated", True, f"ends {own.rstrip()[-20:]!r}", index)
        else:
            yield _obs(facts, "truncated", False, "", index)


def text_names_item(facts: Facts) -> Iterator[Observation]:
    """CRS messages whose own text names every item they recommend."""
    for index in facts.crs_indices():
        u = facts.utterances[index]
        if not u.recommended_items:
            continue
        listed = _listed(facts, u)
        if not listed:
            yield _obs(facts, "text_names_item", None, "no recommended item is in the catalogue", index)
            continue
        own = body(u.text, listed)
        missing = [item.display_title for item in listed if not title_in(own, item)]
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


def crs_repeats(facts: Facts) -> Iterator[Observation]:
    """Consecutive near-duplicate CRS messages."""
    texts = [facts.utterances[i].text for i in facts.crs_indices()]
    if len(texts) < 2:
        yield _obs(facts, "crs_repeats", None, "fewer than 2 CRS messages")
        return
    pairs = repeated(texts)
    yield _obs(facts, "crs_repeats", bool(pairs), f"CRS message {pairs[0]}" if pairs else "")


def crs_observations(facts: Facts, caps: dict[str, int], phrases: ClaimPhrases) -> Iterator[Observation]:
    """Every CRS measure of one dialogue."""
    yield from truncated(facts, caps)
    yield from text_names_item(facts)
    yield from claims(facts, phrases)
    yield from crs_role_flips(facts)
    yield from crs_repeats(facts)
