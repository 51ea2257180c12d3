"""`crsim init`: a commented starter config that runs as it is, for a study to edit."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from crsim.cli._support import atomic_output, console, user_errors
from crsim.core.errors import CrsimError

app = typer.Typer(add_completion=False)

STARTER = """\
# A crsim experiment: simulated users talk to each CRS, and the dialogues are scored.
# Run it with `crsim run {file}`; options such as --users 10 or --out DIR override it.
# Every field has a default: `crsim schema --kind config` lists them all, docs/ explains them.

{name_line}# the run folder is runs/<name>-<timestamp> unless --out is given
seed: 42                    # same seed, same users and dialogues (rule-based components)
{domain_line}# the items: movies, restaurants, hotels, or a domain file (docs/domains.md)

users:
  size: 50                  # simulated users drawn from the domain ({population})

simulators:                 # who plays the user: `crsim list simulators`
  - abus                    # agenda-based, rules only; llm_single, llm_dual, pepper, recusersim need a model

crss:                       # the systems compared; each meets the same users
  - popular
  - retrieval
  # a CRS in its own process, by URL (docs/plug-in-your-crs.md):
  # - {{name: crs_arena, args: {{base_url: "http://127.0.0.1:5000"}}, id: kbrd}}

metrics:                    # `crsim list metrics`; definitions in docs/metrics.md
{metrics}
max_turns: 20               # turns (user utterance + CRS reply) per dialogue
trials: 1                   # dialogues per CRS x simulator x user

# Language models for the LLM simulators and CRSs (docs/llm.md); the key comes from the environment:
# llm:
#   default: {{provider: openai, model: gpt-4o-mini}}
"""


def starter_config(domain: str, name: str, file: str) -> str:
    """The starter config's text for `domain` (checked: a shipped or installed name, or a file)."""
    from crsim.domains import domain_named
    from crsim.eval.scores import default_metrics
    from crsim.users.sources import default_source

    found = domain_named(domain)
    source = default_source(found)
    population = "users with rating histories" if source == "movielens" else "goals sampled from its items"
    metrics = []
    for spec in default_metrics():
        args = ", ".join(f"{key}: {value}" for key, value in spec.args.items())
        metrics.append(f"  - {{name: {spec.name}, args: {{{args}}}}}" if args else f"  - {spec.name}")
    return STARTER.format(
        name_line=f"{'name: ' + (name if _plain(name) else json.dumps(name)):<28}",
        domain_line=f"{'domain: ' + (domain if _plain(domain) else json.dumps(domain)):<28}",
        population=population,
        metrics="\n".join(metrics),
        file=file,
    )


def _plain(value: str) -> bool:
    """Whether `value` can stand in YAML unquoted (letters, digits, - and _)."""
    return value.replace("-", "").replace("_", "").isalnum()


@app.command()
def init(
    domain: Annotated[
        str, typer.Option(help="Items: movies, restaurants, hotels, an installed domain or a domain file.")
    ] = "movies",
    out: Annotated[Path, typer.Option("--out", "-o", help="The config file to write.")] = Path("study.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
) -> None:
    """Write a commented starter config (YAML) that runs as it is: `crsim run FILE`."""
    with user_errors():
        if out.exists() and not force:
            raise CrsimError(f"{out}: exists already; choose another --out or pass --force to replace it")
        text = starter_config(domain, out.stem, shlex.quote(str(out)))
        with atomic_output(out) as handle:
            handle.write(text)
    console.print(
        f"wrote {escape(str(out))}; run it with: crsim run {escape(shlex.quote(str(out)))}", highlight=False
    )
