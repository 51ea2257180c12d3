"""What checking a domain file finds: the problems (each one line, located), the warnings, the domain,
and the cap on how many problems of one item file are listed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from crsim.model.domain import Domain
from crsim.model.items import ItemCollection


@dataclass
class DomainCheck:
    """What checking a domain file found: problems (each one line, located), warnings, the domain."""

    path: Path
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    domain: Domain | None = None
    #: Problems found but not listed (beyond `MAX_LISTED_PROBLEMS` of one item file).
    unlisted: int = 0
    #: The items that did read when the item file has problems (so the slots are still checked).
    partial_items: ItemCollection | None = None

    @property
    def count(self) -> int:
        """All problems found, listed or not."""
        return len(self.problems) + self.unlisted

    @property
    def ok(self) -> bool:
        return not self.problems and self.domain is not None


#: How many problems of one item file are listed; the rest are counted (a file with a systematic
#: defect would otherwise print one line per record).
MAX_LISTED_PROBLEMS = 20


@dataclass
class ItemProblems:
    """The problems of one item file: the first `MAX_LISTED_PROBLEMS` listed, the rest counted."""

    check: DomainCheck
    path: Path
    count: int = 0

    def add(self, problem: str) -> None:
        self.count += 1
        if self.count <= MAX_LISTED_PROBLEMS:
            self.check.problems.append(f"items.path: {problem}")

    def close(self) -> None:
        rest = self.count - MAX_LISTED_PROBLEMS
        if rest > 0:
            self.check.problems.append(
                f"items.path: {self.path}: {rest} more problem{'s' if rest > 1 else ''} not listed "
                f"(the first {MAX_LISTED_PROBLEMS} are above)"
            )
            self.check.unlisted += rest - 1  # the line above stands for one of them
