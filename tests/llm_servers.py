"""Small real HTTP servers on 127.0.0.1 for the LLM provider tests (uvicorn in a thread, free port).

`OpenAILikeServer` speaks OpenAI's `POST /v1/chat/completions` and answers from a plan: chosen
statuses (429, 500, ...), delays, broken bodies. `OllamaLikeServer` speaks Ollama's documented
`POST /api/chat` (https://github.com/ollama/ollama/blob/main/docs/api.md): Ollama itself cannot be
installed here, so this server follows the documented request and response shapes. Both check the
requests they get and answer HTTP 400 to a malformed one, as the real servers do, so a provider
sending the wrong shape fails its tests instead of passing against a lenient fake.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import ssl
import subprocess
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from faults.servers import running_server


@dataclass(frozen=True)
class Reply:
    """One planned answer: a status (with `error` as the server's message), after `delay` seconds.

    `raw_body` is sent verbatim instead of a normal body, e.g. a broken HTTP 200 answer.
    """

    status: int = 200
    error: str = "planned failure"
    delay: float = 0.0
    raw_body: str | None = None


def closed_port_url() -> str:
    """A 127.0.0.1 URL nothing listens on (the port was free a moment ago): connections are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _words(text: str) -> list[str]:
    return text.split()


def _truncate(text: str, limit: int | None) -> tuple[str, str]:
    """The answer cut to `limit` words (a stand-in for tokens) and the matching finish reason."""
    words = _words(text)
    if limit is not None and len(words) > limit:
        return " ".join(words[:limit]), "length"
    return text, "stop"


def _message_problem(messages: Any, roles: set[str]) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            return f"messages[{i}] must be an object with exactly role and content"
        if message["role"] not in roles or not isinstance(message["content"], str):
            return f"messages[{i}]: role must be one of {sorted(roles)} and content a string"
    return None


DEFAULT_TEXT = "Try Heat from 1995 if you like crime films."


@dataclass
class _Planned(ABC):
    """The shared part of both servers: a plan of replies, the requests seen and the text to answer."""

    text: str = DEFAULT_TEXT
    plan: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def reset(self) -> None:
        self.plan.clear()
        self.requests.clear()
        self.text = DEFAULT_TEXT

    def next_reply(self) -> Reply:
        return self.plan.pop(0) if self.plan else Reply()

    @contextmanager
    def running(self) -> Iterator[str]:
        with running_server(self.app()) as url:
            self.base_url = url
            yield url

    @abstractmethod
    def app(self) -> FastAPI:
        """The FastAPI app serving this server's protocol."""


_SCHEMA_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class OpenAILikeServer(_Planned):
    """`POST /v1/chat/completions` with OpenAI's request checks, error bodies and usage counts."""

    models: frozenset[str] = frozenset({"tiny-chat"})
    api_key: str | None = None  # when set, requests must carry `Authorization: Bearer <api_key>`
    authorizations: list[str] = field(default_factory=list)

    def reset(self) -> None:
        super().reset()
        self.authorizations.clear()
        self.api_key = None

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.authorizations.append(request.headers.get("authorization", ""))
            if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
                return _openai_error(401, "Incorrect API key provided.", "invalid_api_key")
            problem = _openai_request_problem(body)
            if problem is not None:
                return _openai_error(400, problem, "invalid_request_error")
            if body["model"] not in self.models:
                return _openai_error(
                    404, f"The model `{body['model']}` does not exist or you do not have access to it.", None
                )
            reply = self.next_reply()
            await asyncio.sleep(reply.delay)
            if reply.raw_body is not None:
                return Response(reply.raw_body, status_code=reply.status, media_type="application/json")
            if reply.status != 200:
                return _openai_error(reply.status, reply.error, None)
            return JSONResponse(self._completion(body))

        return app

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text, finish = _truncate(self.text, body.get("max_tokens"))
        prompt = sum(len(_words(m["content"])) for m in body["messages"])
        return {
            "id": f"chatcmpl-test-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": len(_words(text)),
                "total_tokens": prompt + len(_words(text)),
            },
        }


def _openai_error(status: int, message: str, code: str | None) -> JSONResponse:
    kind = {401: "invalid_request_error", 429: "requests", 500: "server_error"}.get(
        status, "invalid_request_error"
    )
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": code}}, status_code=status
    )


def _openai_request_problem(body: Any) -> str | None:
    """Why a chat request is malformed (None if it is fine), checked as strictly as OpenAI does."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "you must provide a model parameter"
    problem = _message_problem(body.get("messages"), {"system", "user", "assistant"})
    if problem is not None:
        return problem
    checks: dict[str, Any] = {
        "temperature": lambda v: isinstance(v, int | float) and 0 <= v <= 2,
        "max_tokens": lambda v: isinstance(v, int) and v >= 1,
        "seed": lambda v: isinstance(v, int),
        "stop": lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v) and len(v) <= 4,
        "stream": lambda v: v is False,
        "response_format": _response_format_ok,
        "grammar": lambda v: isinstance(v, str) and "root" in v,  # llama.cpp's extension
    }
    for name, ok in checks.items():
        if name in body and not ok(body[name]):
            return f"invalid value for '{name}': {body[name]!r}"
    return None


def _response_format_ok(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("type") not in {"text", "json_object", "json_schema"}:
        return False
    if value["type"] != "json_schema":
        return True
    spec = value.get("json_schema")
    return (
        isinstance(spec, dict)
        and isinstance(spec.get("name"), str)
        and bool(_SCHEMA_NAME.match(spec["name"]))
        and isinstance(spec.get("schema"), dict)
        and isinstance(spec.get("strict", False), bool)
    )


_OLLAMA_FIELDS = {"model", "messages", "stream", "format", "options", "keep_alive", "tools", "think"}
_OLLAMA_OPTION_CHECKS: dict[str, Any] = {
    "temperature": lambda v: isinstance(v, int | float) and v >= 0,
    "num_predict": lambda v: isinstance(v, int),
    "seed": lambda v: isinstance(v, int),
    "stop": lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
    "num_ctx": lambda v: isinstance(v, int) and v > 0,
    "top_p": lambda v: isinstance(v, int | float),
}


@dataclass
class OllamaLikeServer(_Planned):
    """`POST /api/chat` as documented: checks the request, answers 404 for unknown models."""

    models: frozenset[str] = frozenset({"smollm2:135m"})

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/api/chat")
        async def chat(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            problem = _ollama_request_problem(body)
            if problem is not None:
                return JSONResponse({"error": problem}, status_code=400)
            if body["model"] not in self.models:
                return JSONResponse({"error": f"model '{body['model']}' not found"}, status_code=404)
            reply = self.next_reply()
            await asyncio.sleep(reply.delay)
            if reply.raw_body is not None:
                return Response(reply.raw_body, status_code=reply.status, media_type="application/json")
            if reply.status != 200:
                return JSONResponse({"error": reply.error}, status_code=reply.status)
            return JSONResponse(self._answer(body))

        return app

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        text, reason = _truncate(self.text, body.get("options", {}).get("num_predict"))
        prompt = sum(len(_words(m["content"])) for m in body["messages"])
        return {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": reason,
            "total_duration": 5_000_000,
            "load_duration": 1_000_000,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": 2_000_000,
            "eval_count": len(_words(text)),
            "eval_duration": 2_000_000,
        }


def _ollama_request_problem(body: Any) -> str | None:
    """Why an /api/chat request is malformed, or None. Stricter than Ollama in one way: a request
    that leaves `stream` out would get a streamed answer from Ollama, so this server refuses it."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    unknown = set(body) - _OLLAMA_FIELDS
    if unknown:
        return f"unknown fields {sorted(unknown)}"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model is required"
    problem = _message_problem(body.get("messages"), {"system", "user", "assistant", "tool"})
    if problem is not None:
        return problem
    if body.get("stream") is not False:
        return "this server answers only non-streamed requests (stream: false)"
    if "format" in body and not (
        body["format"] == "json" or (isinstance(body["format"], dict) and "type" in body["format"])
    ):
        return 'format must be "json" or a JSON schema'
    options = body.get("options", {})
    if not isinstance(options, dict):
        return "options must be an object"
    for name, value in options.items():
        check = _OLLAMA_OPTION_CHECKS.get(name)
        if check is not None and not check(value):
            return f"invalid option {name}: {value!r}"
    return None


def redirecting_app(path: str, target: str) -> FastAPI:
    """A server whose only endpoint, `POST path`, answers 307 (method and body kept) to `target`."""
    app = FastAPI()

    @app.post(path)
    async def redirect() -> Response:
        return Response(status_code=307, headers={"location": target})

    return app


@dataclass
class RawEndpoint:
    """A server that answers every request with the same planned bytes (`answer`), after `hold_s`
    seconds, then closes the connection; `answer=None` closes it without a word. For faults an app
    framework would not produce: truncated bodies, corrupt encodings, wrong statuses and types."""

    answer: bytes | None
    hold_s: float = 0.0
    requests: int = 0
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            length = next(
                (
                    int(line.split(":")[1])
                    for line in head.split("\r\n")
                    if line.lower().startswith("content-length")
                ),
                0,
            )
            await reader.readexactly(length)
            self.requests += 1
            await asyncio.sleep(self.hold_s)
            if self.answer is not None:
                writer.write(self.answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def raw_response(
    body: bytes, *, status: str = "200 OK", content_type: str = "application/json", headers: str = ""
) -> bytes:
    """An HTTP/1.1 answer with `body`, its Content-Length (unless `headers` sets one), `Connection: close`."""
    length = "" if "content-length" in headers.lower() else f"Content-Length: {len(body)}\r\n"
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{length}Connection: close\r\n{headers}\r\n"
    return head.encode() + body


@asynccontextmanager
async def serving_raw(endpoint: RawEndpoint, tls: ssl.SSLContext | None = None) -> AsyncIterator[RawEndpoint]:
    """Serve `endpoint` on 127.0.0.1 in the running event loop (over TLS with `tls`); its `url` is
    the server's root."""
    listener = await asyncio.start_server(endpoint.handle, "127.0.0.1", 0, ssl=tls)
    scheme = "https" if tls is not None else "http"
    endpoint.url = f"{scheme}://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    try:
        yield endpoint
    finally:
        listener.close()


def self_signed_certificate(folder: Path) -> Path | None:
    """A self-signed certificate for 127.0.0.1 made with openssl in `folder` (its key beside it as
    key.pem), or None when openssl is not installed."""
    if shutil.which("openssl") is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *(
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.1",
            ),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert


def server_tls(certificate: Path) -> ssl.SSLContext:
    """A server's TLS context for `self_signed_certificate`'s certificate and key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, certificate.parent / "key.pem")
    return context
