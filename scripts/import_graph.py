"""Print the package-level import graph of crsim and the cycles in it.

Every `import crsim.X…` / `from crsim.X… import …` in `src/crsim` (at module level or inside a
function: a lazy import is still a dependency) becomes an edge between top-level packages
(`crsim/report/compare.py` importing `crsim.studies.compare` is the edge report -> studies). Modules at the
top of the package (`crsim/registry.py`, …) are their own node. Each edge is listed with one module
that makes it; then every pair of packages that import each other, directly or through others.

Usage: python scripts/import_graph.py [SRC] [--without-cli]
SRC: a folder holding `crsim/` (default ./src); --without-cli leaves out the command-line modules
(`cli.py`, `*_cli.py`, `cli_support.py`, `__main__.py`), which belong on the top floor.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path


def node_of(module: str) -> str:
    """The graph node of a dotted module name inside crsim: its first component after `crsim`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imported(path: Path, package: str) -> set[str]:
    """The crsim modules a source file imports (absolute and relative imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("crsim."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.startswith("crsim."):
                found.add(name)
    return found


def is_cli(path: Path) -> bool:
    return (
        path.stem in {"cli", "cli_support", "__main__"} or path.stem.endswith("_cli") or "cli" in path.parts
    )


def graph(src: Path, without_cli: bool = False) -> dict[tuple[str, str], str]:
    """(from node, to node) -> one module that makes the edge."""
    edges: dict[tuple[str, str], str] = {}
    for path in sorted((src / "crsim").rglob("*.py")):
        if without_cli and is_cli(path.relative_to(src)):
            continue
        module = ".".join(path.relative_to(src).with_suffix("").parts)
        package = module.removesuffix(".__init__")
        here = node_of(module)
        for target in sorted(imported(path, package)):
            there = node_of(target)
            if there != here:
                edges.setdefault((here, there), module)
    return edges


def reachable(edges: dict[tuple[str, str], str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        out[a].add(b)
    closure = {}
    for start in list(out):
        seen, todo = set(), [start]
        while todo:
            for nxt in out.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        closure[start] = seen
    return closure


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = Path(args[0]) if args else Path("src")
    edges = graph(src, without_cli="--without-cli" in sys.argv)
    for (a, b), where in sorted(edges.items()):
        print(f"{a} -> {b}    (e.g. {where})")
    closure = reachable(edges)
    cycles = sorted(
        {tuple(sorted((a, b))) for a in closure for b in closure[a] if a in closure.get(b, set())}
    )
    print(f"\n{len(edges)} edges; packages that import each other: {len(cycles)}")
    for a, b in cycles:
        direct = [f"{x} -> {y}" for x, y in ((a, b), (b, a)) if (x, y) in edges]
        print(f"  {a} <-> {b}" + (f"   direct: {', '.join(direct)}" if direct else "   (through others)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
