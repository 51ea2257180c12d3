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
    """Item id -> "Title (year)" for a run's domain; empty for a domain crsim does not ship."""
    if domain != "movies":
        return {}
    from crsim.data.movies import movie_items

    titles = {}
    for item in movie_items():
        titles[item.id] = f"{item.title} ({item.year})" if item.year else item.title
    return titles
