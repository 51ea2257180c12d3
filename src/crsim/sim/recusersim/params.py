"""The `recusersim` simulator's arguments, each checked when the config is validated: profile
dictionaries, action and refinement-tool names must exist, and the length thresholds must be ordered."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator

from crsim.core.errors import ConfigError
from crsim.core.plugins import Params as BaseParams
from crsim.sim.recusersim.actions import DEFAULT_ACTIONS, get_actions
from crsim.sim.recusersim.profile import load_dictionary
from crsim.sim.recusersim.refine import DEFAULT_TOOLS, get_tool


def _dictionary_check(ref: str) -> str:
    try:
        load_dictionary(ref)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return ref


def _actions_check(names: list[str]) -> list[str]:
    try:
        get_actions(names, "actions")
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return names


def _tools_check(names: list[str]) -> list[str]:
    for i, name in enumerate(names):
        try:
            get_tool(name, f"refinements[{i}]")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    if len(set(names)) != len(names):
        raise ValueError("a refinement tool is listed twice")
    return names


class RecUserSimParams(BaseParams):
    role: str = Field(
        "user", min_length=1, description="Model role of ratings, actions, replies and refinement."
    )
    profile_role: str = Field(
        "annotator", min_length=1, description="Model role of profile conflict resolution."
    )
    profile: Annotated[str, AfterValidator(_dictionary_check)] = Field(
        "movies",
        description="Profile dictionary: a shipped one (movies, restaurants) or a YAML file path; left "
        "unset, the domain's own (its `profiles`).",
    )
    profile_seed: int = Field(
        0,
        description="Profiles are drawn from (profile_seed, user id): one user, one profile for all CRSs.",
    )
    resolve_conflicts: bool = Field(
        True, description="Let the LLM fix contradictions in the sampled profile."
    )
    max_changes: int = Field(3, ge=1, le=10, description="Most profile changes one resolution may propose.")
    actions: Annotated[list[str], AfterValidator(_actions_check)] = Field(
        default_factory=lambda: list(DEFAULT_ACTIONS),
        min_length=1,
        description="Registered user actions to choose from (crsim.sim.recusersim.actions).",
    )
    opening_actions: Annotated[list[str], AfterValidator(_actions_check)] = Field(
        default_factory=lambda: ["request_recommendation"],
        min_length=1,
        description="Actions of the first message (nothing has been said to rate yet; no LLM call).",
    )
    max_actions: int = Field(3, ge=1, le=5, description="Most actions chosen in one turn.")
    action_reason: bool = Field(
        True,
        description="The action answer starts with a one-sentence reason; off for very small models, "
        "which can fill the reason with junk until the token cap cuts the JSON.",
    )
    action_guard: bool = Field(
        True,
        description="Correct the LLM's action choice by the rules of guard.py (end at the turn budget or "
        "when satisfied, ask about open requested details, no ending before a recommendation); "
        "each correction is recorded with the LLM's own choice.",
    )
    turn_budget: int | None = Field(
        None,
        ge=1,
        description="Messages the user means to write: the action prompt shows how many are left and, "
        "with action_guard, the user ends at the last one. None: no budget (set it to the run's "
        "max_turns to end within it).",
    )
    excitation: bool = Field(
        True, description="Ask whether items outside the known preferences reveal new ones."
    )
    refinements: Annotated[list[str], AfterValidator(_tools_check)] = Field(
        default_factory=lambda: list(DEFAULT_TOOLS),
        description="Refinement tools, applied in this order; [] switches refinement off.",
    )
    concurrent_judges: bool = Field(
        True,
        description="All refinement judges look at the draft at once; a tool whose text an earlier "
        "refiner changed is judged again. False: strictly one tool after the other.",
    )
    short_max: int = Field(20, ge=1, description="Most words of a short message (length judge and style).")
    medium_max: int = Field(40, ge=2, description="Most words of a medium message.")
    low_richness_max: int = Field(2, ge=0, description="Most key points of a low-information message.")
    temperature: float | None = Field(
        None,
        ge=0.0,
        le=2.0,
        description="Sampling temperature of replies and rewrites (default: the role's).",
    )
    json_temperature: float | None = Field(
        None,
        ge=0.0,
        le=2.0,
        description="Sampling temperature of JSON answers: ratings, actions, judges (default: the role's).",
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Token cap of replies and rewrites (default: the role's)."
    )
    json_max_tokens: int = Field(
        160, ge=16, description="Token cap of JSON answers (ratings, actions, judges)."
    )
    justification_chars: int = Field(
        160, ge=20, description="Longest justification or reason in JSON answers."
    )
    max_history_turns: int | None = Field(
        None, ge=1, description="Only the last N turns go into prompts, for small context windows; None: all."
    )
    plot_chars: int = Field(
        160, ge=0, description="Characters of a recommended item's plot shown in prompts."
    )
    include_preferences: bool = Field(
        True, description="Show the user's liked/disliked slot values from the population."
    )
    record_timing: bool = Field(
        False,
        description="Record wall-clock seconds per turn and step in the annotations "
        "(records then differ between runs).",
    )

    @field_validator("medium_max")
    @classmethod
    def _above_short(cls, value: int, info: Any) -> int:
        short = info.data.get("short_max")
        if short is not None and value <= short:
            raise ValueError(f"medium_max ({value}) must be above short_max ({short})")
        return value
