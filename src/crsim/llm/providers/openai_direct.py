"""The `openai` provider's default path (`client: direct`): chat completions posted through crsim's
aiohttp client (`direct_client`), without httpx or the SDK.

The request, the answer and the errors are the httpx path's (`openai_http`, whose docstring lists
them): the same body, headers and endpoint; an error status becomes the same crsim error with the
server's own words; an unreachable server or a connection cut mid-answer `LLMConnectionError`; a
redirect off the origin or past `MAX_REDIRECTS` `LLMRedirectRefused`; an answer over
`openai_http.MAX_ANSWER_BYTES` `AnswerTooLarge`; a late answer the crsim client's `LLMTimeout`. It
costs about a tenth of httpx's CPU per request (bench/llm_overhead.py). When a proxy variable is set
(`HTTPS_PROXY`, `ALL_PROXY`, ...: httpx honours them, this client does not), `create` builds the
httpx path instead, so a run behind a proxy sends as before.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

from crsim.llm.errors import LLMConnectionError, LLMError, LLMRedirectRefused
from crsim.llm.providers import direct_client, openai_http
from crsim.llm.providers.base import MAX_REDIRECTS, RedirectRefused
from crsim.llm.providers.openai import OPENAI_BASE_URL
from crsim.llm.providers.openai_http import AnswerTooLarge, OpenAIHTTPProvider, error_text
from crsim.llm.types import Completion, Message, ResolvedGeneration


def proxy_configured() -> bool:
    """Whether the environment names a proxy (the `*_PROXY` variables httpx and urllib read;
    `NO_PROXY` alone names none)."""
    return any(scheme != "no" for scheme in urllib.request.getproxies())


class OpenAIDirectProvider(OpenAIHTTPProvider):
    """One OpenAI-compatible endpoint and model, called through one `direct_client.Client` (its own pool)."""

    _direct: direct_client.Client | None = None

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        try:
            client = self._direct or self._new_direct()
        except ValueError as exc:  # not an http(s) URL: unreachable, as the httpx path reports it
            raise LLMConnectionError(f"cannot reach {self._where()}: {exc}") from None
        parameters = self._parameters(generation)
        body = {
            "model": self.model,
            "messages": list(messages),
            **parameters.pop("extra_body", {}),
            **parameters,
        }
        # encoded as httpx encodes `json=`
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        try:
            answer = await client.post_json("chat/completions", payload)
        except RedirectRefused as exc:
            raise LLMRedirectRefused(str(exc)) from None
        except direct_client.TooManyRedirects:
            raise LLMRedirectRefused(f"{self._where()}: more than {MAX_REDIRECTS} redirects") from None
        except direct_client.BodyTooLarge:
            raise AnswerTooLarge(
                f"{self._where()} answered with more than {client.cap} bytes; not read further"
            ) from None
        except direct_client.UndecodableBody as exc:
            raise LLMError(f"{self._where()} answered with a body that cannot be decoded ({exc})") from None
        except (OSError, asyncio.IncompleteReadError, direct_client.ProtocolError) as exc:
            reason = str(exc) or type(exc).__name__
            raise LLMConnectionError(f"cannot reach {self._where()}: {reason}") from exc
        if answer.status >= 400:
            raise self._status_error(self._where(), answer.status, error_text(answer.status, answer.body))
        return self._completion(self._parse(answer.body))

    def _new_direct(self) -> direct_client.Client:
        key = self._api_key()
        if self._tls is None and (self.config.base_url or OPENAI_BASE_URL).startswith("https:"):
            import httpx  # the same verification settings as the httpx path (SSL_CERT_FILE, ...)

            self._tls = httpx.create_ssl_context()
        self._direct = direct_client.Client(
            self.config.base_url or OPENAI_BASE_URL,
            {"Authorization": f"Bearer {key}", "Accept": "application/json", "User-Agent": "crsim"},
            tls=self._tls,
            max_redirects=MAX_REDIRECTS,
            cap=openai_http.MAX_ANSWER_BYTES,
        )
        return self._direct

    async def aclose(self) -> None:
        client, self._direct = self._direct, None
        if client is not None:
            await client.aclose()
        await super().aclose()
