"""The LLM providers' HTTP client on the wire (crsim.llm.providers.direct_client), through the `openai`
provider: kept connections, chunked and compressed bodies, servers that close connections,
redirects, a cut answer, a proxy named by the environment. A raw asyncio server on 127.0.0.1
answers with planned bytes, so each case is exact."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from crsim.llm.client import LLM
from crsim.llm.config import ModelConfig
from crsim.llm.errors import LLMConnectionError, LLMRedirectRefused
from crsim.llm.providers.base import create_provider
from crsim.llm.providers.openai import OpenAIProvider
from crsim.llm.types import user
from llm_servers import self_signed_certificate, server_tls

ANSWER = {"choices": [{"message": {"role": "assistant", "content": "Heat (1995)."}, "finish_reason": "stop"}]}
BODY = json.dumps(ANSWER).encode()
GZIP = "Content-Encoding: gzip\r\n"


def response(body: bytes = BODY, *, status: str = "200 OK", headers: str = "") -> bytes:
    """An HTTP/1.1 answer with a Content-Length, unless `headers` delimit the body otherwise."""
    length = "" if "chunked" in headers.lower() else f"Content-Length: {len(body)}\r\n"
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{length}{headers}\r\n".encode() + body


def chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\nX-Trailer: 1\r\n\r\n"


@dataclass
class RawServer:
    """Answers request number i with `answers[i]`; `close_after` answers close their connection."""

    answers: list[bytes]
    close_after: bool = False
    requests: list[tuple[str, bytes]] = field(default_factory=list)  # (request line, body)
    connections: int = 0
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next(
                    (
                        int(line.split(":")[1])
                        for line in head.split("\r\n")
                        if line.lower().startswith("content-length")
                    ),
                    0,
                )
                self.requests.append((head.split("\r\n")[0], await reader.readexactly(length)))
                writer.write(self.answers[len(self.requests) - 1])
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(server: RawServer, tls: ssl.SSLContext | None = None) -> AsyncIterator[RawServer]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=tls)
    scheme = "https" if tls else "http"
    server.url = f"{scheme}://127.0.0.1:{listener.sockets[0].getsockname()[1]}/v1"
    try:
        yield server
    finally:
        listener.close()


def direct_llm(base_url: str, **settings: object) -> LLM:
    config = ModelConfig.model_validate(
        {
            "provider": "openai",
            "model": "m",
            "base_url": base_url,
            "backoff": 0.0,
            "max_retries": 0,
            **settings,
        }
    )
    provider = create_provider(config)
    assert isinstance(provider, OpenAIProvider)
    return LLM("user", config, provider)


async def ask(llm: LLM, n: int) -> list[str]:
    try:
        return [(await llm.generate([user(f"film {i}?")])).text for i in range(n)]
    finally:
        await llm.provider.aclose()


async def test_calls_one_after_another_share_one_connection() -> None:
    async with serving(RawServer([response()] * 3)) as server:
        assert await ask(direct_llm(server.url), 3) == ["Heat (1995)."] * 3
    assert server.connections == 1
    assert [line for line, _ in server.requests] == ["POST /v1/chat/completions HTTP/1.1"] * 3
    sent = json.loads(server.requests[0][1])
    assert sent["model"] == "m" and sent["messages"] == [{"role": "user", "content": "film 0?"}]


async def test_providers_of_one_endpoint_share_one_client() -> None:
    """Five models (five providers) at one endpoint, called one after another: one connection, kept;
    closing four providers leaves the fifth's client open, closing the last closes it."""
    async with serving(RawServer([response()] * 6)) as server:
        llms = [direct_llm(server.url, model=f"m{i}") for i in range(5)]
        try:
            for llm in llms:
                assert (await llm.generate([user("film?")])).text == "Heat (1995)."
            for llm in llms[1:]:
                await llm.provider.aclose()
            assert (await llms[0].generate([user("again?")])).text == "Heat (1995)."
            client = llms[0].provider._client  # type: ignore[attr-defined]
        finally:
            await llms[0].provider.aclose()
    assert server.connections == 1 and len(server.requests) == 6
    assert client is not None and client._session is None


@pytest.mark.parametrize(
    "answer",
    [
        response(chunked(BODY), headers="Transfer-Encoding: chunked\r\n"),
        response(gzip.compress(BODY), headers=GZIP),
        response(
            chunked(gzip.compress(BODY)), headers="Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n"
        ),
        b"HTTP/1.1 100 Continue\r\n\r\n" + response(),
    ],
    ids=["chunked", "gzip", "chunked-gzip", "informational-first"],
)
async def test_delimited_and_encoded_bodies_are_read(answer: bytes) -> None:
    async with serving(RawServer([answer, response()])) as server:
        assert await ask(direct_llm(server.url), 2) == ["Heat (1995)."] * 2
    assert server.connections == 1  # the body's end was found: the connection was kept


async def test_a_body_to_the_end_of_the_connection_and_a_server_that_closes_each_connection() -> None:
    unframed = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + BODY
    async with serving(RawServer([unframed, response(), response()], close_after=True)) as server:
        assert await ask(direct_llm(server.url), 3) == ["Heat (1995)."] * 3
    # the second answer did not say it would close: the third call found the kept connection
    # closed and sent once more on a new one, without an error
    assert server.connections == 3 and len(server.requests) == 3


async def test_an_answer_cut_short_is_a_connection_error() -> None:
    cut = response()[:-10]
    async with serving(RawServer([cut], close_after=True)) as server:
        with pytest.raises(
            LLMConnectionError, match=r"cannot reach http://127\.0\.0\.1:\d+/v1/chat/completions"
        ):
            await ask(direct_llm(server.url), 1)


async def test_redirects_within_the_origin_are_followed_as_httpx_follows_them() -> None:
    answers = [
        response(b"", status="307 Temporary Redirect", headers="Location: /v2/chat/completions\r\n"),
        response(b"", status="303 See Other", headers="Location: done\r\n"),
        response(),
    ]
    async with serving(RawServer(answers)) as server:
        assert await ask(direct_llm(server.url), 1) == ["Heat (1995)."]
    lines = [line for line, _ in server.requests]
    assert lines == [
        "POST /v1/chat/completions HTTP/1.1",
        "POST /v2/chat/completions HTTP/1.1",  # 307 keeps the method and the body
        "GET /v2/chat/done HTTP/1.1",  # 303 asks for a GET, without a body
    ]
    assert server.requests[1][1] == server.requests[0][1] and server.requests[2][1] == b""


@pytest.mark.parametrize(
    ("location", "message"),
    [("http://localhost:9/v1/chat/completions", "another host"), ("/v1/chat/completions", "more than 3")],
)
async def test_redirects_off_the_origin_or_in_a_loop_are_refused(location: str, message: str) -> None:
    moved = response(b"", status="308 Permanent Redirect", headers=f"Location: {location}\r\n")
    async with serving(RawServer([moved] * 5)) as server:
        with pytest.raises(LLMRedirectRefused, match=message):
            await ask(direct_llm(server.url), 1)
    assert len(server.requests) == (1 if message == "another host" else 4)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy"])
async def test_a_proxy_variable_is_honoured(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """With a proxy variable set, the request goes to the proxy (a raw server standing in for one
    here), in the absolute form a forward proxy expects; the endpoint's host is never resolved."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "localhost")  # names hosts to reach directly, no proxy
    async with serving(RawServer([response()])) as proxy:
        monkeypatch.setenv(variable, proxy.url.removesuffix("/v1"))
        assert await ask(direct_llm("http://llm.invalid:8000/v1"), 1) == ["Heat (1995)."]
    assert [line for line, _ in proxy.requests] == [
        "POST http://llm.invalid:8000/v1/chat/completions HTTP/1.1"
    ]


@pytest.fixture
def certificate(tmp_path: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (its key beside it as key.pem)."""
    made = self_signed_certificate(tmp_path)
    if made is None:
        pytest.skip("openssl is needed to make a test certificate")
    return made


async def test_https_with_a_trusted_certificate(certificate: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TLS as httpx sets it up: SSL_CERT_FILE names the trusted certificates, the host is checked."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    async with serving(RawServer([response()] * 2), server_tls(certificate)) as server:
        assert await ask(direct_llm(server.url), 2) == ["Heat (1995)."] * 2
    assert server.connections == 1


async def test_https_refuses_an_untrusted_certificate(
    certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    async with serving(RawServer([response()]), server_tls(certificate)) as server:
        with pytest.raises(LLMConnectionError, match="certificate verify failed"):
            await ask(direct_llm(server.url), 1)
    assert server.requests == []


def test_a_base_url_that_is_not_http_is_a_config_error() -> None:
    from crsim.errors import ConfigError

    for provider in ("openai", "ollama"):
        config = ModelConfig(provider=provider, model="m", base_url="ftp://127.0.0.1/v1")
        with pytest.raises(ConfigError, match="not an http:// or https:// URL"):
            create_provider(config)
