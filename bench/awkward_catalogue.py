"""A generated catalogue that the shipped domains never exercise: awkward titles and numeric slots.

Writes `domain.yaml` and `items.jsonl` into a folder: `--items` venues called "attraction" (a noun
that starts with a vowel) whose titles are one lower-case word ("ballare", "nusha", "tenpin"),
"the junction", digits ("club 21", "no. 9"), punctuation ("kettle's yard", "l'arte & co."),
capitals ("ADC theatre") or ordinary names; slots of every kind: categorical (`type`, `area`, and
`entrance`, which shares the value "free" with `pricerange`), ordinal (`pricerange`), multi-valued
(`facilities`), numeric with a unit (`fee` in pounds, `rating` in stars) and numeric without one
(`rooms`), plus text slots to ask about. Deterministic for a given `--seed`.

    python bench/awkward_catalogue.py OUT_DIR [--items 80] [--seed 7] [--no-units]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

#: Titles the issue found unheard (MultiWOZ attractions) and more of their shapes.
FIXED_TITLES = (
    "ballare",
    "nusha",
    "tenpin",
    "camboats",
    "the junction",
    "club 21",
    "no. 9",
    "kettle's yard",
    "l'arte & co.",
    "ADC theatre",
    "st. mary's",
    "cafe-bar 1887",
    "4 seasons",
    "k2",
    "OXO",
    "the fez",
    "abbey pool and astroturf pitch",
    "cineworld cinema",
    "Mumford Theatre",
    "jesus green outdoor pool",
)
#: First syllables no English word starts with, so invented names are not ordinary words.
_FIRST = ("zu", "xe", "qui", "pha", "vho", "kry")
_SYLLABLES = ("ba", "lo", "ne", "ri", "tu", "ka", "mi", "so", "ve", "da", "zu", "fo", "xe", "qui", "pha")
TYPES = ("museum", "nightclub", "theatre", "park", "cinema", "swimming pool", "boat", "college", "gallery")
AREAS = ("centre", "north", "south", "east", "west")
ENTRANCE = ("free", "paid", "donation")
PRICES = ("free", "cheap", "moderate", "expensive")
FACILITIES = ("parking", "wifi", "cafe", "toilets", "step-free access")

DOMAIN = """\
# A generated catalogue (bench/awkward_catalogue.py): awkward titles, numeric slots with units.
name: awkward
item_noun: attraction
items:
  path: items.jsonl
  id: id
  title: name
slots:
  type:
    kind: categorical
    requestable: true
    cues: [type, kind of place, sort of place]
  area:
    kind: categorical
    requestable: true
    cues: [area, part of town]
    synonyms:
      centre: [center, city centre, central]
  entrance:
    kind: categorical
    cues: [entrance, entry, admission]
  pricerange:
    kind: ordinal
    order: [free, cheap, moderate, expensive]
    cues: [price range, price, budget]
  facilities:
    kind: multi
    requestable: true
    cues: [facilities, amenities]
  fee:
    kind: numeric
    unit: pounds
    requestable: true
    cues: [entrance fee, fee, ticket price]
  rating:
    kind: numeric
    unit: stars
    requestable: true
    cues: [rating, stars]
  rooms:
    kind: numeric
    requestable: true
    cues: [rooms, halls]
  phone:
    kind: text
    requestable: true
    cues: [phone, phone number, telephone]
  postcode:
    kind: text
    requestable: true
    cues: [postcode, post code]
"""


def titles(count: int, rng: random.Random) -> list[str]:
    """The fixed awkward titles, then invented one-word lower-case names, all distinct."""
    found = list(FIXED_TITLES[:count])
    while len(found) < count:
        word = rng.choice(_FIRST) + "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 2)))
        if word not in found:
            found.append(word)
    return found


def items(count: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows = []
    for n, name in enumerate(titles(count, rng), start=1):
        price = rng.choice(PRICES)
        rows.append(
            {
                "id": f"a{n}",
                "name": name,
                "type": rng.choice(TYPES),
                "area": rng.choice(AREAS),
                "entrance": "free" if price == "free" else rng.choice(ENTRANCE[1:]),
                "pricerange": price,
                "facilities": sorted(rng.sample(FACILITIES, rng.randint(1, 3))),
                "fee": 0 if price == "free" else rng.randint(1, 8),
                "rating": rng.randint(1, 5),
                "rooms": rng.randint(1, 8),
                "phone": f"01223{rng.randint(100000, 999999)}",
                "postcode": f"cb{rng.randint(1, 5)}{rng.randint(1, 9)}{rng.choice('abcdefgh')}x",
            }
        )
    return rows


def write(folder: Path, count: int = 80, seed: int = 7, units: bool = True) -> Path:
    """Write the catalogue into `folder`; the path of its domain file. Without `units` the domain file
    declares no units (for crsim versions before units existed, to measure before and after)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "items.jsonl").open("w", encoding="utf-8") as out:
        for row in items(count, seed):
            out.write(json.dumps(row) + "\n")
    text = DOMAIN if units else "\n".join(line for line in DOMAIN.splitlines() if "unit:" not in line) + "\n"
    (folder / "domain.yaml").write_text(text, encoding="utf-8")
    return folder / "domain.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--items", type=int, default=80)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-units", action="store_true", help="declare no units (older crsim versions)")
    args = parser.parse_args()
    print(write(args.out, args.items, args.seed, units=not args.no_units))


if __name__ == "__main__":
    main()
