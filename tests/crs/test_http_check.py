"""`check_crs` catches a server that shares one conversation across sessions and passes healthy ones."""

from __future__ import annotations

from pathlib import Path

from crs_doubles import CRSArenaServer, MovieBotV2, preference_server
from crsim.crs.http.check import build_http_crs, check_crs
from crsim.model.domain import Domain
from faults.servers import running_server


async def test_a_shared_conversation_is_caught(domain: Domain) -> None:
    with running_server(preference_server(shared=True)) as url:
        crs = build_http_crs("generic_http", {"base_url": url}, domain)
        report = await check_crs(crs, turns=2)
    assert not report.ok
    failed = [s.step for s in report.failures]
    assert failed == ["kept apart after turn 1", "kept apart after turn 2"]
    assert "shared conversation? session " in report.failures[0].detail
    assert "was told 'romantic comedy'" in report.failures[1].detail  # a, after b's first message


async def test_a_healthy_server_passes_every_step(domain: Domain) -> None:
    with running_server(preference_server(shared=False)) as url:
        crs = build_http_crs("generic_http", {"base_url": url}, domain)
        report = await check_crs(crs, turns=3)
    assert report.ok, report.failures
    steps = [(s.step, s.session) for s in report.steps]
    assert steps.count(("close", "a")) == 1 and ("turn 3", "b") in steps
    assert all(s.seconds >= 0 for s in report.steps)


async def test_moviebot_v2_passes_and_the_old_envelope_fails(domain: Domain, tmp_path: Path) -> None:
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        good = await check_crs(build_http_crs("moviebot", {"base_url": url}, domain), turns=3)
        old = build_http_crs("moviebot", {"base_url": url, "request_format": "messenger"}, domain)
        bad = await check_crs(old, turns=3)
    assert good.ok, good.failures
    assert len(list((tmp_path / "export").iterdir())) == 2  # both goodbyes reached MovieBot
    assert not bad.ok
    assert all("CRSInvalidResponse" in s.detail for s in bad.failures if s.step.startswith("turn 1"))


def _genre_model(context: list[str], state: list[float]) -> tuple[str, list[float]]:
    """A CRS Arena model that answers from the conversation it is given (context + message)."""
    said = " ".join(context).lower()
    genre = (
        "science fiction" if "science fiction" in said else "romantic comedy" if "comedy" in said else "film"
    )
    return f"A {genre} then: how about Heat (1995)?", state


async def test_a_crs_arena_server_passes(domain: Domain) -> None:
    server = CRSArenaServer(_genre_model)
    with running_server(server.app) as url:
        report = await check_crs(build_http_crs("crs_arena", {"base_url": url}, domain), turns=2)
    assert report.ok, report.failures
    assert len(server.seen) == 4 and {len(body["context"]) for body in server.seen} == {0, 2}
