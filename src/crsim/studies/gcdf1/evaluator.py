"""`gcdf1`: I-GCDF1 and R-GCDF1 of crsim dialogues as an `Evaluator` for `crsim evaluate`.

The goal is the dialogue's information need (see `crsim.studies.gcdf1.adapter`). Aspects, all at
dialogue level: `igcdf1`, `igcdf1_precision`, `igcdf1_recall` (constraints) and `rgcdf1`,
`rgcdf1_precision`, `rgcdf1_recall` (requests); the value is the combined score. A metric that is
undefined for the dialogue (R-GCDF1 when neither the goal nor the user has requests) has value
None with the reason in `explanation`. The explanation of the F1 aspects lists the behaviours
the evaluator saw (e.g. `repeat_unexplained x2`).
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property

from pydantic import Field

from crsim.core.plugins import Params as BaseParams
from crsim.eval.metrics.base import NO_ACTS, Evaluator, NotApplicable, Value, metric
from crsim.eval.metrics.structure import require_user_acts
from crsim.model.annotations import DOMAIN
from crsim.model.dialogue import Dialogue, Role
from crsim.studies.gcdf1.adapter import crsim_ontology, goal_dialogue
from crsim.studies.gcdf1.behaviour import DESCRIPTIONS, Behaviour, Event
from crsim.studies.gcdf1.canonical import CanonicalMap
from crsim.studies.gcdf1.config import Gcdf1Config, load_config
from crsim.studies.gcdf1.scoring import COMBINED, PRF, Gcdf1Scorer

NO_NEED = "no information need (constraints or requests) to use as the goal"
ASPECTS = ("igcdf1", "igcdf1_precision", "igcdf1_recall", "rgcdf1", "rgcdf1_precision", "rgcdf1_recall")


def _summary(events: list[Event], metric_name: str) -> str:
    counts = Counter(e.behaviour for e in events if DESCRIPTIONS[Behaviour(e.behaviour)][0] == metric_name)
    return ", ".join(f"{name} x{n}" for name, n in sorted(counts.items())) or "no notable behaviour"


@metric("gcdf1")
class Gcdf1Evaluator(Evaluator):
    """Goal- and context-driven F1 of the user's constraints and requests (see module docstring)."""

    direction = "higher"

    class Params(BaseParams):
        domain: str | None = Field(
            None,
            min_length=1,
            description="Name of the single goal domain; default: the run's domain as the dialogue records "
            "it, else 'items'.",
        )
        config: str | None = Field(
            None, description="GCDF1 YAML configuration (thresholds and switches); default: built-in values."
        )
        canonical_map: str | None = Field(
            None,
            description="Canonical value map (JSON); without one, values are matched against the goal only.",
        )
        entity_slots: list[str] = Field(
            default_factory=lambda: ["title"], description="Slots that name the recommended item."
        )

    params: Params

    def default_label(self) -> str:
        return "gcdf1"

    def domain_of(self, dialogue: Dialogue) -> str:
        """The goal domain's name: the configured one, else the dialogue's run domain, else "items"."""
        if self.params.domain:
            return self.params.domain
        recorded = DOMAIN.get(dialogue.metadata, where=f"dialogue {dialogue.id!r}")
        return recorded or "items"

    def scorer(self, domain: str) -> Gcdf1Scorer:
        """The scorer of one goal domain (its ontology names the domain), built once per domain."""
        built = self._scorers.get(domain)
        if built is None:
            built = self._scorers[domain] = self._build_scorer(domain)
        return built

    @cached_property
    def _scorers(self) -> dict[str, Gcdf1Scorer]:
        return {}

    def _build_scorer(self, domain: str) -> Gcdf1Scorer:
        p = self.params
        config = load_config(p.config) if p.config else Gcdf1Config()
        cmap = CanonicalMap.load(p.canonical_map) if p.canonical_map else None
        if cmap is None and config.igcd_f1.value_matching.use_canonical_map:
            matching = config.igcd_f1.value_matching.model_copy(update={"use_canonical_map": False})
            config = config.model_copy(
                update={"igcd_f1": config.igcd_f1.model_copy(update={"value_matching": matching})}
            )
        return Gcdf1Scorer(config, cmap, crsim_ontology(domain, p.entity_slots))

    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        need = dialogue.information_need
        if need is None or not (need.constraints or need.requests):
            raise NotApplicable(NO_NEED, f"dialogue {dialogue.id!r}")
        if not any(u.acts for u in dialogue.utterances if u.role is Role.USER):
            raise NotApplicable(NO_ACTS, f"dialogue {dialogue.id!r}")
        require_user_acts(dialogue)
        domain = self.domain_of(dialogue)
        scores = self.scorer(domain).score(goal_dialogue(dialogue, domain))
        values: list[Value] = []
        for prefix, table, name, undefined in (
            ("igcdf1", scores.inform, "I-GCDF1", "no constraints in the goal or the dialogue"),
            ("rgcdf1", scores.request, "R-GCDF1", "no requests in the goal or the dialogue"),
        ):
            combined: PRF | None = table.get(COMBINED)
            summary = _summary(scores.events, name)
            for suffix, attr in (("", "f1"), ("_precision", "precision"), ("_recall", "recall")):
                if combined is None:
                    values.append(Value(aspect=prefix + suffix, value=None, explanation=undefined))
                else:
                    explanation = summary if attr == "f1" else None
                    values.append(Value(prefix + suffix, getattr(combined, attr), explanation=explanation))
        return values
