"""Reading a run folder for presentation: `RunFolder` and `open_run` now live in the model layer
(`crsim.model.run_folder`) and are re-exported here under their old names; `item_titles` stays."""

from __future__ import annotations

from crsim.model.run_folder.files import DIALOGUES, MANIFEST, SCORES, SUMMARY
from crsim.model.run_folder.folder import RunFolder, count_lines, open_run

__all__ = [
    "DIALOGUES",
    "MANIFEST",
    "SCORES",
    "SUMMARY",
    "RunFolder",
    "count_lines",
    "item_titles",
    "open_run",
]


def item_titles(domain: str) -> dict[str, str]:
    """Item id -> "Title (year)" for a run's domain; empty for a domain that cannot be read here."""
    from crsim.core.errors import CrsimError
    from crsim.domains import domain_named

    try:
        items = domain_named(domain).items
    except CrsimError:
        return {}
    return {item.id: item.display_title for item in items}
