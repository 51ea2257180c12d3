"""The metric base classes: one dialogue in, one number (or "not applicable") out.

A metric that cannot score a dialogue raises `NotApplicable` from `compute`; `score` turns that
into None, so a missing value is counted as missing and never silently becomes 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from pydantic import Field

from crsim.core.components import BuildContext
from crsim.core.plugins import Params as BaseParams
from crsim.core.plugins import Registry
from crsim.model.dialogue import Dialogue
from crsim.model.run_folder.summary import Direction, MetricInfo

#: Reasons a dialogue cannot be scored; summaries count missing values per reason.
NO_ACTS = "user utterance without dialogue acts (annotate the dialogue first)"
NO_TARGETS = "no target items in the information need"
FEWER_THAN_TWO_LISTS = "fewer than two recommendation lists to compare"


def checked_params(component: Metric | Evaluator, params: BaseParams | None) -> BaseParams:
    """`params`, or the defaults when None; a Params model of another component is a TypeError."""
    expected = type(component).Params
    if params is not None and not isinstance(params, expected):
        raise TypeError(
            f"{type(component).__name__} needs {expected.__qualname__}, got {type(params).__qualname__}"
        )
    return params if params is not None else expected()


class NotApplicable(Exception):
    """Raised by `Metric.compute` when the dialogue lacks what the metric needs."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class Metric(ABC):
    """A per-dialogue metric. Subclasses register with `@metric(name)` and nest a `Params` model.

    Built as `Class(params, ctx)` like every component (`crsim.core.components`); both may be left out
    when calling it directly (default arguments, empty context). A metric calls no language model.
    """

    Params: ClassVar[type[BaseParams]] = BaseParams
    registry_name: ClassVar[str]
    #: True when every value is 0 or 1 (an indicator such as Success; its mean is a proportion, which
    #: reports draw with a binomial interval), False when values are not restricted to 0/1, None when
    #: the metric does not say (reports then look at the values).
    binary: ClassVar[bool | None] = None
    #: Which way is better: "higher", "lower", or "none" (the value describes, it does not judge);
    #: comparisons name a winner only by it. A metric that does not say gets no winner.
    direction: ClassVar[Direction] = "none"
    needs_llm: ClassVar[bool] = False

    def __init__(self, params: BaseParams | None = None, ctx: BuildContext | None = None) -> None:
        self.params = checked_params(self, params)
        #: Set from a config's `id` to tell two instances of one metric apart in tables.
        self.id: str | None = None

    @property
    def label(self) -> str:
        """Column name in tables and records: the config `id` if given, else a readable name."""
        return self.id or self.default_label()

    @abstractmethod
    def default_label(self) -> str:
        """Readable name including the arguments that change the number, e.g. "Recall@(t,10)"."""

    @abstractmethod
    def compute(self, dialogue: Dialogue) -> float:
        """The value for one dialogue; raises `NotApplicable` when it cannot be computed."""

    @classmethod
    def llm_roles(cls, params: BaseParams) -> list[str]:
        """A metric calls no language model."""
        return []

    def score(self, dialogue: Dialogue) -> float | None:
        """The value for one dialogue, or None when the metric does not apply to it."""
        try:
            return self.compute(dialogue)
        except NotApplicable:
            return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params!r})"


class PerTurnMetric(Metric):
    """A metric defined at every turn t, so it can also be drawn as a curve over turns."""

    @abstractmethod
    def per_turn(self, dialogue: Dialogue, max_turns: int) -> list[float | None]:
        """Values at turns 1..max_turns (past the dialogue's end its last state carries forward).

        An entry is None where the value is undefined at that turn; every entry is None when the
        metric does not apply to the dialogue at all.
        """


class CutoffParams(BaseParams):
    """Arguments of list metrics: the cut-off K and the turn t (None = the dialogue's last turn)."""

    k: int = Field(10, ge=1, description="Only the first k items of each recommendation list count.")
    turn: int | None = Field(None, ge=1, description="Turn t to score at; None = the dialogue's last turn.")


@dataclass(frozen=True)
class Value:
    """One number an evaluator gives a dialogue: for an aspect, at dialogue level or for one turn.

    `value` None means no number: `error` then says why (an unreadable judge answer, a failed call),
    and `raw` keeps the model's text. A missing value is counted in summaries, never replaced.
    """

    aspect: str | None
    value: float | None
    turn: int | None = None
    explanation: str | None = None
    error: str | None = None
    raw: str | None = None


class Evaluator(ABC):
    """A per-dialogue scorer that may give several aspects and per-turn values, and may await (LLMs).

    Registered with `@metric(name)` like `Metric`, with a nested `Params`, and built as
    `Class(params, ctx)`. Evaluators that call language models set `needs_llm = True`, list their
    roles in `llm_roles(params)` and call them through `ctx.llms` (an `LLMHub`). Records are
    labelled `"{label}/{aspect}"` (or just `label` when `aspect` is None); turn-level values carry
    the turn number t (1-based, the CRS reply to the t-th user utterance) and are averaged per
    dialogue before population statistics.
    """

    Params: ClassVar[type[BaseParams]] = BaseParams
    registry_name: ClassVar[str]
    #: Which way is better for every aspect it gives (see `Metric.direction`).
    direction: ClassVar[Direction] = "none"
    needs_llm: ClassVar[bool] = False

    def __init__(self, params: BaseParams | None = None, ctx: BuildContext | None = None) -> None:
        self.params = checked_params(self, params)
        self.id: str | None = None

    @classmethod
    def llm_roles(cls, params: BaseParams) -> list[str]:
        """Model roles this evaluator calls, so their providers are built (and checked) up front."""
        return []

    @property
    def label(self) -> str:
        return self.id or self.default_label()

    @abstractmethod
    def default_label(self) -> str:
        """Readable name, e.g. the rubric's name."""

    def record_label(self, aspect: str | None) -> str:
        return self.label if aspect is None else f"{self.label}/{aspect}"

    @abstractmethod
    async def evaluate(self, dialogue: Dialogue) -> list[Value]:
        """All values for one dialogue. Raise `NotApplicable` when the dialogue lacks what is needed;
        any other exception becomes an error record for this dialogue only."""


#: The metric registry: metrics and evaluators.
metric_registry: Registry[type[Metric] | type[Evaluator]] = Registry("metric")

_MetricClass = TypeVar("_MetricClass", bound=type[Metric] | type[Evaluator])


def metric(name: str) -> Callable[[_MetricClass], _MetricClass]:
    """Register a metric or evaluator class under `name` (`@metric("recall")`)."""
    return metric_registry.register(name)  # type: ignore[return-value]


def metric_info(metric: Metric | Evaluator) -> MetricInfo:
    """What `summary.json` records of a built metric (label, registry name, 0/1, per-turn, K, direction)."""
    k = getattr(metric.params, "k", None)
    return MetricInfo(
        label=metric.label,
        name=metric.registry_name,
        binary=metric.binary if isinstance(metric, Metric) else None,
        per_turn=isinstance(metric, PerTurnMetric),
        k=k if isinstance(k, int) else None,
        direction=metric.direction,
    )
