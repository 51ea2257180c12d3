"""The `satisfaction` metric: how likely the user is satisfied, as learned from human self-reports.

`satisfaction` is the probability that the user would report being satisfied (rather than
frustrated) at the end of the dialogue; `satisfaction_overall` predicts the overall impression a
crowd rater would give it (0-4). Both read the shipped artifact `models/satisfaction-v1.json`
(trained by `scripts/train_satisfaction.py`, validation numbers in docs/satisfaction.md) and
apply it with numpy only.

They work on any crsim dialogue: simulated dialogues have no self-report, and the model reads
only the text, recommended items and acts. Note that it was trained on movie-domain
conversations between crowd users and nine CRSs (CRSArena-Dial / -Eval); on other domains or on
very different user simulators its numbers are extrapolations.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as BaseParams
from crsim.eval.learned.artifact import Artifact, Head, load_artifact
from crsim.eval.learned.features import document
from crsim.eval.metrics.base import Metric, NotApplicable, metric
from crsim.model.dialogue import Dialogue, Role

#: The shipped artifact.
SATISFACTION_ARTIFACT = Path(__file__).parent / "models" / "satisfaction-v1.json"
NO_USER_TURNS = "no user utterance to read satisfaction from"


class SatisfactionParams(BaseParams):
    artifact: str | None = Field(
        None, description="Path to another trained artifact; None = the shipped satisfaction-v1.json."
    )


@lru_cache(maxsize=8)
def _cached(path: str, modified: int) -> Artifact:
    return load_artifact(Path(path))


def cached_artifact(path: str | Path | None = None) -> Artifact:
    """The artifact at `path` (default: the shipped one), loaded once per file version."""
    path = None if path is None else Path(path)
    target = (path or SATISFACTION_ARTIFACT).resolve()
    try:
        modified = target.stat().st_mtime_ns
    except OSError:
        modified = -1  # load_artifact reports the missing file with its path
    return _cached(str(target), modified)


def predict_heads(head: Head, dialogues: Sequence[Dialogue]) -> list[float]:
    """One head's output for each dialogue (batch form of the metrics below)."""
    return [float(v) for v in head.predict([document(d) for d in dialogues])]


class _LearnedHeadMetric(Metric):
    """A metric reading one head of a learned-evaluator artifact."""

    Params = SatisfactionParams
    head_name: ClassVar[str]

    def __init__(self, params: BaseParams | None = None, ctx: BuildContext | None = None) -> None:
        super().__init__(params, ctx)
        assert isinstance(self.params, SatisfactionParams)
        path = Path(self.params.artifact) if self.params.artifact else None
        self.head = cached_artifact(path).head(self.head_name)  # a bad artifact fails at build time

    def compute(self, dialogue: Dialogue) -> float:
        if not any(u.role is Role.USER for u in dialogue.utterances):
            raise NotApplicable(NO_USER_TURNS, f"dialogue {dialogue.id!r}")
        return predict_heads(self.head, [dialogue])[0]


@metric("satisfaction")
class Satisfaction(_LearnedHeadMetric):
    """P(the user is satisfied), 0-1; the population mean estimates the share of satisfied users."""

    direction = "higher"

    head_name = "satisfied"

    def default_label(self) -> str:
        return "Satisfaction"


@metric("satisfaction_overall")
class SatisfactionOverall(_LearnedHeadMetric):
    """Predicted overall impression on CRSArena-Eval's 0-4 scale."""

    direction = "higher"

    head_name = "overall"

    def default_label(self) -> str:
        return "Overall(pred)"
