"""Small real runs for the report, dataframe and browser tests (pytest puts tests/ on the path)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from crsim.eval.run_scoring import evaluate_path
from crsim.model.run_folder.summary import evaluation_sources
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig

#: Script that would set `window.pwned` if any recorded text reached the page as HTML.
PAYLOADS = (
    "<script>window.pwned=1</script>",
    '<img src=x onerror="window.pwned=1">',
    "</script><script>window.pwned=1</script><!--",
)
PAYLOAD = " ".join(PAYLOADS)


def small_run(
    run_dir: Path, *, users: int = 6, crss: list[str] | None = None, patiences: tuple[int, ...] = (3,)
) -> Path:
    """A real run of abus (one variant per patience) × the given CRSs, evaluated."""
    simulators = [
        {"name": "abus", "args": {"patience": p}, "id": "abus" if i == 0 else f"abus-p{p}"}
        for i, p in enumerate(patiences)
    ]
    config: dict[str, Any] = {
        "name": "report-test",
        "users": {"size": users},
        "simulators": simulators,
        "crss": [{"name": c} for c in (crss or ["popular"])],
        "max_turns": 8,
    }
    asyncio.run(run_batch(build_experiment(ExperimentConfig.model_validate(config)), run_dir))
    evaluate_path(run_dir)
    return run_dir


def restamp(run_dir: Path) -> None:
    """Make `summary.json` name the run's files as they are now, after a test edited them by hand (as
    if it had been evaluated again), so that the report reads the edited files."""
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    sources = evaluation_sources(run_dir / "dialogues.jsonl", run_dir / "scores.jsonl")
    summary["built_from"] = {role: fingerprint.model_dump() for role, fingerprint in sources.items()}
    path.write_text(json.dumps(summary), encoding="utf-8")


def poison(run_dir: Path) -> str:
    """Put script payloads into a run's records (CRS and user text, an annotation, a recommended and a
    mentioned item id, the options offered and picked, the CRS id, a judge explanation, the manifest);
    returns the poisoned dialogue's id."""
    path = run_dir / "dialogues.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["crs_id"] = PAYLOAD
    for utterance in first["utterances"]:
        utterance["text"] = f"{utterance['role']} says {PAYLOAD}"
        utterance["annotations"][PAYLOAD] = {"nested": PAYLOAD}
        if utterance["role"] == "crs":
            utterance["recommended_items"] = [PAYLOAD]
            utterance["mentioned_items"] = [f"mentioned {PAYLOAD}"]
            utterance["options"] = [{"label": f"button {PAYLOAD}", "payload": f"payload {PAYLOAD}"}]
        else:
            utterance["chosen_option"] = {"label": f"picked {PAYLOAD}", "payload": None}
    first["metadata"]["note"] = PAYLOAD
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["config"]["name"] = PAYLOAD
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    evaluate_path(run_dir)
    judged = {
        "dialogue_id": first["id"],
        "crs_id": PAYLOAD,
        "simulator_id": first["simulator_id"],
        "termination": "user_ended",
        "metric": "quality5/relevance",
        "value": 3.0,
        "explanation": f"judge says {PAYLOAD}",
    }
    per_turn = {
        **judged,
        "metric": "crsarena7/relevance",
        "turn": 1,
        "explanation": f"turn judge says {PAYLOAD}",
    }
    with (run_dir / "scores.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(judged) + "\n")
        handle.write(json.dumps(per_turn) + "\n")
    restamp(run_dir)
    return str(first["id"])


REDIAL = Path(__file__).parent / "fixtures" / "redial" / "test_data.jsonl.gz"


def study_folder(out: Path, *, users: int = 6, resamples: int = 50) -> Path:
    """A real sensitivity study (`crsim validate sensitivity`: retrieval and its random, mute and
    garbled twins, abus, Success and Turns) whose folder also holds a fidelity study of its users
    against 40 ReDial test dialogues (`fidelity_redial.json`, as `crsim validate fidelity` writes it)."""
    from typer.testing import CliRunner

    from crsim.cli import app
    from crsim.datasets.base import build_reader, convert_dataset
    from crsim.eval.annotators.base import annotation_domain, build_annotator
    from crsim.model.run_folder import files, open_run
    from crsim.studies.fidelity import fidelity

    config = out.parent / f"{out.name}.yaml"
    config.write_text(
        f"crss: [{{name: retrieval}}]\nmax_turns: 6\nusers: {{size: {users}}}\n"
        "metrics: [{name: success_rate}, {name: turns}]\n",
        encoding="utf-8",
    )
    args = ["validate", "sensitivity", str(config), "--out", str(out), "--kinds", "random,mute,garbled"]
    result = CliRunner().invoke(app, [*args, "--resamples", "200"])
    assert result.exit_code == 0, result.output
    folder = open_run(out)
    humans = list(convert_dataset(build_reader("redial", {}), REDIAL))[:40]
    annotator = build_annotator("rules", {}, annotation_domain(domain=folder.domain))
    report = fidelity(
        folder.name, folder.dialogues(), "redial", humans, annotator, seed=0, resamples=resamples
    )
    (out / files.fidelity_file("redial")).write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return out
