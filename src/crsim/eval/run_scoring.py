"""Evaluate a run folder (or a dialogue file): metrics, judges and act annotation, put together.

This is where the pieces meet: the run's manifest gives the metrics, the domain, the seed and the
LLM settings; a judge config adds LLM judges and may replace the LLM settings; an act annotator
(rule-based by default) fills in the acts that LLM simulators and human datasets lack, so that
Success, SRRR and RDL can be computed, and every score of an annotated dialogue names the annotator.
Outputs: `scores.jsonl` (one line per dialogue and metric/aspect, plus one per turn for turn-level
aspects; earlier records of metrics not scored again are kept unless told to replace) and then
`summary.json` (per CRS × simulator, from the merged scores, naming the dialogues and scores it was
built from: `crsim.model.run_folder.summary`), each written atomically; LLM answers are cached in the run's
`llm_cache.sqlite` so a second evaluation makes no calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crsim.core.collector import long_lived_objects_frozen
from crsim.core.components import BuildContext, build
from crsim.core.errors import ConfigError, DataError
from crsim.core.interrupt import run_interruptibly
from crsim.core.plugins import ComponentSpec
from crsim.core.progress import Progress
from crsim.core.yaml_files import read_yaml_mapping, validate_located
from crsim.eval.curves import CurveBuilder
from crsim.eval.metrics.base import metric_info
from crsim.eval.scores import (
    GroupSummary,
    ScoreRecord,
    build_metrics,
    default_metrics,
    read_scores,
)
from crsim.eval.scoring import AnnotationCounts, DialogueAnnotator
from crsim.eval.streaming import FileScoring
from crsim.eval.summaries import SummaryBuilder, order_metrics, write_summary
from crsim.llm.client import LLMHub
from crsim.llm.config import LLMSettings
from crsim.model.dialogue import Dialogue
from crsim.model.domain import Domain
from crsim.model.run_folder.files import SCORES, SUMMARY, RunPaths
from crsim.model.run_folder.folder import Completeness, completeness, count_lines
from crsim.model.run_folder.lock import HeldLock, run_folder_lock
from crsim.model.run_folder.manifest import Manifest, load_manifest
from crsim.model.run_folder.summary import (
    GroupCurve,
    MetricInfo,
    SummaryFile,
    evaluation_sources,
    read_summary_file,
)

__all__ = [
    "NO_ANNOTATOR",
    "EvaluateOptions",
    "EvaluationResult",
    "JudgeConfig",
    "evaluate_path",
    "load_judge_config",
    "output_folder",
]

#: Annotator names that mean "do not annotate".
NO_ANNOTATOR = ("none", "off")


def _default_judges() -> list[ComponentSpec]:
    return [ComponentSpec(name="judge", args={"rubric": "quality5"})]


class JudgeConfig(BaseModel):
    """`crsim evaluate --judge FILE`: which judges to add and which models they use."""

    model_config = ConfigDict(extra="forbid")

    llm: LLMSettings = Field(default_factory=LLMSettings, description="Models by role; judges use `judge`.")
    judges: list[ComponentSpec] = Field(
        default_factory=_default_judges,
        description="Evaluators to add, e.g. {name: judge, args: {rubric: …}}.",
    )


def load_judge_config(path: str | Path) -> JudgeConfig:
    """Read a judge config (YAML or JSON); errors name the file and the field."""
    path = Path(path)
    loaded = read_yaml_mapping(path, "a judge config with `llm:` and `judges:`")
    return validate_located(JudgeConfig, loaded, str(path))


class EvaluateOptions(BaseModel):
    """What to compute; fields left None come from the run's manifest."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[ComponentSpec] | None = Field(None, description="Metrics; None = the manifest's.")
    judge: JudgeConfig | None = Field(None, description="Judges to add and their LLM settings.")
    annotator: str = Field(
        "rules", description="Act annotator for act-less dialogues; 'none' = do not annotate."
    )
    annotator_args: dict[str, Any] = Field(default_factory=dict)
    concurrency: int = Field(8, ge=1, description="Dialogues scored at the same time (LLM judges wait).")
    score_unevaluable: bool = Field(
        False,
        description="Also score dialogues the simulator or the infrastructure broke, and count them in "
        "the metrics (default: left out, counted beside them as n_dialogues - n_evaluable).",
    )
    replace: bool = Field(
        False,
        description=f"Replace {SCORES} and {SUMMARY}; by default the records of metrics not scored "
        "again are kept and the summary is rebuilt from the merged scores.",
    )


@dataclass
class EvaluationResult:
    summaries: list[GroupSummary]
    annotation: AnnotationCounts
    out_dir: Path
    llm_calls: int = 0
    llm_roles: dict[str, int] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)  # labels whose earlier scores were merged in
    #: Planned and held dialogues of the run scored (`complete` False: fewer held than planned).
    completeness: Completeness | None = None

    @property
    def complete(self) -> bool:
        return self.completeness is None or self.completeness.complete

    @property
    def records(self) -> list[ScoreRecord]:
        """The score records, read back from `scores.jsonl` (not kept in memory while scoring)."""
        return read_scores(RunPaths(self.out_dir).scores)


def evaluate_path(
    path: str | Path,
    options: EvaluateOptions | None = None,
    *,
    out: str | Path | None = None,
    progress: Progress | None = None,
    held: HeldLock | None = None,
    llms: LLMHub | None = None,
    on_batch: Callable[[Sequence[Dialogue]], None] | None = None,
) -> EvaluationResult:
    """Score a run folder (manifest + dialogues.jsonl) or a dialogue JSONL file; write the results.

    Results go into the run folder, or for a file into `out` (default: `<file stem>-eval/` beside it),
    whose lock (`crsim.model.run_folder.lock`) is held while scoring and writing (a caller that holds
    it already passes its `HeldLock` as `held`). SIGINT/SIGTERM stop
    the scoring (`crsim.core.interrupt.Interrupted`) and leave the previous results as they were.
    `progress` hears how many dialogues there are and each one scored. `llms` is the LLM hub of the
    run that just wrote the folder (`crsim run`): the scoring uses it when its settings are the ones
    the scoring needs (no judge config with its own), so one command builds one hub. `on_batch`
    receives each batch of dialogues as read (in file order) once it is scored, so that a caller can
    count more over the same pass without reading the file again.
    """
    path, out = Path(path), None if out is None else Path(out)
    with run_folder_lock(output_folder(path, out), held=held):
        return _evaluate_path(path, options, out=out, progress=progress, llms=llms, on_batch=on_batch)


def output_folder(path: Path, out: Path | None = None) -> Path:
    """Where `evaluate_path` writes: `out`, else the run folder itself, else `<file stem>-eval/`."""
    if out is not None:
        return out
    if path.is_dir():
        return path
    if path.is_file():
        return path.with_name(f"{path.name.split('.')[0]}-eval")
    raise ConfigError(f"{path}: no such run folder or dialogue file")


def _evaluate_path(
    path: Path,
    options: EvaluateOptions | None = None,
    *,
    out: Path | None = None,
    progress: Progress | None = None,
    llms: LLMHub | None = None,
    on_batch: Callable[[Sequence[Dialogue]], None] | None = None,
) -> EvaluationResult:
    """`evaluate_path` under the lock.

    Results go into the run folder, or for a file into `out` (default: `<file stem>-eval/` beside it).
    Dialogues stream through in batches: each batch is scored (LLM evaluators concurrently within it),
    its records appended to a temporary scores file and folded into the summaries, so memory does not
    grow with the run; the scores file replaces the old one only when every dialogue is scored.
    Unless `options.replace`, an earlier scores file is merged (`kept_scores`): the records of metrics
    not scored again stay, appended after the new ones, and the summary covers both.
    """
    path = Path(path)
    options = options or EvaluateOptions()
    manifest, dialogues_path, out_dir = _locations(path, None if out is None else Path(out))
    specs = options.metrics if options.metrics is not None else _manifest_metrics(manifest, path)
    settings = options.judge.llm if options.judge else _manifest_llm(manifest, path)
    if options.judge:
        specs = [*specs, *options.judge.judges]
    out_dir.mkdir(parents=True, exist_ok=True)
    hub = _hub(llms, settings, RunPaths(out_dir).llm_cache)
    calls_before = {name: llm.calls for name, llm in hub.roles.items()}
    # a dialogue file has no run seed: its bootstrap draws with seed 0
    seed = manifest.seed if path.is_dir() else 0
    ctx = BuildContext(
        domain=_metric_domain(manifest),
        llms=hub,
        seed=seed,
        run_folder=path if path.is_dir() else None,
    )
    metrics = build_metrics(specs, ctx)
    scoring = FileScoring(
        metrics,
        options.concurrency,
        options.score_unevaluable,
        _annotator(options, manifest, ctx),
        SummaryBuilder(seed=seed),
        CurveBuilder(metrics, manifest.max_turns),
        progress,
        on_batch,
    )
    earlier_summary = None if options.replace else _earlier_summary(RunPaths(out_dir).summary)
    if progress is not None:
        progress.set_total(count_lines(dialogues_path))
    scores_path = RunPaths(out_dir).scores
    merging = not options.replace and scores_path.is_file()

    async def go() -> None:
        try:
            await scoring.run(dialogues_path, scores_path, merging=merging)
        finally:
            await hub.aclose()

    with long_lived_objects_frozen():
        run_interruptibly(go())
    summaries = _write_summary(scoring, dialogues_path, out_dir, earlier_summary)
    calls = {  # the calls of this scoring (a reused hub counts the run's too)
        name: llm.calls - calls_before.get(name, 0)
        for name, llm in hub.roles.items()
        if name not in calls_before or llm.calls > calls_before[name]
    }
    return EvaluationResult(
        summaries,
        scoring.counts,
        out_dir,
        sum(calls.values()),
        calls,
        list(scoring.kept_labels),
        completeness(path, scoring.held),
    )


def _hub(llms: LLMHub | None, settings: LLMSettings, cache: Path) -> LLMHub:
    """The LLM hub of the scoring: the caller's when its settings are the ones needed, else a new one;
    either way caching into `cache`."""
    if llms is not None and llms.settings == settings:
        llms.set_cache_path(cache)
        return llms
    return LLMHub(settings, cache_path=cache)


def _write_summary(
    scoring: FileScoring, dialogues_path: Path, out_dir: Path, earlier: SummaryFile | None
) -> list[GroupSummary]:
    """`summary.json` of a finished scoring (with the metadata and curves of the metrics an earlier
    evaluation scored and this one kept); the summaries."""
    summaries = scoring.builder.summaries()
    order_metrics(summaries, scoring.earlier_labels)
    infos, kept_curves = _kept_metadata(earlier, scoring.kept_labels)
    infos.update((m.label, metric_info(m)) for m in scoring.metrics)
    write_summary(
        summaries,
        RunPaths(out_dir).summary,
        built_from=evaluation_sources(dialogues_path, RunPaths(out_dir).scores),
        metrics=infos,
        curves=sorted(
            [*scoring.curves.curves(), *kept_curves],
            key=lambda c: (c.crs_id or "", c.simulator_id or "", c.metric),
        ),
    )
    return summaries


def _earlier_summary(path: Path) -> SummaryFile | None:
    """The summary an evaluation that merges replaces, for the metadata and curves of the metrics it
    keeps; None when there is none or it cannot be read (the kept metrics then go without them)."""
    if not path.is_file():
        return None
    try:
        return read_summary_file(path)
    except DataError:
        return None


def _kept_metadata(
    earlier: SummaryFile | None, kept: dict[str, None]
) -> tuple[dict[str, MetricInfo], list[GroupCurve]]:
    """The earlier summary's metadata and curves of the labels a merge keeps."""
    if earlier is None:
        return {}, []
    infos = {}
    for label in kept:
        info = earlier.metric_info(label)
        if info is not None:
            infos[info.label] = info
    return infos, [c for c in earlier.curves if c.metric in infos]


def _locations(path: Path, out: Path | None) -> tuple[Manifest, Path, Path]:
    """(manifest, dialogues file, output folder) of a run folder (its manifest and dialogues; output
    into it unless `out`) or of a dialogue file (no manifest; output `<file stem>-eval/` beside it)."""
    if path.is_dir():
        return load_manifest(path), RunPaths(path).dialogues, out or path
    if path.is_file():
        return Manifest(), path, out or path.with_name(f"{path.name.split('.')[0]}-eval")
    raise ConfigError(f"{path}: no such run folder or dialogue file")


def _manifest_metrics(manifest: Manifest, path: Path) -> list[ComponentSpec]:
    """The run's metrics as its manifest lists them, else the evaluation's defaults."""
    try:
        specs = manifest.metrics
    except DataError as exc:
        raise ConfigError(f"{RunPaths(path).manifest}: {exc}") from None
    return default_metrics() if specs is None else specs


def _manifest_llm(manifest: Manifest, path: Path) -> LLMSettings:
    return validate_located(LLMSettings, manifest.llm, str(RunPaths(path).manifest), ("config", "llm"))


def _metric_domain(manifest: Manifest) -> Domain | None:
    """The run's domain for metrics that check answers against the catalogue; None when it cannot
    be read (those metrics then say so in their missing reason, the others are scored as usual)."""
    from crsim.domains import domain_of

    try:
        return domain_of(manifest)
    except ConfigError:
        return None


def _annotator(options: EvaluateOptions, manifest: Manifest, ctx: BuildContext) -> DialogueAnnotator | None:
    """The act annotator named by the options, over the run's domain (None for 'none')."""
    if options.annotator in NO_ANNOTATOR:
        return None
    from crsim.domains import domain_of
    from crsim.eval.annotators.base import ActAnnotator, annotator_registry

    spec = ComponentSpec(name=options.annotator, args=options.annotator_args)
    annotator_registry.params(spec.name, spec.args, where="annotator")  # bad arguments before the domain
    domain = domain_of(manifest)  # the run's domain, from its folder (default: movies for a file)
    instance = build(annotator_registry, spec, replace(ctx, domain=domain), "annotator")
    if not isinstance(instance, ActAnnotator):
        raise ConfigError(f"annotator {options.annotator!r} is not an act annotator")
    return instance
