"""IARD (Cai and Chen, UMAP 2020): 336 ReDial dialogues labelled with user intents and recommender actions.

Two published forms are read. The original (`umap2020_IARD_Cai.json`, an object keyed by ReDial
conversation id) has per-utterance sub-intents/actions, top-level intents and `@id <Title (Year)>`
movie mentions; each sub-label becomes one act (mapped through `intents.IARD_*`), the labels are
kept in `annotations["labels"]` (`intents`, `top_level`), mentions become item ids (ReDial movie
ids, optionally checked against ReDial's `movies_with_mentions.csv`) and are written as their
titles. A recommender utterance labelled REC-S or REC-E recommends the items it mentions that the
seeker has not mentioned before. UserSimCRS's augmented copies (`formatted_IARD_annotated_gold.json`,
77 dialogues with slot values; `..._partially.json`, 259 without) are DialogueKit JSON and go
through `dialoguekit.convert_record` with the `iard` scheme.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field

from crsim.data.datasets.base import DatasetReader, RawRecord, dataset
from crsim.data.datasets.dialoguekit import convert_record
from crsim.data.datasets.files import iter_files, read_json
from crsim.data.datasets.intents import IARD_CRS_INTENTS, IARD_USER_INTENTS
from crsim.data.datasets.redial import read_catalog
from crsim.errors import DataError
from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.items import Item, ItemCollection
from crsim.model.mentions import split_named
from crsim.model.text import split_title_year
from crsim.registry import Params as ComponentParams

ROLES = {"seeker": Role.USER, "recommender": Role.CRS}
_TABLES = {Role.USER: IARD_USER_INTENTS, Role.CRS: IARD_CRS_INTENTS}
_MENTION = re.compile(r"@(\d+)(?:\s*<([^<>]*)>)?")
_RECOMMENDING = frozenset({"REC-S", "REC-E"})
#: The annotation holding the IARD labels (declared in model/annotations.py).
LABELS = keys.DATASET_LABELS.name


class IardParams(ComponentParams):
    catalog: Path | None = Field(
        None,
        description="ReDial's `movies_with_mentions.csv` (or .gz): every mention must name a movie in it.",
    )


@dataset("iard")
class IardReader(DatasetReader):
    """IARD, original release and UserSimCRS's annotated copies (splits original/gold/partial)."""

    Params = IardParams
    description = "IARD: umap2020_IARD_Cai.json and/or formatted_IARD_annotated_*.json (file or folder)"

    def records(self, src: Path) -> Iterator[RawRecord]:
        for path in iter_files(src):
            data = read_json(path)
            if isinstance(data, dict):
                for number, (key, value) in enumerate(data.items(), start=1):
                    record = {"conversation_id": key, **value} if isinstance(value, dict) else value
                    yield RawRecord(path, number, record)
            elif isinstance(data, list):
                yield from (RawRecord(path, number, raw) for number, raw in enumerate(data, start=1))
            else:
                raise DataError(f"expected a JSON object or array, got {type(data).__name__}", path=str(path))

    def convert(self, record: RawRecord) -> Dialogue:
        if isinstance(record.data, dict) and "conversation" in record.data:
            return self._convert_augmented(record)
        return self._convert_original(record)

    # --- UserSimCRS's augmented copies ----------------------------------------------------------

    def _convert_augmented(self, record: RawRecord) -> Dialogue:
        name = record.path.name
        split = "gold" if "gold" in name else "partial" if "partial" in name else name.split(".")[0]
        dialogue = convert_record(record, dataset_name="iard", split=split, scheme="iard", reader=self)
        meta = record.data.get("metadata") or {}
        accepted = meta.get("accepted_recommendations", []) if isinstance(meta, dict) else None
        if not isinstance(accepted, list) or not all(isinstance(t, str) for t in accepted):
            raise record.error("expected a list of titles", "metadata.accepted_recommendations")
        dialogue.metadata["accepted_recommendations"] = accepted
        workers = {"seeker": record.data.get("user"), "recommender": record.data.get("agent")}
        dialogue.metadata["worker_ids"] = {k: v.get("id") for k, v in workers.items() if isinstance(v, dict)}
        return dialogue

    # --- the original release -------------------------------------------------------------------

    def _convert_original(self, record: RawRecord) -> Dialogue:
        original_id = record.get("conversation_id", str)
        info = record.get("dialogue_info", dict)
        if not info:
            raise record.error("empty dialogue: no utterances", "dialogue_info")
        accepted = record.get("accepted_recommendation", list)
        entries = sorted(info.items(), key=lambda kv: _position(record, kv[0], kv[1]))
        workers: dict[str, Any] = {}
        utterances: list[Utterance] = []
        seeker_items: set[str] = set()
        for uid, raw in entries:
            utterance = self._utterance(record, uid, raw, workers)
            intents = set(utterance.annotations[LABELS][keys.LABEL_INTENTS])
            if utterance.role == Role.CRS and _RECOMMENDING & intents:
                named = utterance.mentioned_items
                utterance.recommended_items = [i for i in named if i not in seeker_items]
                utterance.mentioned_items = split_named(named, utterance.recommended_items)
            if utterance.role == Role.USER:
                seeker_items.update(utterance.mentioned_items)
            utterances.append(utterance)
        positions = [u.annotations["utterance_pos"] for u in utterances]
        for n, pos in enumerate(accepted):
            if pos not in positions:
                raise record.error(f"no utterance at position {pos!r}", f"accepted_recommendation[{n}]")
            utterances[positions.index(pos)].annotations[LABELS][keys.LABEL_ACCEPTED] = True
        return Dialogue(
            id=f"iard/original/{original_id}",
            utterances=utterances,
            metadata={
                "dataset": "iard",
                "split": "original",
                "conversation_id": original_id,
                **keys.ACCEPTED_RECOMMENDATION.entry(accepted),
                "worker_ids": workers,
            },
        )

    def _utterance(self, record: RawRecord, uid: str, raw: Any, workers: dict[str, Any]) -> Utterance:
        where = f"dialogue_info.{uid}"
        role_name = record.get("role", str, raw, where)
        if role_name not in ROLES:
            raise record.error(f"expected seeker or recommender, got {role_name!r}", f"{where}.role")
        role = ROLES[role_name]
        worker = record.get("worker_id", int, raw, where)
        if workers.setdefault(role_name, worker) != worker:
            raise record.error(
                f"a second {role_name} worker ({worker}) in one dialogue", f"{where}.worker_id"
            )
        sub = _labels(record, raw, "sub-intent/action", where)
        unknown = [label for label in sub if label not in _TABLES[role]]
        if unknown:
            raise record.error(f"unknown IARD {role_name} label {unknown[0]!r}", f"{where}.sub-intent/action")
        text, mentioned = self._resolve(record, record.get("utterance_text", str, raw, where), where)
        annotations: dict[str, Any] = {
            "utterance_id": uid,
            "utterance_pos": raw["utterance_pos"],
            **keys.DATASET_LABELS.entry(
                {"intents": sub, "top_level": _labels(record, raw, "top-level intent/action", where)}
            ),
        }
        acts = [DialogueAct(intent=_TABLES[role][label]) for label in sub]
        # every item named; a recommending utterance moves the recommended ones out (`_convert_original`)
        return Utterance(role=role, text=text, acts=acts, mentioned_items=mentioned, annotations=annotations)

    def _resolve(self, record: RawRecord, text: str, where: str) -> tuple[str, list[str]]:
        """Mentions `@id <Title (Year)>` written as `Title (Year)`; returns the text and the ids."""
        ids: list[str] = []

        def replace(match: re.Match[str]) -> str:
            movie_id, name = match.group(1), match.group(2)
            if self._catalog is not None and movie_id not in self._catalog:
                raise record.error(f"movie @{movie_id} is not in the catalog", f"{where}.utterance_text")
            if movie_id not in ids:
                ids.append(movie_id)
            name = name if name is not None else (self._catalog or {}).get(movie_id)
            return " ".join(name.split()) if name else match.group(0)

        return _MENTION.sub(replace, text), ids

    # --- items ----------------------------------------------------------------------------------

    @cached_property
    def _catalog(self) -> dict[str, str] | None:
        """ReDial movie id -> name from the configured catalog, if any."""
        params = self.params
        assert isinstance(params, IardParams)
        return None if params.catalog is None else read_redial_movies(params.catalog)

    def items(self, src: Path) -> ItemCollection:
        """The catalog's movies, or without one the movies the original release mentions."""
        names = self._catalog if self._catalog is not None else dict(self._mentioned_names(src))
        items = []
        for movie_id, name in names.items():
            title, year = split_title_year(" ".join(name.split()))
            if title:  # ReDial has two names that are only a year
                items.append(Item(id=movie_id, title=title, year=year))
        return ItemCollection(items, name="iard")

    def _mentioned_names(self, src: Path) -> Iterator[tuple[str, str]]:
        for record in self.records(src):
            info = record.data.get("dialogue_info") if isinstance(record.data, dict) else None
            for raw in info.values() if isinstance(info, dict) else ():
                text = raw.get("utterance_text") if isinstance(raw, dict) else None
                yield from ((m, n) for m, n in _MENTION.findall(text or "") if n)


def _position(record: RawRecord, uid: str, raw: Any) -> int:
    return record.get("utterance_pos", int, raw, f"dialogue_info.{uid}")


def _labels(record: RawRecord, raw: Any, key: str, where: str) -> list[str]:
    labels = record.get(key, list, raw, where)
    if not all(isinstance(label, str) for label in labels):
        raise record.error("expected a list of labels", f"{where}.{key}")
    return labels


def read_redial_movies(path: str | Path) -> dict[str, str]:
    """ReDial's `movies_with_mentions.csv` (movieId, movieName, nbMentions) as id -> name."""
    path = Path(path)
    if not path.is_file():
        raise DataError("catalog not found; expected ReDial's movies_with_mentions.csv", path=str(path))
    return {row["movieId"]: row["movieName"] for row in read_catalog(path)}
