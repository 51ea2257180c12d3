"""The labelled set of the behaviour detectors (tests/fixtures/behaviour_labels/README.md).

    python scripts/behaviour_labels.py generate --out POOL [--rounds R] [--until HH:MM]
    python scripts/behaviour_labels.py sample POOL --out tests/fixtures/behaviour_labels [--size 170]
    python scripts/behaviour_labels.py render tests/fixtures/behaviour_labels
    python scripts/behaviour_labels.py score tests/fixtures/behaviour_labels   (= crsim validate detectors)

`generate` holds the pool: per round r (seed r) one small run per stratum (simulator x CRS x domain,
`STRATA`), the LLM parts on the shipped local model (SmolLM2-135M, as configs/llm-local.yaml), so
every round adds dialogues to every stratum; it stops after `--rounds` or at `--until` (local
wall-clock time), between runs; `--only llm|rules` and `--domain` split the work between processes.
`sample` draws the set uniformly at random (seed `SAMPLE_SEED`) from each stratum's pool: up to
`LLM_QUOTA` per LLM stratum, the rule-based strata filling `--size`, never looking at the detectors.
`render` writes dialogues.md for the readers from dialogues.jsonl.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

#: The local model settings of configs/llm-local.yaml, with a long timeout: on a shared, loaded
#: machine a reply of the local model can take minutes, and a timeout would end the dialogue.
LLM = {
    "default": {
        "provider": "local",
        "max_tokens": 64,
        "temperature": 0.7,
        "context_size": 2048,
        "max_concurrency": 2,
        "timeout": 900,
    }
}
SIMULATORS: dict[str, dict[str, Any]] = {
    "abus": {"name": "abus"},
    "llm_single": {
        "name": "llm_single",
        "args": {"history_format": "messages", "max_history_turns": 2, "max_tokens": 40},
    },
    "llm_dual": {
        "name": "llm_dual",
        "args": {
            "history_format": "messages",
            "max_history_turns": 2,
            "max_tokens": 40,
            "decision_max_tokens": 96,
        },
    },
}
CRSS: dict[str, dict[str, Any]] = {
    "popular": {"name": "popular"},
    "retrieval": {"name": "retrieval"},
    "llm": {
        "name": "llm",
        "args": {"greet": True, "candidates": 3, "description_chars": 60, "max_message_chars": 400},
    },
    "retrieval-random": {
        "name": "degraded",
        "id": "retrieval-random",
        "args": {"of": {"name": "retrieval"}, "kind": "random"},
    },
    "popular-garbled": {
        "name": "degraded",
        "id": "popular-garbled",
        "args": {"of": {"name": "popular"}, "kind": "garbled"},
    },
}
USERS: dict[str, dict[str, Any]] = {
    "movies": {},
    "restaurants": {"constraint_slots": ["food", "area", "pricerange"], "preference_slots": []},
    "hotels": {},
}
#: (simulator, CRS, domain, users per round): LLM strata get 2 users a round (slow), rule-based ones 10.
STRATA: list[tuple[str, str, str, int]] = [
    *(
        (sim, crs, domain, 2)
        for domain in ("restaurants", "movies")
        for sim, crs in (
            ("llm_single", "llm"),
            ("llm_dual", "llm"),
            ("llm_single", "retrieval"),
            ("llm_dual", "popular"),
            ("abus", "llm"),
        )
    ),
    *(
        ("abus", crs, domain, 10)
        for domain in ("restaurants", "movies", "hotels")
        for crs in ("popular", "retrieval", "retrieval-random", "popular-garbled")
    ),
]
MAX_TURNS = 5
#: Dialogues drawn per LLM stratum (all of a smaller pool); the rule-based strata fill the set's size.
LLM_QUOTA = 9
SIZE = 170
SAMPLE_SEED = 20261127


def stratum_name(sim: str, crs: str, domain: str) -> str:
    return f"{domain}--{sim}--{crs}"


def config_of(sim: str, crs: str, domain: str, users: int, seed: int) -> dict[str, Any]:
    """The run config of one stratum and round."""
    llm = is_llm(sim, crs)
    config: dict[str, Any] = {
        "name": f"{stratum_name(sim, crs, domain)}--r{seed}",
        "seed": seed,
        "domain": domain,
        "users": {"size": users, **USERS[domain]},
        "simulators": [SIMULATORS[sim]],
        "crss": [CRSS[crs]],
        "max_turns": MAX_TURNS,
        "concurrency": 2 if llm else 1,
    }
    if llm:
        config["llm"] = LLM
    return config


def is_llm(sim: str, crs: str) -> bool:
    return sim != "abus" or crs == "llm"


def generate(out: Path, rounds: int, until: str | None, only: str | None, domain: str | None) -> None:
    """Run every stratum once per round (seed = round), skipping runs already complete; `only`:
    "llm" or "rules" for the strata with or without an LLM participant (two processes side by side)."""
    deadline = None
    if until:
        hour, minute = (int(x) for x in until.split(":"))
        deadline = datetime.now().replace(hour=hour, minute=minute, second=0).timestamp()
    (out / "configs").mkdir(parents=True, exist_ok=True)
    for seed in range(1, rounds + 1):
        for sim, crs, dom, users in STRATA:
            if only is not None and is_llm(sim, crs) != (only == "llm"):
                continue
            if domain is not None and dom != domain:
                continue
            if deadline is not None and time.time() > deadline:
                print("deadline reached", flush=True)
                return
            config = config_of(sim, crs, dom, users, seed)
            path = out / "configs" / f"{config['name']}.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            run = out / "runs" / config["name"]
            if (run / "done").is_file():
                continue
            started = time.time()
            result = subprocess.run(
                [sys.executable, "-m", "crsim", "run", str(path), "--out", str(run), "--resume"],
                capture_output=True,
                text=True,
                check=False,
            )
            (out / "logs").mkdir(exist_ok=True)
            (out / "logs" / f"{config['name']}.log").write_text(result.stdout + result.stderr)
            if result.returncode == 0:
                (run / "done").write_text("")
            print(f"{config['name']}: rc {result.returncode}, {time.time() - started:.0f}s", flush=True)


#: Characters of a plot or description shown to readers.
LONG_TEXT = 240
#: Catalogue fields that say nothing a claim could be about (ids are left out as well).
BOOKKEEPING = frozenset({"num_ratings", "mean_rating"})
#: Values shown per list attribute (actors, keywords).
LIST_VALUES = 6


def pool_of(out: Path) -> dict[str, list[tuple[str, str]]]:
    """Stratum -> (run name, JSON line) of every dialogue held, in file order, runs sorted by name.
    Dialogues without a user message are left out (nothing to read)."""
    pool: dict[str, list[tuple[str, str]]] = {}
    for run in sorted((out / "runs").iterdir()):
        file = run / "dialogues.jsonl"
        if not file.is_file():
            continue
        stratum = run.name.rsplit("--r", 1)[0]
        for line in file.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line torn by stopping a run mid-write
                continue
            if any(u["role"] == "user" for u in record["utterances"]):
                pool.setdefault(stratum, []).append((run.name, line))
    return pool


def quotas(pool: dict[str, list[tuple[str, str]]], size: int) -> dict[str, int]:
    """Dialogues to draw per stratum: up to `LLM_QUOTA` of every LLM stratum (all it has when fewer),
    the rest of `size` shared evenly among the rule-based strata (the first ones in name order take
    one more when it does not divide), each capped by its pool."""
    take = {s: min(LLM_QUOTA, len(pool[s])) for s in pool if is_llm(*s.split("--")[1:3])}
    rules = [s for s in sorted(pool) if s not in take]
    left = max(0, size - sum(take.values()))
    for n, stratum in enumerate(rules):
        share = left // len(rules) + (1 if n < left % len(rules) else 0)
        take[stratum] = min(share, len(pool[stratum]))
    return take


def sample(out: Path, target: Path, size: int) -> None:
    """Draw the set: per stratum, its quota (`quotas`) uniformly at random (seeded by SAMPLE_SEED and
    the stratum's name), never looking at the detectors; shuffle them (seeded) and number them B001,
    B002, ...; the run's record is kept, its id moved to `metadata.label_source` with the run's name."""
    pool = pool_of(out)
    take = quotas(pool, size)
    chosen: list[tuple[str, str, str]] = []
    strata = {}
    for stratum in sorted(pool):
        found = pool[stratum]
        rng = random.Random(f"{SAMPLE_SEED}:{stratum}")
        picked = rng.sample(found, take[stratum])
        strata[stratum] = {"pool": len(found), "sampled": len(picked)}
        chosen += [(stratum, run, line) for run, line in picked]
    random.Random(SAMPLE_SEED).shuffle(chosen)
    target.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, (stratum, run, line) in enumerate(chosen, start=1):
        record = json.loads(line)
        record["metadata"]["label_source"] = {"run": run, "id": record["id"], "stratum": stratum}
        record["id"] = f"B{n:03d}"
        lines.append(json.dumps(record, ensure_ascii=False))
    (target / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    caps = {
        spec.get("id") or spec["name"]: spec["args"]["max_message_chars"]
        for spec in CRSS.values()
        if "max_message_chars" in spec.get("args", {})
    }
    (target / "caps.json").write_text(json.dumps(caps, indent=2) + "\n", encoding="utf-8")
    configs = {
        stratum_name(sim, crs, dom): config_of(sim, crs, dom, users, 0) for sim, crs, dom, users in STRATA
    }
    sampling = {
        "seed": SAMPLE_SEED,
        "llm_quota": LLM_QUOTA,
        "size": size,
        "max_turns": MAX_TURNS,
        "strata": strata,
        "configs": configs,
    }
    (target / "sampling.json").write_text(json.dumps(sampling, indent=2) + "\n", encoding="utf-8")
    print(f"{len(lines)} dialogues from {len(strata)} strata", flush=True)
    print("| domain | simulator | CRS | pool | sampled |\n|---|---|---|---|---|")
    for stratum, counts in strata.items():
        print(f"| {' | '.join(stratum.split('--'))} | {counts['pool']} | {counts['sampled']} |")


def _attributes(item: Any) -> str:
    """An item's catalogue attributes in one line, for judging claims about it."""
    parts = [f"year {item.year}"] if item.year else []
    for name in ("genres", "directors", "actors", "keywords"):
        values = getattr(item, name)
        if values:
            more = f" (+{len(values) - LIST_VALUES})" if len(values) > LIST_VALUES else ""
            parts.append(f"{name}: {', '.join(values[:LIST_VALUES])}{more}")
    extra = {k: v for k, v in item.extra.items() if k not in BOOKKEEPING and not k.endswith("_id")}
    extra |= {"plot": item.plot} if item.plot else {}
    for name, value in extra.items():
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"{name}: {text[:LONG_TEXT]}{'…' if len(text) > LONG_TEXT else ''}")
    return "; ".join(parts)


def _item_lines(label: str, ids: list[str], domain: Any) -> list[str]:
    lines = []
    for item_id in ids:
        item = domain.items.get(item_id)
        if item is None:
            lines.append(f"    - {label} `{item_id}` (not in the catalogue)")
        else:
            lines.append(f"    - {label} **{item.display_title}**: {_attributes(item)}")
    return lines


def _need_lines(record: Any, domain: Any) -> list[str]:
    need = record.information_need
    if need is None:
        return ["- goal: (none recorded)"]
    constraints = ", ".join(f"{slot} = {value}" for slot, value in need.constraints.items()) or "none"
    targets = [domain.items.get(t) for t in need.targets]
    titles = "; ".join(t.display_title for t in targets if t is not None) or "none"
    return [
        f"- goal: constraints {constraints}",
        f"- requested (wants to ask about): {', '.join(need.requests) or 'nothing'}",
        f"- target items (the user's hidden answers): {titles}",
    ]


def render(target: Path) -> None:
    """Write dialogues.md: per dialogue its id, domain, simulator, CRS, how it ended, the user's goal,
    and every message numbered with its role; under a CRS message, the catalogue attributes of the
    items it recommends or mentions. No detector output."""
    from crsim.domains import domain_named
    from crsim.model.dialogue import Dialogue

    records = [
        Dialogue.model_validate_json(line)
        for line in (target / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    domains: dict[str, Any] = {}
    out = [
        "# The dialogues to label",
        "",
        f"{len(records)} dialogues; label them with GUIDE.md. Message numbers are the `messages` indices.",
        "",
    ]
    for record in records:
        name = record.metadata["domain"]
        domain = domains.setdefault(name, domain_named(name))
        term = record.termination
        ended = (
            f"{term.reason.value}" + (f" ({term.detail})" if term and term.detail else "")
            if term
            else "not recorded"
        )
        out += [
            f"## {record.id}",
            "",
            f"- domain: {name}; simulator: {record.simulator_id}; CRS: {record.crs_id}",
            f"- ended: {ended}",
        ]
        out += _need_lines(record, domain)
        out.append("")
        for index, u in enumerate(record.utterances):
            who = "USER" if u.role.value == "user" else "CRS"
            text = u.text.replace("\n", " ").strip() or "(empty)"
            out.append(f"{index}. **{who}**: {text}")
            if u.role.value == "crs":
                out += _item_lines("recommends", u.recommended_items, domain)
                out += _item_lines(
                    "mentions", [i for i in u.mentioned_items if i not in u.recommended_items], domain
                )
        out += ["", "---", ""]
    (target / "dialogues.md").write_text("\n".join(out), encoding="utf-8")
    print(f"wrote {target / 'dialogues.md'}", flush=True)


def add_wave(target: Path, runs: list[Path], count: int, keep: list[str]) -> None:
    """Append a second wave to the set: from the dialogues of other run folders (e.g. the LLM users of
    `crsim validate sensitivity` and `validate fidelity` studies), every dialogue of a simulator named
    in `keep` (rare simulators) and `count` more drawn uniformly at random (seeded by SAMPLE_SEED and
    "wave2") from the rest, never looking at the detectors. Identical conversations held twice (the
    same user, simulator, CRS and texts in two runs) count once. Numbering continues after the set's
    last id; `sampling.json` records the wave."""
    seen: set[tuple[str, ...]] = set()
    rare: list[tuple[str, str]] = []
    rest: list[tuple[str, str]] = []
    for run in sorted(runs):
        for line in (run / "dialogues.jsonl").read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line torn by a run still writing
                continue
            if not any(u["role"] == "user" for u in record["utterances"]):
                continue
            key = (
                record.get("user_id") or "",
                record.get("simulator_id") or "",
                record.get("crs_id") or "",
                *(u["text"] for u in record["utterances"]),
            )
            if key in seen:
                continue
            seen.add(key)
            (rare if record.get("simulator_id") in keep else rest).append((run.name, line))
    picked = rare + random.Random(f"{SAMPLE_SEED}:wave2").sample(rest, min(count, len(rest)))
    random.Random(f"{SAMPLE_SEED}:wave2:order").shuffle(picked)
    existing = (target / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    start = len(existing) + 1
    lines = []
    for n, (run, line) in enumerate(picked, start=start):
        record = json.loads(line)
        stratum = "--".join(
            [
                record["metadata"].get("domain", "?"),
                record.get("simulator_id") or "?",
                record.get("crs_id") or "?",
            ]
        )
        record["metadata"]["label_source"] = {"run": run, "id": record["id"], "stratum": stratum, "wave": 2}
        record["id"] = f"B{n:03d}"
        lines.append(json.dumps(record, ensure_ascii=False))
    (target / "dialogues.jsonl").write_text("\n".join(existing + lines) + "\n", encoding="utf-8")
    sampling = json.loads((target / "sampling.json").read_text(encoding="utf-8"))
    sampling["wave2"] = {
        "runs": [run.name for run in sorted(runs)],
        "pool": len(rare) + len(rest),
        "kept_all_of": keep,
        "kept": len(rare),
        "drawn": len(picked) - len(rare),
        "ids": f"B{start:03d}-B{start + len(picked) - 1:03d}",
    }
    (target / "sampling.json").write_text(json.dumps(sampling, indent=2) + "\n", encoding="utf-8")
    drawn = len(picked) - len(rare)
    print(f"added {len(picked)} dialogues ({len(rare)} of {keep}, {drawn} drawn of {len(rest)})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="hold the pool of simulated dialogues")
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--rounds", type=int, default=10)
    gen.add_argument("--until", help="stop starting runs after this local time (HH:MM)")
    gen.add_argument("--only", choices=["llm", "rules"])
    gen.add_argument("--domain", help="only the strata of this domain (a second process side by side)")
    pick = sub.add_parser("sample", help="draw the labelled set from the pool")
    pick.add_argument("pool", type=Path)
    pick.add_argument("--out", type=Path, required=True)
    pick.add_argument("--size", type=int, default=SIZE)
    show = sub.add_parser("render", help="write dialogues.md for the readers")
    show.add_argument("folder", type=Path)
    wave = sub.add_parser("add", help="append a second wave drawn from other run folders")
    wave.add_argument("folder", type=Path)
    wave.add_argument("runs", type=Path, nargs="+")
    wave.add_argument("--count", type=int, required=True)
    wave.add_argument("--keep-all", nargs="*", default=[], help="simulators whose every dialogue is taken")
    score = sub.add_parser("score", help="crsim validate detectors FOLDER")
    score.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.pool, args.out, args.size)
    elif args.command == "add":
        add_wave(args.folder, args.runs, args.count, args.keep_all)
    elif args.command == "render":
        render(args.folder)
    elif args.command == "score":
        subprocess.run(
            [sys.executable, "-m", "crsim", "validate", "detectors", str(args.folder)], check=False
        )
    elif args.command == "generate":
        generate(args.out, args.rounds, args.until, args.only, args.domain)


if __name__ == "__main__":
    main()
