"""`crsim list` and `crsim describe`: the components crsim knows and their arguments (crsim.cli.catalog)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from crsim.cli._support import console, user_errors

if TYPE_CHECKING:
    from crsim.cli.catalog import ParamInfo

list_app = typer.Typer(add_completion=False)
describe_app = typer.Typer(add_completion=False)

_SUMMARY_WIDTH = 72


@list_app.command("list")
def list_components(
    kind: Annotated[
        str | None,
        typer.Argument(
            help="Only this kind: simulators, crss, metrics, annotators, datasets, rubrics, domains."
        ),
    ] = None,
) -> None:
    """List the known components: simulators, CRSs, metrics, annotators, datasets, rubrics, domains.

    Installed plug-ins appear beside the built-ins; `crsim describe NAME` shows one's arguments."""
    from crsim.cli.catalog import component_infos

    with user_errors():
        infos = component_infos(kind)
    current = None
    room = max(20, console.width - 30)
    for info in infos:
        if info.kind != current:
            current = info.kind
            console.print(f"[bold]{escape(current)}[/bold]", highlight=False)
        summary = info.summary if len(info.summary) <= room else info.summary[: room - 1] + "…"
        llm = "LLM" if info.needs_llm else ""
        console.print(
            f"  {escape(info.name):<22}{llm:<4}{escape(summary)}", highlight=False, overflow="ignore"
        )
    console.print(
        "(LLM: can call a language model; `crsim describe NAME` shows its arguments)", highlight=False
    )


@describe_app.command("describe")
def describe_component(
    name: Annotated[str, typer.Argument(help="A component name, or KIND:NAME when several kinds use it.")],
    kind: Annotated[str | None, typer.Option(help="Only the component of this kind.")] = None,
) -> None:
    """Describe a component: kind, class, what it does, and every argument with type, default and meaning."""
    from crsim.cli.catalog import describe

    with user_errors():
        infos = describe(name, kind)
    for info in infos:
        console.print(f"[bold]{escape(info.name)}[/bold] ({escape(info.kind)})", highlight=False)
        if info.origin:
            console.print(f"  class: {escape(info.origin)}", highlight=False)
        if info.doc:
            console.print(f"  {escape(info.doc)}", highlight=False, soft_wrap=True)
        console.print(f"  language model: {escape(_llm_line(info.needs_llm, info.roles))}", highlight=False)
        for param in info.params:
            console.print(_param_lines(param), highlight=False, soft_wrap=True)
        if not info.params and info.kind not in ("rubric", "domain"):
            console.print("  no arguments", highlight=False)


def _llm_line(needs_llm: bool, roles: list[str] | None) -> str:
    if not needs_llm:
        return "none"
    if roles is None:
        return "yes; the roles depend on the arguments"
    if not roles:
        return "only with some arguments (none with the defaults)"
    return f"yes, roles: {', '.join(roles)} (with the defaults)"


def _param_lines(param: ParamInfo) -> str:
    """`  name: type = default  (constraints)` and the description indented below it."""
    limits = f"  ({param.constraints})" if param.constraints else ""
    head = f"  {param.name}: {param.type} = {param.default}{limits}"
    return escape(f"{head}\n      {param.description or '(no description)'}")
