"""The fidelity study of a run: sampling and halving the human corpus, annotating both sides with the
same annotator, and each simulator's measures, intervals and classifier against the human side."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from crsim.core.errors import CrsimError
from crsim.core.seeding import derive_seed
from crsim.eval.annotators.base import ActAnnotator
from crsim.model.dialogue import Dialogue
from crsim.studies.fidelity.classifier import Scored, classifier_scores
from crsim.studies.fidelity.intervals import RESAMPLES, Interval, auc_interval
from crsim.studies.fidelity.measures import bootstrap_rows, measure_rows, summary
from crsim.studies.fidelity.report import FidelityReport, Intervals, SimulatorFidelity
from crsim.studies.fidelity.sides import UserSide, side_of

#: Corpora `--against` names: converted on the fly with the dataset reader of that name.
CORPORA = ("redial", "crsarena_dial", "inspired")


def split_halves(dialogues: Sequence[Dialogue], seed: int) -> tuple[list[Dialogue], list[Dialogue]]:
    """Two halves of a corpus, dialogues assigned at random (seeded)."""
    order = list(dialogues)
    random.Random(derive_seed(seed, "halves")).shuffle(order)
    middle = len(order) // 2
    return order[:middle], order[middle:]


def sample(dialogues: Sequence[Dialogue], limit: int | None, seed: int, what: str) -> list[Dialogue]:
    """At most `limit` dialogues, drawn at random (seeded); all when there are fewer."""
    if limit is None or len(dialogues) <= limit:
        return list(dialogues)
    return random.Random(derive_seed(seed, what)).sample(list(dialogues), limit)


def simulator_fidelity(
    name: str,
    sim: UserSide,
    human: UserSide,
    half_a: UserSide,
    half_b: UserSide,
    seed: int,
    control: Scored | None,
    resamples: int = RESAMPLES,
    control_ci: Interval | None = None,
) -> SimulatorFidelity:
    """One simulator against the human side (`control`: the half-vs-half classifier's scores, with
    the interval of its AUC); `resamples` 0 leaves out the intervals."""
    rows = measure_rows(sim, human, half_a, half_b, derive_seed(seed, name))
    summary_ci = control_summary_ci = None
    if resamples:
        rows, summary_ci, control_summary_ci = bootstrap_rows(
            rows, (sim, human, half_a, half_b), name, seed, resamples
        )
    scored = classifier_scores(human.utterances, sim.utterances, derive_seed(seed, name, "auc"))
    return SimulatorFidelity(
        simulator=name,
        dialogues=sim.dialogues,
        user_utterances=len(sim.utterances),
        rows=rows,
        summary_distance=summary(r.distance for r in rows),
        control_summary_distance=summary(r.control_distance for r in rows),
        auc=None if scored is None else scored.auc(),
        control_auc=None if control is None else control.auc(),
        summary_ci=summary_ci,
        control_summary_ci=control_summary_ci,
        auc_ci=auc_interval(scored, resamples, derive_seed(seed, name, "auc interval"))
        if scored is not None and resamples
        else None,
        control_auc_ci=control_ci,
    )


async def _annotated(annotator: ActAnnotator, dialogues: Iterable[Dialogue]) -> list[Dialogue]:
    return [await annotator.annotate(d, overwrite=True) for d in dialogues]


def fidelity(
    run_name: str,
    run_dialogues: Iterable[Dialogue],
    against: str,
    corpus: Sequence[Dialogue],
    annotator: ActAnnotator,
    *,
    seed: int = 0,
    max_human: int | None = 400,
    max_simulated: int | None = 400,
    resamples: int = RESAMPLES,
) -> FidelityReport:
    """Compare the users of each simulator of a run with the human users of `corpus`.

    Every utterance of both sides is annotated anew by `annotator` (the same instrument on both);
    `max_human` and `max_simulated` cap the dialogues read per side (a seeded random sample);
    `resamples` bootstrap replicates give the intervals (0: none)."""
    humans = sample(corpus, max_human, seed, "human")
    if len(humans) < 4:
        raise CrsimError(
            f"--against {against}: {len(humans)} human dialogue(s); at least 4 are needed for two halves"
        )
    by_simulator, left_out = _by_simulator(run_dialogues)
    if not by_simulator:
        raise CrsimError(f"run {run_name}: no evaluable dialogue to compare")
    humans = asyncio.run(_annotated(annotator, humans))
    first, second = split_halves(humans, seed)
    human, half_a, half_b = side_of(humans, "human:"), side_of(first, "human:"), side_of(second, "human:")
    control, control_ci = _control(half_a, half_b, seed, resamples)
    results = []
    for name, dialogues in sorted(by_simulator.items()):
        chosen = sample(dialogues, max_simulated, seed, name)
        sim = side_of(asyncio.run(_annotated(annotator, chosen)), "sim:")
        results.append(
            simulator_fidelity(name, sim, human, half_a, half_b, seed, control, resamples, control_ci)
        )
    return FidelityReport(
        run=run_name,
        against=against,
        domain=annotator.domain.name,
        seed=seed,
        human_dialogues=len(humans),
        half_dialogues=(len(first), len(second)),
        human_user_utterances=len(human.utterances),
        left_out=left_out,
        simulators=results,
        intervals=Intervals(resamples=resamples, seed=seed) if resamples else None,
    )


def _by_simulator(run_dialogues: Iterable[Dialogue]) -> tuple[dict[str, list[Dialogue]], int]:
    """The run's evaluable dialogues per simulator, and how many were left out (broken by the
    simulator or the infrastructure)."""
    by_simulator: dict[str, list[Dialogue]] = {}
    left_out = 0
    for dialogue in run_dialogues:
        if not dialogue.evaluable:
            left_out += 1
            continue
        by_simulator.setdefault(dialogue.simulator_id or "simulator", []).append(dialogue)
    return by_simulator, left_out


def _control(
    half_a: UserSide, half_b: UserSide, seed: int, resamples: int
) -> tuple[Scored | None, Interval | None]:
    """The half-vs-half classifier's scores (the control every simulator's AUC stands beside), and
    the interval of its AUC when there are resamples."""
    control = classifier_scores(half_a.utterances, half_b.utterances, derive_seed(seed, "control auc"))
    control_ci = (
        auc_interval(control, resamples, derive_seed(seed, "control auc interval"))
        if control is not None and resamples
        else None
    )
    return control, control_ci


def read_corpus(against: str, data: Path | None) -> tuple[str, list[Dialogue]]:
    """The human corpus `--against` names, with its label: a file of unified dialogues (.jsonl), or a
    dataset converted on the fly from its published files (`data`, default `datasets/<name>`, the
    folder `crsim data download NAME` fills)."""
    from crsim.datasets.base import build_reader, convert_dataset
    from crsim.model.io import iter_dialogues

    path = Path(against)
    if against not in CORPORA:
        if not path.is_file():
            raise CrsimError(
                f"--against: {against!r} is neither a corpus ({', '.join(CORPORA)}) nor a dialogues file"
            )
        return path.stem.removesuffix(".jsonl"), list(iter_dialogues(path))
    src = data if data is not None else Path("datasets") / against
    if not src.exists():
        raise CrsimError(
            f"--data: {src} does not exist; give the {against} files as published "
            f"(`crsim data download {against}` writes them to datasets/{against})"
        )
    return against, list(convert_dataset(build_reader(against, {}), src))
