"""One async interface to language models: providers, cache, retries, structured output.

Nothing here knows about simulators or their prompts. Components get an `LLM` for a role from the
run's `LLMHub` and call `await llm.generate(messages, GenerationConfig(...))`.
"""

from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import CacheConfig, LLMSettings, ModelConfig
from crsim.llm.errors import LLMError, LLMOutputError
from crsim.llm.types import Completion, GenerationConfig, Message, Usage, assistant, system, user

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
