"""How well crsim tells recommended from merely mentioned items in CRS text, on ReDial's own labels.

ReDial's test split (1,342 dialogues) asks both workers, per movie mentioned, whether the
recommender suggested it (`respondentQuestions` / `initiatorQuestions`, `suggested` 0/1). We apply
crsim's rule (`crsim.model.mentions.split_linked`: a movie the recommender names that nobody named
earlier in the dialogue is recommended, a movie named before is only mentioned) to every
recommender message and score "recommended" at movie level: a movie of a dialogue counts as
predicted when some recommender message classifies it as recommended; the gold label is the
worker's `suggested`. Movies without an answer are left out of both counts.

The linker's output is taken two ways:

- `ids`: the `@id` mentions ReDial writes into the text (a perfect linker);
- `linker`: each `@id` replaced by the movie's title, then crsim's title linker over a catalogue of
  ReDial's movies (ReDial's `movies_with_mentions.csv`). A linked id counts for a movie when it is
  that movie or a duplicate entry of the same film (same title up to case, punctuation and a
  leading article; same year where both have one). Linked movies the dialogue never mentions are
  false positives.

Rules compared: `all` (every movie a recommender message names is recommended: crsim before
format 1.2) and `context` (crsim's rule). At movie level the rule only matters for movies the seeker
names first (a movie the recommender names first is predicted under both rules); how often a
repeated mention would split a round is an utterance-level question that ReDial does not label.
The initiator's answers scored against the respondent's show how far the two workers agree.

A second, utterance-level check uses IARD (336 ReDial dialogues whose recommender utterances carry
the action labels REC-S / REC-E, "recommends"): an utterance is predicted to open a recommendation
round when the rule finds a recommended movie in it; gold is the REC-S/REC-E label. This is what
SRRR's rounds depend on: a repeated mention that the old rule took for a new recommendation.

Usage: python scripts/redial_recommended.py [--data tests/fixtures/redial]
           [--iard tests/fixtures/iard/umap2020_IARD_Cai.json.gz] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsim.model.items import Item, ItemCollection
from crsim.model.mentions import split_linked
from crsim.model.text import normalize, split_title_year, unarticle

_MENTION = re.compile(r"@(\d+)")
RULES = ("all", "context")
GOLDS = {"respondent": "respondentQuestions", "initiator": "initiatorQuestions"}


@dataclass
class Counts:
    """Movie-level confusion counts of "recommended"."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, predicted: bool, gold: bool) -> None:
        if predicted and gold:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif gold:
            self.fn += 1
        else:
            self.tn += 1

    def summary(self) -> dict[str, Any]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else None
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else None
        f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
        return {"precision": precision, "recall": recall, "f1": f1, **self.__dict__}


@dataclass
class Dialogue:
    """One ReDial dialogue: messages as (is the recommender, text with titles, mentioned ids)."""

    messages: list[tuple[bool, str, list[str]]]
    gold: dict[str, dict[str, bool]] = field(default_factory=dict)  #: gold name -> movie -> suggested


def read(data: Path) -> tuple[ItemCollection, list[Dialogue]]:
    """ReDial's movies as an item collection and the test dialogues with both workers' answers."""
    with gzip.open(data / "movies_with_mentions.csv.gz", "rt", encoding="utf-8") as handle:
        names = {row["movieId"]: row["movieName"] for row in csv.DictReader(handle)}
    items = [Item(id=i, title=t, year=y) for i, n in names.items() for t, y in [split_title_year(n)] if t]
    dialogues = []
    with gzip.open(data / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            raw = json.loads(line)
            titles = {**names, **raw["movieMentions"]}
            recommender = raw["respondentWorkerId"]
            messages = [
                (m["senderWorkerId"] == recommender, _render(m["text"], titles), _MENTION.findall(m["text"]))
                for m in raw["messages"]
            ]
            gold = {
                name: {movie: bool(answer["suggested"]) for movie, answer in (raw.get(key) or {}).items()}
                for name, key in GOLDS.items()
            }
            dialogues.append(Dialogue(messages, gold))
    return ItemCollection(items, name="redial"), dialogues


def _render(raw: str, titles: dict[str, str]) -> str:
    return _MENTION.sub(lambda m: (titles.get(m.group(1)) or m.group(0)).strip(), raw)


def predicted(dialogue: Dialogue, rule: str, ids_of: Callable[[str, list[str]], list[str]]) -> set[str]:
    """Ids some recommender message recommends under `rule`; `ids_of(text, mentions)` is the linker."""
    named: set[str] = set()
    out: set[str] = set()
    for by_crs, text, mentions in dialogue.messages:
        ids = ids_of(text, mentions)
        if by_crs:
            recommended, _ = split_linked(ids, named if rule == "context" else set())
            out.update(recommended)
        named.update(ids)
    return out


def _film_key(item: Item) -> tuple[str, int | None]:
    return normalize(unarticle(item.title)), item.year


def same_film(items: ItemCollection, a: str, b: str) -> bool:
    """One film under two ReDial ids (e.g. 'American Pie ' and 'American Pie (1999)')."""
    if a == b:
        return True
    first, second = items.get(a), items.get(b)
    if first is None or second is None:
        return False
    (title_a, year_a), (title_b, year_b) = _film_key(first), _film_key(second)
    return title_a == title_b and (year_a is None or year_b is None or year_a == year_b)


def score(
    items: ItemCollection, dialogues: list[Dialogue], rule: str, gold_name: str, use_linker: bool
) -> Counts:
    """Movie-level counts of one rule against one worker's answers."""
    cache: dict[str, list[str]] = {}

    def ids_of(text: str, mentions: list[str]) -> list[str]:
        if not use_linker:
            return mentions
        if text not in cache:
            cache[text] = [m.item_id for m in items.linker.link(text)]
        return cache[text]

    counts = Counts()
    for dialogue in dialogues:
        gold = dialogue.gold[gold_name]
        guessed = predicted(dialogue, rule, ids_of)
        for movie, suggested in gold.items():
            counts.add(any(same_film(items, movie, g) for g in guessed), suggested)
        mentioned = {m for _, _, ms in dialogue.messages for m in ms}
        extra = [g for g in guessed if not any(same_film(items, g, m) for m in mentioned)]
        counts.fp += len(extra)  # a linked movie the dialogue never names: a false recommendation
    return counts


def agreement(dialogues: list[Dialogue]) -> Counts:
    """The initiator's answers scored against the respondent's: how far two people agree."""
    counts = Counts()
    for dialogue in dialogues:
        other = dialogue.gold["initiator"]
        for movie, suggested in dialogue.gold["respondent"].items():
            if movie in other:
                counts.add(other[movie], suggested)
    return counts


_IARD_MENTION = re.compile(r"@(\d+)(?:\s*<([^<>]*)>)?")


def iard_utterances(path: Path) -> list[list[tuple[bool, str, list[str], bool]]]:
    """IARD dialogues as (by the recommender, text with titles, mentioned ids, labelled REC-S/E)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    out = []
    for record in data.values():
        turns = sorted(record["dialogue_info"].values(), key=lambda u: u["utterance_pos"])
        out.append(
            [
                (
                    u["role"] == "recommender",
                    _IARD_MENTION.sub(lambda m: (m.group(2) or m.group(0)).strip(), u["utterance_text"]),
                    [m.group(1) for m in _IARD_MENTION.finditer(u["utterance_text"])],
                    bool({"REC-S", "REC-E"} & set(u["sub-intent/action"])),
                )
                for u in turns
            ]
        )
    return out


def iard_score(items: ItemCollection, path: Path, rule: str, use_linker: bool) -> Counts:
    """Utterance-level counts: does a recommender utterance open a round (REC-S/REC-E)?"""
    counts = Counts()
    for dialogue in iard_utterances(path):
        named: set[str] = set()
        for by_crs, text, mentions, recommends in dialogue:
            ids = [m.item_id for m in items.linker.link(text)] if use_linker else mentions
            if by_crs:
                recommended, _ = split_linked(ids, named if rule == "context" else set())
                counts.add(bool(recommended), recommends)
            named.update(ids)
    return counts


def run(data: Path, iard: Path | None = None) -> dict[str, Any]:
    items, dialogues = read(data)
    results: dict[str, Any] = {"dialogues": len(dialogues)}
    for linker in ("ids", "linker"):
        for gold in GOLDS:
            for rule in RULES:
                counts = score(items, dialogues, rule, gold, use_linker=linker == "linker")
                results[f"{linker}/{gold}/{rule}"] = counts.summary()
    results["agreement/initiator-vs-respondent"] = agreement(dialogues).summary()
    if iard is not None:
        for linker in ("ids", "linker"):
            for rule in RULES:
                counts = iard_score(items, iard, rule, use_linker=linker == "linker")
                results[f"iard-utterances/{linker}/{rule}"] = counts.summary()
    return results


def _rows(results: dict[str, Any]) -> Iterator[str]:
    yield f"ReDial test: {results['dialogues']} dialogues; 'recommended' at movie level"
    yield f"{'linker / gold / rule':42} {'P':>6} {'R':>6} {'F1':>6} {'TP':>6} {'FP':>6} {'FN':>6}"
    for key, value in results.items():
        if isinstance(value, dict):
            p, r, f = (value[k] for k in ("precision", "recall", "f1"))
            yield (f"{key:42} {p:6.3f} {r:6.3f} {f:6.3f} {value['tp']:6d} {value['fp']:6d} {value['fn']:6d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).parents[1] / "tests" / "fixtures" / "redial"
    )
    parser.add_argument(
        "--iard",
        type=Path,
        default=Path(__file__).parents[1] / "tests" / "fixtures" / "iard" / "umap2020_IARD_Cai.json.gz",
    )
    parser.add_argument("--out", type=Path, default=None, help="Also write the numbers as JSON here.")
    args = parser.parse_args()
    results = run(args.data, args.iard)
    for row in _rows(results):
        print(row)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
