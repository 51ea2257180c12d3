"""The import paths that moved out of eval/ (issue 18) keep working, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys

import pytest

MOVED = [
    ("crsim.eval.gcdf1", "crsim.gcdf1", "score_files"),
    ("crsim.eval.analysis", "crsim.studies.language", "__all__"),
    ("crsim.eval.compare", "crsim.studies.compare", "compare"),
    ("crsim.eval.judge.pairwise", "crsim.studies.pairwise", "compare_runs"),
    ("crsim.eval.learned.cv", "crsim.fitting.cv", "grouped_folds"),
    ("crsim.eval.learned.model", "crsim.fitting.model", "build_pipeline"),
]


@pytest.mark.parametrize(("old", "new", "name"), MOVED)
def test_old_path_warns_and_gives_the_new_objects(old: str, new: str, name: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        alias = importlib.import_module(old)
    target = importlib.import_module(new)
    assert name == "__all__" or getattr(alias, name) is getattr(target, name)
    for public in getattr(target, "__all__", []):
        assert getattr(alias, public) is getattr(target, public)
