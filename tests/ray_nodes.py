"""A Ray cluster of several nodes on this machine, each node its own `ray start` process.

Used by tests/runner/test_ray_cluster.py and bench/ray_cluster.py. Every node is started the way
docs/scaling.md tells researchers to start a cluster: `ray start --head` once, `ray start --address
HEAD:PORT` per worker node, all with the same token-authentication settings in their environment
(`RAY_AUTH_MODE=token` and one `RAY_AUTH_TOKEN`). Ray 2.60 decides the mode per process: a head
started without `RAY_AUTH_MODE` turns token mode on by itself when `~/.ray/auth_token` exists (any
earlier `ray.init()` on the machine writes one), a worker node never does, and the worker is then
refused with `InvalidAuthToken ... RAY_AUTH_MODE is currently 'disabled'`. Setting the mode and the
token explicitly for every process makes the cluster independent of that file.

Each node runs with `--block` in a session of its own and its own `--temp-dir` under one private
folder, so `stop` ends exactly these processes (the process groups, then any process whose command
line names the private folder); `ray stop` is never used, as it would end every Ray process of the
user on the machine.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import crsim

#: The `ray` command next to this Python (the CLI of the installed `ray` package).
RAY = str(Path(sys.executable).with_name("ray"))
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # per node; the records travel through it, small


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalCluster:
    """A head and `workers` worker nodes with `cpus` CPUs each (the head `head_cpus`, by default as
    many; 0 keeps tasks off the head), on 127.0.0.1."""

    def __init__(self, workers: int, cpus: int = 1, head_cpus: int | None = None) -> None:
        self.workers, self.cpus = workers, cpus
        self.head_cpus = cpus if head_cpus is None else head_cpus
        self.root = Path(tempfile.mkdtemp(prefix="crsim-ray-"))  # short: Ray's socket paths live here
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.token = secrets.token_hex(32)
        self.processes: list[subprocess.Popen[bytes]] = []
        (self.root / "tmp").mkdir()

    @property
    def env(self) -> dict[str, str]:
        """The environment of every node and of the driver: the same auth mode and token, the same
        crsim (this checkout's `src` first on the path), and `RAY_ADDRESS` so `--address auto` finds
        this cluster and not another one on the machine."""
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")}
        src = str(Path(crsim.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
        env.update(
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=self.token,
            RAY_ADDRESS=self.address,
            RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0",  # a stopped node exits at once, no 30 s drain
            RAY_USAGE_STATS_ENABLED="0",
            TMPDIR=str(self.root / "tmp"),  # each node's own files (crsim's node-local LLM caches) stay here
        )
        return env

    def _node(self, name: str, cpus: int, *args: str) -> None:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115  (kept open by the child)
        command = [
            RAY, "start", *args, "--block", "--num-cpus", str(cpus), "--node-ip-address", "127.0.0.1",
            "--temp-dir", str(self.root / name), "--object-store-memory", str(OBJECT_STORE_BYTES),
            "--dashboard-agent-listen-port", str(free_port()), "--disable-usage-stats",
        ]  # fmt: skip
        env = self.env
        env.pop("RAY_ADDRESS")  # `ray start --head` would read it as the cluster to join
        self.processes.append(
            subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        )

    def start(self, timeout: float = 120.0) -> None:
        """Start the head, then the worker nodes, and wait until `ray status` lists them all."""
        deadline = time.monotonic() + timeout
        self._node("head", self.head_cpus, "--head", "--port", str(self.port), "--include-dashboard", "false")
        self._wait_started(["head"], deadline)
        names = [f"worker{index + 1}" for index in range(self.workers)]
        for name in names:
            self._node(name, self.cpus, "--address", self.address)
        self._wait_started(names, deadline)
        while self.active_nodes() < 1 + self.workers:  # one `ray status` is ~2 s of CPU: seldom
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"`ray status` lists fewer than {1 + self.workers} nodes:\n{self.status()}"
                )
            time.sleep(1.0)

    def status(self) -> str:
        """The output of `ray status --address` for this cluster."""
        done = subprocess.run(
            [RAY, "status", "--address", self.address],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout + done.stderr

    def active_nodes(self) -> int:
        """Active nodes in `ray status`, one line `1 node_<id>` each."""
        return len(re.findall(r"^\s*1 node_[0-9a-f]+", self.status().split("Pending:")[0], flags=re.M))

    def _wait_started(self, names: list[str], deadline: float) -> None:
        """Until each named node's `ray start` has printed that its runtime started."""
        while not all(b"Ray runtime started." in (self.root / f"{n}.log").read_bytes() for n in names):
            if any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"a Ray node exited while starting; logs:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Ray nodes {names} did not start in time; logs:\n{self.logs()}")
            time.sleep(0.25)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.root.glob("*.log")
        )

    def nodes_that_ran(self, task: str) -> list[str]:
        """The nodes (head, worker1, ...) on which a worker process ran the Ray task `task` (a worker
        writes `:task_name:<name>` to its log file when it starts a task)."""
        marker = f":task_name:{task}\n".encode()
        return sorted(
            node.name
            for node in self.root.iterdir()
            if node.is_dir()
            and any(marker in out.read_bytes() for out in node.glob("session_2*/logs/worker-*.out"))
        )

    def raylets(self) -> list[int]:
        """The raylet processes of this cluster: one per node."""
        return [
            pid
            for pid in self.leftover_pids()
            if b"raylet/raylet\x00" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]

    def stop(self) -> None:
        """End this cluster's processes and nothing else, then remove its folder."""
        for process in self.processes:
            _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes:
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for process in self.processes:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
        for pid in self.leftover_pids():
            _signal(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)

    def leftover_pids(self) -> list[int]:
        """Processes whose command line names this cluster's folder (none once stopped)."""
        marker = str(self.root).encode()
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if marker in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:
                    continue
        return found


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pid, sig)  # the node was started as a session leader: its group is its own


def _signal(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)


@contextmanager
def local_cluster(workers: int, cpus: int = 1, head_cpus: int | None = None) -> Iterator[LocalCluster]:
    """A started cluster, always stopped on the way out."""
    cluster = LocalCluster(workers, cpus, head_cpus)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
