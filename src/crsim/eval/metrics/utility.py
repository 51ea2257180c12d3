"""User-centric utility metrics (Bernard and Balog, as implemented in UserSimCRS v2) and turns.

They read intents: the user's `accept` acts and the CRS's recommendations (item ids or a
`recommend` act). A dialogue with an unannotated user utterance is not scored (see docs/metrics.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from crsim.core.plugins import Params as BaseParams
from crsim.eval.metrics.base import Metric, metric
from crsim.eval.metrics.structure import (
    LABEL_PRESETS,
    LabelSets,
    Round,
    RoundsMode,
    recommendation_rounds,
    require_user_acts,
    user_facts,
)
from crsim.model.dialogue import Dialogue, Fault


class RoundParams(BaseParams):
    """How rounds are cut: `crsim` (default) or `usersimcrs` (the stretch before the first
    recommendation is a round of its own, as in UserSimCRS; see docs/metrics.md)."""

    rounds: RoundsMode = Field("crsim", description="'crsim' or 'usersimcrs' round segmentation.")
    labels: LabelSets | None = Field(
        None,
        description="Read these dataset labels (annotations.labels.intents) instead of crsim's acts: "
        f"{{recommend: [...], accept: [...], reject: [...]}} or a preset: {', '.join(LABEL_PRESETS)}.",
    )

    @field_validator("labels", mode="before")
    @classmethod
    def _preset(cls, value: object) -> object:
        """A preset name stands for its label sets."""
        if isinstance(value, str):
            if value not in LABEL_PRESETS:
                raise ValueError(f"unknown label preset {value!r}; known: {', '.join(LABEL_PRESETS)}")
            return LABEL_PRESETS[value]
        return value


def _rounds(dialogue: Dialogue, params: RoundParams) -> list[Round]:
    return recommendation_rounds(dialogue, params.rounds, params.labels)


def _options(params: RoundParams) -> list[str]:
    """What a label names besides the metric: non-default rounds, and the label set if any."""
    out: list[str] = [] if params.rounds == "crsim" else [params.rounds]
    if params.labels is not None:
        preset = next((n for n, p in LABEL_PRESETS.items() if p == params.labels), None)
        out.append(f"labels={preset}" if preset else "labels")
    return out


def _suffix(params: RoundParams) -> str:
    options = _options(params)
    return f"({', '.join(options)})" if options else ""


@metric("success_rate")
class SuccessRate(Metric):
    """1 if the user accepted at least one recommendation in the dialogue, else 0.

    A round succeeds when the user's last reaction in it (accept or reject) is an accept; an
    `accept` counts only inside a round. The population mean is the success rate.
    A dialogue the CRS broke (a CRS error, or a timeout while the CRS was awaited) is 0 whatever
    was accepted before: the CRS failed the user, as an agent error fails the task in tau2-bench.
    (Dialogues the simulator or the infrastructure broke are not scored at all; see
    `crsim.eval.scores`.)
    """

    direction = "higher"

    class Params(RoundParams):
        pass

    params: Params
    binary = True

    def default_label(self) -> str:
        return "Success" + _suffix(self.params)

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        if dialogue.termination is not None and dialogue.termination.fault is Fault.CRS:
            return 0.0
        return float(any(r.accepted for r in _rounds(dialogue, self.params)))


@metric("srrr")
class SRRR(Metric):
    """Successful Recommendation Round Ratio: accepted rounds / recommendation rounds.

    A round is a recommending CRS utterance plus the user's reaction up to the next recommending
    CRS utterance; it succeeds if the user's last accept/reject reaction in it is an accept
    (`seen` alone is a failure). By default the stretch before the first recommendation is not a
    round (`rounds: usersimcrs` counts it). No rounds at all gives 0.0: the CRS delivered nothing
    to accept.
    """

    direction = "higher"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(RoundParams):
        pass

    params: Params

    def default_label(self) -> str:
        return "SRRR" + _suffix(self.params)

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        rounds = _rounds(dialogue, self.params)
        if not rounds:
            return 0.0
        return sum(r.accepted for r in rounds) / len(rounds)


@metric("rdl")
class RDL(Metric):
    """Reward per Dialogue Length: accepted recommendations / dialogue length.

    Accepted recommendations are user utterances with an `accept` act inside a recommendation
    round (`rounds: usersimcrs`: anywhere, the leading stretch being a round). The length is the
    number of turns (`length: turns`, one user utterance and the CRS reply, `Dialogue.num_turns`)
    or of utterances of both participants (`length: utterances`, UserSimCRS's denominator); the
    label names it. Length 0 gives 0.0.
    """

    direction = "higher"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(RoundParams):
        length: Literal["turns", "utterances"] = Field(
            "turns", description="Denominator: 'turns' (user utterances) or 'utterances' (both participants)."
        )

    params: Params

    def default_label(self) -> str:
        return f"RDL({', '.join([self.params.length, *_options(self.params)])})"

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        length = user_facts(dialogue).turns if self.params.length == "turns" else len(dialogue.utterances)
        if length == 0:
            return 0.0
        return sum(r.accepts for r in _rounds(dialogue, self.params)) / length


@metric("turns")
class Turns(Metric):
    """Dialogue length in turns: the number of user utterances (`Dialogue.num_turns`)."""

    direction = "lower"

    binary = False  # values between 0 and 1 (or beyond), not an indicator

    class Params(BaseParams):
        pass

    def default_label(self) -> str:
        return "Turns"

    def compute(self, dialogue: Dialogue) -> float:
        return float(user_facts(dialogue).turns)
