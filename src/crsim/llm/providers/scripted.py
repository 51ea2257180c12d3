"""`scripted`: answers from a list or a function, for tests and for plumbing runs without a model."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crsim.core.errors import ConfigError
from crsim.llm.config import ModelConfig
from crsim.llm.types import Completion, Message, ResolvedGeneration, Usage

Script = Callable[[list[Message], ResolvedGeneration], str | BaseException]


@dataclass
class ScriptedProvider:
    """Returns the next scripted answer (cycling through a list) or what `script` computes.

    A script may return an exception instance to simulate a failing endpoint. Every request is
    kept in `requests`, so tests can check exactly what was asked.
    """

    script: Script
    label: str = "scripted"
    name: str = "scripted"
    requests: list[tuple[list[Message], ResolvedGeneration]] = field(default_factory=list)

    @classmethod
    def from_replies(cls, replies: Iterable[str], label: str = "scripted") -> ScriptedProvider:
        answers = list(replies)
        if not answers:
            raise ConfigError("the scripted LLM provider needs at least one reply")
        cycle = itertools.cycle(answers)
        return cls(lambda _messages, _generation: next(cycle), label=label)

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        self.requests.append((list(messages), generation))
        answer = self.script(messages, generation)
        if isinstance(answer, BaseException):
            raise answer
        prompt_words = sum(len(m["content"].split()) for m in messages)
        return Completion(
            text=answer,
            usage=Usage(prompt_tokens=prompt_words, completion_tokens=len(answer.split())),
            model=self.label,
            finish_reason="stop",
        )

    def identity(self) -> str:
        return f"scripted:{self.label}"

    async def aclose(self) -> None:
        return None


def create(config: ModelConfig) -> ScriptedProvider:
    return ScriptedProvider.from_replies(config.replies, label=config.model or "scripted")
