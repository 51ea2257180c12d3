"""Progress of a command's long phases on stderr, and the per-phase summary at the end.

On a terminal each phase is a rich progress bar; otherwise (nohup, cluster logs, CI) a plain line
every few seconds and one when the phase ends. Both show the items done, errors so far, LLM calls
(and how many came from the cache), tokens and the time left. The LLM figures come from
`crsim.llm.usage.tallying`, which counts the calls made while a phase is open. Nothing here touches
a record: progress is written to the stream only (byte-identical run folders with or without it).

    report = ProgressReport()
    with report.phase("dialogues") as meter:
        run_batch(..., progress=meter)  # a meter is a `crsim.core.progress.Progress`
    report.print_summary()
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from crsim.llm.usage import Tally, tallying

__all__ = ["INTERVAL_ENV", "PhaseMeter", "PhaseStats", "ProgressReport"]

#: Seconds between two plain progress lines (default 5); tests set it lower.
INTERVAL_ENV = "CRSIM_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 5.0


@dataclass
class PhaseStats:
    """What one phase did: items, errors, time and LLM use."""

    name: str
    done: int
    total: int | None
    errors: int
    seconds: float
    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None = None  # estimated, when some model of the phase has a price table


class PhaseMeter:
    """Counts one phase's items and errors (a `crsim.core.progress.Progress`); its LLM figures are
    the phase's tally."""

    def __init__(self, name: str, total: int | None, tally: Tally) -> None:
        self.name, self.total, self.tally = name, total, tally
        self.done = 0
        self.errors = 0
        self.started = time.perf_counter()
        self._lock = threading.Lock()

    def advance(self, count: int = 1, *, error: bool = False) -> None:
        """`count` more items finished (`error`: one of them failed)."""
        with self._lock:
            self.done += count
            self.errors += int(error)

    def set_total(self, total: int) -> None:
        """The number of items, when it is known only once the phase has started."""
        self.total = total

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def stats(self) -> PhaseStats:
        tally = self.tally
        return PhaseStats(
            self.name, self.done, self.total, self.errors, self.elapsed(),
            tally.calls, tally.cached, tally.prompt_tokens, tally.completion_tokens,
            tally.cost if tally.priced else None,
        )  # fmt: skip

    def facts(self) -> str:
        """`errors 1 · LLM calls 230 (41 cached) · tokens 120,345 in + 8,210 out`."""
        parts = [f"errors {self.errors}"]
        tally = self.tally
        if tally.calls:
            parts.append(f"LLM calls {tally.calls:,} ({tally.cached:,} cached)")
            parts.append(f"tokens {tally.prompt_tokens:,} in + {tally.completion_tokens:,} out")
        if tally.priced:
            parts.append(f"cost ~{tally.cost:.4f}")
        return " · ".join(parts)

    def line(self) -> str:
        """The plain progress line: `scoring 12/40 (30%) · 0:01:05 · ~0:02:31 left · errors 0 · ...`."""
        elapsed = self.elapsed()
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        if self.total:
            count += f" ({100 * self.done // self.total}%)"
        parts = [f"{self.name} {count}", _clock(elapsed)]
        if self.total and 0 < self.done < self.total:
            parts.append(f"~{_clock(elapsed * (self.total - self.done) / self.done)} left")
        return " · ".join([*parts, self.facts()])


class ProgressReport:
    """The phases of one command, shown on `stream` (default stderr) as they run and summarised at the end.

    `enabled=False` shows nothing (e.g. `--json`); the phases are still timed and counted.
    """

    def __init__(
        self, stream: TextIO | None = None, *, enabled: bool = True, interval: float | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.live = enabled and _is_terminal(self.stream)
        self.interval = interval if interval is not None else _interval_from_env()
        self.phases: list[PhaseStats] = []

    @contextmanager
    def phase(self, name: str, total: int | None = None) -> Iterator[PhaseMeter]:
        """Time and count one phase (items, errors, the LLM calls made inside the block) and show it."""
        with tallying() as tally:
            meter = PhaseMeter(name, total, tally)
            display = self._live(meter) if self.live else self._plain(meter)
            try:
                with display:
                    yield meter
            finally:
                self.phases.append(meter.stats())

    @contextmanager
    def _plain(self, meter: PhaseMeter) -> Iterator[None]:
        """A line every `interval` seconds from a helper thread, and a last one when the phase ends."""
        if not self.enabled:
            yield
            return
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.interval):
                self._write(meter.line())

        ticker = threading.Thread(target=tick, name="crsim-progress", daemon=True)
        ticker.start()
        try:
            yield
        except Exception:
            self._stop(stop, ticker)
            self._write_stopped(meter)
            raise
        finally:  # a stop signal (KeyboardInterrupt): the command says what was kept, in one line
            self._stop(stop, ticker)
        self._write(f"{meter.line()} · done")

    @contextmanager
    def _live(self, meter: PhaseMeter) -> Iterator[None]:
        console = Console(file=self.stream)
        columns = (
            TextColumn(meter.name), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TimeRemainingColumn(), _FactsColumn(meter),
        )  # fmt: skip
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(meter.name, total=meter.total)
            stop = threading.Event()

            def follow() -> None:
                while not stop.wait(0.2):
                    progress.update(task, completed=meter.done, total=meter.total)

            follower = threading.Thread(target=follow, name="crsim-progress", daemon=True)
            follower.start()
            try:
                yield
            except Exception:
                self._stop(stop, follower)
                progress.stop()
                self._write_stopped(meter)
                raise
            finally:
                self._stop(stop, follower)
        console.print(f"{meter.line()} · done", highlight=False, markup=False)

    @staticmethod
    def _stop(stop: threading.Event, thread: threading.Thread) -> None:
        stop.set()
        if thread.is_alive():
            thread.join()

    def _write_stopped(self, meter: PhaseMeter) -> None:
        """A phase that raised: its last line says so (nothing when it stopped before its first item)."""
        if meter.done:
            self._write(f"{meter.line()} · stopped")

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream never stops the work
            pass

    def summary_lines(self) -> list[str]:
        """One line per phase: time, items, errors, LLM calls (cached) and tokens."""
        lines = [
            f"{'phase':<12}{'time':>9}{'items':>13}{'errors':>8}{'LLM calls':>11}{'cached':>8}"
            f"{'tokens in':>12}{'out':>10}" + (f"{'cost':>10}" if self._priced() else "")
        ]
        for stats in self.phases:
            items = f"{stats.done}/{stats.total}" if stats.total is not None else str(stats.done)
            lines.append(
                f"{stats.name:<12}{stats.seconds:>8.1f}s{items:>13}{stats.errors:>8}{stats.calls:>11,}"
                f"{stats.cached:>8,}{stats.prompt_tokens:>12,}{stats.completion_tokens:>10,}"
                + (f"{stats.cost or 0.0:>10.4f}" if self._priced() else "")
            )
        return lines

    def _priced(self) -> bool:
        return any(stats.cost is not None for stats in self.phases)

    def print_summary(self) -> None:
        """The per-phase summary, when progress is shown and any phase ran."""
        if self.enabled and self.phases:
            for line in self.summary_lines():
                self._write(line)


class _FactsColumn(ProgressColumn):
    """A rich progress column showing the meter's errors and LLM figures, read at each refresh."""

    def __init__(self, meter: PhaseMeter) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.meter = meter

    def render(self, task: Task) -> Text:
        return Text(self.meter.facts())


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _interval_from_env() -> float:
    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_INTERVAL_S
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
