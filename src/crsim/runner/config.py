"""The experiment configuration: the single source of truth for a run (the CLI is derived from it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from crsim.core.errors import ConfigError
from crsim.core.plugins import ComponentSpec
from crsim.core.yaml_files import read_yaml_mapping, typo_hint
from crsim.llm.config import LLMSettings
from crsim.model.run_folder.manifest import DEFAULT_DOMAIN, DEFAULT_MAX_TURNS, DEFAULT_SEED
from crsim.users.population import PopulationConfig


def _default_crss() -> list[ComponentSpec]:
    return [ComponentSpec(name="popular"), ComponentSpec(name="retrieval")]


def _default_metrics() -> list[ComponentSpec]:
    """The evaluation's default metrics, imported when a config leaves `metrics` out: importing the
    evaluation (numpy, the metrics) up front made `crsim run --help` pay for it (bench/startup.py)."""
    from crsim.eval.scores import default_metrics

    return default_metrics()


class ExperimentConfig(BaseModel):
    """Which users talk to which CRSs with which simulators, for how long, and how it is scored.

    The defaults are the quickstart: 100 MovieLens users, the agenda-based simulator, and the two
    built-in CRSs on the shipped movie domain; no server, LLM or network involved.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field("quickstart", description="Experiment name; used in the default run folder name.")
    seed: int = Field(DEFAULT_SEED, description="Seed for the user population and every dialogue.")
    domain: str = Field(
        DEFAULT_DOMAIN,
        min_length=1,
        description="Item domain: a shipped one (movies, restaurants, hotels), an installed one, or the "
        "path of a domain file (docs/domains.md).",
    )
    users: PopulationConfig = Field(default_factory=PopulationConfig, description="The simulated users.")
    simulators: list[ComponentSpec] = Field(
        default_factory=lambda: [ComponentSpec(name="abus")], min_length=1, description="User simulators."
    )
    crss: list[ComponentSpec] = Field(
        default_factory=_default_crss, min_length=1, description="CRSs to evaluate."
    )
    metrics: list[ComponentSpec] = Field(default_factory=_default_metrics, description="Metrics to compute.")
    trials: int = Field(
        1,
        ge=1,
        le=1000,
        description="Dialogues per CRS × simulator × user; each trial has its own seed and LLM cache keys.",
    )
    llm: LLMSettings = Field(
        default_factory=LLMSettings,
        description="Models behind the LLM roles (user, crs, judge, annotator) and the response cache.",
    )
    max_turns: int = Field(
        DEFAULT_MAX_TURNS, ge=1, le=200, description="Turns (user utterance + CRS reply) per dialogue."
    )
    dialogue_timeout_s: float | None = Field(
        None,
        gt=0,
        le=86_400,
        description="Wall-time budget of one dialogue in seconds (default: none); a dialogue that "
        "outlives it ends as `timeout`, charged to the participant being awaited.",
    )
    concurrency: int = Field(32, ge=1, le=4096, description="Dialogues held at the same time.")
    executor: Literal["local", "ray"] = Field(
        "local",
        description="Where dialogues run: in this process (local) or as Ray tasks, one per shard (ray).",
    )
    ray_address: str | None = Field(
        None,
        description="Ray cluster for --executor ray ('auto', 'host:6379', 'ray://host:10001'); "
        "default: a Ray instance on this machine.",
    )
    shard_size: int = Field(
        50, ge=1, le=100_000, description="Dialogues per Ray task; each shard runs as one asyncio batch."
    )
    limit: int | None = Field(
        None,
        ge=1,
        description="Hold only the first N dialogues of the plan (a smoke test of a real config); "
        "the manifest records it, and resuming the run needs the same limit.",
    )
    failed_pairing_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="A CRS × simulator pairing whose dialogues ended in crs_error, infrastructure_error "
        "or timeout, all of them or more than this share, failed: the run exits with code 3 naming it.",
    )
    out: Path | None = Field(None, description="Run folder (default: runs/<name>-<timestamp>).")

    @model_validator(mode="after")
    def _users_of_the_domain(self) -> ExperimentConfig:
        """Name the population source a config left unset on another domain than the default: rating
        histories when the domain has a ratings file, goals otherwise, so the manifest says which."""
        if "source" not in self.users.model_fields_set and self.domain != DEFAULT_DOMAIN:
            from crsim.domains import domain_named
            from crsim.users.sources import default_source

            self.users.source = default_source(domain_named(self.domain))
        return self

    def manifest_config(self) -> dict[str, Any]:
        """The config as the manifest records it: `out` left out, and `limit` unless one is set (so
        manifests of unlimited runs are as before the field existed)."""
        exclude = {"out"} if self.limit is not None else {"out", "limit"}
        return self.model_dump(mode="json", exclude=exclude)


#: CLI option -> dotted config field. Every `crsim run` option except CONFIG/--resume/--json/--debug and
#: those saying how the command goes about it (--retry-errors/--retry-kinds/--no-preflight) maps to
#: one field here, and a test checks each path exists, so no flag can be accepted and then ignored.
CLI_OVERRIDES: dict[str, str] = {
    "out": "out",
    "seed": "seed",
    "users": "users.size",
    "concurrency": "concurrency",
    "executor": "executor",
    "address": "ray_address",
    "max_turns": "max_turns",
    "trials": "trials",
    "dialogue_timeout": "dialogue_timeout_s",
    "allow_reuse": "users.allow_reuse",
    "limit": "limit",
    "failed_pairing_share": "failed_pairing_share",
}


def field_description(path: str) -> str:
    """The description of a (dotted) config field, for CLI help."""
    model: type[BaseModel] = ExperimentConfig
    info = None
    for part in path.split("."):
        info = model.model_fields[part]
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return (info.description or "") if info else ""


def load_config(
    path: str | Path | None, overrides: dict[str, Any] | None = None, *, keywords: bool = False
) -> ExperimentConfig:
    """Read a YAML/JSON config (or the defaults), apply CLI overrides, validate once (`keywords`: the
    overrides came as `crsim.run` keyword arguments, and errors name them so)."""
    path = None if path is None else Path(path)
    data: dict[str, Any] = {}
    if path is not None:
        data = read_yaml_mapping(path, "an experiment config (YAML or JSON)")
    return config_from_mapping(data, overrides, str(path) if path else "config", keywords=keywords)


def config_from_mapping(
    data: dict[str, Any],
    overrides: dict[str, Any] | None = None,
    where: str = "config",
    *,
    keywords: bool = False,
) -> ExperimentConfig:
    """A config's fields (as a file holds them) with CLI overrides applied, validated once; errors name
    `where` (the file) or the option that gave the bad value (`--users`, or `users=0` for `keywords`)."""
    for option, value in (overrides or {}).items():
        if value is not None:
            _set_field(data, CLI_OVERRIDES[option], value, where)
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        given = [o for o, f in CLI_OVERRIDES.items() if f == field and (overrides or {}).get(o) is not None]
        if given and keywords:
            source = f"{given[0]}={(overrides or {})[given[0]]!r}"
        else:
            source = f"--{given[0].replace('_', '-')}" if given else where
        raise ConfigError(
            f"{source}: field '{field}': {err['msg']}{typo_hint(ExperimentConfig, err)}"
        ) from None


def _set_field(data: dict[str, Any], dotted: str, value: Any, where: str) -> None:
    """Set a dotted field, creating parents left empty (`users:` or `users: null`) in the file."""
    *parents, leaf = dotted.split(".")
    target = data
    for depth, part in enumerate(parents, start=1):
        if target.get(part) is None:
            target[part] = {}
        if not isinstance(target[part], dict):
            field = ".".join(parents[:depth])
            raise ConfigError(f"{where}: field '{field}': expected a mapping of fields, got {target[part]!r}")
        target = target[part]
    target[leaf] = value
