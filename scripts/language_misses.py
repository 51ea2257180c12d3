"""What the simulated user did not hear and what the CRS did not take, counted from a run folder.

Per CRS x simulator pairing:

* **recommendations missed by the user**: item ids a CRS utterance recommends (its
  `recommended_items`) that the next user turn's reading of that utterance (the `understood` acts
  the agenda simulator records) does not contain as `recommend(..., item=id)`; simulators that
  record no reading are left out (`n/a`);
* **constraints that never reached the CRS**: goal constraints (slot = value) that no user
  utterance of the dialogue states in a way the built-in CRSs' understanding reads
  (`crsim.crs.understanding.understand`, with the slot the previous CRS turn asked for as context;
  a numeric bound such as ">=4" counts when the value satisfies it), and how many of those the user
  did state (a `disclose` act of that slot);
* **values set on a slot the user did not name**: a stated value the understanding also puts on a
  slot that no `disclose` act of the utterance names ("free" stated as the entrance fee, read as
  the price range too).

The understanding is that of the crsim on the Python path, so the same script measures a run made
before and after a change (run it with each version's `src` on PYTHONPATH).

    PYTHONPATH=src python scripts/language_misses.py RUN_FOLDER [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from crsim.crs.understanding import Context, understand
from crsim.data.domains import domain_of
from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain, SlotKind
from crsim.model.run_folder.folder import open_run

_BOUND = re.compile(r"(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)$")


def reached(domain: Domain, slot: str, wanted: str, said: list[str]) -> bool:
    """Whether one of the values understood for `slot` is the wanted value (or bounds it)."""
    numeric = slot in domain.slots and domain.slot(slot).kind is SlotKind.NUMERIC
    for value in said:
        if value.lower() == wanted.lower():
            return True
        if numeric:
            match = _BOUND.match(value.strip())
            try:
                number = float(wanted)
                if match is None:
                    if float(value) == number:
                        return True
                    continue
            except ValueError:
                continue
            sign, bound = match.group(1), float(match.group(2))
            ok = {">=": number >= bound, "<=": number <= bound, ">": number > bound, "<": number < bound}
            if ok[sign]:
                return True
    return False


def dialogue_counts(dialogue: Dialogue, domain: Domain) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    turns = dialogue.utterances
    elicited: str | None = None
    heard: dict[str, list[str]] = defaultdict(list)
    stated: set[str] = set()
    for n, utterance in enumerate(turns):
        if utterance.role == "crs":
            slots = [s for a in utterance.acts if a.intent == "elicit" for s, _ in a.slots if s]
            elicited = slots[0] if slots else None
            nxt = turns[n + 1] if n + 1 < len(turns) else None
            if utterance.recommended_items and nxt is not None:
                reading = nxt.annotations.get("understood")
                if isinstance(reading, str):
                    for item_id in utterance.recommended_items:
                        counts["recommended"] += 1
                        counts["missed"] += f'item="{item_id}"' not in reading
                else:
                    counts["unread"] += len(utterance.recommended_items)
            continue
        named = {
            s for a in utterance.acts if a.intent == "disclose" for s, v in a.slots if s and v is not None
        }
        stated |= named
        u = understand(utterance.text, domain, Context(elicited=elicited))
        for slot, values in u.likes.items():
            heard[slot].extend(values)
        if named:
            values = {v.lower() for a in utterance.acts if a.intent == "disclose" for _, v in a.slots if v}
            for slot, said in u.likes.items():
                if slot not in named and any(v.lower() in values for v in said):
                    counts["wrong_slot"] += 1
    for slot, value in (dialogue.information_need.constraints if dialogue.information_need else {}).items():
        counts["constraints"] += 1
        if not reached(domain, slot, str(value), heard.get(slot, [])):
            counts["not_reached"] += 1
            counts["not_reached_but_stated"] += slot in stated
    return counts


def measure(run: Path) -> dict[str, dict[str, Any]]:
    folder = open_run(run)
    domain = domain_of(folder.typed_manifest)
    groups: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for dialogue in folder.dialogues():
        key = f"{dialogue.crs_id} x {dialogue.simulator_id}"
        groups[key]["dialogues"] += 1
        for name, count in dialogue_counts(dialogue, domain).items():
            groups[key][name] += count
    return {key: dict(counts) for key, counts in sorted(groups.items())}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path)
    parser.add_argument("--json", type=Path, help="also write the counts to this file")
    args = parser.parse_args()
    result = measure(args.run)
    header = ("pairing", "dialogues", "missed recs", "constraints not reached", "wrong slot")
    print(f"{header[0]:28} {header[1]:>9} {header[2]:>13} {header[3]:>25} {header[4]:>10}")
    for key, c in result.items():
        recs = f"{c.get('missed', 0)}/{c.get('recommended', 0)}" if c.get("recommended") else "n/a"
        stated = c.get("not_reached_but_stated", 0)
        lost = f"{c.get('not_reached', 0)}/{c.get('constraints', 0)} ({stated} stated)"
        print(f"{key:28} {c['dialogues']:>9} {recs:>13} {lost:>25} {c.get('wrong_slot', 0):>10}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
