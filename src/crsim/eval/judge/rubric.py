"""Grading rubrics for LLM judges: named aspects, each with an integer scale and a description of
every level, loaded from YAML files shipped in `crsim.eval.judge.rubrics` or from a user's file.

A rubric file looks like this (every field but `aspects` has a default)::

    name: my_rubric                      # the evaluator's label; lower case, digits, underscores
    description: What the rubric judges and from whose point of view.
    source: Where the aspects come from (a paper), for the record.
    user_preferences: none               # none | optional | required (see below)
    aspects:
      relevance:
        description: What this aspect is about.
        level: dialogue                  # dialogue (the whole conversation) or turn (each CRS reply)
        scale: [1, 5]                    # lowest and highest score, integers, every one in between used
        levels:
          1: what a 1 means
          2: ...                         # one description per level, none left out
        without_recommendation: 1        # optional: the score when nothing was recommended (below)
        lowest_means_no_questions: false # optional: flag the lowest score when the CRS asked (below)
    derived:                             # optional: aspects computed from judged ones
      total:
        description: ...
        sum: [relevance, other_aspect]   # the value is the sum of the parts' values

`without_recommendation` marks an aspect that grades recommendations: when the CRS recommended
nothing (in the dialogue, or in the graded reply for a turn-level aspect), the aspect's score is
this level whatever the judge answered; the judge is still asked, and its answer is kept in the
explanation beside the rule that replaced it (`crsim.eval.judge.judge.RubricJudge.check`).

`lowest_means_no_questions` marks an aspect whose lowest level says the CRS took no initiative:
a lowest score for a CRS that asked questions is flagged in the explanation (the score is kept).

`user_preferences` says whether the judge's prompt shows the user's general preferences
(`required`: a dialogue without them is not applicable). Anything malformed (an unknown field,
a level without a description, a bad scale) is a `ConfigError` naming the file, the aspect and
the problem, so a rubric fails when it is loaded, never half-way through an evaluation.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from crsim.core.errors import ConfigError
from crsim.core.plugins import Registry
from crsim.core.yaml_files import describe_yaml_error, load_yaml

#: Package holding the shipped rubric files (`<name>.yaml`).
RUBRICS = "crsim.eval.judge.rubrics"
#: Most levels one scale may have: longer scales are not graded reliably by judges.
MAX_LEVELS = 11
NAME = re.compile(r"^[a-z][a-z0-9_]*$")

Text = Annotated[str, Field(min_length=1)]
AspectLevel = Literal["dialogue", "turn"]


def _check_name(value: str, what: str) -> str:
    if not NAME.match(value):
        raise ValueError(f"{what} {value!r} must be lower case letters, digits and underscores")
    return value


class Aspect(BaseModel):
    """One judged aspect: what it is, whether it is judged per dialogue or per CRS turn, its integer
    scale (lowest, highest) and a description of every level on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: Text
    level: AspectLevel = "dialogue"
    scale: tuple[StrictInt, StrictInt]
    levels: dict[StrictInt, Text]
    without_recommendation: StrictInt | None = None
    lowest_means_no_questions: bool = False

    @field_validator("description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the description is empty")
        return value.strip()

    @field_validator("levels", mode="before")
    @classmethod
    def _integer_keys(cls, value: Any) -> Any:
        """YAML reads `1:` as an int and `"1":` as a string; both name level 1."""
        if isinstance(value, dict):
            return {
                int(k) if isinstance(k, str) and re.fullmatch(r"-?\d+", k.strip()) else k: v
                for k, v in value.items()
            }
        return value

    @model_validator(mode="after")
    def _every_level_described(self) -> Aspect:
        low, high = self.scale
        if low >= high:
            raise ValueError(f"scale [{low}, {high}]: the lowest score must be below the highest")
        if high - low + 1 > MAX_LEVELS:
            raise ValueError(f"scale [{low}, {high}]: at most {MAX_LEVELS} levels")
        for level in range(low, high + 1):
            text = self.levels.get(level)
            if text is None:
                raise ValueError(
                    f"level {level} is missing (scale [{low}, {high}] needs every level described)"
                )
            if not text.strip():
                raise ValueError(f"level {level} has an empty description")
        extra = sorted(k for k in self.levels if not low <= k <= high)
        if extra:
            raise ValueError(f"level {extra[0]} is outside the scale [{low}, {high}]")
        rule = self.without_recommendation
        if rule is not None and not low <= rule <= high:
            raise ValueError(f"without_recommendation {rule} is outside the scale [{low}, {high}]")
        return self

    @property
    def scores(self) -> list[int]:
        """The allowed scores, lowest first."""
        return list(range(self.scale[0], self.scale[1] + 1))

    @property
    def title(self) -> str:
        """A readable name: `task_completion` -> "task completion"."""
        return self.name.replace("_", " ")

    def described_levels(self) -> list[tuple[int, str]]:
        return [(level, self.levels[level].strip()) for level in self.scores]


class Derived(BaseModel):
    """An aspect computed from judged ones: the sum of the parts' values (None if one is missing)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: Text
    sum: list[str] = Field(min_length=2)


class Rubric(BaseModel):
    """A named set of aspects a judge scores; see the module docstring for the file format."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: Text
    source: str = ""
    user_preferences: Literal["none", "optional", "required"] = "none"
    aspects: dict[str, Aspect] = Field(min_length=1)
    derived: dict[str, Derived] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value, "rubric name")

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        """Aspects are keyed by name in the file; copy the key into each aspect."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key in ("aspects", "derived"):
            group = data.get(key)
            if isinstance(group, dict):
                data[key] = {
                    name: {**spec, "name": name} if isinstance(spec, dict) and "name" not in spec else spec
                    for name, spec in group.items()
                }
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Rubric:
        for name, aspect in self.aspects.items():
            _check_name(name, "aspect name")
            if aspect.name != name:
                raise ValueError(f"aspect {name!r}: its `name` field says {aspect.name!r}")
        for name, derived in self.derived.items():
            _check_name(name, "derived aspect name")
            if name in self.aspects:
                raise ValueError(f"derived aspect {name!r}: the name is already a judged aspect")
            unknown = [part for part in derived.sum if part not in self.aspects]
            if unknown:
                raise ValueError(f"derived aspect {name!r}: {unknown[0]!r} is not an aspect of this rubric")
            if len({self.aspects[part].level for part in derived.sum}) > 1:
                raise ValueError(f"derived aspect {name!r}: its parts must all be dialogue or all turn level")
        return self

    @property
    def aspect_names(self) -> list[str]:
        """Judged aspects, then derived ones, in file order."""
        return [*self.aspects, *self.derived]

    def level_of(self, name: str) -> AspectLevel:
        if name in self.aspects:
            return self.aspects[name].level
        return self.aspects[self.derived[name].sum[0]].level


#: The named rubrics: the `crsim.rubric` entry points, each naming the package whose `<name>.yaml`
#: resource is the rubric (crsim's own, in crsim.eval.judge.rubrics, are declared in pyproject.toml;
#: a plug-in ships its files in its own package and declares them the same way).
rubric_catalogue: Registry[ModuleType] = Registry("rubric")


def shipped_rubrics() -> list[str]:
    """Names of the rubrics a config may name (crsim's and plug-ins'), sorted."""
    return rubric_catalogue.names()


def load_rubric(ref: str | Path) -> Rubric:
    """A named rubric (`quality5`) or a rubric file by path; errors are `ConfigError`s."""
    text = str(ref)
    if isinstance(ref, str) and NAME.match(text) and text in rubric_catalogue:
        return _shipped(text)
    path = Path(ref)
    if path.is_file():
        return parse_rubric(_read(path), str(path))
    known = ", ".join(shipped_rubrics())
    raise ConfigError(f"rubric {text!r}: neither a shipped rubric ({known}) nor a file")


@cache
def _shipped(name: str) -> Rubric:
    package = rubric_catalogue.get(name)
    if not isinstance(package, ModuleType):
        raise ConfigError(f"entry point crsim.rubric {name}: expected a package holding {name}.yaml")
    resource = files(package).joinpath(f"{name}.yaml")
    if not resource.is_file():
        raise ConfigError(f"entry point crsim.rubric {name}: {package.__name__} holds no {name}.yaml")
    return parse_rubric(resource.read_text(encoding="utf-8"), f"{package.__name__}/{name}.yaml")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"rubric file {path}: not readable ({exc})") from None


def parse_rubric(source: str, where: str) -> Rubric:
    """Validate a rubric's YAML text; `where` (a file name) prefixes every error."""
    try:
        data = load_yaml(source)
    except yaml.YAMLError as exc:
        raise ConfigError(f"rubric file {where}: {describe_yaml_error(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"rubric file {where}: expected a mapping with name, description and aspects")
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"rubric file {where}: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    """The first validation problem as "aspect 'x': level 3 is missing" or "field 'y': ..."."""
    err = exc.errors()[0]
    loc = [str(part) for part in err["loc"]]
    message = str(err["msg"]).removeprefix("Value error, ")
    if isinstance(err.get("input"), bool) and err["type"] == "string_type":
        message += " (YAML reads yes/no/on/off/true/false as booleans: quote the text)"
    where: list[str] = []
    if len(loc) >= 2 and loc[0] in ("aspects", "derived"):
        where.append(f"{'aspect' if loc[0] == 'aspects' else 'derived aspect'} {loc[1]!r}")
        loc = loc[2:]
    if loc and loc[0] == "levels" and len(loc) >= 2:
        where.append(f"level {loc[1]}")
        loc = loc[2:]
    if err["type"] == "extra_forbidden" and loc:
        message = f"unknown field {loc[-1]!r}"
    elif err["type"] == "missing" and loc:
        message = f"field {'.'.join(loc)!r} is missing"
    elif loc:
        where.append(f"field {'.'.join(loc)!r}")
    return f"{', '.join(where)}: {message}" if where else message
