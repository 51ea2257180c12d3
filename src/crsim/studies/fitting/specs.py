"""What the satisfaction heads are trained on and how: a labelled set (documents, labels, and per row
the conversation, CRS and CRS dataset), each head's spec, and the knobs of a training run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from crsim.eval.learned.features import DialogueDocument
from crsim.model.dialogue import Dialogue
from crsim.studies.fitting.model import HeadKind

Protocol = Literal["grouped_5fold", "leave_one_system_out"]
PROTOCOLS: tuple[Protocol, ...] = ("grouped_5fold", "leave_one_system_out")
SPLITS = ("all", "redial", "opendialkg")
FloatArray = npt.NDArray[np.float64]


@dataclass
class LabelledSet:
    """One labelled dataset: documents, labels and, per row, conversation id, CRS and CRS dataset."""

    name: str
    description: str
    sources: list[str]
    dialogues: list[Dialogue]
    docs: list[DialogueDocument]
    y: FloatArray
    conversations: list[str]
    systems: list[str]
    crs_datasets: list[str]

    def rows(self, split: str) -> npt.NDArray[np.intp]:
        """Row indices of a split: `all`, or the CRSs trained on `redial` / `opendialkg`."""
        return np.asarray([i for i, d in enumerate(self.crs_datasets) if split in ("all", d)], dtype=np.intp)


@dataclass(frozen=True)
class HeadSpec:
    """How one head is trained: model kind, the strengths tried, how they are scored, output range."""

    name: str
    kind: HeadKind
    target: str
    strengths: tuple[float, ...]
    scoring: str
    clip: tuple[float, float] | None = None
    vectorizer: dict[str, Any] = field(default_factory=dict)


SATISFIED = HeadSpec(
    name="satisfied",
    kind="logistic",
    target="P(sentiment = satisfied): the user's self-report at the end of a CRSArena-Dial conversation",
    strengths=(0.01, 0.03, 0.1, 0.3, 1.0),
    scoring="neg_log_loss",
)
OVERALL = HeadSpec(
    name="overall",
    kind="linear",
    target="dialogue_overall (0-4): CRSArena-Eval's aggregated overall impression",
    strengths=(0.01, 0.03, 0.1, 0.3, 1.0),
    scoring="neg_mean_squared_error",
    clip=(0.0, 4.0),
)


class TrainingConfig(BaseModel):
    """Knobs of a training run; the defaults produce the shipped artifact."""

    folds: int = 5
    inner_folds: int = 3
    seed: int = 0
    resamples: int = 2000
    satisfied: HeadSpec = SATISFIED
    overall: HeadSpec = OVERALL

    model_config = {"arbitrary_types_allowed": True, "frozen": True}
