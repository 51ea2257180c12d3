"""Catalogues the shipped domains do not cover, for tests of language on any catalogue: the docs'
bookshop (docs/domains.md) and the generated awkward catalogue (bench/awkward_catalogue.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from crsim.data.domains.loader import read_domain_file
from crsim.model.domain import Domain

ROOT = Path(__file__).resolve().parents[1]


def awkward_domain(folder: Path, count: int = 80, seed: int = 7) -> Domain:
    """The generated catalogue of awkward titles and numeric slots, written into `folder`."""
    spec = importlib.util.spec_from_file_location(
        "awkward_catalogue", ROOT / "bench" / "awkward_catalogue.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return read_domain_file(module.write(folder, count=count, seed=seed))


def bookshop_domain(folder: Path) -> Domain:
    """The worked example of docs/domains.md: its CSV and domain file, written into `folder`."""
    text = (ROOT / "docs" / "domains.md").read_text(encoding="utf-8")

    def block(after: str, language: str) -> str:
        match = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, text.index(after))
        assert match is not None, f"no ```{language} block after {after!r} in docs/domains.md"
        return match.group(1)

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "books.csv").write_text(block("A catalogue as CSV", "csv"), encoding="utf-8")
    (folder / "books.yaml").write_text(block("Its domain file", "yaml"), encoding="utf-8")
    return read_domain_file(folder / "books.yaml")
