"""Pairwise comparison of two user simulators by an LLM judge (after RecUserSim §4.1.1).

Protocol:

1. **Pairing.** Dialogues of run A and run B are paired when they have the same CRS (`crs_id`),
   the same simulated user (`user_id`) and the same trial (the `#N` suffix of the dialogue id, 0
   without one). Each run must hold one simulator, or one is chosen (`simulator_a`/`simulator_b`).
   Dialogues without a partner, without a `user_id`, or repeating a key already seen in their run
   are not compared; they are listed in the report (`unpaired_a`, `unpaired_b`, `duplicates_*`).
2. **Judging.** For each pair and each criterion the judge sees both conversations and names the
   better simulated user ("1", "2" or "tie", after a justification). It is asked twice: with A's
   conversation first and with B's first, to cancel a preference for a position.
3. **Outcome (from A's side).** Both orders prefer A: win; both prefer B: loss; both say tie:
   draw; the two orders disagree (including a winner in one order and a tie in the other): draw,
   counted in `disagreements`. If either order fails (call error or unreadable answer) the
   criterion has no outcome for that pair; it is counted in `errors` and left out of the rates.
4. **Rates.** Win, draw and loss rates per criterion over the pairs with an outcome, each with a
   Wilson score interval (`scipy.stats.binomtest(...).proportion_ci(method="wilson")`), which
   stays inside [0, 1] and behaves at rates near 0 or 1 and small n, unlike the normal interval.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal

import jinja2
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from scipy.stats import binomtest

from crsim.core.errors import ConfigError
from crsim.core.progress import Progress
from crsim.core.seeding import derive_seed
from crsim.core.yaml_files import describe_yaml_error, load_yaml
from crsim.eval.judge.transcript import fit, lines
from crsim.llm.client import LLM, LLMHub
from crsim.llm.config import LLMSettings
from crsim.llm.errors import LLMError
from crsim.llm.prompts import load_template, render
from crsim.llm.structured import generate_json
from crsim.llm.types import GenerationConfig, Message, system, user
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.files import RunPaths

CRITERIA = "crsim.studies.criteria"
DEFAULT_CRITERIA = "recusersim6"
PROMPTS = "crsim.studies.prompts"
DEFAULT_PROMPT = "pairwise.j2"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TRIAL = re.compile(r"#(\d+)$")

Side = Literal["A", "B", "tie"]
Outcome = Literal["win", "draw", "loss"]


# --- criteria ----------------------------------------------------------------------------------


class Criteria(BaseModel):
    """Named comparison criteria, each described in words the judge reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    source: str = ""
    criteria: dict[str, Annotated[str, Field(min_length=1)]] = Field(min_length=1)

    @field_validator("criteria")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _NAME.match(name):
                raise ValueError(f"criterion {name!r}: names are lower case letters, digits and underscores")
            if not text.strip():
                raise ValueError(f"criterion {name!r}: the description is empty")
        return {name: " ".join(text.split()) for name, text in value.items()}


def shipped_criteria() -> list[str]:
    return sorted(e.name[: -len(".yaml")] for e in files(CRITERIA).iterdir() if e.name.endswith(".yaml"))


def load_criteria(ref: str | Path = DEFAULT_CRITERIA) -> Criteria:
    """Shipped criteria by name (`recusersim6`) or a criteria YAML file by path."""
    text = str(ref)
    if isinstance(ref, str) and text in shipped_criteria():
        return _shipped_criteria(text)
    path = Path(ref)
    if not path.is_file():
        known = ", ".join(shipped_criteria())
        raise ConfigError(f"criteria {text!r}: neither shipped criteria ({known}) nor a file")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"criteria file {path}: not readable ({exc})") from None
    return _parse_criteria(source, str(path))


@cache
def _shipped_criteria(name: str) -> Criteria:
    return _parse_criteria(files(CRITERIA).joinpath(f"{name}.yaml").read_text(encoding="utf-8"), name)


def _parse_criteria(source: str, where: str) -> Criteria:
    try:
        data = load_yaml(source)
    except yaml.YAMLError as exc:
        raise ConfigError(f"criteria file {where}: {describe_yaml_error(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"criteria file {where}: expected a mapping with name and criteria")
    try:
        return Criteria.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "the file"
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field; expected name, description, source, criteria"
        raise ConfigError(f"criteria file {where}: field {loc!r}: {message}") from None


# --- pairing -----------------------------------------------------------------------------------


class PairKey(BaseModel):
    """What a pair shares: the CRS, the simulated user and the trial."""

    model_config = ConfigDict(frozen=True)

    crs_id: str | None
    user_id: str
    trial: int

    def sort_key(self) -> tuple[str, str, int]:
        return (self.crs_id or "", self.user_id, self.trial)


def trial_of(dialogue_id: str) -> int:
    """The trial index in a dialogue id (`crs/sim/user#2` -> 2); 0 without a `#N` suffix."""
    match = _TRIAL.search(dialogue_id)
    return int(match.group(1)) if match else 0


def pair_key(dialogue: Dialogue) -> PairKey | None:
    """The dialogue's pairing key, or None when it names no user (it cannot be paired)."""
    if not dialogue.user_id:
        return None
    return PairKey(crs_id=dialogue.crs_id, user_id=dialogue.user_id, trial=trial_of(dialogue.id))


@dataclass
class Pairing:
    """Paired dialogues (sorted by key) and the ids of those left unpaired or repeated."""

    pairs: list[tuple[PairKey, Dialogue, Dialogue]] = field(default_factory=list)
    unpaired_a: list[str] = field(default_factory=list)
    unpaired_b: list[str] = field(default_factory=list)
    duplicates_a: list[str] = field(default_factory=list)
    duplicates_b: list[str] = field(default_factory=list)


def _index(dialogues: list[Dialogue]) -> tuple[dict[PairKey, Dialogue], list[str], list[str]]:
    keyed: dict[PairKey, Dialogue] = {}
    unkeyed: list[str] = []
    duplicates: list[str] = []
    for dialogue in dialogues:
        key = pair_key(dialogue)
        if key is None:
            unkeyed.append(dialogue.id)
        elif key in keyed:
            duplicates.append(dialogue.id)
        else:
            keyed[key] = dialogue
    return keyed, unkeyed, duplicates


def pair_dialogues(dialogues_a: list[Dialogue], dialogues_b: list[Dialogue]) -> Pairing:
    """Pair by (crs_id, user_id, trial); the first dialogue of a repeated key is kept."""
    a, unkeyed_a, duplicates_a = _index(dialogues_a)
    b, unkeyed_b, duplicates_b = _index(dialogues_b)
    shared = sorted(set(a) & set(b), key=PairKey.sort_key)
    return Pairing(
        pairs=[(key, a[key], b[key]) for key in shared],
        unpaired_a=unkeyed_a + [d.id for k, d in a.items() if k not in b],
        unpaired_b=unkeyed_b + [d.id for k, d in b.items() if k not in a],
        duplicates_a=duplicates_a,
        duplicates_b=duplicates_b,
    )


def select_simulator(
    dialogues: list[Dialogue], simulator: str | None, side: str
) -> tuple[list[Dialogue], str | None]:
    """The dialogues of one simulator: `simulator`, or the only one present; else a ConfigError."""
    present = Counter(d.simulator_id for d in dialogues)
    if simulator is not None:
        chosen = [d for d in dialogues if d.simulator_id == simulator]
        if not chosen:
            known = ", ".join(sorted(str(s) for s in present)) or "none"
            raise ConfigError(
                f"run {side}: no dialogue of simulator {simulator!r}; simulators present: {known}"
            )
        return chosen, simulator
    if len(present) > 1:
        known = ", ".join(sorted(str(s) for s in present))
        raise ConfigError(
            f"run {side} holds dialogues of several simulators ({known}); choose one (--sim-{side.lower()})"
        )
    return dialogues, next(iter(present), None)


# --- records -----------------------------------------------------------------------------------


class Preference(BaseModel):
    """The judge's answer in one order, translated to run labels: A, B, tie (None on error)."""

    order: Literal["a_first", "b_first"]
    better: Side | None
    justification: str | None = None
    raw: str | None = None
    error: str | None = None


class CriterionOutcome(BaseModel):
    """One criterion for one pair: the outcome from A's side (None when an order failed)."""

    criterion: str
    outcome: Outcome | None
    orders_agree: bool | None
    a_first: Preference
    b_first: Preference
    error: str | None = None


class PairResult(BaseModel):
    crs_id: str | None
    user_id: str
    trial: int
    dialogue_a: str
    dialogue_b: str
    outcomes: list[CriterionOutcome]


class Rate(BaseModel):
    """A proportion with its confidence interval (all None when there is nothing to count)."""

    rate: float | None
    ci_low: float | None
    ci_high: float | None


class CriterionSummary(BaseModel):
    """Win/draw/loss of A against B on one criterion over the pairs with an outcome (`n`)."""

    criterion: str
    n: int
    wins: int
    draws: int
    losses: int
    disagreements: int = Field(
        description="Pairs whose two orders gave different answers (counted as draws)."
    )
    errors: int = Field(description="Pairs without an outcome (a failed call or unreadable answer).")
    win: Rate
    draw: Rate
    loss: Rate


class PairwiseReport(BaseModel):
    """Everything a comparison produced: setup, pairing counts, per-criterion rates, every answer."""

    run_a: str | None
    run_b: str | None
    simulator_a: str | None
    simulator_b: str | None
    criteria: str
    judge: str
    confidence: float
    interval: str = "wilson"
    pairs_compared: int
    left_out_by_limit: int
    unpaired_a: list[str]
    unpaired_b: list[str]
    duplicates_a: list[str]
    duplicates_b: list[str]
    summaries: list[CriterionSummary]
    pairs: list[PairResult]


# --- judging -----------------------------------------------------------------------------------


class Verdict(BaseModel):
    """The judge's answer: justification first, then which conversation's user is better."""

    model_config = ConfigDict(extra="forbid")

    justification: str = Field(min_length=1)
    better: Literal["1", "2", "tie"]


@cache
def _verdict_schema(max_justification_chars: int | None) -> type[Verdict]:
    justification: Any = Field(min_length=1, max_length=max_justification_chars)
    return create_model("Verdict", __base__=Verdict, justification=(str, justification))


@dataclass
class PairwiseJudge:
    """Asks an LLM which of two conversations' simulated users is better, per criterion, both orders."""

    llm: LLM
    criteria: Criteria
    temperature: float | None = None
    max_tokens: int | None = None
    max_chars: int = 8000
    max_justification_chars: int | None = None
    prompt: str = DEFAULT_PROMPT
    template: jinja2.Template = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.template = load_template(PROMPTS, self.prompt)

    def messages(self, first: Dialogue, second: Dialogue, criterion: str) -> list[Message]:
        variables: dict[str, Any] = {
            "description": self.criteria.description,
            "criterion": criterion,
            "criterion_description": self.criteria.criteria[criterion],
            "first": fit(lines(first.utterances), self.max_chars),
            "second": fit(lines(second.utterances), self.max_chars),
        }
        parts = []
        for part in ("system", "task"):
            text = render(self.template, part=part, **variables)
            if not text:
                raise ConfigError(f"prompt template {self.prompt!r} renders nothing for part {part!r}")
            parts.append(text)
        return [system(parts[0]), user(parts[1])]

    async def ask(
        self, a: Dialogue, b: Dialogue, criterion: str, order: Literal["a_first", "b_first"]
    ) -> Preference:
        """One order's answer, as A/B/tie."""
        first, second = (a, b) if order == "a_first" else (b, a)
        seed = derive_seed("pairwise", criterion, a.id, b.id, order) % 2**31
        config = GenerationConfig(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        schema = _verdict_schema(self.max_justification_chars)
        try:
            answer = await generate_json(self.llm, self.messages(first, second, criterion), schema, config)
        except LLMError as exc:
            return Preference(order=order, better=None, error=f"{type(exc).__name__}: {exc}")
        if not answer.ok or answer.value is None:
            return Preference(
                order=order,
                better=None,
                raw=answer.raw,
                error=f"LLMOutputError: {answer.error or 'no value'}",
            )
        said = answer.value.better
        better: Side = "tie"
        if said != "tie":
            better = "A" if (said == "1") == (order == "a_first") else "B"
        return Preference(
            order=order, better=better, justification=answer.value.justification.strip(), raw=answer.raw
        )

    async def compare(
        self, a: Dialogue, b: Dialogue, limit: asyncio.Semaphore | None = None
    ) -> list[CriterionOutcome]:
        """Every criterion for one pair, both orders asked."""

        async def gated(criterion: str, order: Literal["a_first", "b_first"]) -> Preference:
            async with limit or nullcontext():
                return await self.ask(a, b, criterion, order)

        names = list(self.criteria.criteria)
        answers = await asyncio.gather(*(gated(c, o) for c in names for o in ("a_first", "b_first")))
        return [outcome(c, answers[2 * i], answers[2 * i + 1]) for i, c in enumerate(names)]


def outcome(criterion: str, a_first: Preference, b_first: Preference) -> CriterionOutcome:
    """Combine the two orders (see the module docstring, step 3)."""
    failed = next((p.error for p in (a_first, b_first) if p.error is not None or p.better is None), None)
    if failed is not None or a_first.better is None or b_first.better is None:
        return CriterionOutcome(
            criterion=criterion,
            outcome=None,
            orders_agree=None,
            a_first=a_first,
            b_first=b_first,
            error=failed or "no answer",
        )
    agree = a_first.better == b_first.better
    result: Outcome = "draw"
    if agree and a_first.better == "A":
        result = "win"
    elif agree and a_first.better == "B":
        result = "loss"
    return CriterionOutcome(
        criterion=criterion, outcome=result, orders_agree=agree, a_first=a_first, b_first=b_first
    )


def rate(count: int, n: int, confidence: float) -> Rate:
    """`count / n` with its Wilson score interval; all None for n = 0."""
    if n == 0:
        return Rate(rate=None, ci_low=None, ci_high=None)
    interval = binomtest(count, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Rate(rate=count / n, ci_low=float(interval.low), ci_high=float(interval.high))


def summarize(
    pairs: list[PairResult], criteria: list[str], confidence: float = 0.95
) -> list[CriterionSummary]:
    """Per-criterion counts and rates over the pairs."""
    summaries = []
    for criterion in criteria:
        found = [o for p in pairs for o in p.outcomes if o.criterion == criterion]
        counts = Counter(o.outcome for o in found if o.outcome is not None)
        n = sum(counts.values())
        summaries.append(
            CriterionSummary(
                criterion=criterion,
                n=n,
                wins=counts["win"],
                draws=counts["draw"],
                losses=counts["loss"],
                disagreements=sum(1 for o in found if o.orders_agree is False),
                errors=sum(1 for o in found if o.outcome is None),
                win=rate(counts["win"], n, confidence),
                draw=rate(counts["draw"], n, confidence),
                loss=rate(counts["loss"], n, confidence),
            )
        )
    return summaries


async def compare_dialogues(
    dialogues_a: list[Dialogue],
    dialogues_b: list[Dialogue],
    judge: PairwiseJudge,
    *,
    simulator_a: str | None = None,
    simulator_b: str | None = None,
    limit: int | None = None,
    concurrency: int = 8,
    confidence: float = 0.95,
    run_a: str | None = None,
    run_b: str | None = None,
    progress: Progress | None = None,
) -> PairwiseReport:
    """Pair, judge (both orders per criterion) and summarise; see the module docstring.

    `limit` compares only the first N pairs in key order (the rest are counted in
    `left_out_by_limit`); `concurrency` bounds the judge calls in flight; `progress` hears how many
    pairs there are and each one judged.
    """
    chosen_a, sim_a = select_simulator(dialogues_a, simulator_a, "A")
    chosen_b, sim_b = select_simulator(dialogues_b, simulator_b, "B")
    pairing = pair_dialogues(chosen_a, chosen_b)
    pairs = pairing.pairs if limit is None else pairing.pairs[:limit]
    gate = asyncio.Semaphore(max(1, concurrency))
    if progress is not None:
        progress.set_total(len(pairs))

    async def judged(a: Dialogue, b: Dialogue) -> Any:
        found = await judge.compare(a, b, gate)
        if progress is not None:
            progress.advance()
        return found

    outcomes = await asyncio.gather(*(judged(a, b) for _, a, b in pairs))
    results = [
        PairResult(
            crs_id=key.crs_id,
            user_id=key.user_id,
            trial=key.trial,
            dialogue_a=a.id,
            dialogue_b=b.id,
            outcomes=found,
        )
        for (key, a, b), found in zip(pairs, outcomes, strict=True)
    ]
    names = list(judge.criteria.criteria)
    return PairwiseReport(
        run_a=run_a,
        run_b=run_b,
        simulator_a=sim_a,
        simulator_b=sim_b,
        criteria=judge.criteria.name,
        judge=judge.llm.describe(),
        confidence=confidence,
        pairs_compared=len(results),
        left_out_by_limit=len(pairing.pairs) - len(pairs),
        unpaired_a=pairing.unpaired_a,
        unpaired_b=pairing.unpaired_b,
        duplicates_a=pairing.duplicates_a,
        duplicates_b=pairing.duplicates_b,
        summaries=summarize(results, names, confidence),
        pairs=results,
    )


def run_dialogues(run: str | Path) -> list[Dialogue]:
    """The dialogues of a run folder (its `dialogues.jsonl`) or of a dialogues JSONL file."""
    run = Path(run)
    path = RunPaths(run).dialogues if run.is_dir() else run
    return list(iter_dialogues(path))


async def compare_runs(
    run_a: str | Path,
    run_b: str | Path,
    *,
    settings: LLMSettings | None = None,
    criteria: str | Path = DEFAULT_CRITERIA,
    cache: str | Path | None = None,
    role: str = "judge",
    simulator_a: str | None = None,
    simulator_b: str | None = None,
    limit: int | None = None,
    concurrency: int = 8,
    confidence: float = 0.95,
    temperature: float | None = None,
    max_tokens: int | None = None,
    max_chars: int = 8000,
    max_justification_chars: int | None = None,
    progress: Progress | None = None,
) -> PairwiseReport:
    """Compare the simulators of two runs with the judge of `settings` (default: the local model).

    The response cache is `cache`, else the file `settings` names, else `llm_cache.sqlite` in
    run A's folder (next to the file when run A is a dialogues file).
    """
    run_a = Path(run_a)
    run_b = Path(run_b)
    cache = None if cache is None else Path(cache)
    dialogues_a, dialogues_b = run_dialogues(run_a), run_dialogues(run_b)
    chosen = load_criteria(criteria)
    settings = settings or LLMSettings()
    if cache is not None:
        settings = settings.model_copy(update={"cache": settings.cache.model_copy(update={"path": cache})})
    folder = run_a if run_a.is_dir() else run_a.parent
    hub = LLMHub(settings, cache_path=RunPaths(folder).llm_cache)
    try:
        hub.check([role])
        judge = PairwiseJudge(
            hub.role(role),
            chosen,
            temperature=temperature,
            max_tokens=max_tokens,
            max_chars=max_chars,
            max_justification_chars=max_justification_chars,
        )
        return await compare_dialogues(
            dialogues_a,
            dialogues_b,
            judge,
            simulator_a=simulator_a,
            simulator_b=simulator_b,
            limit=limit,
            concurrency=concurrency,
            confidence=confidence,
            run_a=str(run_a),
            run_b=str(run_b),
            progress=progress,
        )
    finally:
        await hub.aclose()
