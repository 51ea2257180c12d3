"""`abus`: the agenda-based user simulator of UserSimCRS v2, with rule or LLM NLU and template or LLM NLG.

Each CRS reply is understood from its text only (the reply's `recommended_items` and `acts` are
what the CRS claims and are deliberately not read): by `RuleNLU` (`nlu: rules`) or by a language
model with the linker resolving item titles (`nlu: llm`, `LLMNLU`); the text also says whether the
reply is a setback (`crsim.sim.progress`: found nothing, cannot help), which the interaction model
counts toward the user's patience. The `InteractionModel` updates
the agenda and picks the user's acts, and `TemplateNLG` (`nlg: templates`) or a language model
(`nlg: llm`, `LLMNLG`) words them, unless the reply offered an option that says the whole turn
(`crsim.sim.options`): the user then picks it, and its label is the text. One instance per
dialogue; every random choice, and every LLM call's sampling seed, is derived from the
constructor's `seed`.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, Literal

from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as BaseParams
from crsim.core.seeding import derive_seed
from crsim.crs.base import CRSReply
from crsim.language.crs_text import NLU, NLUResult, RuleNLU
from crsim.language.domain_cues import prompt_words
from crsim.model.acts import format_acts
from crsim.model.dialogue import ReplyOption
from crsim.model.user import SimulatedUser
from crsim.sim.agenda.llm_nlg import LLMNLG
from crsim.sim.agenda.llm_nlu import LLMNLU
from crsim.sim.agenda.policy import InteractionModel, PolicyTurn
from crsim.sim.agenda.preferences import PreferenceModel
from crsim.sim.base import BaseSimulator, UserTurn, simulator
from crsim.sim.options import option_dropping, option_for_turn
from crsim.sim.progress import setback
from crsim.sim.shared.nlg import (
    NLG,
    DomainWords,
    NLGContext,
    TemplateNLG,
    domain_template_set,
    load_templates,
)


@simulator("abus")
class AgendaBasedSimulator(BaseSimulator):
    """Agenda-based simulated user guided by an information need (UserSimCRS v2, section 4.2)."""

    class Params(BaseParams):
        patience: int = Field(
            3,
            ge=1,
            description="Failed recommendation rounds (nothing acceptable) and CRS turns without progress "
            "(together) before the user gives up.",
        )
        accept_threshold: float = Field(
            4.0,
            ge=0.5,
            le=5.0,
            description="Predicted rating (0.5-5) from which a non-target item is accepted.",
        )
        liked_rating: float = Field(
            3.5, ge=0.5, le=5.0, description="Rating from which an already seen item is described as liked."
        )
        shrinkage: float = Field(
            5.0, ge=0.0, description="Pseudo-count shrinking attribute deviations in the rating prediction."
        )
        opening_disclosure_prob: float = Field(
            0.5,
            ge=0.0,
            le=1.0,
            description="Probability of volunteering the first constraint in the opening.",
        )
        nlu: Literal["rules", "llm"] = Field(
            "rules",
            description="Understanding of CRS text: rules, or a language model (role `role`) prompted "
            "with IARD examples; titles are linked to items either way.",
        )
        nlg: Literal["templates", "llm"] = Field(
            "templates", description="Generation of user text: YAML templates, or a language model."
        )
        templates: str = Field(
            "movies",
            description="Packaged template set name (movies, generic), or a path to a YAML template file. "
            "Left unset: the domain's own set (its `phrasings.nlg`), else `generic` (naming the item "
            "noun and the slots).",
        )
        role: str = Field("user", description="LLM role used by `nlu: llm` and `nlg: llm`.")
        constrain: bool = Field(
            True, description="`nlu: llm`: constrain decoding with a grammar of the allowed acts."
        )
        nlu_examples: int = Field(
            24, ge=0, le=60, description="`nlu: llm`: IARD few-shot examples in the prompt."
        )
        nlu_temperature: float | None = Field(
            0.0, ge=0.0, le=2.0, description="`nlu: llm`: sampling temperature (null: the role's default)."
        )
        nlu_prompt: str = Field(
            "nlu.jinja2", description="`nlu: llm`: packaged prompt name, or a path to a jinja2 file."
        )
        nlg_examples: int = Field(
            6, ge=0, le=60, description="`nlg: llm`: IARD user utterances shown as phrasing examples."
        )
        nlg_prompt: str = Field(
            "nlg.jinja2", description="`nlg: llm`: packaged prompt name, or a path to a jinja2 file."
        )
        style: str | None = Field(
            None, description="`nlg: llm`: speaking style or emotion, e.g. 'impatient' (none: neutral)."
        )

    params: Params
    #: May call models (through `ctx.llms`); the roles actually used are `llm_roles(params)`.
    needs_llm: ClassVar[bool] = True

    @classmethod
    def llm_roles(cls, params: Params) -> list[str]:
        """The model role, when the NLU or the NLG is a language model; none otherwise."""
        return [params.role] if "llm" in (params.nlu, params.nlg) else []

    def __init__(self, params: Params, ctx: BuildContext) -> None:
        super().__init__(params, ctx)
        self.nlu: NLU = self._nlu()
        self.nlg: NLG = self._nlg()
        self._rng = random.Random(self.seed)
        self._model: InteractionModel | None = None
        self._persona: dict[str, Any] = {}

    def _nlu(self) -> NLU:
        p = self.params
        if p.nlu == "rules":
            return RuleNLU(self.domain)
        return LLMNLU(
            self.role_llm(p.role, "nlu: llm"),
            self.domain,
            self.seed,
            examples=p.nlu_examples,
            constrain=p.constrain,
            temperature=p.nlu_temperature,
            prompt=p.nlu_prompt,
        )

    def _nlg(self) -> NLG:
        p = self.params
        if p.nlg == "templates":
            templates = load_templates(self._template_set())
            rng = random.Random(derive_seed(self.seed, "nlg"))
            return TemplateNLG(templates, rng, DomainWords.of(self.domain))
        return LLMNLG(
            self.role_llm(p.role, "nlg: llm"),
            self.seed,
            style=p.style,
            examples=p.nlg_examples,
            prompt=p.nlg_prompt,
            words=prompt_words(self.domain),
        )

    def _template_set(self) -> str:
        """The template set asked for; when left unset, the domain's own, else the generic one."""
        if "templates" in self.params.model_fields_set:
            return self.params.templates
        return domain_template_set(self.domain)

    async def start(self, user: SimulatedUser, greeting: CRSReply | None = None) -> UserTurn:
        """Open the dialogue (or answer the CRS's opening)."""
        preferences = PreferenceModel(
            user.profile,
            user.need,
            self.domain,
            accept_threshold=self.params.accept_threshold,
            liked_rating=self.params.liked_rating,
            shrinkage=self.params.shrinkage,
        )
        self._model = InteractionModel(
            user,
            self.domain,
            preferences,
            self._rng,
            patience=self.params.patience,
            opening_disclosure_prob=self.params.opening_disclosure_prob,
        )
        self._persona = user.profile.persona
        understood = await self.nlu.understand(greeting.text, []) if greeting is not None else None
        crs_acts = understood.acts if understood is not None else None
        decision = self._model.opening(crs_acts)
        return await self._turn(self._model, decision, understood, greeting)

    async def respond(self, reply: CRSReply) -> UserTurn:
        """React to a CRS reply, understood from `reply.text` alone."""
        if self._model is None:
            raise RuntimeError("respond() called before start()")
        understood = await self.nlu.understand(reply.text, self._model.items_hint())
        decision = self._model.respond(understood.acts, setback(reply.text))
        return await self._turn(self._model, decision, understood, reply)

    async def _turn(
        self,
        model: InteractionModel,
        decision: PolicyTurn,
        understood: NLUResult | None,
        reply: CRSReply | None,
    ) -> UserTurn:
        crs_acts = understood.acts if understood is not None else []
        crs_text = reply.text if reply is not None else None
        context = NLGContext(
            focus_title=model.focus_title(),
            topic_title=model.title(model.topic),
            acknowledge=decision.acknowledge,
            crs_intents=frozenset(a.intent for a in crs_acts),
            crs_text=crs_text,
            persona=self._persona,
            annotations=decision.annotations,
        )
        annotations: dict[str, Any] = {
            "understood": format_acts(crs_acts),
            **(understood.notes if understood is not None else {}),
            "agenda": model.agenda.as_strings(),
            **decision.annotations,
        }
        option = _option(decision, reply.options) if reply is not None else None
        if option is not None:
            text = option.label
        else:
            generated = await self.nlg.realize(decision.acts, context)
            annotations.update(generated.notes)
            text = generated.text
        model.after_utterance(decision.acts)
        outcome = decision.annotations.get("outcome") if decision.end else None
        return UserTurn(
            text=text,
            acts=list(decision.acts),
            end=decision.end,
            annotations=annotations,
            option=option,
            end_reason=outcome if isinstance(outcome, str) else None,
        )


def _option(decision: PolicyTurn, options: list[ReplyOption]) -> ReplyOption | None:
    """The offered option that says the turn: after relaxing a constraint, one that gives it up;
    otherwise one that says the turn's act (`crsim.sim.options`)."""
    relaxed = decision.annotations.get("relaxed")
    if isinstance(relaxed, dict):
        values = [v for vs in relaxed.values() for v in vs if isinstance(v, str)]
        return option_dropping(values, options)
    return option_for_turn(decision.acts, options)
