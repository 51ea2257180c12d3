"""The pairwise comparison of two runs' simulators: pair, judge both orders per criterion, summarise;
from dialogues (`compare_dialogues`) or from run folders with the judge of an LLM config
(`compare_runs`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crsim.core.progress import Progress
from crsim.llm.client import LLMHub
from crsim.llm.config import LLMSettings
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import RunPaths
from crsim.studies.pairwise.criteria import DEFAULT_CRITERIA, load_criteria
from crsim.studies.pairwise.judge import PairwiseJudge
from crsim.studies.pairwise.pairing import PairKey, pair_dialogues, select_simulator
from crsim.studies.pairwise.records import CriterionOutcome, PairResult, PairwiseReport
from crsim.studies.pairwise.summary import summarize


async def compare_dialogues(
    dialogues_a: list[Dialogue],
    dialogues_b: list[Dialogue],
    judge: PairwiseJudge,
    *,
    simulator_a: str | None = None,
    simulator_b: str | None = None,
    limit: int | None = None,
    concurrency: int = 8,
    confidence: float = 0.95,
    run_a: str | None = None,
    run_b: str | None = None,
    progress: Progress | None = None,
) -> PairwiseReport:
    """Pair, judge (both orders per criterion) and summarise; see the module docstring.

    `limit` compares only the first N pairs in key order (the rest are counted in
    `left_out_by_limit`); `concurrency` bounds the judge calls in flight; `progress` hears how many
    pairs there are and each one judged.
    """
    chosen_a, sim_a = select_simulator(dialogues_a, simulator_a, "A")
    chosen_b, sim_b = select_simulator(dialogues_b, simulator_b, "B")
    pairing = pair_dialogues(chosen_a, chosen_b)
    pairs = pairing.pairs if limit is None else pairing.pairs[:limit]
    results = await _judged_pairs(pairs, judge, concurrency, progress)
    names = list(judge.criteria.criteria)
    return PairwiseReport(
        run_a=run_a,
        run_b=run_b,
        simulator_a=sim_a,
        simulator_b=sim_b,
        criteria=judge.criteria.name,
        judge=judge.llm.describe(),
        confidence=confidence,
        pairs_compared=len(results),
        left_out_by_limit=len(pairing.pairs) - len(pairs),
        unpaired_a=pairing.unpaired_a,
        unpaired_b=pairing.unpaired_b,
        duplicates_a=pairing.duplicates_a,
        duplicates_b=pairing.duplicates_b,
        summaries=summarize(results, names, confidence),
        pairs=results,
    )


async def _judged_pairs(
    pairs: list[tuple[PairKey, Dialogue, Dialogue]],
    judge: PairwiseJudge,
    concurrency: int,
    progress: Progress | None,
) -> list[PairResult]:
    """Every pair judged on every criterion, at most `concurrency` judge calls in flight; `progress`
    hears how many pairs there are and each one judged."""
    gate = asyncio.Semaphore(max(1, concurrency))
    if progress is not None:
        progress.set_total(len(pairs))

    async def judged(a: Dialogue, b: Dialogue) -> list[CriterionOutcome]:
        found = await judge.compare(a, b, gate)
        if progress is not None:
            progress.advance()
        return found

    outcomes = await asyncio.gather(*(judged(a, b) for _, a, b in pairs))
    return [
        PairResult(
            crs_id=key.crs_id,
            user_id=key.user_id,
            trial=key.trial,
            dialogue_a=a.id,
            dialogue_b=b.id,
            outcomes=found,
        )
        for (key, a, b), found in zip(pairs, outcomes, strict=True)
    ]


def run_dialogues(run: str | Path) -> list[Dialogue]:
    """The dialogues of a run folder (its `dialogues.jsonl`) or of a dialogues JSONL file."""
    run = Path(run)
    path = RunPaths(run).dialogues if run.is_dir() else run
    return list(iter_dialogues(path))


async def compare_runs(
    run_a: str | Path,
    run_b: str | Path,
    *,
    settings: LLMSettings | None = None,
    criteria: str | Path = DEFAULT_CRITERIA,
    cache: str | Path | None = None,
    role: str = "judge",
    simulator_a: str | None = None,
    simulator_b: str | None = None,
    limit: int | None = None,
    concurrency: int = 8,
    confidence: float = 0.95,
    temperature: float | None = None,
    max_tokens: int | None = None,
    max_chars: int = 8000,
    max_justification_chars: int | None = None,
    progress: Progress | None = None,
) -> PairwiseReport:
    """Compare the simulators of two runs with the judge of `settings` (default: the local model).

    The response cache is `cache`, else the file `settings` names, else `llm_cache.sqlite` in
    run A's folder (next to the file when run A is a dialogues file).
    """
    run_a = Path(run_a)
    run_b = Path(run_b)
    dialogues_a, dialogues_b = run_dialogues(run_a), run_dialogues(run_b)
    chosen = load_criteria(criteria)
    settings = _with_cache(settings or LLMSettings(), None if cache is None else Path(cache))
    folder = run_a if run_a.is_dir() else run_a.parent
    hub = LLMHub(settings, cache_path=RunPaths(folder).llm_cache)
    try:
        hub.check([role])
        judge = PairwiseJudge(
            hub.role(role),
            chosen,
            temperature=temperature,
            max_tokens=max_tokens,
            max_chars=max_chars,
            max_justification_chars=max_justification_chars,
        )
        return await compare_dialogues(
            dialogues_a,
            dialogues_b,
            judge,
            simulator_a=simulator_a,
            simulator_b=simulator_b,
            limit=limit,
            concurrency=concurrency,
            confidence=confidence,
            run_a=str(run_a),
            run_b=str(run_b),
            progress=progress,
        )
    finally:
        await hub.aclose()


def _with_cache(settings: LLMSettings, cache: Path | None) -> LLMSettings:
    """`settings` with its response cache at `cache` when one is given."""
    if cache is None:
        return settings
    return settings.model_copy(update={"cache": settings.cache.model_copy(update={"path": cache})})
