"""`crsim crs check`: prove a CRS server before a study."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from crsim.cli._support import console, parse_args, user_errors
from crsim.errors import ConfigError

if TYPE_CHECKING:
    from crsim.crs.base import CRS
    from crsim.crs.http.check import CheckReport

crs_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="`crsim crs`: check a CRS server before a study.",
)


@crs_app.callback()
def _crs() -> None:
    """`crsim crs`: check a CRS server before a study."""


@crs_app.command("check")
def check(
    url: Annotated[
        str | None, typer.Argument(help="Root URL of the server, e.g. http://127.0.0.1:5001.")
    ] = None,
    protocol: Annotated[
        str, typer.Option(help="What the server speaks: generic, crs_arena or moviebot.")
    ] = "generic",
    config: Annotated[
        Path | None,
        typer.Option(
            help="A YAML file with the adapter: an experiment config (its HTTP CRSs are checked) or one "
            "CRS entry {name, args}. The URL, when given, replaces base_url."
        ),
    ] = None,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="An adapter argument as KEY=VALUE (repeatable).")
    ] = None,
    turns: Annotated[int, typer.Option(min=1, max=20, help="User messages each check session sends.")] = 3,
    domain: Annotated[
        str, typer.Option(help="Item domain whose titles are linked in replies (default: movies).")
    ] = "movies",
) -> None:
    """Open two sessions at once with different messages, fail if either reply shows the other's
    state (one conversation shared by all clients), hold a few turns, close; print what was checked
    with timings. Exit code 1 when any step failed."""
    with user_errors():
        targets = _targets(url, protocol, config, parse_args(arg or []), domain)
        reports = asyncio.run(_check_all(targets, turns))
    for report in reports:
        console.print(_table(report))
    failed = [r for r in reports if not r.ok]
    for report in failed:
        for step in report.failures:
            line = f"{report.target}: {step.step} (session {step.session}): {step.detail}"
            console.print(f"[red]FAILED[/red] {escape(line)}", highlight=False, soft_wrap=True)
    if not failed:
        console.print(f"[green]OK[/green] {len(reports)} CRS server(s) passed every check")
    raise typer.Exit(1 if failed else 0)


def _targets(
    url: str | None, protocol: str, config: Path | None, args: dict[str, Any], domain_name: str
) -> list[tuple[str, CRS]]:
    """(label, adapter) for each server to check."""
    from crsim.crs.http.base import HTTPCRS
    from crsim.crs.http.check import PROTOCOLS, build_http_crs
    from crsim.data.domains import domain_named

    if config is None:
        if url is None:
            raise ConfigError("give the server's URL, or --config with an adapter's settings")
        if protocol not in PROTOCOLS:
            raise ConfigError(f"--protocol: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        name = PROTOCOLS[protocol]
        return [(f"{name} {url}", build_http_crs(name, {**args, "base_url": url}, domain_named(domain_name)))]
    from crsim.registry import ComponentSpec
    from crsim.run.config import config_from_mapping
    from crsim.yaml_files import read_yaml_mapping

    data = read_yaml_mapping(config, "an experiment config or a CRS entry {name, args}")
    if "crss" in data:
        experiment = config_from_mapping(data, where=str(config))
        specs, domain = experiment.crss, domain_named(experiment.domain)
    else:
        try:
            specs, domain = [ComponentSpec.model_validate(data)], domain_named(domain_name)
        except ValueError as exc:
            raise ConfigError(f"{config}: expected a CRS entry {{name, args}}: {exc}") from None
    targets: list[tuple[str, CRS]] = []
    for spec in specs:
        merged = {**spec.args, **args, **({"base_url": url} if url else {})}
        adapter = build_http_crs(spec.name, merged, domain)
        if isinstance(adapter, HTTPCRS):
            targets.append((f"{spec.label} {adapter.params.base_url}", adapter))
    if not targets:
        raise ConfigError(f"{config}: names no CRS reached over HTTP (generic_http, crs_arena, moviebot)")
    return targets


async def _check_all(targets: list[tuple[str, CRS]], turns: int) -> list[CheckReport]:
    from crsim.crs.http.check import check_crs

    reports = []
    for label, adapter in targets:
        try:
            reports.append(await check_crs(adapter, target=label, turns=turns))
        finally:
            closer = getattr(adapter, "aclose", None)
            if closer is not None:
                await closer()
    return reports


def _table(report: CheckReport) -> Table:
    table = Table(title=escape(report.target), title_justify="left")
    for column in ("step", "session", "result", "seconds", "detail"):
        table.add_column(column, justify="right" if column == "seconds" else "left", overflow="fold")
    for step in report.steps:
        result = "[green]ok[/green]" if step.ok else "[red]FAILED[/red]"
        table.add_row(escape(step.step), step.session, result, f"{step.seconds:.3f}", escape(step.detail))
    return table
