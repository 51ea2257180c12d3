"""Write `src/crsim/model/chat_words.py`: ordinary English words of recommendation chat.

The item linker treats a one-word title as easy to hit by accident only when that word is an
ordinary word: one of these, a function word, or a word of the catalogue's own descriptions. The
list is the words (letters only, two or more) written in at least `--min-dialogues` of the ReDial
test dialogues (CC BY 4.0), movie mentions (`@123`) removed, and the words of at least
`--min-plots` plots of crsim's movie catalogue (everyday English of stories: "monster", "drive").

    python scripts/build_chat_words.py --redial ../shared/datasets/redial/test_data.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import Counter
from pathlib import Path

from crsim.model.text import tokenize

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "crsim" / "model" / "chat_words.py"
MOVIES = ROOT / "src" / "crsim" / "data" / "movies" / "items.jsonl.gz"


def chat_words(path: Path, min_dialogues: int) -> list[str]:
    """Words of at least `min_dialogues` dialogues, sorted."""
    counts: Counter[str] = Counter()
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            dialogue = json.loads(line)
            words = set()
            for message in dialogue["messages"]:
                text = re.sub(r"@\d+", " ", message["text"])
                words.update(t.text for t in tokenize(text))
            counts.update(words)
    return sorted(w for w, n in counts.items() if n >= min_dialogues and w.isalpha() and len(w) > 1)


def plot_words(path: Path, min_plots: int) -> list[str]:
    """Words of at least `min_plots` plots of the movie catalogue, sorted."""
    counts: Counter[str] = Counter()
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            plot = json.loads(line).get("plot") or ""
            counts.update({t.text for t in tokenize(plot)})
    return sorted(w for w, n in counts.items() if n >= min_plots and w.isalpha() and len(w) > 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--redial", type=Path, required=True, help="ReDial test_data.jsonl")
    parser.add_argument("--min-dialogues", type=int, default=5)
    parser.add_argument("--min-plots", type=int, default=3)
    args = parser.parse_args()
    words = sorted({*chat_words(args.redial, args.min_dialogues), *plot_words(MOVIES, args.min_plots)})
    lines = []
    line = "   "
    for word in words:
        if len(line) + len(word) + 1 > 100:
            lines.append(line)
            line = "   "
        line += " " + word
    lines.append(line)
    body = "\n".join(lines)
    OUT.write_text(
        '"""Ordinary words of recommendation chat (written by scripts/build_chat_words.py; do not edit).\n\n'
        f"The words written in at least {args.min_dialogues} of the ReDial test dialogues (ReDial, CC BY "
        "4.0:\n"
        "https://redialdata.github.io/website/), movie mentions removed, and the words of at least\n"
        f"{args.min_plots} plots of crsim's movie catalogue. The item linker reads a one-word title made of\n"
        'one of them as easy to hit by accident (`crsim.model.linking`)."""\n\n'
        f'_TEXT = """\n{body}\n"""\n\n'
        "#: Lower-case words, letters only.\n"
        "CHAT_WORDS = frozenset(_TEXT.split())\n",
        encoding="utf-8",
    )
    print(f"{len(words)} words -> {OUT}")


if __name__ == "__main__":
    main()
