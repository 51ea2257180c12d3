"""`crsim crs check`: a table of the checked steps, exit 1 on a shared conversation, 0 when healthy."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from crs_doubles import MovieBotV2, preference_server
from crsim.cli import app
from faults.servers import running_server

runner = CliRunner()


def test_a_shared_conversation_exits_1_and_a_healthy_server_0() -> None:
    with running_server(preference_server(shared=True)) as url:
        shared = runner.invoke(app, ["crs", "check", url, "--protocol", "generic", "--turns", "2"])
    with running_server(preference_server(shared=False)) as url:
        healthy = runner.invoke(app, ["crs", "check", url, "--protocol", "generic", "--turns", "2"])
    assert shared.exit_code == 1, shared.output
    assert "kept apart after turn 1" in shared.output and "FAILED" in shared.output
    assert healthy.exit_code == 0, healthy.output
    assert "passed every check" in healthy.output and "seconds" in healthy.output


def test_a_config_file_names_the_adapter(tmp_path: Path) -> None:
    bot = MovieBotV2(tmp_path / "export")
    with running_server(bot.app) as url:
        config = tmp_path / "crs.yaml"
        config.write_text(f"name: moviebot\nargs: {{base_url: '{url}', timeout_s: 10}}\n")
        good = runner.invoke(app, ["crs", "check", "--config", str(config)])
        old = runner.invoke(
            app, ["crs", "check", "--config", str(config), "--arg", "request_format=messenger"]
        )
    assert good.exit_code == 0, good.output
    assert old.exit_code == 1 and "CRSInvalidResponse" in old.output


def test_a_bad_protocol_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["crs", "check", "http://127.0.0.1:9", "--protocol", "grpc"])
    assert result.exit_code == 2 and "--protocol" in result.output
