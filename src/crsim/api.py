"""The Python API for notebooks: `crsim.run(config)`, `crsim.evaluate(run_folder)`, `crsim.load(run_folder)`.

    import crsim
    result = crsim.run("configs/quickstart.yaml", users=20)
    result.summary          # one row per CRS × simulator × metric: mean, CI, n, n evaluable, distinct users
    result.dialogues        # one row per dialogue (crsim.report.dataframes.dialogues_df)
    result.scores           # one row per dialogue and metric (crsim.report.dataframes.scores_df)
    result.comparisons      # paired comparisons between CRSs (crsim.report.dataframes.comparisons_df)

Each call does what the command of the same name does and writes the same run folder, so a notebook
and `crsim report`/`crsim compare` see the same files. The top floor (beside the command line): no
library module imports it. Inside a running event loop (Jupyter runs one), the work runs in a helper
thread, since an event loop cannot be started inside another. Needs the `analysis` extra (pandas).
"""

from __future__ import annotations

import asyncio
import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from crsim.core.errors import ConfigError
from crsim.model.run_folder.folder import Completeness, completeness, open_run
from crsim.model.run_folder.scores import GroupSummary

if TYPE_CHECKING:
    import pandas as pd

    from crsim.runner.batch import BatchResult
    from crsim.runner.config import ExperimentConfig

__all__ = [
    "IncompleteRunWarning",
    "Result",
    "RunPlan",
    "evaluate",
    "load",
    "plan_run",
    "run",
    "summary_frame",
]

T = TypeVar("T")

#: Columns of `Result.summary`, in order.
SUMMARY_COLUMNS = [
    "crs",
    "simulator",
    "metric",
    "mean",
    "ci_low",
    "ci_high",
    "std",
    "n",
    "missing",
    "not_evaluable",
    "n_dialogues",
    "n_evaluable",
    "n_users",
    "ci_method",
    "confidence",
]


@dataclass
class Result:
    """A scored run folder. The frames are read from the folder when first asked for."""

    folder: Path
    summaries: list[GroupSummary]
    #: Planned and held dialogues of the run (`crsim.model.run_folder.folder.Completeness`).
    completeness: Completeness | None = None
    #: What `crsim.run` did to hold the dialogues: held now, found done, held again, the errored
    #: records after a resume (`crsim.runner.batch.BatchResult`); None from `evaluate` and `load`.
    held: BatchResult | None = None

    @property
    def complete(self) -> bool:
        """False when the run folder holds fewer dialogues than its manifest planned (a stopped run):
        its numbers describe only the dialogues held (`IncompleteRunWarning` was issued)."""
        return self.completeness is None or self.completeness.complete

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per CRS × simulator × metric: mean, bootstrap CI (and how it was computed), the
        values' n and how many were missing or not evaluable, dialogues, evaluable dialogues, users."""
        return summary_frame(self.summaries)

    @cached_property
    def dialogues(self) -> pd.DataFrame:
        """One row per dialogue (`crsim.report.dataframes.dialogues_df`)."""
        from crsim.report.dataframes import dialogues_df

        return dialogues_df(self.folder)

    @cached_property
    def utterances(self) -> pd.DataFrame:
        """One row per utterance (`crsim.report.dataframes.utterances_df`)."""
        from crsim.report.dataframes import utterances_df

        return utterances_df(self.folder)

    @cached_property
    def scores(self) -> pd.DataFrame:
        """One row per dialogue and metric, per turn for turn-level aspects
        (`crsim.report.dataframes.scores_df`)."""
        from crsim.report.dataframes import scores_df

        return scores_df(self.folder)

    @cached_property
    def comparisons(self) -> pd.DataFrame:
        """Paired comparisons between the CRSs, per simulator and metric
        (`crsim.report.dataframes.comparisons_df`; docs/compare.md); empty with a single CRS."""
        from crsim.report.dataframes import comparisons_df

        return comparisons_df(self.folder)

    @cached_property
    def verdicts(self) -> pd.DataFrame:
        """Per pair of CRSs and metric: who is better by the metric's direction, on which
        Holm-corrected test, and the pair's wins and ties (`crsim.report.dataframes.verdicts_df`)."""
        from crsim.report.dataframes import verdicts_df

        return verdicts_df(self.folder)

    def __repr__(self) -> str:
        groups = ", ".join(f"{s.crs_id} × {s.simulator_id} ({s.n_dialogues})" for s in self.summaries)
        return f"Result({str(self.folder)!r}: {groups})"


class IncompleteRunWarning(UserWarning):
    """A run folder holds fewer dialogues than planned; its results cover only those held."""


def _checked(result: Result) -> Result:
    """`result`, after warning (`IncompleteRunWarning`) when its run is incomplete."""
    if result.completeness is not None and not result.completeness.complete:
        warnings.warn(IncompleteRunWarning(result.completeness.warning()), stacklevel=3)
    return result


def summary_frame(summaries: Sequence[GroupSummary]) -> pd.DataFrame:
    """The summaries as a dataframe, one row per CRS × simulator × metric (`Result.summary`)."""
    try:
        import pandas
    except ImportError:
        raise ConfigError("dataframes need pandas: pip install 'crsim[analysis]'") from None
    rows = [
        {
            "crs": group.crs_id,
            "simulator": group.simulator_id,
            "metric": label,
            **{key: getattr(aggregate, key) for key in ("mean", "ci_low", "ci_high", "std", "n", "missing")},
            "not_evaluable": aggregate.not_evaluable,
            "n_dialogues": group.n_dialogues,
            "n_evaluable": group.n_evaluable,
            "n_users": group.n_users,
            "ci_method": aggregate.method,
            "confidence": aggregate.confidence,
        }
        for group in summaries
        for label, aggregate in group.metrics.items()
    ]
    return pandas.DataFrame(rows, columns=SUMMARY_COLUMNS)


def run(
    config: str | Path | Mapping[str, Any] | ExperimentConfig | None = None,
    *,
    out: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    preflight: bool = True,
    retry_errors: bool | str | Sequence[str] = False,
    **overrides: Any,
) -> Result:
    """Hold the experiment's dialogues and score them, as `crsim run CONFIG` does; returns the result.

    `config` is a config file, a mapping with the config's fields, an `ExperimentConfig` or None (the
    quickstart). Keyword arguments are the options of `crsim run` (`users=20`, `seed=3`, `limit=5`,
    `max_turns`, `trials`, `concurrency`, `failed_pairing_share`, ...); `out` is the run folder
    (default: runs/<name>-<timestamp>), `resume=True` continues the run in it, and with it
    `retry_errors=True` (or kinds: `"crs,timeout"`, `["infrastructure"]`) holds failed dialogues
    again. Progress and the per-phase summary go to stderr unless `progress=False`.

    Before the first dialogue every HTTP CRS and LLM endpoint is tried once (`preflight=False` skips
    it): a failure raises `crsim.runner.preflight.PreflightFailed` and writes nothing. A run in which a
    CRS × simulator pairing failed (`crsim run`'s exit code 3) raises
    `crsim.runner.outcome.FailedPairings`, whose `result` is the Result and `pairings` the failures.
    """
    from crsim.runner.batch import RunFolderConflict

    plan = plan_run(config, out=out, resume=resume, retry_errors=retry_errors, keywords=True, **overrides)
    try:
        return _outside_event_loop(lambda: plan.execute(progress=progress, preflight=preflight))
    except RunFolderConflict as conflict:  # the same advice in Python's words
        raise ConfigError(conflict.python) from None


def plan_run(
    config: str | Path | Mapping[str, Any] | ExperimentConfig | None = None,
    *,
    out: str | Path | None = None,
    resume: bool = False,
    retry_errors: bool | str | Sequence[str] = False,
    keywords: bool = False,
    **overrides: Any,
) -> RunPlan:
    """The run `crsim.run` would hold, with its options checked and its folder chosen; nothing is
    built or written until `RunPlan.execute` (what `crsim.run` and `crsim run` both call). Errors in
    an option name it as a keyword argument (`users=0`) when `keywords`, else as a flag (`--users`)."""
    from crsim.runner.retry import retry_reasons

    retry = (
        frozenset()
        if retry_errors is False
        else retry_reasons(None if retry_errors is True else retry_errors)
    )
    if retry and not resume:
        raise ConfigError("crsim.run: retry_errors needs resume=True (it holds failed dialogues again)")
    cfg = _config(config, {**overrides, "out": out}, keywords)
    if resume and cfg.out is None:
        raise ConfigError(
            "resuming needs the run folder to continue: --out (crsim.run: out=) or `out` in the config"
        )
    folder = cfg.out or Path("runs") / f"{cfg.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    source = str(config) if isinstance(config, str | Path) else "config"
    return RunPlan(cfg, Path(folder), resume=resume, retry=retry, source=source)


@dataclass
class RunPlan:
    """One run: the config with the options applied, its folder, whether it continues the run there,
    and which failed dialogues it holds again (`plan_run`). `execute` builds the experiment, tries the
    servers, holds the dialogues and scores them under the folder's lock, taken once."""

    config: ExperimentConfig
    folder: Path
    resume: bool = False
    retry: frozenset[str] = frozenset()
    #: What errors in the config name: its file, or 'config'.
    source: str = "config"
    #: The dialogues the experiment plans, once it is built.
    planned: int | None = None
    #: Whether the dialogue phase has begun: a stop before it left the run folder as it was.
    holding: bool = False

    def execute(self, *, progress: bool = True, preflight: bool = True) -> Result:
        """Hold the dialogues and score them; see `run`. Raises `FailedPairings` (with the result)
        when a pairing failed."""
        from crsim.core.interrupt import run_interruptibly
        from crsim.eval.run_scoring import evaluate_path
        from crsim.model.run_folder.lock import run_folder_lock
        from crsim.runner.batch import kept_dialogues, run_batch
        from crsim.runner.build import build_experiment
        from crsim.runner.estimate import llm_duration_estimate, planned_llm_calls
        from crsim.runner.outcome import FailedPairings, failed_pairings
        from crsim.runner.progress import ProgressReport

        try:
            experiment = build_experiment(self.config, run_folder=self.folder)
        except ConfigError as exc:  # names a field; say in which file
            raise ConfigError(f"{self.source}: {exc}") from None
        self.planned = len(experiment.tasks)
        if preflight:
            self._preflight(experiment)
        self.holding = True
        report = ProgressReport(enabled=progress)
        with run_folder_lock(self.folder) as lock:
            kept = min(kept_dialogues(self.folder), self.planned) if self.resume else 0
            calls = planned_llm_calls(experiment, kept) if progress else 0
            with report.phase("dialogues") as meter, llm_duration_estimate(meter, calls):
                batch = run_batch(
                    experiment, self.folder, resume=self.resume, progress=meter, held=lock, retry=self.retry
                )
                held = run_interruptibly(batch)
            with report.phase("scoring") as meter:  # the run's LLM hub scores too: one per command
                done = evaluate_path(self.folder, progress=meter, held=lock, llms=experiment.llms)
        report.print_summary()
        result = Result(self.folder, done.summaries, completeness(self.folder), held=held)
        failed = failed_pairings(done.summaries, self.config.failed_pairing_share)
        if failed:
            raise FailedPairings(failed, result)
        return result

    def _preflight(self, experiment: Any) -> None:
        """Try every HTTP CRS and LLM endpoint once, unless the run will hold no dialogue; a busy
        run folder is refused before the servers are tried."""
        from crsim.core.interrupt import run_interruptibly
        from crsim.model.run_folder.lock import ensure_free
        from crsim.runner.preflight import needed, preflight

        ensure_free(self.folder)
        if needed(experiment, self.folder, self.resume, self.retry):
            run_interruptibly(preflight(experiment))


def evaluate(
    run_folder: str | Path,
    *,
    metrics: Sequence[str | Mapping[str, Any]] | None = None,
    judge: str | Path | None = None,
    annotator: str = "rules",
    concurrency: int = 8,
    replace: bool = False,
    out: str | Path | None = None,
) -> Result:
    """Score a run folder (or dialogue file) again, as `crsim evaluate` does; returns the result.

    `metrics` are metric names or `{"name": ..., "args": {...}, "id": ...}` mappings (default: the
    run's); `judge` a judge config file (`crsim evaluate --judge`).
    """
    from crsim.core.plugins import ComponentSpec
    from crsim.eval.run_scoring import EvaluateOptions, evaluate_path, load_judge_config

    specs = None
    if metrics is not None:
        specs = [
            ComponentSpec(name=m) if isinstance(m, str) else ComponentSpec.model_validate(m) for m in metrics
        ]
    options = EvaluateOptions(
        metrics=specs,
        judge=load_judge_config(judge) if judge is not None else None,
        annotator=annotator,
        concurrency=concurrency,
        replace=replace,
    )
    done = _outside_event_loop(lambda: evaluate_path(run_folder, options, out=out))
    return _checked(Result(Path(done.out_dir), done.summaries, done.completeness))


def load(run_folder: str | Path) -> Result:
    """An evaluated run folder as it is on disk, without scoring anything."""
    folder = open_run(Path(run_folder))
    if not folder.evaluated:
        raise ConfigError(f"{run_folder}: not evaluated yet; crsim.evaluate({str(run_folder)!r}) scores it")
    return _checked(Result(folder.path, folder.summaries(), folder.completeness()))


def _config(
    config: str | Path | Mapping[str, Any] | ExperimentConfig | None,
    overrides: dict[str, Any],
    keywords: bool = False,
) -> Any:
    """The experiment config with the `crsim run` options applied (unknown options named)."""
    from crsim.runner.config import CLI_OVERRIDES, ExperimentConfig, config_from_mapping, load_config

    unknown = sorted(set(overrides) - set(CLI_OVERRIDES))
    if unknown:
        raise ConfigError(
            f"crsim.run: unknown option {unknown[0]!r}; expected one of: {', '.join(CLI_OVERRIDES)}"
        )
    if isinstance(config, ExperimentConfig):
        config = config.model_dump(mode="json", exclude_none=True)
    if isinstance(config, Mapping):
        return config_from_mapping(copy.deepcopy(dict(config)), overrides, keywords=keywords)
    return load_config(config, overrides, keywords=keywords)


def _outside_event_loop(work: Callable[[], T]) -> T:
    """`work()` here, or in a helper thread when this thread runs an event loop (a notebook's)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return work()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="crsim-api") as pool:
        return pool.submit(work).result()
