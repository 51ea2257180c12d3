"""The HTML report: self-contained, results with CIs, plots, several runs, escaping, bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.errors import ConfigError, DataError
from crsim.report.collect import collect_run
from crsim.report.figures import rank_range
from crsim.report.html import build_report, script_json
from crsim.report.titles import open_run
from report_support import PAYLOAD, poison, restamp, small_run

runner = CliRunner()


@pytest.fixture(scope="module")
def two_sims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """popular and retrieval, each with a patient and an impatient abus: a rank chart has two columns."""
    return small_run(
        tmp_path_factory.mktemp("runs") / "two-sims", users=5, crss=["popular", "retrieval"], patiences=(3, 1)
    )


def _data(html: str) -> dict[str, object]:
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert block is not None
    loaded: dict[str, object] = json.loads(block.group(1))
    return loaded


def test_report_is_self_contained_with_results_plots_and_dialogues(two_sims: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(two_sims), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "the report must not load anything"
    for key in ("curves", "proportions", "distributions", "ranks"):
        assert f'id="plot-{key}"' in html
    assert html.count('src="data:image/png;base64,') == 4
    summary = json.loads((two_sims / "summary.json").read_text(encoding="utf-8"))
    success = summary["groups"][0]["metrics"]["Success"]
    interval = f"[{success['ci_low']:.3f}, {success['ci_high']:.3f}]"
    assert f'{success["mean"]:.3f}<span class="ci">{interval}</span>' in html
    assert "&#34;planned_dialogues&#34;: 20" in html  # the manifest, escaped
    data = _data(html)
    dialogues = data["dialogues"]
    assert isinstance(dialogues, list) and len(dialogues) == 20
    first = dialogues[0]
    assert {"Success", "Turns", "PC@10"} <= set(first["scores"])
    crs_turns = [u for u in first["utterances"] if u["role"] == "crs" and u["recommended"]]
    titles = data["titles"]
    assert isinstance(titles, dict) and crs_turns and crs_turns[0]["recommended"][0] in titles
    assert "Ranks by Success" in html


def test_several_runs_side_by_side_and_a_run_without_scores_is_evaluated(
    two_sims: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "two-sims"
    shutil.copytree(two_sims, copy)
    (copy / "summary.json").unlink()
    (copy / "scores.jsonl").unlink()
    out = tmp_path / "both.html"
    result = runner.invoke(app, ["report", str(two_sims), str(copy), "-o", str(out), "--max-dialogues", "4"])
    assert result.exit_code == 0, result.output
    assert "no scores yet; evaluating" in result.output
    assert (copy / "summary.json").is_file()
    html = out.read_text(encoding="utf-8")
    data = _data(html)
    assert data["runs"] == ["two-sims", "two-sims (2)"]
    dialogues = data["dialogues"]
    assert isinstance(dialogues, list)
    assert [d["run"] for d in dialogues].count("two-sims (2)") == 4  # spread over the run, capped
    assert len({d["crs"] for d in dialogues}) == 2
    assert html.count("<td>two-sims (2)</td>") == 4 + 1  # four result rows and the runs table


def test_recorded_text_is_escaped_in_html_and_json(two_sims: Path, tmp_path: Path) -> None:
    run = tmp_path / "poisoned"
    shutil.copytree(two_sims, run)
    poison(run)
    html = build_report([open_run(run)])
    assert "<script>window" not in html and "<img src=x" not in html and "<!--" not in html
    assert html.count("</script>") == 2  # the data block and the code block, nothing else
    data = _data(html)
    dialogues = data["dialogues"]
    assert isinstance(dialogues, list)
    assert dialogues[0]["crs"] == PAYLOAD  # text survives the escaping unchanged
    assert dialogues[0]["explanations"][0]["explanation"] == f"judge says {PAYLOAD}"


def test_the_browser_data_holds_the_buttons_offered_and_picked(two_sims: Path, tmp_path: Path) -> None:
    """Plain HTML check (the browser test renders them in Chromium where it is installed): options and
    the chosen option reach the dialogue browser's data, escaped in the page, and the code shows them."""
    run = tmp_path / "poisoned"
    shutil.copytree(two_sims, run)
    dialogue_id = poison(run)
    html = build_report([open_run(run)])
    assert "<script>window" not in html and html.count("</script>") == 2
    dialogues = _data(html)["dialogues"]
    assert isinstance(dialogues, list)
    poisoned = next(d for d in dialogues if d["id"] == dialogue_id)
    crs = [u for u in poisoned["utterances"] if u["role"] == "crs"]
    user = [u for u in poisoned["utterances"] if u["role"] == "user"]
    assert crs[0]["options"] == [{"label": f"button {PAYLOAD}", "payload": f"payload {PAYLOAD}"}]
    assert user[0]["chosen"] == {"label": f"picked {PAYLOAD}", "payload": None}
    assert "options" not in user[0] and "chosen" not in crs[0]
    others = [u for d in dialogues if d["id"] != dialogue_id for u in d["utterances"]]
    assert others and not any("options" in u or "chosen" in u for u in others)
    assert "optionChip(u.chosen)" in html and 'className: "option", text: option.label' in html


def test_script_json_escapes_what_could_end_the_block() -> None:
    text = str(script_json({"a": "</script><!-- & \u2028"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_bad_input_is_named(two_sims: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no manifest.json; expected a run folder"):
        open_run(tmp_path)
    result = runner.invoke(app, ["report", str(tmp_path / "missing"), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "not a folder" in result.output
    broken = tmp_path / "broken"
    shutil.copytree(two_sims, broken)
    lines = (broken / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    record["utterances"][0]["role"] = "narrator"
    lines[2] = json.dumps(record)
    (broken / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    restamp(broken)
    with pytest.raises(DataError, match=r"dialogues.jsonl, record 3, field 'utterances.0.role'"):
        build_report([open_run(broken)])
    (broken / "scores.jsonl").write_text('{"dialogue_id": 5}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"scores.jsonl, record 1, field 'dialogue_id'"):
        list(open_run(broken).scores())
    with pytest.raises(ConfigError, match="--rank-metric: no metric 'Nope'"):
        build_report([open_run(two_sims)], rank_metric="Nope")


def test_judge_scores_get_their_plot_and_explanations(two_sims: Path, tmp_path: Path) -> None:
    run = tmp_path / "judged"
    shutil.copytree(two_sims, run)
    records = [json.loads(line) for line in (run / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    judged = [
        {
            **r,
            "metric": "quality5/overall",
            "value": float(len(r["dialogue_id"]) % 5),
            "explanation": "fine",
            "llm_judged": True,
        }
        for r in records
        if r["metric"] == "Turns"
    ]
    # Explained but computed without a language model (like GCDF1's behaviour notes): not a judge.
    noted = [{**r, "metric": "gcdf1/igcdf1", "explanation": "no notable behaviour"} for r in judged]
    for r in noted:
        r.pop("llm_judged")
    with (run / "scores.jsonl").open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in judged + noted)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    for group in summary["groups"]:
        for label in ("quality5/overall", "gcdf1/igcdf1"):
            group["metrics"][label] = {
                **group["metrics"]["Turns"],
                "mean": 2.5,
                "ci_low": 2.0,
                "ci_high": 3.0,
            }
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    restamp(run)
    view = collect_run(open_run(run), "judged", max_dialogues=100)
    assert view.judged == ["quality5/overall"]
    html = build_report([open_run(run)])
    assert 'id="plot-judge"' in html and "Judge scores per pairing" in html
    dialogues = _data(html)["dialogues"]
    assert isinstance(dialogues, list)
    assert dialogues[0]["explanations"][0] == {
        "metric": "quality5/overall",
        "turn": None,
        "value": judged[0]["value"],
        "explanation": "fine",
        "error": None,
    }
    assert dialogues[0]["scores"]["quality5/overall"] == judged[0]["value"]


def test_crss_not_told_apart_share_their_places() -> None:
    """Places come from the significant differences only: a tie (equal means, or a difference the
    test cannot tell from none) is a range of places, never one place for one and the next for the other."""
    means = {"a": 0.0, "b": 0.5, "c": 0.0, "d": 0.2}
    everything = {frozenset(p) for p in (("a", "b"), ("b", "c"), ("b", "d"), ("a", "d"), ("c", "d"))}
    places = {n: rank_range(n, means, everything) for n in means}
    assert places == {"b": (1, 1), "d": (2, 2), "a": (3, 4), "c": (3, 4)}
    # b beats a and c, nothing else is significant: d could stand anywhere, so b is first or second
    only_b = {frozenset(("a", "b")), frozenset(("b", "c"))}
    assert rank_range("b", means, only_b) == (1, 2) and rank_range("d", means, only_b) == (1, 4)
    assert rank_range("a", means, only_b) == (2, 4)
    assert rank_range("popular", {"popular": 0.0, "retrieval": 0.0}, set()) == (1, 2)


def _report_in_subprocess(run: Path, out: Path, hash_seed: str) -> bytes:
    """`crsim report RUN -o OUT` in a fresh interpreter with the given PYTHONHASHSEED."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-m", "crsim", "report", str(run), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def test_the_report_is_byte_identical_under_any_hash_seed(two_sims: Path, tmp_path: Path) -> None:
    """String hashing is randomised per process; nothing in the report may follow set or hash order.

    The report holds no wall-clock field (the run's `created_at` comes from its manifest), so the
    two renderings must agree byte for byte."""
    first = _report_in_subprocess(two_sims, tmp_path / "a.html", "1")
    second = _report_in_subprocess(two_sims, tmp_path / "b.html", "2")
    assert first == second


def test_comparisons_section_matches_crsim_compare(two_sims: Path, tmp_path: Path) -> None:
    from crsim.report.compare import compare_folders, interval, p_text

    html = build_report([open_run(two_sims)])
    section = html[html.index('<section id="compare">') : html.index('<section id="plots">')]
    found = compare_folders([open_run(two_sims)]).comparison
    assert section.count('<div class="comparison">') == len(found.results) == 2 * 8  # 2 simulators
    for result in found.results:
        assert f"<h3>{result.metric} · {result.simulator}</h3>" in section
        (pair,) = result.pairs
        assert f'<td class="num">{interval(pair)}</td><td class="num">{p_text(pair.p_value)}</td>' in section


def test_many_metrics_make_one_compact_figure_not_a_wall_of_box_plots(two_sims: Path, tmp_path: Path) -> None:
    """PEPPER's config scores thirteen metrics: past six, one small-multiples figure of means with
    intervals replaces the box plots; Success, a declared 0/1 metric, is still a proportion."""
    run = tmp_path / "many-metrics"
    shutil.copytree(two_sims, run)
    lines = (run / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    turns = [json.loads(line) for line in lines if json.loads(line)["metric"] == "Turns"]
    extra = [f"PC@{k}" for k in (5, 20, 50)] + [f"Recall@(t,{k})" for k in (5, 20, 50)]
    with (run / "scores.jsonl").open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps({**r, "metric": label}) + "\n" for label in extra for r in turns)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    for group in summary["groups"]:
        for label in extra:
            group["metrics"][label] = group["metrics"]["Turns"]
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    restamp(run)
    html = build_report([open_run(run)])
    assert 'id="plot-summary"' in html and 'id="plot-distributions"' not in html
    # SRRR, RDL, Turns, Recall, PC, Requests answered and the six added (Task success is a proportion)
    assert "12 metrics at a glance" in html
    assert 'id="plot-proportions"' in html and "95% Wilson score interval" in html


def test_ambiguous_links_are_counted_per_pairing(two_sims: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(two_sims, run)
    lines = (run / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    crs_turn = next(u for u in first["utterances"] if u["role"] == "crs")
    crs_turn["annotations"]["ambiguous_links"] = {"a": ["a", "b"], "c": ["c", "d", "e"]}
    lines[0] = json.dumps(first)
    (run / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert runner.invoke(app, ["evaluate", str(run), "--replace"]).exit_code == 0
    groups = json.loads((run / "summary.json").read_text(encoding="utf-8"))["groups"]
    counts = {(g["crs_id"], g["simulator_id"]): g["ambiguous_links"] for g in groups}
    assert counts[(first["crs_id"], first["simulator_id"])] == 2
    assert sorted(counts.values()) == [0, 0, 0, 2]
    out = tmp_path / "report.html"
    assert runner.invoke(app, ["report", str(run), "-o", str(out)]).exit_code == 0
    html = out.read_text(encoding="utf-8")
    assert ">ambiguous links</th>" in html
    table = html[
        html.index(">ambiguous links</th>") : html.index("</table>", html.index(">ambiguous links</th>"))
    ]
    assert sorted(re.findall(r'<td class="num">(\d+)</td></tr>', table)) == ["0", "0", "0", "2"]


def test_one_simulator_in_two_runs_shows_no_simulator_disagreement(tmp_path: Path) -> None:
    """The disagreement chart compares simulators; the same simulator (by name) in two runs is one."""
    first = small_run(tmp_path / "a", users=4, crss=["popular", "retrieval"])
    second = small_run(tmp_path / "b", users=4, crss=["popular", "retrieval"])
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(first), str(second), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert 'id="plot-curves"' in html and 'id="plot-ranks"' not in html


def test_the_browser_shows_a_seeded_sample_and_says_so(two_sims: Path) -> None:
    folder = open_run(two_sims)
    total = sum(1 for _ in (two_sims / "dialogues.jsonl").open(encoding="utf-8"))
    view = collect_run(folder, "run", max_dialogues=3)
    again = collect_run(folder, "run", max_dialogues=3)
    assert len(view.browser) == 3 and view.browser_seed == 0 and total > 3
    assert [e["id"] for e in view.browser] == [e["id"] for e in again.browser]
    html = build_report([folder], max_dialogues=3)
    assert f"Showing 3 of {total} dialogues, sampled with seed 0" in html
    assert len(_data(html)["dialogues"]) == 3  # type: ignore[arg-type]
    whole = build_report([folder], max_dialogues=total)
    assert "sampled with seed" not in whole and f"{total} of {total} dialogues are in this file" in whole
