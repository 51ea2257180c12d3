"""The test suite mirrors the package: one folder per `src/crsim/<package>/`, unique file names.

Test folders are not Python packages (no `__init__.py`), so pytest's default import mode puts each
test file's folder on `sys.path` and imports the file by its base name: two files with the same
name in different folders would clash, and this test names them before pytest's error does.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src" / "crsim"

#: Folders that mirror no package: data, the cross-cutting fault suite, top-level modules.
NOT_MIRRORS = {"fixtures", "faults", "core"}


def _folders() -> list[Path]:
    return sorted(path for path in TESTS.iterdir() if path.is_dir() and not path.name.startswith((".", "__")))


def test_every_test_folder_mirrors_a_package_or_is_a_named_exception() -> None:
    strays = [
        folder.name
        for folder in _folders()
        if folder.name not in NOT_MIRRORS and not (SRC / folder.name / "__init__.py").is_file()
    ]
    assert strays == [], f"tests/<folder> must name a package under src/crsim/: {strays}"


def test_no_test_file_sits_in_the_tests_root() -> None:
    flat = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert flat == [], f"move these into tests/<package>/ (docs/architecture.md, Tests): {flat}"


def test_mirror_folders_are_not_packages() -> None:
    packages = [
        folder.name
        for folder in _folders()
        if folder.name not in {"fixtures", "faults"} and (folder / "__init__.py").exists()
    ]
    assert packages == [], f"test folders are plain folders (see this module's docstring): {packages}"


def test_test_file_names_are_unique_across_folders() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "fixtures" not in path.relative_to(TESTS).parts:
            seen[path.name].append(str(path.parent.relative_to(TESTS)))
    clashes = {name: sorted(where) for name, where in seen.items() if len(where) > 1}
    assert clashes == {}, f"test file names must be unique under tests/: {clashes}"


#: The registering decorators (crsim.core.plugins and the kinds' typed ones in crs/sim/eval/data).
_REGISTERING = {"crs", "simulator", "metric", "annotator", "dataset"}


def _registers_at_import(node: ast.stmt) -> bool:
    """A module-level class decorated with a registering decorator (`@metric("x")`, `@registry.crs(...)`)."""
    if not isinstance(node, ast.ClassDef):
        return False
    for deco in node.decorator_list:
        func = deco.func if isinstance(deco, ast.Call) else deco
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _REGISTERING:
            return True
    return False


def test_no_test_module_registers_a_component_at_import() -> None:
    # Registered at import, a component stays in the global registry for every later test file.
    found = [
        f"{path.relative_to(TESTS)}:{node.lineno}"
        for path in sorted(TESTS.rglob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if _registers_at_import(node)
    ]
    assert not found, f"register test components in a fixture or the test instead: {found}"
