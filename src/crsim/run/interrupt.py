"""Deprecated location of `crsim.interrupt` (kept as an alias)."""

from __future__ import annotations

from crsim.interrupt import STOP_SIGNALS, Interrupted, run_interruptibly, signals_interrupt

__all__ = ["STOP_SIGNALS", "Interrupted", "run_interruptibly", "signals_interrupt"]
