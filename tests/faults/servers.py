"""Real HTTP servers for tests: uvicorn in a background thread on a free 127.0.0.1 port, and a
proxy that drips response heads."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import uvicorn


@contextmanager
def running_server(app: Any, *, log_level: str = "critical") -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (a free port) for the duration of the block; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=1, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def drip_proxy(upstream: str, marker: str, drip_s: float) -> Iterator[str]:
    """A proxy on 127.0.0.1 in front of `upstream` (a `running_server` URL) that sends the head of
    every response carrying the header `marker` one byte per `drip_s` seconds; yields its URL.

    Only responses with a Content-Length (or none at all) are handled, which is all the generic
    protocol's replies need. Each client connection gets its own upstream connection.
    """
    parts = urlsplit(upstream)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    bound: list[int] = []
    stop = asyncio.Event()
    handlers: set[asyncio.Task[Any]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            handlers.add(task)
        up_reader, up_writer = await asyncio.open_connection(host, port)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = await reader.readexactly(_content_length(head))
                up_writer.write(head + body)
                await up_writer.drain()
                reply_head = await up_reader.readuntil(b"\r\n\r\n")
                reply_body = await up_reader.readexactly(_content_length(reply_head))
                if marker.encode() in reply_head.lower():
                    for index in range(len(reply_head)):
                        if reader.at_eof() or writer.is_closing():
                            return
                        writer.write(reply_head[index : index + 1])
                        await writer.drain()
                        await asyncio.sleep(drip_s)
                else:
                    writer.write(reply_head)
                writer.write(reply_body)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            return
        except asyncio.CancelledError:  # the proxy stops: end quietly (asyncio logs a cancelled handler)
            return
        finally:
            if task is not None:
                handlers.discard(task)
            for closing in (writer, up_writer):
                closing.close()

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        bound.append(server.sockets[0].getsockname()[1])
        ready.set()
        async with server:
            await stop.wait()
            for task in list(handlers):
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("drip proxy did not start")
    try:
        yield f"http://127.0.0.1:{bound[0]}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0
