"""`crsim serve`: expose a crsim CRS over HTTP."""

from __future__ import annotations

import sys
from functools import partial
from typing import Annotated

import typer
from rich.markup import escape

from crsim.cli._support import console, parse_args, user_errors

app = typer.Typer(add_completion=False)


@app.command()
def serve(
    crs_name: Annotated[str, typer.Argument(help="A registered CRS, e.g. retrieval or popular.")],
    arg: Annotated[
        list[str] | None, typer.Option("--arg", help="A CRS argument as KEY=VALUE (repeatable).")
    ] = None,
    args_json: Annotated[str | None, typer.Option(help="CRS arguments as a JSON object.")] = None,
    domain: Annotated[
        str,
        typer.Option(
            "--domain",
            help="Item domain: a shipped one (movies, restaurants, hotels), an installed one, or a domain "
            "file's path.",
        ),
    ] = "movies",
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 8000,
    seed: Annotated[int, typer.Option(help="Seed for the sessions' random choices.")] = 0,
    max_sessions: Annotated[
        int,
        typer.Option(
            min=1, help="Open conversations at most; when full, the least recently used idle one is closed."
        ),
    ] = 10_000,
    session_idle_timeout: Annotated[
        float, typer.Option(min=0.001, help="Seconds after which an idle conversation is closed.")
    ] = 3600.0,
    max_body_bytes: Annotated[
        int, typer.Option(min=1, help="Largest request body accepted; larger ones get 413.")
    ] = 1_000_000,
    access_log: Annotated[
        bool, typer.Option(help="One line per request on stderr: method, path, status, duration.")
    ] = True,
) -> None:
    """Expose a crsim CRS over HTTP (CRS Arena protocol and the generic JSON protocol).

    The CRS works on the items of `--domain` (default: movies)."""
    from crsim.crs.server import ServeLimits
    from crsim.crs.server import serve as serve_crs
    from crsim.domains import domain_named

    with user_errors():
        args = parse_args(arg or [], args_json)
        limits = ServeLimits(
            max_sessions=max_sessions, idle_timeout_s=session_idle_timeout, max_body_bytes=max_body_bytes
        )
        serve_crs(
            crs_name,
            args,
            domain_named(domain),
            host,
            port,
            seed=seed,
            limits=limits,
            access_log=access_log,
            on_listening=partial(_say_listening, crs_name),
        )


def _say_listening(crs_name: str, url: str) -> None:
    """The line that tells where the server listens, flushed at once (a pipe would otherwise hold it
    until the server stops)."""
    console.print(
        f"crsim serve: {escape(crs_name)} listening on {url} (Ctrl-C stops)",
        highlight=False,
        soft_wrap=True,
    )
    sys.stdout.flush()
