"""Write `src/crsim/model/chat_words.py`: words people use in recommendation chat, from ReDial.

The item linker treats a one-word title as easy to hit by accident only when that word is an
ordinary word: one of these, a function word, or a word of the catalogue's own descriptions. The
list is the words (letters only, two or more) written in at least `--min-dialogues` of the ReDial
test dialogues (CC BY 4.0), movie mentions (`@123`) removed.

    python scripts/build_chat_words.py --redial ../shared/datasets/redial/test_data.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from crsim.model.text import tokenize

OUT = Path(__file__).resolve().parents[1] / "src" / "crsim" / "model" / "chat_words.py"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redial", type=Path, required=True, help="ReDial test_data.jsonl")
    parser.add_argument("--min-dialogues", type=int, default=5)
    args = parser.parse_args()
    words = chat_words(args.redial, args.min_dialogues)
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
        f"The words written in at least {args.min_dialogues} of the ReDial test dialogues (ReDial, CC BY 4.0:\n"
        "https://redialdata.github.io/website/), movie mentions removed. The item linker reads a one-word\n"
        'title made of one of them as easy to hit by accident (`crsim.model.linking`)."""\n\n'
        f'_TEXT = """\n{body}\n"""\n\n'
        "#: Lower-case words, letters only.\n"
        "CHAT_WORDS = frozenset(_TEXT.split())\n",
        encoding="utf-8",
    )
    print(f"{len(words)} words -> {OUT}")


if __name__ == "__main__":
    main()
