"""Value canonicalisation: map a slot value such as "centre of town" to its canonical form "centre".

The canonical map (`multiwoz21_canonical_map.json`) maps slot -> canonical value -> paraphrases;
some slots are split by domain first (slot -> domain -> canonical value -> paraphrases), and each
table has `special_keys.not_in_goal`, canonical values that never occur in goals (again possibly
split by domain). A value that is not canonical is fuzzy-matched: first against the paraphrases of
the goal's own values for the slot (the likely candidates), then against every paraphrase of the
table; the best match, if it scores at least the threshold, is replaced by its canonical value.
Without a canonical map the goal's values themselves are the only candidates.

Similarity is fuzzywuzzy's `token_sort_ratio` (which the reference used, with python-Levenshtein):
tokens lower-cased, stripped of punctuation and sorted, then the Indel similarity rounded to an
integer percentage. It is computed with rapidfuzz; candidate lists are prefiltered with
`process.extract(score_cutoff=...)`, the survivors re-scored exactly, and every result is memoised,
so each distinct value is matched once per process (per goal, for the likely candidates).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel

from crsim.core.errors import DataError

SPECIAL_KEYS = "special_keys"
NOT_IN_GOAL = "not_in_goal"

_NON_WORD = re.compile(r"(?ui)\W")
_LATIN1_HIGH = dict.fromkeys(range(128, 256))


def token_sort_key(text: str) -> str:
    """The form token-sort similarity compares: Latin-1 accents dropped, non-word characters as
    spaces, lower case, tokens sorted."""
    cleaned = _NON_WORD.sub(" ", text.translate(_LATIN1_HIGH)).lower()
    return " ".join(sorted(cleaned.split()))


def key_similarity(a: str, b: str) -> int:
    """Token-sort similarity (0-100, rounded as the reference rounds) of two `token_sort_key`s."""
    if a == b:
        return 100
    if not a or not b:
        return 0
    total = len(a) + len(b)
    return round(100 * ((total - Indel.distance(a, b)) / total))


def similarity(a: str, b: str) -> int:
    """Token-sort similarity of two raw strings, 0-100."""
    return key_similarity(token_sort_key(a), token_sort_key(b))


def minimum_score(threshold: float) -> int:
    """The lowest integer score accepted at `threshold` (score/100 above it or equal to it)."""
    for score in range(101):
        if score / 100 > threshold or math.isclose(threshold, score / 100):
            return score
    return 101


class CandidateList:
    """Strings a value is matched against, in a fixed order (the first best match wins a tie)."""

    __slots__ = ("_memo", "keys", "strings")

    def __init__(self, strings: Sequence[str]) -> None:
        self.strings = list(strings)
        self.keys = [token_sort_key(s) for s in self.strings]
        self._memo: dict[tuple[str, int], str | None] = {}

    def __len__(self) -> int:
        return len(self.strings)

    def best(self, value: str, cutoff: int, *, memoise: bool = True) -> str | None:
        """The first candidate with the highest similarity to `value`, if that is at least `cutoff`."""
        memo_key = (value, cutoff)
        if memoise and memo_key in self._memo:
            return self._memo[memo_key]
        found = self._search(token_sort_key(value), cutoff)
        if memoise:
            self._memo[memo_key] = found
        return found

    def _search(self, key: str, cutoff: int) -> str | None:
        if not self.strings:
            return None
        if cutoff <= 0:
            indices: Sequence[int] = range(len(self.keys))
        else:
            # rapidfuzz's float score differs from the rounded one by < 0.5: keep a 1-point margin
            hits = process.extract(
                key, self.keys, scorer=fuzz.ratio, processor=None, score_cutoff=cutoff - 1, limit=None
            )
            indices = [hit[2] for hit in hits]
        best_index, best_score = -1, -1
        for index in indices:
            score = key_similarity(key, self.keys[index])
            if score > best_score or (score == best_score and index < best_index):
                best_index, best_score = index, score
        return self.strings[best_index] if best_score >= cutoff else None


def _paraphrases(entry: Any) -> list[str]:
    """The paraphrases of a map entry: a list of strings, or the keys of a nested object."""
    return list(entry)


@dataclass
class SlotTable:
    """The canonical values of one slot in one domain."""

    known: frozenset[str]  #: values that are canonical already (table keys, not-in-goal keys)
    paraphrases: dict[str, list[str]]  #: canonical value -> its paraphrases
    canonical_of: dict[str, str]  #: paraphrase -> canonical value (the first that lists it)
    extended: CandidateList  #: every paraphrase, then every not-in-goal paraphrase
    _likely: dict[tuple[str, ...], CandidateList]

    def likely(self, goal_values: tuple[str, ...]) -> CandidateList:
        """The paraphrases of the goal's values (those the table knows), in goal order."""
        found = self._likely.get(goal_values)
        if found is None:
            strings = [p for value in goal_values for p in self.paraphrases.get(value, ())]
            found = self._likely[goal_values] = CandidateList(strings)
        return found


class CanonicalMap:
    """A validated canonical map with per-(slot, domain) tables built on first use."""

    def __init__(self, raw: Mapping[str, Any], source: str = "canonical map") -> None:
        _check_map(raw, source)
        self.raw = raw
        self.source = source
        self._tables: dict[tuple[str, str], SlotTable | None] = {}

    @classmethod
    def load(cls, path: str | Path) -> CanonicalMap:
        from crsim.studies.gcdf1.sgd import read_json

        source = Path(path)
        try:
            raw = read_json(source)
        except OSError as exc:
            raise DataError(
                f"cannot read the canonical map ({exc.strerror or exc})", path=str(source)
            ) from None
        except ValueError as exc:
            raise DataError(f"not valid JSON ({exc})", path=str(source)) from None
        return cls(raw, str(source))

    def table(self, slot: str, domain: str) -> SlotTable | None:
        """The table for `slot` in `domain`, or None when the map cannot canonicalise it."""
        key = (slot, domain)
        if key not in self._tables:
            self._tables[key] = self._build(slot, domain)
        return self._tables[key]

    def _build(self, slot: str, domain: str) -> SlotTable | None:
        slot_map = self.raw.get(slot)
        if slot_map is None:
            slot_map = self.raw.get(slot.lower())
        if not isinstance(slot_map, dict):
            return None
        if isinstance(slot_map.get(domain), dict):  # split by domain ("hotel" is also a type value)
            slot_map = slot_map[domain]
        special = slot_map.get(SPECIAL_KEYS)
        if not isinstance(special, dict):
            return None  # a domain-split slot seen in a domain it is not split for
        not_in_goal = special.get(NOT_IN_GOAL) or {}
        selected = not_in_goal.get(domain)
        if not isinstance(selected, dict) or not selected:
            selected = not_in_goal
        paraphrases = {c: _paraphrases(v) for c, v in slot_map.items() if c != SPECIAL_KEYS}
        outside = {c: _paraphrases(v) for c, v in selected.items()}
        canonical_of: dict[str, str] = {}
        for table in (paraphrases, outside):
            for canonical, strings in table.items():
                for string in strings:
                    canonical_of.setdefault(string, canonical)
        every = [p for strings in paraphrases.values() for p in strings]
        every += [p for strings in outside.values() for p in strings]
        return SlotTable(
            known=frozenset(slot_map) | frozenset(selected),
            paraphrases=paraphrases,
            canonical_of=canonical_of,
            extended=CandidateList(every),
            _likely={},
        )


def _check_map(raw: Any, source: str) -> None:
    """Every table is an object; every leaf is a list of strings (or an object of such lists)."""
    if not isinstance(raw, Mapping):
        raise DataError(f"expected an object mapping slots to tables, got {type(raw).__name__}", path=source)

    def walk(node: Any, where: str) -> None:
        if isinstance(node, Mapping):
            for key, child in node.items():
                walk(child, f"{where}.{key}" if where else str(key))
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if not isinstance(item, str):
                    raise DataError(
                        f"expected a string paraphrase, got {type(item).__name__}",
                        path=source,
                        field=f"{where}[{index}]",
                    )
        else:
            raise DataError(
                f"expected a list of paraphrases or an object, got {type(node).__name__}",
                path=source,
                field=where,
            )

    for slot, table in raw.items():
        if not isinstance(table, Mapping):
            raise DataError(f"expected an object, got {type(table).__name__}", path=source, field=str(slot))
        walk(table, str(slot))


class ValueCanonicaliser:
    """Chooses the canonical form of informed values, remembering every answer.

    `canonical(domain, slot, value, goal_values)` gives the replacement for `value`, or None to
    keep it (already canonical, a co-reference such as "the restaurant", or no match). Values
    must already be lower-cased when the configuration asks for it.
    """

    def __init__(
        self,
        canonical_map: CanonicalMap | None,
        threshold: float,
        coreference_values: Mapping[str, frozenset[str]] | None = None,
        *,
        memoise: bool = True,
    ) -> None:
        self.map = canonical_map
        self.cutoff = minimum_score(threshold)
        self.coreference = coreference_values or {}
        self.memoise = memoise
        self._memo: dict[tuple[str, str, str, tuple[str, ...]], str | None] = {}
        self._goal_lists: dict[tuple[str, ...], CandidateList] = {}

    def canonical(self, domain: str, slot: str, value: str, goal_values: tuple[str, ...]) -> str | None:
        key = (domain, slot, value, goal_values)
        if self.memoise and key in self._memo:
            return self._memo[key]
        found = self._canonical(domain, slot, value, goal_values)
        if self.memoise:
            self._memo[key] = found
        return found

    def _canonical(self, domain: str, slot: str, value: str, goal_values: tuple[str, ...]) -> str | None:
        if self.map is None:
            if not goal_values or value in goal_values or value in self.coreference.get(domain, ()):
                return None
            candidates = self._goal_lists.get(goal_values)
            if candidates is None or not self.memoise:
                candidates = self._goal_lists[goal_values] = CandidateList(goal_values)
            return candidates.best(value, self.cutoff, memoise=self.memoise)
        table = self.map.table(slot, domain)
        if table is None or value in table.known or value in self.coreference.get(domain, ()):
            return None
        for candidates in (table.likely(goal_values), table.extended):
            best = candidates.best(value, self.cutoff, memoise=self.memoise)
            if best is not None:
                return table.canonical_of[best]
        return None
