"""Helpers shared by test modules (importable because pytest puts `tests/` on the path)."""

from __future__ import annotations

import json
from pathlib import Path

from crsim.fitting.crsarena_fit import FitSettings
from crsim.llm.client import LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.providers.base import Provider
from crsim.llm.providers.scripted import ScriptedProvider


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
