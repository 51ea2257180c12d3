"""The GCDF1 evaluator's thresholds and switches, read from the YAML file the reference uses.

Field names follow that file (`multiwoz_user_evaluator.yaml`), including its spelling of
`max_repetions_matched`, so an existing configuration loads unchanged; unknown keys are errors.
Defaults are the values of the published MultiWOZ 2.1 configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.core.errors import ConfigError
from crsim.core.yaml_files import describe_yaml_error, load_yaml

_PROVISION_DOMAINS = ["taxi", "restaurant", "hotel", "attraction", "train"]
_AUTO_REF = ["restaurant-ref", "hotel-ref", "train-ref", "train-Ref", "ref"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class RequestSystemChecks(_Section):
    """Which system failures excuse a repeated request."""

    validate_nlu: bool = Field(True, description="The system NLU missed the earlier request.")
    validate_policy: bool = Field(True, description="The system had not answered the earlier request.")


class RequestRepetitions(_Section):
    count_fp: bool = Field(True, description="Each repeated request counts in the hypothesis.")
    system_behaviour: RequestSystemChecks = RequestSystemChecks()
    repeats_to_penalty: int = Field(3, ge=0, description="Excused repetitions per request.")


class MissingRequests(_Section):
    system_provision: bool = Field(True, description="Goal requests the system answered unasked count.")
    provision_domains: list[str] = Field(default_factory=lambda: list(_PROVISION_DOMAINS))


class RequestsConfig(_Section):
    """R-GCDF1 settings (`rgcd_f1` in the file)."""

    repetitions_warning: int = Field(4, ge=0, description="Log requests repeated more often than this.")
    repetitions: RequestRepetitions = RequestRepetitions()
    missing_requests: MissingRequests = MissingRequests()
    auto_add_to_ref: list[str] = Field(
        default_factory=lambda: list(_AUTO_REF),
        description="Requests added to the reference when the user asks them in a transactional domain.",
    )


class ConstraintSystemBehaviours(_Section):
    """System behaviours that excuse a repeated in-goal constraint."""

    requests: bool = True
    booking_failure_response: bool = True
    no_offers: bool = True
    nlu: bool = True


class ConstraintUserBehaviours(_Section):
    """User behaviours that excuse a repeated in-goal constraint."""

    offer_checks: bool = True
    repeats_while_requesting_info: bool = True
    repeats_while_booking: bool = True
    repeats_when_answering_request: bool = True
    proposes_multiple_domains: bool = True


class ConstraintRepetitions(_Section):
    count_fp: bool = Field(True, description="Each repeated constraint counts in the hypothesis.")
    max_repetitions: int = Field(6, ge=0, description="Excused repetitions per constraint.")
    sys_behaviours: ConstraintSystemBehaviours = ConstraintSystemBehaviours()
    user_behaviours: ConstraintUserBehaviours = ConstraintUserBehaviours()


class NotInGoalChecks(_Section):
    """System turns that make a constraint outside the goal legitimate."""

    offers: bool = True
    requests: bool = False
    booking_failure_response: bool = True
    booking_request_response: bool = True
    recommendations: bool = True
    sys_context_size: int = Field(2, ge=1, description="System turns searched for offers and failures.")


class AutoMatching(_Section):
    max_repetitions_matched: int = Field(6, ge=0, alias="max_repetions_matched")
    slots: dict[str, list[str]] = Field(default_factory=lambda: {"taxi": ["departure", "destination"]})
    vals: list[str] = Field(default_factory=lambda: ["dontcare"])
    slot_value_pairs: dict[str, dict[str, list[str]]] = Field(default_factory=dict)


class NotInGoalConfig(_Section):
    sys_checks: NotInGoalChecks = NotInGoalChecks()
    max_repetitions: int = Field(6, ge=0)
    auto_matching: AutoMatching = AutoMatching()
    max_user_responses: int = Field(
        6, ge=0, description="Answers to system questions outside the goal excused per constraint."
    )


class EmptyDbResult(_Section):
    compensate_request: bool = True
    compensate_missed_constraints: bool = True


class ValueMatching(_Section):
    use_fuzzy_match: bool = True
    fuzzy_match_threshold: float = Field(0.9, ge=0.0, le=1.0)
    use_canonical_map: bool = True


class MultipleValues(_Section):
    merge: bool = False


class ConstraintsConfig(_Section):
    """I-GCDF1 settings (`igcd_f1` in the file)."""

    repetitions_warning: int = Field(4, ge=0)
    repetitions: ConstraintRepetitions = ConstraintRepetitions()
    constraints_not_in_goal: NotInGoalConfig = NotInGoalConfig()
    empty_db_result: EmptyDbResult = EmptyDbResult()
    compensate_preemption: bool = True
    value_matching: ValueMatching = ValueMatching()
    multiple_values_for_slot_in_turn: MultipleValues = MultipleValues()


class Gcdf1Config(_Section):
    """Everything that shapes a GCDF1 score; `use_lowercase` applies to both metrics."""

    rgcd_f1: RequestsConfig = RequestsConfig()
    igcd_f1: ConstraintsConfig = ConstraintsConfig()
    use_lowercase: bool = True


def load_config(path: str | Path) -> Gcdf1Config:
    """Read a GCDF1 YAML configuration; `ConfigError` names the file and the offending key."""
    source = Path(path)
    try:
        raw: Any = load_yaml(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the GCDF1 config ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: {describe_yaml_error(exc)}") from None
    return parse_config(raw if raw is not None else {}, str(source))


def parse_config(raw: Any, source: str = "config") -> Gcdf1Config:
    """Validate a configuration mapping; errors name the key path, e.g. `igcd_f1.repetitions.count_fp`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        return Gcdf1Config.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{source}: {where}: {err['msg']}") from None
