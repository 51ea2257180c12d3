"""Rubrics: the shipped ones match their papers' aspects and scales, user files are validated with
errors that name the file, the aspect and the level, and the answer schema follows the rubric."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from crsim.core.errors import ConfigError
from crsim.eval.judge.judge import answer_schema
from crsim.eval.judge.rubric import load_rubric, parse_rubric, shipped_rubrics

GOOD: dict[str, Any] = {
    "name": "mine",
    "description": "Judges something.",
    "aspects": {
        "helpfulness": {
            "description": "How much the CRS helped.",
            "scale": [1, 3],
            "levels": {1: "not at all", 2: "somewhat", 3: "a lot"},
        }
    },
}


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _changed(**aspect: Any) -> dict[str, Any]:
    spec = {**GOOD["aspects"]["helpfulness"], **aspect}
    return {**GOOD, "aspects": {"helpfulness": spec}}


def test_the_four_rubrics_are_shipped() -> None:
    assert shipped_rubrics() == ["crsarena7", "pepper3", "quality5", "recusersim3"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "quality5",
            {
                a: ("dialogue", (1, 5))
                for a in (
                    "recommendation_relevance",
                    "communication_style",
                    "fluency",
                    "conversational_flow",
                    "overall_satisfaction",
                )
            },
        ),
        ("pepper3", {a: ("dialogue", (1, 5)) for a in ("proactiveness", "coherence", "personalization")}),
        (
            "recusersim3",
            {
                "language_quality": ("dialogue", (1, 5)),
                "action_quality": ("dialogue", (1, 5)),
                "recommendation_objective": ("dialogue", (1, 5)),
                "recommendation_modifier": ("dialogue", (-1, 1)),
            },
        ),
        (
            "crsarena7",
            {
                "relevance": ("turn", (0, 3)),
                "interestingness": ("turn", (0, 2)),
                "understanding": ("dialogue", (0, 2)),
                "task_completion": ("dialogue", (0, 2)),
                "interest_arousal": ("dialogue", (0, 2)),
                "efficiency": ("dialogue", (0, 1)),
                "overall": ("dialogue", (0, 4)),
            },
        ),
    ],
)
def test_shipped_rubrics_have_the_papers_aspects_and_scales(
    name: str, expected: dict[str, tuple[str, tuple[int, int]]]
) -> None:
    rubric = load_rubric(name)
    assert rubric.name == name and rubric.source
    assert {a.name: (a.level, a.scale) for a in rubric.aspects.values()} == expected
    for aspect in rubric.aspects.values():
        described = aspect.described_levels()
        assert [score for score, _ in described] == aspect.scores
        assert all(len(text) > 10 for _, text in described)
        assert len({text for _, text in described}) == len(described)  # every level worded differently


def test_rubric_specific_settings() -> None:
    assert load_rubric("pepper3").user_preferences == "required"
    assert load_rubric("recusersim3").user_preferences == "optional"
    assert load_rubric("quality5").user_preferences == "none"
    derived = load_rubric("recusersim3").derived["recommendation_quality"]
    assert derived.sum == ["recommendation_objective", "recommendation_modifier"]
    assert load_rubric("recusersim3").aspect_names[-1] == "recommendation_quality"


def test_a_user_rubric_file_loads_by_path(tmp_path: Path) -> None:
    rubric = load_rubric(str(_write(tmp_path, GOOD)))
    assert rubric.name == "mine"
    assert rubric.aspects["helpfulness"].described_levels() == [
        (1, "not at all"),
        (2, "somewhat"),
        (3, "a lot"),
    ]
    assert load_rubric(_write(tmp_path, GOOD)).name == "mine"  # a Path works too


def test_levels_given_as_quoted_numbers_are_read_as_integers(tmp_path: Path) -> None:
    path = _write(tmp_path, _changed(levels={"1": "no", "2": "some", "3": "yes"}))
    assert load_rubric(str(path)).aspects["helpfulness"].scores == [1, 2, 3]


def test_a_missing_level_names_the_file_the_aspect_and_the_level(tmp_path: Path) -> None:
    path = _write(tmp_path, _changed(levels={1: "not at all", 3: "a lot"}))
    with pytest.raises(ConfigError) as caught:
        load_rubric(str(path))
    message = str(caught.value)
    assert str(path) in message and "aspect 'helpfulness'" in message and "level 2 is missing" in message


def test_an_empty_level_description_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, _changed(levels={1: "not at all", 2: "   ", 3: "a lot"}))
    with pytest.raises(ConfigError, match=r"aspect 'helpfulness'.*level 2"):
        load_rubric(str(path))


def test_a_level_outside_the_scale_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, _changed(levels={1: "a", 2: "b", 3: "c", 4: "d"}))
    with pytest.raises(ConfigError, match=r"aspect 'helpfulness'.*level 4 is outside the scale \[1, 3\]"):
        load_rubric(str(path))


def test_an_unknown_field_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, _changed(weight=2))
    with pytest.raises(ConfigError, match=r"rubric\.yaml: aspect 'helpfulness': unknown field 'weight'"):
        load_rubric(str(path))
    top = _write(tmp_path, {**GOOD, "version": 3})
    with pytest.raises(ConfigError, match=r"unknown field 'version'"):
        load_rubric(str(top))


@pytest.mark.parametrize(
    ("scale", "problem"),
    [
        ([3, 1], r"the lowest score must be below the highest"),
        ([1, 1], r"the lowest score must be below the highest"),
        ([0, 20], r"at most 11 levels"),
        ([1.5, 3], r"field 'scale\.0'"),
        (["low", "high"], r"field 'scale\.0'"),
        ([1, 2, 3], r"field 'scale'"),
    ],
)
def test_a_bad_scale_is_an_error(tmp_path: Path, scale: list[Any], problem: str) -> None:
    path = _write(tmp_path, _changed(scale=scale))
    with pytest.raises(ConfigError, match=rf"rubric\.yaml: aspect 'helpfulness'.*{problem}"):
        load_rubric(str(path))


def test_a_bad_level_kind_and_missing_fields_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"aspect 'helpfulness', field 'level'"):
        load_rubric(str(_write(tmp_path, _changed(level="utterance"))))
    without_scale = {k: v for k, v in GOOD["aspects"]["helpfulness"].items() if k != "scale"}
    with pytest.raises(ConfigError, match=r"aspect 'helpfulness': field 'scale' is missing"):
        load_rubric(str(_write(tmp_path, {**GOOD, "aspects": {"helpfulness": without_scale}})))
    with pytest.raises(ConfigError, match=r"field 'aspects' is missing"):
        load_rubric(str(_write(tmp_path, {"name": "x", "description": "y"})))


def test_bad_names_and_derived_parts_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"rubric name 'My Rubric'"):
        load_rubric(str(_write(tmp_path, {**GOOD, "name": "My Rubric"})))
    derived = {"total": {"description": "sum", "sum": ["helpfulness", "charm"]}}
    with pytest.raises(ConfigError, match=r"derived aspect 'total': 'charm' is not an aspect"):
        load_rubric(str(_write(tmp_path, {**GOOD, "derived": derived})))


def test_a_file_that_is_not_a_rubric_is_an_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.yaml: not valid YAML"):
        load_rubric(str(broken))
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"list\.yaml: expected a mapping"):
        load_rubric(str(listed))
    with pytest.raises(ConfigError, match=r"rubric 'nosuch': neither a shipped rubric \(crsarena7, pepper3"):
        load_rubric("nosuch")


def test_a_level_text_yaml_reads_as_a_boolean_gets_a_hint() -> None:
    with pytest.raises(
        ConfigError, match=r"aspect 'a', level 1: Input should be a valid string \(YAML reads yes/no"
    ):
        parse_rubric(
            "name: r\ndescription: d\naspects:\n  a: {description: x, scale: [0, 1], levels: {0: a, 1: yes}}",
            "f",
        )


def test_parse_rubric_names_its_source() -> None:
    with pytest.raises(ConfigError, match=r"rubric file inline: aspect 'a': level 0 is missing"):
        parse_rubric(
            "name: r\ndescription: d\naspects:\n  a: {description: x, scale: [0, 1], levels: {1: fine}}\n",
            "inline",
        )


def test_the_answer_schema_orders_justification_first_and_enumerates_the_levels() -> None:
    aspect = load_rubric("recusersim3").aspects["recommendation_modifier"]
    schema = answer_schema(aspect).model_json_schema()
    assert list(schema["properties"]) == ["justification", "score"]
    assert schema["properties"]["score"]["enum"] == [-1, 0, 1]
    assert schema["properties"]["score"]["type"] == "integer"
    assert schema["required"] == ["justification", "score"]
    assert schema["additionalProperties"] is False
    assert "maxLength" not in schema["properties"]["justification"]
    bounded = answer_schema(aspect, 120).model_json_schema()
    assert bounded["properties"]["justification"]["maxLength"] == 120
    # the model validates against the enum: a score outside the levels is refused
    model = answer_schema(aspect)
    assert model.model_validate_json('{"justification": "fine", "score": -1}').score == -1
    with pytest.raises(ValidationError):
        model.model_validate_json('{"justification": "fine", "score": 2}')
    with pytest.raises(ValidationError):
        model.model_validate_json(json.dumps({"justification": "fine", "score": 1, "extra": 1}))
