"""Print the package-level import graph of crsim and the cycles in it.

Every `import crsim.X…` / `from crsim.X… import …` in `src/crsim` (at module level or inside a
function: a lazy import is still a dependency) becomes an edge between top-level packages
(`crsim/report/compare.py` importing `crsim.studies.compare` is the edge report -> studies). Modules at the
top of the package (`crsim/registry.py`, …) are their own node. Each edge is listed with one module
that makes it; then every pair of packages that import each other, directly or through others.

Usage: python scripts/import_graph.py [SRC] [--without-cli] [--files]
SRC: a folder holding `crsim/` (default ./src); --without-cli leaves out the command-line modules
(`cli.py`, `*_cli.py`, `cli_support.py`, `__main__.py`), which belong on the top floor; --files prints
the file circles instead: groups of modules that import each other, directly or through others
(`from crsim.x import y` counts as importing the module `crsim.x.y` when there is one; a package's
`__init__` is left out, since importing a submodule runs it).
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


def module_graph(src: Path) -> dict[str, set[str]]:
    """module -> the crsim modules it imports (module files, not packages' __init__)."""
    modules = {
        ".".join(path.relative_to(src).with_suffix("").parts): path for path in (src / "crsim").rglob("*.py")
    }
    out: dict[str, set[str]] = {}
    for module, path in modules.items():
        if module.endswith("__init__"):
            continue
        targets = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        out[module] = {t for t in targets if t in modules and t != module}
    return out


def file_circles(src: Path) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    graph_ = module_graph(src)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in sorted(graph_):
        if root in index:
            continue
        work = [(root, iter(sorted(graph_.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph_.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    circles.append(sorted(group))
    return sorted(circles)


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
    if "--files" in sys.argv:
        circles = file_circles(src)
        for group in circles:
            print("  " + " <-> ".join(group))
        print(f"{len(circles)} file circles")
        return 1 if circles else 0
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
