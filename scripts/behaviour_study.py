"""Run the LLM behaviour study of docs/behaviour.md on a local GGUF model, for several seeds.

The study holds the shipped LLM configs as they are (`configs/llm-local.yaml`, `configs/recusersim.yaml`,
`configs/pepper.yaml`), changing only what a model swap needs:

- every LLM block (default and roles) reads the given GGUF file (`model_path`), with a 4,096-token
  context, a 15-minute timeout and at most 2 requests at a time (2 CPU cores);
- `llm-local` talks to `retrieval` besides the `llm` CRS and lasts 6 turns, so that simulators meet a
  CRS that always recommends; `recusersim` and `pepper` talk to `retrieval` only, with 2 users per seed;
- no judge runs inside `crsim run`: after the runs of the first seed, `crsim evaluate --judge` scores
  `llm-local` with `quality5` and `pepper` with `pepper3` on the same model.

Then the behaviour report (`crsim.studies.behaviour`, docs/behaviour.md) pools the observations of
every seed of a config (counts add up; Wilson intervals on the pooled counts), scores the judges on
the first seed's folders, prints the tables and writes them as CSV to `STUDY_DIR/behaviour-NAME.csv`.
Run folders that finished are kept and skipped when the script runs again (an interrupted study
resumes).

    python scripts/behaviour_study.py --model MODEL.gguf --out STUDY_DIR [--seeds 1 2 3]

The model is never part of crsim: pass any GGUF file (the note of issue 23 names the one measured,
with its sha256, which the script prints).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from crsim.studies.behaviour.observation import Observation
from crsim.studies.behaviour.records import read_run
from crsim.studies.behaviour.report import BehaviourReport, aggregate, observe, write_report
from crsim.studies.behaviour.tables import behaviour_tables

ROOT = Path(__file__).resolve().parents[1]
USERS = {"llm-local": None, "recusersim": 2, "pepper": 2}
JUDGES = {"llm-local": "quality5", "pepper": "pepper3"}


def sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_block(block: dict[str, Any], model: Path) -> dict[str, Any]:
    """An LLM block of a shipped config, pointed at `model`."""
    return {
        **block,
        "provider": "local",
        "model_path": str(model),
        "context_size": max(int(block.get("context_size", 2048)), 4096),
        "timeout": 900,
        "max_concurrency": 2,
    }


def study_config(name: str, model: Path) -> dict[str, Any]:
    """The shipped config `name`, changed only as the module docstring says."""
    config: dict[str, Any] = yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
    llm = config["llm"]
    llm["default"] = model_block(llm["default"], model)
    llm["roles"] = {role: model_block(block, model) for role, block in llm.get("roles", {}).items()}
    llm["roles"].pop("judge", None)
    config["name"] = f"study-{name}"
    config["concurrency"] = 2
    if "metrics" in config:
        config["metrics"] = [m for m in config["metrics"] if m["name"] != "judge"]
    if name == "llm-local":
        config["crss"] = [{"name": "retrieval"}, *config["crss"]]
        config["max_turns"] = 6
    else:
        config["crss"] = [c for c in config["crss"] if c["name"] == "retrieval"]
    if USERS[name] is not None:
        config["users"]["size"] = USERS[name]
    return config


def judge_config(rubric: str, model: Path) -> dict[str, Any]:
    """A judge config scoring with `rubric` on `model` at temperature 0."""
    block = model_block({"temperature": 0, "max_tokens": 300}, model)
    return {"llm": {"default": block}, "judges": [{"name": "judge", "args": {"rubric": rubric}}]}


def crsim(*args: str, log: Path) -> None:
    """Run a crsim command of this interpreter, its output to `log`; fail loudly."""
    with log.open("w") as out:
        done = subprocess.run([sys.executable, "-m", "crsim", *args], stdout=out, stderr=out)
    if done.returncode != 0:
        raise SystemExit(f"crsim {' '.join(args)} failed (exit {done.returncode}); see {log}")


def run_study(model: Path, out: Path, seeds: list[int]) -> None:
    """Make every run and judge folder of the study that is missing."""
    out.mkdir(parents=True, exist_ok=True)
    for name in USERS:
        config = out / f"{name}.yaml"
        config.write_text(yaml.safe_dump(study_config(name, model), sort_keys=False))
        for seed in seeds:
            run = out / f"{name}-s{seed}"
            if not (run / "summary.json").exists():
                crsim("run", str(config), "--seed", str(seed), "--out", str(run), log=out / f"{run.name}.log")
        if name in JUDGES:
            judge = out / f"judge-{JUDGES[name]}.yaml"
            judge.write_text(yaml.safe_dump(judge_config(JUDGES[name], model), sort_keys=False))
            scored = out / f"{name}-s{seeds[0]}-judged"
            if not (scored / "summary.json").exists():
                args = ["evaluate", str(out / f"{name}-s{seeds[0]}"), "--judge", str(judge)]
                crsim(*args, "--out", str(scored), log=out / f"{scored.name}.log")


def pooled(name: str, out: Path, seeds: list[int]) -> BehaviourReport:
    """The behaviour report of config `name` over every seed, with its judge's scores on the first."""
    observations: list[Observation] = []
    spreads: dict[str, str] = {}
    dialogues = scores = 0
    for seed in seeds:
        judged = out / f"{name}-s{seed}-judged"
        records = read_run(out / f"{name}-s{seed}", None, [judged] if judged.is_dir() else [])
        found, spread = observe(records)
        observations += found
        spreads |= spread
        dialogues += len(records.dialogues)
        scores += len(records.scores)
    rows = aggregate(observations, spreads)
    run = f"{name}, seeds {', '.join(map(str, seeds))}"
    return BehaviourReport(
        run=run, domain="movies", dialogues=dialogues, scores=scores, rows=rows, unreadable=[]
    )


def main() -> None:
    """Parse the arguments, run the study, measure it."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, required=True, help="GGUF model file")
    parser.add_argument("--out", type=Path, required=True, help="study folder (resumed when it exists)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    options = parser.parse_args()
    model = options.model.resolve()
    print(f"model {model.name} sha256 {sha256(model)}")
    out = options.out.resolve()
    run_study(model, out, options.seeds)
    console = Console(width=110)
    for name in USERS:
        report = pooled(name, out, options.seeds)
        for table in behaviour_tables(report):
            console.print(table)
        write_report(report, out / f"behaviour-{name}.csv")


if __name__ == "__main__":
    main()
