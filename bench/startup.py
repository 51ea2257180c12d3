"""Startup time of the `crsim` command line: `crsim --help` and `crsim <command> --help` for every command.

    python bench/startup.py [--repeat 5]

Each measurement is a fresh interpreter (`python -m crsim ...`, as the `crsim` script runs it), timed by
wall clock and by the child's CPU time (user + system, from wait4); the best of N runs is kept, since
noise from other processes only ever adds time. In-run baselines, measured the same way: a bare
`python -c pass` and `python -c "import crsim"`. Target (issue 18): `crsim --help` under 0.3 s of CPU.
Each command's row also names the libraries from a list of heavy ones (numpy, scipy, scikit-learn,
pandas, pydantic, httpx, openai, jinja2, matplotlib, ...) that its start-up imported, from one more run
that lists the modules loaded (issue 21: no command pays for libraries it does not use; the load
average is recorded with the numbers). Prints a table and writes bench/results/startup.json. Not a
unit test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from crsim.cli import COMMANDS

RESULTS = Path(__file__).resolve().parent / "results" / "startup.json"
TARGET_CPU_S = 0.3
#: Libraries whose import costs tens to hundreds of ms; a row lists those its command loaded.
HEAVY = (
    "numpy",
    "scipy",
    "sklearn",
    "pandas",
    "pydantic",
    "httpx",
    "openai",
    "jinja2",
    "matplotlib",
    "yaml",
    "sqlite3",
    "fastapi",
    "uvicorn",
    "ray",
    "torch",
)
_PROBE = """
import json, runpy, sys
sys.argv = ["crsim", *sys.argv[1:]]
try:
    runpy.run_module("crsim", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""


def _once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process running `argv` (output discarded)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _best(argv: list[str], repeat: int) -> dict[str, float]:
    """The best wall and the best CPU time of `repeat` runs (each minimum on its own)."""
    runs = [_once(argv) for _ in range(repeat)]
    return {"wall_s": min(wall for wall, _ in runs), "cpu_s": min(cpu for _, cpu in runs)}


def heavy_loaded(argv: list[str]) -> list[str]:
    """The heavy libraries (`HEAVY`) a fresh interpreter imported running `crsim ARGS` (argv[3:])."""
    if argv[1:3] != ["-m", "crsim"]:
        return []
    done = subprocess.run([argv[0], "-c", _PROBE, *argv[3:]], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    return [name for name in HEAVY if name in loaded]


def measure(repeat: int) -> list[dict[str, Any]]:
    """Baselines first, then `crsim --help`, then each command's own help."""
    python = sys.executable
    cases: list[tuple[str, list[str]]] = [
        ("python -c pass (baseline)", [python, "-c", "pass"]),
        ("python -c 'import crsim' (baseline)", [python, "-c", "import crsim"]),
        ("crsim --help", [python, "-m", "crsim", "--help"]),
    ]
    cases += [(f"crsim {name} --help", [python, "-m", "crsim", name, "--help"]) for name in COMMANDS]
    rows = []
    for label, argv in cases:
        rows.append({"command": label, **_best(argv, repeat), "heavy_libraries": heavy_loaded(argv)})
        print(f"  {label}: {rows[-1]['cpu_s']:.3f} s CPU", file=sys.stderr)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table: best wall and CPU seconds, and the ratio to the `import crsim` baseline."""
    base = rows[1]
    lines = [
        "| command | wall s | CPU s | × `import crsim` (CPU) | heavy libraries loaded |",
        "|---|---:|---:|---:|---|",
    ]
    for row in rows:
        ratio = row["cpu_s"] / base["cpu_s"] if base["cpu_s"] else float("nan")
        heavy = ", ".join(row["heavy_libraries"]) or "none"
        lines.append(
            f"| `{row['command']}` | {row['wall_s']:.3f} | {row['cpu_s']:.3f} | {ratio:.2f} | {heavy} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="Runs per command; the best is kept.")
    options = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = measure(options.repeat)
    help_cpu = rows[2]["cpu_s"]
    result = {
        "repeat": options.repeat,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "target_cpu_s": TARGET_CPU_S,
        "help_within_target": help_cpu < TARGET_CPU_S,
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(rows))
    verdict = "within" if help_cpu < TARGET_CPU_S else "OVER"
    loads = f"load (1 min) before {result['load_1min_before']}, after {result['load_1min_after']}"
    print(f"\ncrsim --help: {help_cpu:.3f} s CPU, {verdict} the {TARGET_CPU_S} s target; {loads}; {RESULTS}")


if __name__ == "__main__":
    main()
