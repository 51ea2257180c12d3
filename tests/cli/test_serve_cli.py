"""`crsim serve` as a real process on 127.0.0.1: a flood of one-request clients cannot lock out a
client that keeps talking, request bodies are capped without holding them in memory, a busy port is
one line and exit 2, and the URL and the access log are printed (the log can be silenced)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

#: An access log line: time stamp, method, path, status, duration.
ACCESS_LINE = re.compile(r"^\S+ \S+ (GET|POST|DELETE) (/\S*) (\d{3}|-) \d+\.\d ms$")


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    stderr: Path

    def log_lines(self) -> list[str]:
        return self.stderr.read_text(encoding="utf-8").splitlines()

    def memory_kib(self, field: str) -> int:
        """`VmRSS` (now) or `VmHWM` (peak so far) of the server process, in KiB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text(encoding="utf-8")
        match = re.search(rf"^{field}:\s+(\d+) kB$", status, re.MULTILINE)
        assert match, status
        return int(match.group(1))


def _first_line(process: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The first stdout line of `process`, or "" if none came within `timeout_s` seconds."""
    lines: list[bytes] = []
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout_s)
    return lines[0].decode() if lines else ""


@contextmanager
def served(tmp_path: Path, *flags: str) -> Iterator[Served]:
    """`crsim serve popular --port 0 FLAGS` until the block ends, then stopped with Ctrl-C (SIGINT)."""
    stderr = tmp_path / "serve.stderr"
    command = [sys.executable, "-m", "crsim", "serve", "popular", "--port", "0", *flags]
    with stderr.open("wb") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=dict(os.environ))
    try:
        line = _first_line(process, 120)
        match = re.fullmatch(
            r"crsim serve: popular listening on (http://127\.0\.0\.1:\d+) \(Ctrl-C stops\)\n", line
        )
        assert match, (line, stderr.read_text(encoding="utf-8"))
        yield Served(match.group(1), process, stderr)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def _talk(client: httpx.AsyncClient, turns: int, pause_s: float) -> list[httpx.Response]:
    """A CRS Arena client that keeps one conversation going (its cookie jar holds the session)."""
    replies = []
    for _ in range(turns):
        replies.append(await client.post("/", json={"message": "something like Heat please"}))
        await asyncio.sleep(pause_s)
    return replies


async def _talk_generic(
    client: httpx.AsyncClient, session: str, turns: range, pause_s: float
) -> list[httpx.Response]:
    """A generic-protocol client: numbered turns of one session (a lost session would be 404/409)."""
    replies = []
    for turn in turns:
        replies.append(
            await client.post(f"/sessions/{session}/messages", json={"text": "a comedy", "turn": turn})
        )
        await asyncio.sleep(pause_s)
    return replies


async def _flood(url: str, requests: int, at_once: int) -> list[int]:
    """`requests` cookie-less POST / (each opens a conversation), `at_once` in flight."""
    gate = asyncio.Semaphore(at_once)

    async def one(client: httpx.AsyncClient) -> int:
        async with gate:
            response = await client.post("/", json={"message": "hi"})
            client.cookies.clear()
            return response.status_code

    clients = [httpx.AsyncClient(base_url=url, timeout=30) for _ in range(at_once)]
    try:
        return list(await asyncio.gather(*(one(clients[i % at_once]) for i in range(requests))))
    finally:
        for client in clients:
            await client.aclose()


def test_a_flood_of_new_sessions_never_locks_out_a_talking_client(tmp_path: Path) -> None:
    # Before: the 21st open conversation got 503 for everyone until the idle timeout (3600 s).
    with served(tmp_path, "--max-sessions", "20") as server:

        async def scenario() -> tuple[list[httpx.Response], list[httpx.Response], list[int], str]:
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=30) as arena,
                httpx.AsyncClient(base_url=server.url, timeout=30) as generic,
            ):
                # Each client has come back once before the flood: that is what protects it.
                opened = [await arena.post("/", json={"message": "hello"}) for _ in range(2)]
                cookie = arena.cookies["crsim_session"]
                session = (await generic.post("/sessions", json={"seed": 7})).json()["session_id"]
                opened += await _talk_generic(generic, session, range(1, 2), 0)
                held, numbered, flood = await asyncio.gather(
                    _talk(arena, 12, 0.02),
                    _talk_generic(generic, session, range(2, 14), 0.02),
                    _flood(server.url, 150, 10),
                )
                assert [r.status_code for r in opened] == [200] * 3
                assert arena.cookies["crsim_session"] == cookie
            return held, numbered, flood, cookie

        held, numbered, flood, cookie = asyncio.run(scenario())
        health = httpx.get(f"{server.url}/health", timeout=30)
        late = httpx.post(f"{server.url}/", json={"message": "anyone there?"}, timeout=30)
    assert [r.status_code for r in held] == [200] * 12
    assert all("set-cookie" not in r.headers for r in held), "the talking client lost its conversation"
    assert [r.status_code for r in numbered] == [200] * 12
    assert flood == [200] * 150, "new clients are served by closing idle conversations, not refused"
    assert health.json()["open_sessions"] <= 20 and late.status_code == 200
    lines = [line for line in server.log_lines() if ACCESS_LINE.match(line)]
    # 2 + 12 arena, 2 + 12 generic, 150 flood, 1 health (the late request may still be in flight).
    assert len(lines) >= 179
    assert sum(" POST / 200 " in line for line in lines) >= 164
    assert not any(cookie in line or "Heat" in line for line in server.log_lines()), "no cookies, no bodies"


def test_bodies_over_the_cap_get_413_without_growing_memory(tmp_path: Path) -> None:
    # Before: ten 50 MB bodies took the server from 281 to 971 MB (604 MB kept).
    body_mb = 30
    with (
        served(tmp_path, "--max-body-bytes", "100000", "--no-access-log") as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        assert client.post("/", json={"message": "warm up"}).status_code == 200
        rss_before, peak_before = server.memory_kib("VmRSS"), server.memory_kib("VmHWM")
        declared = [client.post("/", content=b"x" * (body_mb << 20)) for _ in range(3)]
        chunk = b"y" * (1 << 20)
        streamed = [client.post("/", content=iter([chunk] * body_mb)) for _ in range(3)]
        small = client.post("/", json={"message": "x" * 1000})
        rss_after, peak_after = server.memory_kib("VmRSS"), server.memory_kib("VmHWM")
    for response in [*declared, *streamed]:
        assert response.status_code == 413
        assert response.json() == {
            "detail": "request body larger than 100000 bytes (the server's --max-body-bytes)"
        }
    assert "content-length" in declared[0].request.headers
    assert "content-length" not in streamed[0].request.headers  # counted while streaming (chunked)
    assert small.status_code == 200
    # Each body is 30 MiB = 30720 KiB; holding one would show in the peak. Allow 10 MiB of noise.
    assert peak_after - peak_before < 10 * 1024, (peak_before, peak_after)
    assert rss_after - rss_before < 10 * 1024, (rss_before, rss_after)
    lines = server.log_lines()
    assert not any(ACCESS_LINE.match(line) for line in lines), "--no-access-log prints no request lines"


def test_a_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # Before: uvicorn's own log lines and exit 3.
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        command = [sys.executable, "-m", "crsim", "serve", "popular", "--port", str(port)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"error: port {port} on 127.0.0.1 is already in use; choose another with --port"
    )
    assert result.stdout == ""


def test_serve_recommends_from_the_domain_it_is_given(tmp_path: Path) -> None:
    """`--domain restaurants`: the CRS is built on the restaurant catalogue, not the movie default."""
    from crsim.domains import domain_named

    restaurants = domain_named("restaurants")
    with (
        served(tmp_path, "--domain", "restaurants") as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        session = client.post("/sessions", json={"seed": 7}).json()["session_id"]
        reply = client.post(
            f"/sessions/{session}/messages", json={"text": "somewhere cheap for italian food", "turn": 1}
        ).json()
        again = client.post(
            f"/sessions/{session}/messages", json={"text": "anything else?", "turn": 2}
        ).json()
    recommended = [*reply["recommended_items"], *again["recommended_items"]]
    assert recommended and all(item in restaurants.items for item in recommended), (reply, again)
    bad = subprocess.run(
        [sys.executable, "-m", "crsim", "serve", "popular", "--domain", "no-such-domain", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert bad.returncode == 2 and "no-such-domain" in bad.stderr and bad.stdout == ""
