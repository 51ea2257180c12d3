"""What the rule-based understanding returns: the understood utterance, the context it is read in, periods.

The result types live apart from the parser (`understanding`) and the intent rules (`intents`),
which both fill them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crsim.model.acts import DialogueAct


@dataclass(frozen=True, slots=True)
class Period:
    """A wanted stretch of release years: a decade ("1990s"), a year, "recent" or "classic"."""

    label: str
    start: int
    end: int

    def contains(self, year: int) -> bool:
        return self.start <= year <= self.end


@dataclass(frozen=True, slots=True)
class Context:
    """What the CRS last did, which resolves "no", "yes", "it" and bare slot values."""

    elicited: str | None = None
    recommended: str | None = None
    yes_no: bool = False


@dataclass
class Understanding:
    """Everything understood from one utterance; `acts` is the contract form of the same content."""

    text: str
    acts: list[DialogueAct] = field(default_factory=list)
    intents: set[str] = field(default_factory=set)
    likes: dict[str, list[str]] = field(default_factory=dict)
    dislikes: dict[str, list[str]] = field(default_factory=dict)
    periods: list[Period] = field(default_factory=list)
    disliked_periods: list[Period] = field(default_factory=list)
    no_preference: list[str] = field(default_factory=list)
    inquiries: list[str] = field(default_factory=list)
    mentioned_items: list[str] = field(default_factory=list)
    liked_items: list[str] = field(default_factory=list)
    seen_items: list[str] = field(default_factory=list)
    accepted_items: list[str] = field(default_factory=list)
    rejected_items: list[str] = field(default_factory=list)
    newer: bool = False
    older: bool = False
    #: Content words of stated topics ("time travel"), and leftover content words (weaker evidence).
    topic_words: list[str] = field(default_factory=list)
    disliked_topic_words: list[str] = field(default_factory=list)
    free_words: list[str] = field(default_factory=list)
    thanks: bool = False

    def has(self, intent: str) -> bool:
        return intent in self.intents

    @property
    def gives_preferences(self) -> bool:
        """Whether the utterance states any preference (a new constraint or critique)."""
        return bool(
            self.likes or self.dislikes or self.periods or self.disliked_periods or self.topic_words
        ) or bool(self.liked_items or self.newer or self.older or self.disliked_topic_words)

    @property
    def understood(self) -> bool:
        """Whether anything at all was recognised (else the CRS should say it did not follow)."""
        return (
            bool(self.intents or self.inquiries or self.no_preference or self.thanks)
            or self.gives_preferences
        )
