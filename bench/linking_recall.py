"""Item-linking recall, extra links and speed on the ReDial test split.

Every `@id` movie mention of every test message is rendered as the title the dialogue gives it,
the linker runs on the rendered message, and a mention counts as found when the linker returns
its id (strict) or an indistinguishable duplicate of it (duplicate-aware: same title up to case,
punctuation and a leading article, and same year where both have one; ReDial lists e.g.
"American Pie " and "American Pie (1999)" under different ids). Extra links are returned items
that were not mentioned. The baseline, measured in the same run, is a plain n-gram dictionary
lookup of normalised titles with no year, article or capitalisation handling.

A second measure runs on the shipped movie catalogue: every title that shares a linking key (case,
punctuation, "&"/"and", spaces and a leading article ignored) with another item's title or alias, and
that no other item writes identically, is linked in "You might like <title> tonight."; it counts as
right when the item with that title comes first ("Mother" -> Mother (2009), not Mother! (2017)).
Identical titles are counted apart: how many of them are linked as ambiguous with all their items.

Usage: python bench/linking_recall.py [--data tests/fixtures/redial] [--out bench/results/linking_recall.json]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

from crsim.model.items import Item, ItemCollection
from crsim.model.linking import ItemLinker
from crsim.model.text import fold, normalize, split_title_year, unarticle

_MENTION = re.compile(r"@(\d+)")
Message = tuple[str, tuple[str, ...]]
LinkFn = Callable[[str], list[str]]


def load(data: Path) -> tuple[ItemCollection, list[Message]]:
    """ReDial movies as an item collection, and the rendered test messages with their mentioned ids."""
    with gzip.open(data / "movies_with_mentions.csv.gz", "rt", encoding="utf-8") as handle:
        names = {row["movieId"]: row["movieName"] for row in csv.DictReader(handle)}
    items = []
    for movie_id, name in names.items():
        title, year = split_title_year(name)
        if title:  # two ReDial names are only a year
            items.append(Item(id=movie_id, title=title, year=year))
    messages: list[Message] = []
    with gzip.open(data / "test_data.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            dialogue = json.loads(line)
            titles = {**names, **dialogue["movieMentions"]}
            for message in dialogue["messages"]:
                raw = message["text"]
                messages.append((render(raw, titles), tuple(_MENTION.findall(raw))))
    return ItemCollection(items, name="redial"), messages


def render(raw: str, titles: dict[str, str]) -> str:
    """The message with each `@id` replaced by its title (left as is when the id is unknown)."""
    return _MENTION.sub(lambda m: (titles.get(m.group(1)) or m.group(0)).strip(), raw)


def _duplicate_key(item: Item) -> tuple[str, int | None]:
    words = normalize(unarticle(item.title)).split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words), item.year


def _same_film(items: ItemCollection, a: str, b: str) -> bool:
    if a == b:
        return True
    first, second = items.get(a), items.get(b)
    if first is None or second is None:
        return False
    (title_a, year_a), (title_b, year_b) = _duplicate_key(first), _duplicate_key(second)
    return title_a == title_b and (year_a is None or year_b is None or year_a == year_b)


def score(items: ItemCollection, messages: list[Message], link: LinkFn) -> dict[str, float]:
    """Strict and duplicate-aware recall, extra links per message, and messages per second."""
    started = time.perf_counter()
    outputs = [set(link(text)) for text, _ in messages]
    elapsed = time.perf_counter() - started
    mentions = strict = aware = extra = 0
    for (_, mentioned), linked in zip(messages, outputs, strict=True):
        for movie_id in mentioned:
            mentions += 1
            strict += movie_id in linked
            aware += any(_same_film(items, movie_id, x) for x in linked)
        extra += sum(not any(_same_film(items, x, m) for m in mentioned) for x in linked)
    return {
        "messages": len(messages),
        "mentions": mentions,
        "strict_recall": strict / mentions,
        "duplicate_aware_recall": aware / mentions,
        "extra_links_per_message": extra / len(messages),
        "messages_per_second": len(messages) / elapsed,
    }


def baseline_linker(items: ItemCollection) -> LinkFn:
    """Every token n-gram that equals a normalised title, first item wins; no other rules."""
    by_title: dict[str, str] = {}
    for item in items:
        by_title.setdefault(normalize(split_title_year(item.title)[0]), item.id)
    longest = max(len(t.split()) for t in by_title)

    def link(text: str) -> list[str]:
        words = normalize(text).split()
        found = []
        for i in range(len(words)):
            for n in range(1, min(longest, len(words) - i) + 1):
                hit = by_title.get(" ".join(words[i : i + n]))
                if hit is not None:
                    found.append(hit)
        return found

    return link


def _loose_key(title: str) -> str:
    words = normalize(unarticle(split_title_year(title)[0])).split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return "".join(words)


def _written(title: str) -> str:
    return " ".join(fold(unarticle(split_title_year(title)[0])).split())


def catalogue_titles(items: ItemCollection) -> dict[str, int]:
    """Titles written differently but sharing a key: linked right / total (linker and baseline), and
    identical titles: groups, and groups linked as ambiguous with all their items."""
    by_key: dict[str, list[tuple[Item, str]]] = {}
    for item in items:
        for title in (item.title, *item.extra.get("aliases", ())):
            by_key.setdefault(_loose_key(title), []).append((item, title))
    same: dict[str, set[str]] = {}
    for item in items:
        same.setdefault(_written(item.title), set()).add(item.id)
    linker, baseline = ItemLinker(items), baseline_linker(items)
    result = {
        "titles": 0,
        "linker_right": 0,
        "baseline_right": 0,
        "identical_groups": 0,
        "marked_ambiguous": 0,
    }
    for group in by_key.values():
        if len({item.id for item, _ in group}) < 2:
            continue
        for item, title in group:
            if title != item.title or len(same[_written(title)]) > 1:
                continue
            text = f"You might like {unarticle(split_title_year(title)[0])} tonight."
            result["titles"] += 1
            result["linker_right"] += [m.item_id for m in linker.link(text)][:1] == [item.id]
            result["baseline_right"] += baseline(text)[:1] == [item.id]
    for ids in same.values():
        if len(ids) > 1:
            title = unarticle(split_title_year(items[next(iter(ids))].title)[0])
            mentions = linker.link(f"You might like {title} tonight.")
            result["identical_groups"] += 1
            result["marked_ambiguous"] += bool(mentions) and set(mentions[0].candidates) == ids
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("tests/fixtures/redial"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/linking_recall.json"))
    args = parser.parse_args()
    items, messages = load(args.data)
    started = time.perf_counter()
    linker = ItemLinker(items)
    build_seconds = time.perf_counter() - started
    runs = {
        "baseline_ngram": score(items, messages, baseline_linker(items)),
        "linker_exact_only": score(
            items, messages, lambda t: [m.item_id for m in linker.link(t, fuzzy=False)]
        ),
        "linker": score(items, messages, lambda t: [m.item_id for m in linker.link(t)]),
    }
    print(f"ReDial test split: {runs['linker']['messages']} messages, {runs['linker']['mentions']} mentions")
    print(f"linker built in {build_seconds:.2f}s for {len(items)} items")
    header = f"{'variant':<20}{'strict':>9}{'dup-aware':>11}{'extra/msg':>11}{'msg/s':>10}{'speed x':>9}"
    print(header)
    base_speed = runs["baseline_ngram"]["messages_per_second"]
    for name, result in runs.items():
        print(
            f"{name:<20}{result['strict_recall']:>9.4f}{result['duplicate_aware_recall']:>11.4f}"
            f"{result['extra_links_per_message']:>11.4f}{result['messages_per_second']:>10.0f}"
            f"{result['messages_per_second'] / base_speed:>9.2f}"
        )
    from crsim.data.movies import movie_items

    catalogue = catalogue_titles(movie_items())
    print(
        f"movie catalogue: {catalogue['titles']} titles sharing a key with another item's: linked to the "
        f"title written {catalogue['linker_right']} (baseline {catalogue['baseline_right']}); "
        f"{catalogue['marked_ambiguous']} of {catalogue['identical_groups']} groups of identical titles "
        "linked as ambiguous"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"build_seconds": build_seconds, **runs, "movie_catalogue": catalogue}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
