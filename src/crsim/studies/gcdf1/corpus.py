"""Scoring whole files: load, score every dialogue, keep what failed, write the outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsim.core.atomic_files import atomic_output
from crsim.core.collector import long_lived_objects_frozen
from crsim.studies.gcdf1.behaviour import BehaviourFile
from crsim.studies.gcdf1.canonical import CanonicalMap
from crsim.studies.gcdf1.config import Gcdf1Config
from crsim.studies.gcdf1.dialogue import MULTIWOZ, GoalDialogue, Ontology
from crsim.studies.gcdf1.json_out import dumps_indented
from crsim.studies.gcdf1.scoring import (
    CorpusMean,
    DialogueScores,
    Gcdf1Scorer,
    ScoringFailure,
    corpus_means,
    score_dialogues,
)
from crsim.studies.gcdf1.sgd import LoadIssue, load_sgd_files


@dataclass
class CorpusResult:
    """Scores of the dialogues that could be scored, and what could not be read or scored."""

    scores: list[DialogueScores] = field(default_factory=list)
    issues: list[LoadIssue] = field(default_factory=list)
    failures: list[ScoringFailure] = field(default_factory=list)

    def per_dialogue(self) -> dict[str, dict[str, Any]]:
        """Dialogue id -> the reference evaluator's per-dialogue shape (see `DialogueScores.to_json`)."""
        return {s.dialogue_id: s.to_json() for s in sorted(self.scores, key=lambda s: s.dialogue_id)}

    def behaviour(self) -> BehaviourFile:
        errors = {str(i.dialogue_id or f"{i.path}#{i.record}"): str(i) for i in self.issues}
        errors.update({f.dialogue_id: f.error for f in self.failures})
        return BehaviourFile(dialogues={s.dialogue_id: s.events for s in self.scores}, errors=errors)

    def means(self) -> dict[str, dict[str, CorpusMean]]:
        return corpus_means(self.scores)

    def problems(self) -> list[str]:
        """One line per file, dialogue or scoring failure."""
        return [str(i) for i in self.issues] + [
            f"dialogue {f.dialogue_id!r}: {f.error}" for f in self.failures
        ]


def score_corpus(dialogues: Sequence[GoalDialogue], scorer: Gcdf1Scorer) -> CorpusResult:
    scores, failures = score_dialogues(scorer, dialogues)
    return CorpusResult(scores=scores, failures=failures)


def score_files(
    paths: Sequence[str | Path],
    config: Gcdf1Config | None = None,
    canonical_map: CanonicalMap | None = None,
    ontology: Ontology = MULTIWOZ,
) -> CorpusResult:
    """Load SGD files and score every readable dialogue.

    The parsed corpus stays alive until scored, so the collector's settings for bulk work apply:
    with the defaults, re-scanning it took as long as parsing it (`crsim.core.collector`).
    """
    with long_lived_objects_frozen():
        loaded = load_sgd_files(paths)
        result = score_corpus(loaded.dialogues, Gcdf1Scorer(config, canonical_map, ontology))
    result.issues = loaded.issues
    return result


def behaviour_path(scores_path: Path) -> Path:
    """Where the behaviour log of `per_dialogue.json` goes: `per_dialogue.behaviour.json`."""
    return scores_path.with_name(f"{scores_path.stem}.behaviour.json")


def write_json(data: Any, path: Path) -> None:
    with atomic_output(path) as handle:
        handle.write(dumps_indented(data, indent=1))  # = json.dump(data, indent=1, sort_keys=True)
        handle.write("\n")
