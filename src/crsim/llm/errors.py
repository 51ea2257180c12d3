"""LLM errors. Each says which endpoint failed and why; `retryable` marks those worth another attempt."""

from __future__ import annotations

from crsim.errors import ConfigError, CrsimError
from crsim.redact import redact


class LLMError(CrsimError):
    """A call to a language model failed. The message is redacted: it may quote a server's answer
    or a request header, either of which can hold the key."""

    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class LLMConnectionError(LLMError):
    """The endpoint could not be reached (refused, reset, DNS)."""

    retryable = True


class LLMRateLimited(LLMError):
    """HTTP 429: the provider asks to slow down."""

    retryable = True


class LLMServerError(LLMError):
    """HTTP 5xx: the provider failed on its side."""

    retryable = True


class LLMTimeout(LLMError):
    """No answer within the configured timeout."""


class LLMAuthError(LLMError):
    """A key is missing, or the provider refused it (HTTP 401/403)."""


class LLMModelNotFound(LLMError):
    """The endpoint does not serve the named model (HTTP 404): the endpoint or the config is wrong,
    not the participant asking."""


class LLMProtocolError(LLMError):
    """The endpoint answered, but not in its protocol: a body that is not a chat response (not JSON,
    JSON nested too deep or with an integer too long to read, fields missing or of the wrong type),
    an undecodable or oversized body, a status the protocol does not use. The endpoint's fault, like
    a 5xx; not retried, since the same request would most likely get the same answer."""


class LLMRedirectRefused(LLMProtocolError):
    """The endpoint redirected to another host (or too often); crsim does not follow it."""


class LLMAnswerTooLarge(LLMProtocolError):
    """The answer's body exceeded the size cap; it was not read further."""


class LLMBadRequest(LLMError):
    """The provider rejected the request (HTTP 400/422: bad parameters, prompt too long, bad grammar)."""


class LLMOutputError(LLMError):
    """The model's answer could not be read as the structure asked for; the raw text is kept."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(f"{message}; raw answer: {raw[:300]!r}")
        self.raw = raw


class LLMDependencyError(ConfigError):
    """A provider's optional dependency is not installed; the message says what to install."""


def missing_dependency(feature: str, module: str, install: str) -> LLMDependencyError:
    """`feature` is what needs the package: an LLM provider's name or a phrase like 'embeddings retrieval'."""
    what = f"the '{feature}' LLM provider" if " " not in feature else feature
    return LLMDependencyError(f"{what} needs the Python package {module!r}; install it with: {install}")
