"""`crsim validate`: check a file against the unified format (`file`), and check the simulated verdict
itself: would it notice a worse CRS (`sensitivity`), how much do seeds move it (`noise`), and how
far the behaviour report's failure detectors agree with human readers (`detectors`)."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Annotated, Any

import typer

from crsim.cli._support import console, errors, user_errors
from crsim.core.errors import CrsimError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Check a file against the unified format; check whether simulated verdicts can be trusted.",
)


def _valid_as_another_kind(file: Path, kind: str) -> str | None:
    """The other record kind every record of the file validates as, if there is one."""
    from crsim.model.io import RECORD_KINDS, validate_file

    for other, record_type in RECORD_KINDS.items():
        if other == kind:
            continue
        with suppress(CrsimError):
            count, problems = validate_file(file, record_type)
            if count and not problems:
                return other
    return None


@app.command("file")
def validate_file_command(
    file: Annotated[Path, typer.Argument(help="A .jsonl (one record per line) or .json (array) file.")],
    kind: Annotated[str, typer.Option(help="dialogues or items.")] = "dialogues",
) -> None:
    """Check every record of a file against the unified format; list what is wrong and where."""
    from crsim.model.io import RECORD_KINDS, validate_file

    with user_errors():
        if kind not in RECORD_KINDS:
            raise CrsimError(
                f"--kind: unknown record type {kind!r}; expected one of: {', '.join(RECORD_KINDS)}"
            )
        count, problems = validate_file(file, RECORD_KINDS[kind])
    for problem in problems:
        errors.print(str(problem), highlight=False, soft_wrap=True, markup=False)
    if problems:
        errors.print(f"[red]{len(problems)} problem(s)[/red] in {count} record(s) checked", highlight=False)
        other = _valid_as_another_kind(file, kind)
        if other:
            hint = f"every record is valid as {other}: try --kind {other}"
            errors.print(hint, highlight=False, markup=False)
        raise typer.Exit(1)
    console.print(f"{file}: {count} {kind} valid", highlight=False, markup=False, soft_wrap=True)


def _study_config(config: Path | None, users: int | None, max_turns: int | None, seed: int | None) -> Any:
    from crsim.runner.config import load_config

    return load_config(config, {"users": users, "max_turns": max_turns, "seed": seed})


def _hold(cfg: Any, out: Path, resume: bool) -> None:
    """Hold and score a study's run (resumable like `crsim run`); a failed pairing is reported, not fatal."""
    from crsim.api import plan_run
    from crsim.runner.outcome import FailedPairings

    mapping = cfg.model_dump(mode="json", exclude_none=True)
    mapping.pop("out", None)
    try:  # the run path of `crsim run` (its advice in command-line words)
        plan_run(mapping, out=out, resume=resume).execute()
    except FailedPairings as failed:
        errors.print(f"warning: {failed}", highlight=False, markup=False, soft_wrap=True)


@app.command("sensitivity")
def sensitivity(
    config: Annotated[
        Path | None, typer.Argument(help="Experiment config (default: the quickstart).")
    ] = None,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="The study folder: a run folder plus sensitivity.json.")
    ] = Path("runs/sensitivity"),
    kinds: Annotated[
        str, typer.Option(help="Degradations, comma-separated: random,stale,deaf,eager,mute,garbled.")
    ] = "random,stale,deaf,eager,mute,garbled",
    users: Annotated[int | None, typer.Option(help="Simulated users (overrides the config).")] = None,
    max_turns: Annotated[int | None, typer.Option(help="Turns per dialogue (overrides the config).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (overrides the config).")] = None,
    resamples: Annotated[int, typer.Option(min=100, help="Draws of n users per pairwise accuracy.")] = 2000,
    resume: Annotated[bool, typer.Option(help="Continue the study in --out.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the study as JSON.")] = False,
) -> None:
    """Counterfactual sensitivity: run every CRS of CONFIG beside degraded twins (random, stale, deaf,
    eager, mute, garbled) on the same users; per simulator × metric × degradation the paired
    difference with its CI, the pairwise accuracy at n = 10, 30, 100 and the users for 80% power.
    See docs/validate.md."""
    from crsim.core.atomic_files import atomic_output
    from crsim.model.run_folder.folder import open_run
    from crsim.studies.compare import read_observations
    from crsim.studies.sensitivity import (
        SENSITIVITY_FILE,
        SensitivityOptions,
        analyse,
        table_lines,
        with_twins,
    )

    with user_errors():
        cfg = _study_config(config, users, max_turns, seed)
        originals = [spec.label for spec in cfg.crss]
        chosen = [k.strip() for k in kinds.split(",") if k.strip()]
        study = with_twins(cfg, chosen)
        _hold(study, out, resume)
    with user_errors():
        folder = open_run(out)
        recorded = folder.metric_metadata() or {}
        found = analyse(
            read_observations(folder.dialogues_path, folder.scores_path),
            originals,
            SensitivityOptions(resamples=resamples, seed=study.seed),
            {label: info.direction for label, info in recorded.items()},
        )
        with atomic_output(out / SENSITIVITY_FILE) as handle:
            handle.write(found.model_dump_json(indent=2))
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    for line in table_lines(found):
        typer.echo(line)


@app.command("noise")
def noise(
    config: Annotated[
        Path | None, typer.Argument(help="Experiment config (default: the quickstart).")
    ] = None,
    seeds: Annotated[
        int, typer.Option(min=2, help="Runs, with seeds s, s+1, ... (s: the config's seed).")
    ] = 5,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="Folder of the K run folders (seed-<s>) and noise.json.")
    ] = Path("runs/noise"),
    users: Annotated[int | None, typer.Option(help="Simulated users (overrides the config).")] = None,
    max_turns: Annotated[int | None, typer.Option(help="Turns per dialogue (overrides the config).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the runs in --out.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """The noise floor: run CONFIG with K seeds and say how often the CRS ranking and each significant
    difference flip, with each metric's run-to-run spread. See docs/validate.md."""
    from crsim.core.atomic_files import atomic_output
    from crsim.model.run_folder.folder import open_run
    from crsim.report.compare import compare_folders
    from crsim.studies.noise import NOISE_FILE, noise_lines
    from crsim.studies.noise import noise as noise_of

    with user_errors():
        cfg = _study_config(config, users, max_turns, None)
        chosen = [cfg.seed + k for k in range(seeds)]
    comparisons = []
    for one in chosen:
        folder_path = out / f"seed-{one}"
        with user_errors():
            _hold(cfg.model_copy(update={"seed": one}), folder_path, resume and folder_path.exists())
            comparisons.append(compare_folders([open_run(folder_path)]).comparison)
    found = noise_of(chosen, comparisons)
    with user_errors(), atomic_output(out / NOISE_FILE) as handle:
        handle.write(found.model_dump_json(indent=2))
    if as_json:
        typer.echo(found.model_dump_json(indent=2))
        return
    for line in noise_lines(found):
        typer.echo(line)


def _register_fidelity() -> None:
    """`crsim validate fidelity`, defined with its tables in `crsim.cli.fidelity`."""
    from crsim.cli.fidelity import fidelity_command

    app.command("fidelity")(fidelity_command)


def _register_detectors() -> None:
    """`crsim validate detectors`, defined in `crsim.cli.detectors`."""
    from crsim.cli.detectors import detectors_command

    app.command("detectors")(detectors_command)


_register_fidelity()
_register_detectors()
