"""`manifest.json`: the typed model of what a run says about itself, its writer and its one reader.

`crsim run` writes the manifest before the first dialogue; every other command reads it through
`read_manifest` (the raw JSON object) or `load_manifest` (the typed `Manifest`). Both check the same
things and raise the same located errors, and both register the config's secrets with the redaction
layer so that nothing made from the run shows them.
"""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.core.errors import DataError
from crsim.core.plugins import ComponentSpec
from crsim.core.secrets import register_config_secrets
from crsim.model.dialogue import FORMAT_VERSION
from crsim.model.run_folder.files import MANIFEST, tmp_path

RUN_FORMAT_VERSION = "1"
#: Defaults of the experiment config that readers of a manifest need: `crsim.runner.config.ExperimentConfig`
#: takes its defaults from these, so a manifest that lacks a field (hand-written, or older than the
#: field) is read as the run it describes would have run.
DEFAULT_DOMAIN = "movies"
DEFAULT_SEED = 42
DEFAULT_MAX_TURNS = 20


class Manifest(BaseModel):
    """The contents of `manifest.json`. Every field is optional so that manifests written by older
    versions of crsim, and hand-written ones, are read; unknown fields are kept."""

    model_config = ConfigDict(extra="allow")

    run_format_version: str | None = Field(None, description="Version of the run-folder layout.")
    dialogue_format_version: str | None = Field(None, description="Version of the dialogue records.")
    created_at: str | None = Field(None, description="When the run started (UTC, ISO 8601, seconds).")
    config: dict[str, Any] = Field(
        default_factory=dict, description="The experiment config, defaults filled in."
    )
    components: dict[str, Any] = Field(default_factory=dict, description="What was built from the config.")
    planned_dialogues: int | None = Field(None, description="Dialogues the run was to hold.")
    retried_dialogues: int | None = Field(
        None,
        description="Dialogues held again by `--retry-errors` (their replaced records are in retried.jsonl).",
    )
    versions: dict[str, str] = Field(default_factory=dict, description="Python and package versions.")

    @property
    def domain(self) -> str:
        """The name of the run's item domain (`config.domain`, default `DEFAULT_DOMAIN`)."""
        return str(self.config.get("domain", DEFAULT_DOMAIN))

    @property
    def seed(self) -> int:
        """The run's seed (`config.seed`, default `DEFAULT_SEED`)."""
        return int(self.config.get("seed", DEFAULT_SEED))

    @property
    def max_turns(self) -> int:
        """Turns per dialogue the run allowed (`config.max_turns`, default `DEFAULT_MAX_TURNS`)."""
        return int(self.config.get("max_turns", DEFAULT_MAX_TURNS))

    @property
    def users(self) -> dict[str, Any]:
        """The config of the simulated users (`config.users`; empty when not recorded)."""
        users = self.config.get("users")
        return users if isinstance(users, dict) else {}

    @property
    def users_source(self) -> str | None:
        """Where the simulated users came from (`config.users.source`), if the config says."""
        source = self.users.get("source")
        return str(source) if source else None

    @property
    def llm(self) -> dict[str, Any]:
        """The LLM settings as recorded (`config.llm`; validated by the layer that builds models)."""
        llm = self.config.get("llm")
        return llm if isinstance(llm, dict) else {}

    @property
    def metrics(self) -> list[ComponentSpec] | None:
        """The configured metrics (`config.metrics`); None when the config does not list them (the
        evaluation's defaults then apply). A malformed entry is a DataError naming it."""
        if "metrics" not in self.config:
            return None
        return self._specs("metrics")

    @property
    def crss(self) -> list[ComponentSpec]:
        """The configured CRSs (`config.crss`)."""
        return self._specs("crss")

    @property
    def simulators(self) -> list[ComponentSpec]:
        """The configured simulators (`config.simulators`)."""
        return self._specs("simulators")

    def _specs(self, kind: str) -> list[ComponentSpec]:
        raw = self.config.get(kind) or []
        if not isinstance(raw, list):
            raise DataError("expected a list of components", field=f"config.{kind}")
        specs = []
        for index, entry in enumerate(raw):
            try:
                specs.append(ComponentSpec.model_validate(entry))
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(["config", kind, str(index), *(str(p) for p in err["loc"])])
                raise DataError(err["msg"], field=where) from None
        return specs

    def get(self, key: str, default: Any = None) -> Any:
        """A field by its JSON name, for code written when the manifest was a plain dict."""
        data = self.model_dump()
        return data.get(key, default)


def package_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("crsim", "pydantic", "numpy", "scipy", "scikit-learn", "rapidfuzz", "openai", "xllamacpp"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def build_manifest(config: dict[str, Any], components: dict[str, Any], planned: int) -> dict[str, Any]:
    """The manifest of a run about to start, as the JSON object `write_json_atomic` writes."""
    return {
        "run_format_version": RUN_FORMAT_VERSION,
        "dialogue_format_version": FORMAT_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": config,
        "components": components,
        "planned_dialogues": planned,
        "versions": package_versions(),
    }


def write_json_atomic(path: Path, data: Any) -> None:
    """Indented UTF-8 JSON through a temporary sibling renamed into place."""
    tmp = tmp_path(path)
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest of `run_dir` as its JSON object; a missing or bad one is a located DataError."""
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise DataError(f"no {MANIFEST}; expected a run folder written by `crsim run`", path=str(run_dir))
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"not valid JSON ({exc})", path=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
        raise DataError(
            "expected a JSON object with a `config` object, as `crsim run` writes", path=str(path)
        )
    register_config_secrets(data.get("config"))  # mask the run's keys in what is made from it
    return data


def load_manifest(run_dir: Path) -> Manifest:
    """The typed manifest of `run_dir`; a field of the wrong type is a DataError naming it."""
    return manifest_from(read_manifest(run_dir), Path(run_dir) / MANIFEST)


def manifest_from(data: dict[str, Any], path: Path) -> Manifest:
    """`data` (a manifest's JSON object, read from `path`) as the typed `Manifest`."""
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        raise DataError(err["msg"], path=str(path), field=field) from None
