"""`crsim.eval.annotators.jobs`: the annotation jobs behind `crsim data annotate`, called from Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from crsim.core.errors import CrsimError
from crsim.eval.annotators.jobs import (
    LLMSource,
    annotate_acts,
    evaluate_acts,
    evaluate_need_extraction,
    extract_needs,
)
from crsim.model import Dialogue
from test_annotate import _gold_dialogues


@pytest.fixture
def gold_file(tmp_path: Path) -> tuple[Path, list[Dialogue]]:
    gold = _gold_dialogues()[:4]
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(d.model_dump_json() + "\n" for d in gold), encoding="utf-8")
    return path, gold


def test_annotate_acts_writes_the_file_and_counts(
    gold_file: tuple[Path, list[Dialogue]], tmp_path: Path
) -> None:
    path, gold = gold_file
    out = tmp_path / "annotated.jsonl"
    result = annotate_acts(path, out, overwrite=True)
    utterances = sum(len(d.utterances) for d in gold)
    assert (result.report.dialogues, result.report.annotated, result.report.kept) == (4, utterances, 0)
    assert result.annotator == "rules" and result.llm is None and result.failed == 0
    annotated = [Dialogue.model_validate_json(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(u.annotations["acts_source"] == "rules" for d in annotated for u in d.utterances)


def test_evaluate_acts_and_need_extraction(gold_file: tuple[Path, list[Dialogue]], tmp_path: Path) -> None:
    path, _ = gold_file
    summary = evaluate_acts(path)
    assert summary["dialogues"] == 4 and summary["annotator"] == "rules" and "llm" not in summary
    needs = extract_needs(path, tmp_path / "needs.jsonl")
    assert needs.extractor == "rules" and needs.llm is None
    assert (needs.report.dialogues, needs.report.extracted) == (4, 4)
    written = [
        Dialogue.model_validate_json(line) for line in (tmp_path / "needs.jsonl").read_text().splitlines()
    ]
    assert len(written) == 4 and all(d.information_need is not None for d in written)
    with pytest.raises(CrsimError, match="--no-from-text: the llm extractor reads the text only"):
        evaluate_need_extraction(path, extractor="llm", from_text=False)


def test_a_rules_component_refuses_llm_settings(
    gold_file: tuple[Path, list[Dialogue]], tmp_path: Path
) -> None:
    path, _ = gold_file
    with pytest.raises(CrsimError, match="--cache: 'rules' uses no LLM"):
        annotate_acts(path, tmp_path / "o.jsonl", llm=LLMSource(cache=tmp_path / "c.sqlite"))
    with pytest.raises(CrsimError, match="--annotator: the llm extractor"):
        extract_needs(path, tmp_path / "o.jsonl", extractor="llm", annotator="rules")
