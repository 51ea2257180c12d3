"""User-centric utility metrics (Bernard and Balog, as implemented in UserSimCRS v2) and turns.

They read intents: the user's `accept` acts and the CRS's recommendations (item ids or a
`recommend` act). A dialogue with an unannotated user utterance is not scored (see docs/metrics.md).
"""

from __future__ import annotations

from crsim.eval.metrics.base import Metric
from crsim.eval.metrics.structure import recommendation_rounds, require_user_acts
from crsim.model.dialogue import Dialogue, Fault
from crsim.registry import Params as BaseParams
from crsim.registry import metric


@metric("success_rate")
class SuccessRate(Metric):
    """1 if the user accepted at least one recommendation in the dialogue, else 0.

    An `accept` counts only inside a recommendation round (after the CRS recommended something).
    The population mean is the success rate. A dialogue the CRS broke (a CRS error, or a timeout
    while the CRS was awaited) is 0 whatever was accepted before: the CRS failed the user, as an
    agent error fails the task in tau2-bench. (Dialogues the simulator or the infrastructure broke
    are not scored at all; see `crsim.eval.evaluate`.)
    """

    class Params(BaseParams):
        pass

    def default_label(self) -> str:
        return "Success"

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        if dialogue.termination is not None and dialogue.termination.fault is Fault.CRS:
            return 0.0
        return float(any(r.accepted for r in recommendation_rounds(dialogue)))


@metric("srrr")
class SRRR(Metric):
    """Successful Recommendation Round Ratio: accepted rounds / recommendation rounds.

    A round is a recommending CRS utterance plus the user's reaction up to the next recommending
    CRS utterance; it succeeds if the user accepted in it (`reject` or `seen` alone is a failure).
    The stretch before the first recommendation is not a round. No rounds at all gives 0.0: the
    CRS delivered nothing to accept.
    """

    class Params(BaseParams):
        pass

    def default_label(self) -> str:
        return "SRRR"

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        rounds = recommendation_rounds(dialogue)
        if not rounds:
            return 0.0
        return sum(r.accepted for r in rounds) / len(rounds)


@metric("rdl")
class RDL(Metric):
    """Reward per Dialogue Length: accepted recommendations / number of turns.

    Accepted recommendations are user utterances with an `accept` act inside a recommendation
    round; a turn is one user utterance and the CRS reply (`Dialogue.num_turns`). 0 turns gives 0.0.
    """

    class Params(BaseParams):
        pass

    def default_label(self) -> str:
        return "RDL"

    def compute(self, dialogue: Dialogue) -> float:
        require_user_acts(dialogue)
        turns = dialogue.num_turns
        if turns == 0:
            return 0.0
        return sum(r.accepts for r in recommendation_rounds(dialogue)) / turns


@metric("turns")
class Turns(Metric):
    """Dialogue length in turns: the number of user utterances (`Dialogue.num_turns`)."""

    class Params(BaseParams):
        pass

    def default_label(self) -> str:
        return "Turns"

    def compute(self, dialogue: Dialogue) -> float:
        return float(dialogue.num_turns)
