"""One async interface to language models: providers, cache, retries, structured output.

Nothing here knows about simulators or their prompts. Components get an `LLM` for a role from the
run's `LLMHub` and call `await llm.generate(messages, GenerationConfig(...))`.
"""

from typing import TYPE_CHECKING

from crsim.core.lazy import exports

if TYPE_CHECKING:
    from crsim.llm.client import LLM, LLMHub
    from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
    from crsim.llm.errors import LLMError, LLMOutputError
    from crsim.llm.types import Completion, GenerationConfig, Message, Usage, assistant, system, user


#: Public name -> the submodule defining it; imported on first use, so that a config model
#: naming an LLM section (`config.py`) does not load the client, its retries and the SQLite cache.
_WHERE = {
    "CacheConfig": "config",
    "Completion": "types",
    "GenerationConfig": "types",
    "LLM": "client",
    "LLMError": "errors",
    "LLMHub": "client",
    "LLMOutputError": "errors",
    "LLMSettings": "config",
    "Message": "types",
    "ModelConfig": "config",
    "Usage": "types",
    "assistant": "types",
    "system": "types",
    "user": "types",
}


__getattr__ = exports(__name__, _WHERE)


__all__ = [
    "LLM",
    "CacheConfig",
    "Completion",
    "GenerationConfig",
    "LLMError",
    "LLMHub",
    "LLMOutputError",
    "LLMSettings",
    "Message",
    "ModelConfig",
    "Usage",
    "assistant",
    "system",
    "user",
]
