"""The house has no file circles: no two modules of `src/crsim` import each other, directly or through
others (`scripts/import_graph.py --files`; the floors themselves are checked by `lint-imports`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _import_graph():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_module_imports_itself_through_others() -> None:
    assert _import_graph().file_circles(ROOT / "src") == []


def test_the_circle_finder_finds_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "crsim"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from crsim.b import x\n")
    (package / "b.py").write_text("import crsim.c\nx = 1\n")
    (package / "c.py").write_text("from crsim import a\n")
    (package / "d.py").write_text("from crsim.a import y\n")
    assert _import_graph().file_circles(tmp_path) == [["crsim.a", "crsim.b", "crsim.c"]]
