"""`crsim domain`: check a domain file and see what it holds; list the domains a config can name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crsim.cli._support import errors, user_errors

if TYPE_CHECKING:
    from crsim.domains.findings import DomainCheck
    from crsim.model.domain import Domain

domain_app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False, help=__doc__
)


@domain_app.command()
def check(
    file: Annotated[str, typer.Argument(help="A domain file (YAML), or the name of a shipped domain.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail (exit 1) when there are warnings, not only problems.")
    ] = False,
) -> None:
    """Check a domain file: every problem with its file, line and field; else its items and slots.
    Warnings name what loads but will hurt a study (placeholder values, values two slots share,
    titles that collide, requestable slots without values)."""
    from crsim.domains import check_domain_file, domain_file
    from crsim.domains.warnings import study_warnings

    with user_errors():
        path = domain_file(file)
    result = check_domain_file(path)
    if result.ok and result.domain is not None:
        result.warnings.extend(study_warnings(result.domain))
    for warning in result.warnings:
        _say(f"warning: {warning}")
    if not result.ok or result.domain is None:
        _print_problems(path, result)
        raise typer.Exit(2)
    _print_summary(result.domain)
    if result.warnings:
        count = len(result.warnings)
        _say(
            f"{path}: {count} warning{'s' if count != 1 else ''}" + (" (--strict: failing)" if strict else "")
        )
        if strict:
            raise typer.Exit(1)


def _say(line: str) -> None:
    """One line on stderr, as written (paths and values are text, not markup)."""
    errors.print(line, markup=False, highlight=False, soft_wrap=True)


def _print_problems(path: Path, result: DomainCheck) -> None:
    """Every problem of a domain file that does not load, then their count."""
    for problem in result.problems:
        _say(f"error: {problem}")
    count = result.count
    _say(f"{path}: {count} problem{'s' if count != 1 else ''}")


def _print_summary(domain: Domain) -> None:
    """What a domain holds: items, ratings and profiles, and a table of its slots."""
    from crsim.domains.summary import summarize

    summary = summarize(domain)
    typer.echo(
        f"domain {summary.name}: {summary.items} items ({summary.item_noun}), {len(summary.slots)} slots"
    )
    if summary.ratings or summary.profiles:
        side = [
            f"ratings {summary.ratings}" if summary.ratings else "",
            f"profiles {summary.profiles}" if summary.profiles else "",
        ]
        typer.echo("with " + ", ".join(s for s in side if s))
    typer.echo(
        f"{'slot':<14} {'attribute':<14} {'kind':<12} {'use':<4} {'values':>6} {'coverage':>9}  examples"
    )
    for row in summary.slots:
        use = ("I" if row.informable else "-") + ("R" if row.requestable else "-")
        typer.echo(
            f"{row.name:<14} {row.attribute:<14} {row.kind.value:<12} {use:<4} {row.values:>6} "
            f"{row.coverage:>8.0%}  {', '.join(row.examples)}".rstrip()
        )
    typer.echo("use: I = informable (users state it), R = requestable (users ask about it)")


@domain_app.command("list")
def list_domains() -> None:
    """The domains a config can name (`domain: NAME`): shipped ones and those of installed plug-ins."""
    from crsim.domains import domain_file, known_domains

    for name in known_domains():
        with user_errors():
            typer.echo(f"{name:<14} {domain_file(name)}")
