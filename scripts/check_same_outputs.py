"""Check that two revisions of crsim write the same files, byte for byte, timing aside.

Refactorings promise "no change in behaviour"; this script checks the promise on what users keep:
for each revision (a git revision of this repository, or a source tree) it runs, in a fresh folder,

1. the quickstart (`crsim run`), then `crsim evaluate`, `crsim report` and `crsim export --format csv`
   on its run folder;
2. a small LLM experiment on the `scripted` provider (no model, no network: fixed replies), then
   `crsim evaluate --judge` with a scripted LLM judge and `crsim report`;
3. a restaurants run (goal users from the catalogue, both built-in CRSs), then `crsim evaluate` and
   `crsim report`;

and compares every file the two revisions wrote. Files must be equal byte for byte after removing
only wall-clock facts: a dialogue's `timing`, LLM latencies (`latency_s`, the cache's `latency`), the
manifest's `created_at`, and the same facts where the report (its embedded data), the export (the
`started_at` and `duration_s` columns) or the cache (the time a response was stored) repeat them;
and the size and sha256 of the dialogue file that `summary.json` records (`built_from.dialogues`),
since that file carries the timing (the dialogue file itself is compared, timing aside). The SQLite
LLM caches are compared by their rows (the file bytes carry page layout, not content). The lock
file `.crsim-lock` is empty in both and compared like any other file.

Usage (from the repository root):

    python scripts/check_same_outputs.py BEFORE AFTER [--keep DIR]
    python scripts/check_same_outputs.py --compare DIR   # compare outputs kept by --keep again

BEFORE/AFTER are git revisions (e.g. `main`, `HEAD`) or paths to source trees holding `src/crsim`.
Revisions are exported with `git archive` into a temporary folder; each tree runs with its own
`src/` first on PYTHONPATH, then a `crsim` dist-info made from its own pyproject.toml (its entry
points, not the installed crsim's), and the current interpreter. Exit status 0 when every file matches,
1 otherwise (each difference is printed with the first differing line).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LLM_CONFIG = """\
name: scripted-check
seed: 7
users:
  size: 3
simulators:
  - name: llm_single
    args: {max_tokens: 40}
  - name: abus
crss:
  - name: popular
  - name: retrieval
max_turns: 4
concurrency: 2
llm:
  default:
    provider: scripted
    model: check
    replies:
      - "I would like a funny movie from the nineties."
      - "Do you have something with Tom Hanks?"
      - "Thanks, I will watch it. /stop"
"""

RESTAURANTS_CONFIG = """\
name: restaurants-check
seed: 3
domain: restaurants
users:
  size: 20
max_turns: 12
"""

JUDGE_CONFIG = """\
llm:
  default: {provider: scripted, model: judge, replies: ['4', '3', '5']}
judges:
  - name: judge
    args: {rubric: quality5}
"""


def source_tree(revision: str, scratch: Path) -> Path:
    """A folder holding `src/crsim` of `revision` (a path to a tree, or a git revision exported)."""
    given = Path(revision)
    if (given / "src" / "crsim").is_dir():
        return given.resolve()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "src", "pyproject.toml"],
        check=True,
        capture_output=True,
    ).stdout
    target = scratch / f"tree-{re.sub(r'[^A-Za-z0-9_.-]', '_', revision)}"
    target.mkdir(parents=True)
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def tree_metadata(tree: Path) -> Path:
    """A folder with a `crsim` dist-info made from `tree`'s own pyproject.toml, put on PYTHONPATH after
    its sources: the built-in components are found through entry points, and those of the installed
    crsim name another revision's modules. importlib.metadata takes the first `crsim` on the path, so
    this one shadows the installed one (a revision without entry points gets none)."""
    project = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = tree / "metadata" / f"crsim-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: crsim\nVersion: {project['version']}\n", encoding="utf-8"
    )
    groups = project.get("entry-points", {})
    lines = [f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
             for group, entries in groups.items()]  # fmt: skip
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    return info.parent


def crsim(tree: Path, work: Path, *args: str) -> None:
    """Run `python -m crsim ARGS` with `tree`'s sources first on the path, in `work`."""
    path = os.pathsep.join([str(tree / "src"), str(tree_metadata(tree))])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "crsim", *args], cwd=work, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: crsim {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def produce(tree: Path, work: Path) -> None:
    """Every output this check compares, written by `tree` into `work`."""
    work.mkdir(parents=True)
    (work / "llm.yaml").write_text(LLM_CONFIG, encoding="utf-8")
    (work / "judge.yaml").write_text(JUDGE_CONFIG, encoding="utf-8")
    (work / "restaurants.yaml").write_text(RESTAURANTS_CONFIG, encoding="utf-8")
    crsim(tree, work, "run", "--out", "quick")
    crsim(tree, work, "evaluate", "quick")
    crsim(tree, work, "report", "quick")
    crsim(tree, work, "export", "quick", "--format", "csv")
    crsim(tree, work, "run", "llm.yaml", "--out", "llm")
    crsim(tree, work, "evaluate", "llm", "--judge", "judge.yaml")
    crsim(tree, work, "report", "llm")
    crsim(tree, work, "run", "restaurants.yaml", "--out", "restaurants")
    crsim(tree, work, "evaluate", "restaurants")
    crsim(tree, work, "report", "restaurants")


TIMING_KEYS = frozenset({"timing", "latency_s", "latency", "created_at"})
TIMING_COLUMNS = frozenset({"started_at", "duration_s"})
#: Seconds since the epoch after 2001: a wall-clock time in a cache row.
EPOCH = 1e9
REPORT_DATA = re.compile(r'(<script type="application/json" id="[^"]+">)(.*?)(</script>)', re.S)


def _without_timing(value: object) -> object:
    """A JSON value without wall-clock facts (`TIMING_KEYS`)."""
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _json_without_timing(text: str) -> str:
    return json.dumps(_without_timing(json.loads(text)), ensure_ascii=False)


def _cache_cell(value: object) -> object:
    """One cell of a cache row without its wall-clock facts (store time, latency)."""
    if isinstance(value, float) and value > EPOCH:
        return "<time>"
    if isinstance(value, str) and value.startswith("{"):
        try:
            return _json_without_timing(value)
        except ValueError:
            return value
    return value


def _csv_without_timing(text: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return []
    keep = [i for i, name in enumerate(rows[0]) if name not in TIMING_COLUMNS]
    return [json.dumps([row[i] for i in keep if i < len(row)], ensure_ascii=False) for row in rows]


def _summary_without_timing(text: str) -> list[str]:
    data = json.loads(text)
    dialogues = (data.get("built_from") or {}).get("dialogues") if isinstance(data, dict) else None
    if isinstance(dialogues, dict):
        dialogues.pop("bytes", None)
        dialogues.pop("sha256", None)
    return json.dumps(data, indent=1, ensure_ascii=False).splitlines()


def _created_at(work: Path) -> list[str]:
    stamps = []
    for manifest in work.rglob("manifest.json"):
        stamp = json.loads(manifest.read_text(encoding="utf-8")).get("created_at")
        if isinstance(stamp, str):
            stamps.append(stamp)
    return stamps


def normalised(path: Path, work: Path) -> list[str]:
    """The comparable content of one output file, as lines."""
    if path.suffix == ".sqlite":
        with sqlite3.connect(path) as db:
            tables = [
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
            ]
            return [
                f"{t}: {[_cache_cell(cell) for cell in row]!r}"
                for t in tables
                for row in db.execute(f"SELECT * FROM {t} ORDER BY 1")
            ]
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    if path.suffix == ".jsonl":
        return [json.dumps(_without_timing(json.loads(line)), sort_keys=False) for line in text.splitlines()]
    if path.name == "manifest.json":
        return json.dumps(_without_timing(json.loads(text)), indent=1).splitlines()
    if path.name == "summary.json":
        return _summary_without_timing(text)
    if path.suffix == ".csv":
        return _csv_without_timing(text)
    if path.suffix == ".html":
        text = REPORT_DATA.sub(lambda m: m[1] + _json_without_timing(m[2]) + m[3], text)
    for stamp in _created_at(work):
        text = text.replace(stamp, "<created_at>")
    return text.splitlines()


def compare(before: Path, after: Path) -> list[str]:
    """Differences between the two output folders: missing files and the first differing line."""
    problems = []
    names = {p.relative_to(before) for p in before.rglob("*") if p.is_file()}
    names |= {p.relative_to(after) for p in after.rglob("*") if p.is_file()}
    for name in sorted(names):
        a, b = before / name, after / name
        if not a.is_file() or not b.is_file():
            problems.append(f"{name}: only in {'after' if b.is_file() else 'before'}")
            continue
        if a.read_bytes() == b.read_bytes():
            continue
        left, right = normalised(a, before), normalised(b, after)
        if left == right:
            continue
        for i, (x, y) in enumerate(zip(left, right, strict=False)):
            if x != y:
                problems.append(f"{name}: line {i + 1} differs:\n  before: {x[:300]}\n  after:  {y[:300]}")
                break
        else:
            problems.append(f"{name}: {len(left)} vs {len(right)} lines")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", nargs="?")
    parser.add_argument("after", nargs="?")
    parser.add_argument("--compare", type=Path, help="only compare the outputs a --keep run left in DIR")
    parser.add_argument(
        "--keep", type=Path, help="write the outputs here (kept) instead of a temporary folder"
    )
    args = parser.parse_args()
    if args.compare is None and (args.before is None or args.after is None):
        parser.error("give BEFORE and AFTER, or --compare DIR")
    with tempfile.TemporaryDirectory(prefix="crsim-same-") as temp:
        scratch = args.compare or args.keep or Path(temp)
        outputs = {side: scratch / f"out-{side}" for side in ("before", "after")}
        for side in () if args.compare else ("before", "after"):
            tree = source_tree(getattr(args, side), scratch / side)
            produce(tree, outputs[side])
        files = sum(1 for p in outputs["before"].rglob("*") if p.is_file())
        problems = compare(outputs["before"], outputs["after"])
    for problem in problems:
        print(problem)
    verdict = "differ" if problems else "are the same (timing aside)"
    print(
        f"{files} output files of {args.before or 'before'} and {args.after or 'after'}: "
        f"{len(problems)} differences; outputs {verdict}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
