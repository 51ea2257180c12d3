"""OpenDialKG (Moon et al., ACL 2019) recommendation turns, as processed by iEvaLM-CRS.

The processed files (`opendialkg_eval/{train,valid,test}_data_processed.jsonl`) hold one
*sample* per line: a dialogue prefix (`context`), the recommender's response (`resp`), the
items it recommends (`rec`, names from `opendialkg/id2info.json`) and the entities of the
context. Samples of one dialogue are adjacent and share their text, so the reader joins them
into one dialogue: the longest context plus its response, with every sample's `rec` items as
the recommended items of its response. The files carry no speaker labels; the response is the
assistant (CRS) and roles alternate backwards from it. An item counts as mentioned in an
utterance when it is recommended there or its name (a recommended item or an entity of the
dialogue) occurs in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from crsim.core.errors import DataError
from crsim.core.plugins import Params as ComponentParams
from crsim.datasets.base import BadLine, DatasetReader, RawRecord, dataset
from crsim.datasets.files import find_file, iter_json_lines, parsed, read_json
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.items import Item, ItemCollection
from crsim.model.mentions import split_named

SPLITS = ("train", "valid", "test")
CATALOG = "id2info.json"


def _dedupe(values: Any) -> list[str]:
    return list(dict.fromkeys(v for v in values if isinstance(v, str))) if isinstance(values, list) else []


@dataset("opendialkg")
class OpenDialKGReader(DatasetReader):
    """Converter for iEvaLM's processed OpenDialKG recommendation turns."""

    description = "OpenDialKG: iEvaLM's opendialkg_eval folder (or its parent), with opendialkg/id2info.json"

    class Params(ComponentParams):
        catalog: str | None = Field(
            None, description=f"Path of {CATALOG}; by default found in or beside the dialogue folder."
        )

    def __init__(self, params: ComponentParams) -> None:
        super().__init__(params)
        self.options = OpenDialKGReader.Params.model_validate(params.model_dump())
        self._ids: dict[str, str] | None = None

    def _folder(self, src: Path) -> Path:
        return src / "opendialkg_eval" if (src / "opendialkg_eval").is_dir() else src

    def _catalog_path(self, src: Path) -> Path:
        if self.options.catalog is not None:
            return Path(self.options.catalog)
        folder = self._folder(src) if src.is_dir() else src.parent
        for candidate in (folder, folder.parent / "opendialkg", folder.parent):
            path = find_file(candidate, CATALOG)
            if path is not None:
                return path
        raise DataError(f"no {CATALOG}(.gz) found; set the reader's `catalog`", path=str(folder))

    def _catalog(self, src: Path) -> dict[str, dict[str, Any]]:
        data = read_json(self._catalog_path(src))
        if not isinstance(data, dict) or not all(isinstance(v, dict) and "name" in v for v in data.values()):
            raise DataError("expected an object of item id -> {name, ...}", path=str(self._catalog_path(src)))
        return data

    def items(self, src: Path) -> ItemCollection:
        return ItemCollection((_item(key, info) for key, info in self._catalog(src).items()), "opendialkg")

    def records(self, src: Path) -> Iterator[RawRecord]:
        self._ids = {str(info["name"]): key for key, info in self._catalog(src).items()}
        if src.is_file():
            paths = [src]
        else:
            folder = self._folder(src)
            found = (find_file(folder, f"{split}_data_processed.jsonl") for split in SPLITS)
            paths = [p for p in found if p is not None]
            if not paths:
                raise DataError("no {train,valid,test}_data_processed.jsonl found", path=str(folder))
        for path in paths:
            yield from _grouped(path)

    def convert(self, record: RawRecord) -> Dialogue:
        if self._ids is None:
            raise record.error("the catalog is not loaded; call records() first")
        record = parsed(record)
        samples = [_sample(record, i, s) for i, s in enumerate(record.data)]
        longest = max(samples, key=lambda s: len(s["context"]))
        texts = [*longest["context"], longest["resp"]]
        last = len(texts) - 1
        by_position: dict[int, dict[str, Any]] = {}
        for i, sample in enumerate(samples):
            position = len(sample["context"])
            if [*sample["context"], sample["resp"]] != texts[: position + 1]:
                raise record.error("disagrees with the longest context of its dialogue", f"[{i}].context")
            if (last - position) % 2:
                raise record.error("its response would fall on the user's side", f"[{i}].context")
            by_position[position] = sample
        names = {n for s in samples for n in (*s["rec"], *s["entity"]) if n in self._ids}
        utterances = [
            self._utterance(
                record, text, Role.CRS if (last - p) % 2 == 0 else Role.USER, by_position.get(p), names
            )
            for p, text in enumerate(texts)
        ]
        split = record.path.name.split("_")[0]
        dialog_id = str(longest["dialog_id"])
        metadata = {
            "dataset": "opendialkg",
            "split": split,
            "dialog_id": dialog_id,
            "sample_ids": [f"{s['dialog_id']}_{s['turn_id']}" for s in samples],
            "source_file": record.path.name,
        }
        return Dialogue(id=f"opendialkg/{split}/{dialog_id}", utterances=utterances, metadata=metadata)

    def _utterance(
        self, record: RawRecord, text: str, role: Role, sample: dict[str, Any] | None, names: set[str]
    ) -> Utterance:
        assert self._ids is not None
        folded = text.lower()
        mentioned = [self._ids[n] for n in sorted(names) if _occurs(n.lower(), folded)]
        recommended: list[str] = []
        annotations: dict[str, Any] = {}
        if sample is not None:
            for name in sample["rec"]:
                if name not in self._ids:
                    raise record.error(f"recommended item {name!r} is not in the catalog ({CATALOG})", "rec")
            recommended = list(dict.fromkeys(self._ids[n] for n in sample["rec"]))
            annotations["ievalm"] = {
                "turn_id": sample["turn_id"],
                "rec": sample["rec"],
                "entity": sample["entity"],
            }
        acts = [
            DialogueAct(intent=Intent.RECOMMEND, slots=[("title", n), ("item", self._ids[n])])
            for n in dict.fromkeys(sample["rec"] if sample else [])
        ]
        return Utterance(
            role=role,
            text=text,
            acts=acts,
            recommended_items=recommended,
            mentioned_items=split_named(mentioned, recommended),
            annotations=annotations,
        )


def _occurs(name: str, text: str) -> bool:
    """Whether `name` occurs in `text` as whole words ("Up" not inside "update")."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _grouped(path: Path) -> Iterator[RawRecord]:
    """Adjacent samples of one dialogue as one record (data: list of samples); bad lines alone."""
    group: list[RawRecord] = []
    for record in iter_json_lines(path):
        key = record.data.get("dialog_id") if isinstance(record.data, dict) else None
        if group and (key is None or key != group[0].data.get("dialog_id")):
            yield RawRecord(path, group[0].number, [r.data for r in group])
            group = []
        if key is None:
            yield (
                record if isinstance(record.data, BadLine) else RawRecord(path, record.number, [record.data])
            )
        else:
            group.append(record)
    if group:
        yield RawRecord(path, group[0].number, [r.data for r in group])


def _sample(record: RawRecord, i: int, data: Any) -> dict[str, Any]:
    where = f"[{i}]"
    sample: dict[str, Any] = {
        "dialog_id": record.get("dialog_id", int, data, where),
        "turn_id": record.get("turn_id", int, data, where),
        "resp": record.get("resp", str, data, where),
    }
    for key in ("context", "rec", "entity"):
        values = record.get(key, list, data, where)
        if not all(isinstance(v, str) for v in values):
            raise record.error("expected a list of strings", f"{where}.{key}")
        sample[key] = values
    if not sample["resp"].strip():
        raise record.error("a sample needs a non-empty response", f"{where}.resp")
    return sample


def _item(key: str, info: dict[str, Any]) -> Item:
    year = info.get("year")
    return Item(
        id=key,
        title=str(info["name"]),
        year=int(year) if isinstance(year, str) and year.isdigit() else None,
        genres=_dedupe(info.get("genre")),
        directors=_dedupe(info.get("director")),
        actors=_dedupe(info.get("actor")),
        extra={k: _dedupe(info.get(k)) for k in ("writer", "language") if info.get(k)},
    )
