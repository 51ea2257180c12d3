"""The fault matrix: every injected fault against 50 (or --dialogues) dialogues, with longer timeouts.

    python bench/faults.py [--dialogues 50] [--timeout 2.0]

For each fault the fault server (tests/faults/fault_server.py) serves the generic protocol (behind a
proxy that drips response heads for `drip_headers`) and a run of scripted users goes through the
real batch layer. Per fault it reports the faults the server injected, the dialogues that failed
(and whether exactly the affected ones did), runs that crashed, dialogues lost or duplicated,
errors by kind, code points replaced in replies, and wall time as a ratio to a fault-free run
measured in the same invocation. The gzip-bomb run also reports the peak of traced Python memory.
Writes bench/results/faults.json. Not a unit test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from crsim.domains.movielens import movie_domain
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role
from crsim.model.io import iter_dialogues
from faults.fault_server import FAULTS, FaultPlan, ServerLog, is_affected, serve_faults
from faults.harness import error_kinds, http_experiment, run_experiment


async def one(kind: str | None, dialogues: int, timeout: float, work: Path) -> dict[str, Any]:
    plan, log = FaultPlan(kind=kind, hang_s=timeout * 2, end_at=5, drip_s=min(1.0, timeout / 2)), ServerLog()
    args = {"timeout_s": timeout, "retry_backoff_s": 0.05, "max_response_bytes": 1_000_000}
    run_dir, crashed, peak = work / (kind or "none"), 0, None
    started = time.perf_counter()
    with serve_faults(plan, log) as url:
        experiment = http_experiment(movie_domain(), url, dialogues=dialogues, max_turns=8, **args)
        if kind == "gzip_bomb":
            tracemalloc.start()
        try:
            await run_experiment(experiment, run_dir)
        except Exception as exc:  # noqa: BLE001 - a crashed run is what this bench counts
            crashed = 1
            print(f"{kind}: the run crashed: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        finally:
            if kind == "gzip_bomb":
                peak = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
                tracemalloc.stop()
    elapsed = time.perf_counter() - started
    records = _records(run_dir)
    ids = [d.id for d in records]
    affected = {i for i in ids if kind and is_affected(i, plan.every)}
    failed = {d.id for d in records if d.termination and d.termination.fault is not None}
    expected_failed = affected if FAULTS.get(kind or "") else set()
    row = {
        "fault": kind or "none",
        "planned": dialogues,
        "affected": len(affected),
        "faults_injected": sum(log.faults.values()),
        "dialogues_failed": len(failed),
        "only_affected_failed": failed == expected_failed,
        "crashed_runs": crashed,
        "lost": dialogues - len(set(ids)),
        "duplicated": len(ids) - len(set(ids)),
        "terminations": dict(Counter(str(d.termination.reason) for d in records if d.termination)),
        "errors_by_kind": dict(error_kinds(records)),
        "replaced_code_points": sum(_replaced(d) for d in records),
        "retried_utterances": sum(1 for d in records for u in d.utterances if "http" in u.annotations),
        "seconds": round(elapsed, 2),
    }
    if peak is not None:
        row["peak_traced_mib"] = peak
    return row


def _replaced(dialogue: Dialogue) -> int:
    crs_turns = [i for i, u in enumerate(dialogue.utterances) if u.role is Role.CRS]
    return sum(keys.annotation(keys.REPLACED_CODE_POINTS, dialogue, i) or 0 for i in crs_turns)


def _records(run_dir: Path) -> list[Dialogue]:
    path = run_dir / "dialogues.jsonl"
    return list(iter_dialogues(path)) if path.exists() else []


async def main(dialogues: int, timeout: float) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in [None, *sorted(FAULTS)]:
            rows.append(await one(kind, dialogues, timeout, Path(tmp)))
    baseline = rows[0]["seconds"]
    for row in rows:
        row["time_vs_no_fault"] = round(row["seconds"] / baseline, 2)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = (
        f"{'fault':<20} {'injected':>8} {'failed':>6} {'only_affected':>13} {'crashed':>7} {'lost':>4} "
        f"{'dup':>3} {'replaced':>8}  {'x time':>6}  errors"
    )
    lines = [header]
    for row in rows:
        lines.append(
            f"{row['fault']:<20} {row['faults_injected']:>8} {row['dialogues_failed']:>6} "
            f"{row['only_affected_failed']!s:>13} {row['crashed_runs']:>7} {row['lost']:>4} "
            f"{row['duplicated']:>3} {row['replaced_code_points']:>8}  {row['time_vs_no_fault']:>6}  "
            f"{row['errors_by_kind'] or ''}"
        )
    total = {k: sum(r[k] for r in rows) for k in ("faults_injected", "dialogues_failed", "crashed_runs")}
    total |= {k: sum(r[k] for r in rows) for k in ("lost", "duplicated")}
    lines.append(
        f"{'total':<20} {total['faults_injected']:>8} {total['dialogues_failed']:>6} "
        f"{all(r['only_affected_failed'] for r in rows)!s:>13} {total['crashed_runs']:>7} "
        f"{total['lost']:>4} {total['duplicated']:>3}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=2.0)
    options = parser.parse_args()
    # the fault servers write to clients that gave up on them; asyncio's warnings about that are noise
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    result = asyncio.run(main(options.dialogues, options.timeout))
    print(table(result))
    bomb = next((r for r in result if "peak_traced_mib" in r), None)
    if bomb is not None:
        print(f"gzip bomb: peak traced memory {bomb['peak_traced_mib']} MiB (cap 1 MB of decoded body)")
    out = Path(__file__).parent / "results" / "faults.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written: {out}")
