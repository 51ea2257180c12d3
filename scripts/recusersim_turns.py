"""Calls and latency per user turn of a `recusersim` run (the numbers in docs/recusersim.md).

    python scripts/recusersim_turns.py RUN_DIR [RUN_DIR ...]

Reads `dialogues.jsonl`: LLM calls per turn by kind (`llm_calls_by_kind`, the opening turn apart
from the turns that react to a CRS message), the provider calls and cache hits the records list,
and the wall-clock seconds per turn and step when the run recorded them (`record_timing: true`).
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from crsim.model.dialogue import Role
from crsim.model.io import iter_dialogues


def summarize(run: Path) -> None:
    kinds: dict[str, list[Counter[str]]] = {"opening": [], "later": []}
    seconds: dict[str, dict[str, list[float]]] = {"opening": defaultdict(list), "later": defaultdict(list)}
    calls = cached = dialogues = errors = 0
    latencies: list[float] = []
    tokens: list[tuple[int, int]] = []
    for dialogue in iter_dialogues(run / "dialogues.jsonl"):
        dialogues += 1
        errors += bool(dialogue.termination and dialogue.termination.error)
        for index, utterance in enumerate(dialogue.by(Role.USER)):
            group = "opening" if index == 0 else "later"
            counted = utterance.annotations.get("llm_calls_by_kind")
            if isinstance(counted, dict):
                kinds[group].append(Counter(counted))
            for step, value in (utterance.annotations.get("latency_s") or {}).items():
                seconds[group][step].append(float(value))
            calls += len(utterance.llm_calls)
            cached += sum(c.cached for c in utterance.llm_calls)
            fresh = [c for c in utterance.llm_calls if not c.cached and c.error is None]
            latencies += [c.latency_s for c in fresh]
            tokens += [(c.prompt_tokens, c.completion_tokens) for c in fresh]
    print(
        f"{run}: {dialogues} dialogues ({errors} ended in an error); "
        f"user-side calls {calls}, {cached} from cache"
    )
    if latencies:
        print(
            f"  per provider call: {statistics.mean(latencies):.1f} s "
            f"(median {statistics.median(latencies):.1f}), "
            f"prompt {statistics.mean(t[0] for t in tokens):.0f} tokens, "
            f"completion {statistics.mean(t[1] for t in tokens):.0f} tokens"
        )
    for group, turns in kinds.items():
        if not turns:
            continue
        names = sorted({k for t in turns for k in t})
        means = ", ".join(f"{k} {statistics.mean(t[k] for t in turns):.2f}" for k in names)
        total = statistics.mean(sum(t.values()) for t in turns)
        print(f"  {group} turns ({len(turns)}): calls per turn {total:.2f} = {means}")
        steps = seconds[group]
        if steps:
            shown = ", ".join(
                f"{k} {statistics.mean(v):.1f} s (median {statistics.median(v):.1f})"
                for k, v in sorted(steps.items())
            )
            print(f"    wall per turn: {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run folders")
    for run in parser.parse_args().runs:
        summarize(run)


if __name__ == "__main__":
    main()
