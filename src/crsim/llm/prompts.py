"""Prompt templates: jinja2 files shipped inside crsim packages, or any file a config names.

Undefined variables are errors (a misspelt variable must not silently render as empty text).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
from pydantic import AfterValidator

from crsim.core.errors import ConfigError


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True
    )


@cache
def load_template(package: str, name: str) -> jinja2.Template:
    """`name` is a template file in `package`'s resources, or a path to a template file."""
    path = Path(name)
    if path.suffix and path.exists():
        source = path.read_text(encoding="utf-8")
    else:
        resource = files(package).joinpath(name)
        if not resource.is_file():
            raise ConfigError(f"prompt template {name!r}: neither a file nor a template shipped in {package}")
        source = resource.read_text(encoding="utf-8")
    try:
        return _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"prompt template {name!r}, line {exc.lineno}: {exc.message}") from None


def render(template: jinja2.Template, **variables: Any) -> str:
    try:
        return template.render(**variables).strip()
    except jinja2.UndefinedError as exc:
        raise ConfigError(f"prompt template: {exc.message}") from None


def template_check(package: str) -> AfterValidator:
    """For component Params: `Annotated[str, template_check(package)]` names a template of `package`
    (or a file), loaded when the arguments are validated, so a missing or broken one fails at config time."""

    def check(name: str) -> str:
        try:
            load_template(package, name)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return name

    return AfterValidator(check)
