"""Role flips, meta text and contradicting claims in two runs of the same config and seeds, counted
with this checkout's behaviour rules, so that only the generation-time guards differ between them.

    python scripts/guards_before_after.py BEFORE_RUN AFTER_RUN

BEFORE_RUN was made by code without the guards (e.g. an earlier commit on PYTHONPATH), AFTER_RUN by
this checkout, both from one config (docs/behaviour.md). Only dialogues present in both runs are
counted (a run stopped early holds fewer), and each row gives k/n per side.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from crsim.studies.behaviour.records import read_run
from crsim.studies.behaviour.report import observe

#: (measure, what it counts) of the table, in order.
ROWS = (
    ("role_flip", "user messages in the recommender's voice"),
    ("role_flip_dialogue", "dialogues with a user role flip"),
    ("crs_role_flip", "CRS messages in the seeker's voice"),
    ("meta_text", "user messages with meta text"),
    ("claim_contradicts_item", "CRS messages contradicting their item"),
)


def counts(run: Path, keep: set[str]) -> dict[str, tuple[int, int]]:
    """measure -> (fired, evaluable) over the dialogues of `keep`."""
    records = read_run(run, None, [])
    records.dialogues = [d for d in records.dialogues if d.id in keep]
    observations, _ = observe(records)
    fired: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for obs in observations:
        if obs.hit is not None:
            seen[obs.measure] += 1
            fired[obs.measure] += obs.hit
    return {measure: (fired[measure], seen[measure]) for measure, _ in ROWS}


def main(before: Path, after: Path) -> None:
    ids = [{d.id for d in read_run(path, None, []).dialogues} for path in (before, after)]
    keep = ids[0] & ids[1]
    old, new = counts(before, keep), counts(after, keep)
    print(f"{len(keep)} dialogues in both runs")
    print("| measure (unit) | before | after |")
    print("|---|---|---|")
    for measure, what in ROWS:
        (k0, n0), (k1, n1) = old[measure], new[measure]
        print(f"| {measure} ({what}) | {k0}/{n0} | {k1}/{n1} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
