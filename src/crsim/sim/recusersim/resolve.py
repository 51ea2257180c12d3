"""Conflict resolution of a sampled RecUserSim profile: the `annotator` role is shown every attribute
with its allowed values and the user's wish, proposes changes, and those that are valid are applied;
everything proposed is recorded."""

from __future__ import annotations

from typing import Any

from crsim.core.seeding import derive_seed
from crsim.language.domain_cues import prompt_nouns
from crsim.llm.client import LLM
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import Structured, generate_json
from crsim.llm.types import GenerationConfig
from crsim.llm.types import system as system_message
from crsim.llm.types import user as user_message
from crsim.model.domain import Domain
from crsim.sim.recusersim.params import RecUserSimParams
from crsim.sim.recusersim.profile import PARTS, REMOVE, Profile, ProfileDictionary, apply_fixes, fix_schema
from crsim.sim.shared.conversation import NeedView

PROMPTS = "crsim.sim.recusersim.prompts"


async def resolve_conflicts(
    llm: LLM,
    dictionary: ProfileDictionary,
    domain: Domain,
    params: RecUserSimParams,
    need: NeedView,
    sampled: Profile,
) -> tuple[Profile, dict[str, Any], Structured[Any]]:
    """The profile with the valid proposed changes applied, the record of the resolution, and the
    model's answer (for counting the calls)."""
    template = load_template(PROMPTS, "resolve.j2")
    variables = {
        "domain": domain.name,
        "lines": _attribute_lines(dictionary, sampled),
        "wish": "; ".join(f"{c.slot}: {' or '.join(c.values)}" for c in need.constraints)
        or "nothing specific",
        "contradiction": prompt_nouns(domain)["contradiction"],
    }
    messages = [
        system_message(render(template, part="system", **variables)),
        user_message(render(template, part="task", **variables)),
    ]
    schema = fix_schema(dictionary, params.max_changes, params.justification_chars)
    config = GenerationConfig(
        temperature=params.json_temperature,
        max_tokens=params.json_max_tokens * 2,
        seed=derive_seed(params.profile_seed, "recusersim-resolve", sampled.model_dump_json()) % 2**31,
    )
    answer = await generate_json(llm, messages, schema, config)
    if answer.value is None:
        return sampled, {"error": answer.error, "raw": answer.raw, "changes": []}, answer
    proposals = [c.model_dump() for c in answer.value.changes]  # type: ignore[attr-defined]
    fixed, record = apply_fixes(sampled, dictionary, proposals)
    resolution = {
        "changes": [r.model_dump() for r in record],
        "changed": [r.attribute for r in record if r.applied],
    }
    return fixed, resolution, answer


def _attribute_lines(dictionary: ProfileDictionary, sampled: Profile) -> list[dict[str, Any]]:
    """Every attribute of the dictionary: its path, the sampled value (or REMOVE) and the values allowed."""
    lines = []
    for part in PARTS:
        for key, attribute in dictionary.part(part).items():
            held = sampled.values_of(f"{part}.{key}")
            lines.append(
                {
                    "path": f"{part}.{key}",
                    "value": ", ".join(held) or REMOVE,
                    "allowed": [*attribute.values, REMOVE],
                }
            )
    return lines
