"""`learned_crsarena`: the seven CRSArena-Eval aspects predicted by a learned model, on the CPU.

Per CRS turn it gives relevance (0-3) and interestingness (0-2); per dialogue understanding,
task completion, interest arousal (0-2), efficiency (0-1) and the overall impression (0-4), on
the scales of CRSArena-Eval's crowd labels. It reads the shipped model `models/crsarena-v2.json`
(ridge regressions over TF-IDF and dense features, trained by `scripts/train_crsarena.py`; see
`crsim.eval.learned.crsarena_model`), applied with numpy and scipy only: no language model, no
embeddings, a few milliseconds per dialogue.

It was trained on movie-domain conversations between crowd workers and nine CRSs (CRSArena-Eval,
467 conversations). On other domains, or on simulated users that talk very differently, its
numbers are extrapolations; docs/meta-evaluation.md gives its agreement with human labels under
grouped cross-validation and for a CRS it has never seen (leave one system out).

Turn values: a turn t is the CRS reply to the t-th user utterance; if a turn has more than one CRS
utterance their values are averaged. A dialogue in which the CRS never speaks is not applicable.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as BaseParams
from crsim.eval.learned.crsarena_features import dialogue_features
from crsim.eval.learned.crsarena_model import (
    DIALOGUE_ASPECTS,
    TURN_ASPECTS,
    CrsarenaModel,
    load_model,
    predict,
)
from crsim.eval.metrics.base import Evaluator, NotApplicable, Value, metric
from crsim.model.dialogue import Dialogue

#: The shipped model.
CRSARENA_MODEL = Path(__file__).parent / "models" / "crsarena-v2.json"
NO_CRS_UTTERANCE = "no CRS utterance to score"


class CrsarenaParams(BaseParams):
    model: str | None = Field(
        None, description="Path to another trained model (JSON); None = the shipped crsarena-v2.json."
    )


@lru_cache(maxsize=4)
def _cached(path: str, modified: int) -> CrsarenaModel:
    return load_model(Path(path))


def cached_model(path: str | Path | None = None) -> CrsarenaModel:
    """The model at `path` (default: the shipped one), loaded once per file version."""
    path = None if path is None else Path(path)
    target = (path or CRSARENA_MODEL).resolve()
    try:
        modified = target.stat().st_mtime_ns
    except OSError:
        modified = -1  # load_model reports the missing file with its path
    return _cached(str(target), modified)


@metric("learned_crsarena")
class LearnedCrsarena(Evaluator):
    """CRSArena-Eval's seven aspects from a learned model (module docstring)."""

    direction = "higher"

    Params = CrsarenaParams

    def __init__(
        self,
        params: BaseParams | None = None,
        ctx: BuildContext | None = None,
        *,
        model: CrsarenaModel | None = None,
    ) -> None:
        super().__init__(params, ctx)
        assert isinstance(self.params, CrsarenaParams)
        if model is None:  # a bad model file fails when the evaluator is built, before any dialogue
            model = cached_model(Path(self.params.model) if self.params.model else None)
        self.model = model
        #: The catalogue recommendations are checked against: the run's domain, if any, else movies.
        self.domain = ctx.domain if ctx is not None else None

    def default_label(self) -> str:
        return "learned_crsarena"

    def values(self, dialogue: Dialogue) -> list[Value]:
        """All values for one dialogue (synchronous form of `evaluate`)."""
        features = dialogue_features(dialogue, self.domain)
        if not features.turns:
            raise NotApplicable(NO_CRS_UTTERANCE, f"dialogue {dialogue.id!r}")
        prediction = predict(self.model, [features])[0]
        by_turn: dict[int, list[dict[str, float]]] = {}
        for row in features.turns:
            by_turn.setdefault(row.turn, []).append(prediction.turns[row.position])
        out = [
            Value(aspect=a, value=prediction.dialogue[a])
            for a in DIALOGUE_ASPECTS
            if a in prediction.dialogue
        ]
        for turn, rows in sorted(by_turn.items()):
            out.extend(
                Value(aspect=a, value=sum(r[a] for r in rows) / len(rows), turn=turn)
                for a in TURN_ASPECTS
                if a in rows[0]
            )
        return out

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        return self.values(dialogue)
