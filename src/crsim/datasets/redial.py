"""ReDial (Li et al., NeurIPS 2018): movie recommendation chats between a seeker and a recommender.

Reads the published JSON Lines files (`test_data.jsonl`, `train_data.jsonl`, and the two train
subsets kept by KGSF and iEvaLM-CRS, `*_valid_data.jsonl`, one of which carries iEvaLM's
per-message annotations) plus `movies_with_mentions.csv` as the catalog. Conversion:

- consecutive messages of one sender become one utterance (texts joined by newlines); the
  seeker (`initiatorWorkerId`) is the user, the recommender the CRS;
- every `@<movieId>` is replaced by the movie's name and linked: the id must be in the catalog.
  The raw text is kept in `annotations["original_text"]`, the other message fields (ids, time
  offsets, iEvaLM annotations) in `annotations["messages"]`;
- the questionnaire answers (`initiatorQuestions`, `respondentQuestions`) become item feedback
  (`suggested_by`, `seen`, `liked`; `None` where the worker "did not say"), per item in
  `metadata["item_feedback"]` and on each utterance that mentions the item;
- a movie the recommender mentions counts as recommended when either answer says the
  recommender suggested it, or, for a movie without answers, when the seeker has not mentioned
  it before; each recommended movie also gets a `recommend(title, item)` act.

When a folder holds several files with the same conversation (the train subsets overlap, and
both lie inside the full train split), the first one read wins; later copies are skipped.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from crsim.core.errors import DataError
from crsim.core.plugins import Params as ComponentParams
from crsim.datasets.base import DatasetReader, RawRecord, dataset
from crsim.datasets.files import find_file, iter_json_lines, parsed, read_json, read_text
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.items import Item, ItemCollection
from crsim.model.mentions import split_named
from crsim.model.text import split_title_year

#: Files read from a ReDial folder, in this order (each also as `.gz`); missing ones are skipped.
DEFAULT_FILES = (
    "test_data.jsonl",
    "train_subset_ievalm_valid_data.jsonl",
    "train_subset_kgsf_valid_data.jsonl",
    "train_data.jsonl",
)
CATALOG = "movies_with_mentions.csv"
METADATA = "ievalm_id2info.json"
_MENTION = re.compile(r"@(\d+)")
_SEEN_LIKED = {0: False, 1: True, 2: None}


def clean_name(name: str) -> str:
    """'Police Academy  (1984)' -> 'Police Academy (1984)': ReDial names have irregular spacing."""
    return " ".join(name.split())


def split_of(path: Path) -> str:
    """'test' for the test file, 'train' for the train split and its subsets."""
    return "test" if path.name.startswith("test") else "train"


@dataset("redial")
class RedialReader(DatasetReader):
    """Converter for ReDial dialogues in the original schema."""

    description = (
        "ReDial: a folder with test_data.jsonl / train files and movies_with_mentions.csv, or one file"
    )

    class Params(ComponentParams):
        files: tuple[str, ...] = Field(DEFAULT_FILES, description="Files read from a folder, in order.")
        catalog: str | None = Field(
            None, description=f"Path of {CATALOG}; by default it is looked up next to the dialogues."
        )
        drop_duplicates: bool = Field(
            True, description="Skip conversations already read from an earlier file."
        )

    def __init__(self, params: ComponentParams) -> None:
        super().__init__(params)
        self.options: RedialReader.Params = RedialReader.Params.model_validate(params.model_dump())
        self._names: dict[str, str] | None = None
        self._names_from: Path | None = None
        #: Conversations skipped by the last `records` pass because an earlier file held them.
        self.duplicates = 0

    # --- files ---------------------------------------------------------------------------------

    def _paths(self, src: Path) -> list[Path]:
        if src.is_file():
            return [src]
        paths = [p for p in (find_file(src, name) for name in self.options.files) if p is not None]
        if not paths:
            raise DataError(
                f"no ReDial dialogue file; expected one of {', '.join(self.options.files)}", path=str(src)
            )
        return paths

    def _catalog_path(self, src: Path) -> Path:
        if self.options.catalog is not None:
            return Path(self.options.catalog)
        folder = src if src.is_dir() else src.parent
        path = find_file(folder, CATALOG)
        if path is None:
            raise DataError(
                f"no {CATALOG}(.gz) next to the dialogues; set the reader's `catalog`", path=str(folder)
            )
        return path

    def names(self, src: Path) -> dict[str, str]:
        """Catalog movie id -> name (as published, spacing included); read once per catalog file."""
        path = self._catalog_path(src)
        if self._names is None or self._names_from != path:
            self._names = {row["movieId"]: row["movieName"] for row in read_catalog(path)}
            self._names_from = path
        return self._names

    def records(self, src: Path) -> Iterator[RawRecord]:
        self.names(src)
        self.duplicates = 0
        earlier: set[str] = set()  # ids of earlier files only: a repeat inside one file is renamed
        for path in self._paths(src):
            this_file: set[str] = set()
            for record in iter_json_lines(path):
                key = record.data.get("conversationId") if isinstance(record.data, dict) else None
                if self.options.drop_duplicates and isinstance(key, str):
                    if key in earlier:
                        self.duplicates += 1
                        continue
                    this_file.add(key)
                yield record
            earlier |= this_file

    def items(self, src: Path) -> ItemCollection:
        """Catalog movies, with genres, plot, directors and stars from iEvaLM's metadata if present."""
        catalog = self._catalog_path(src)
        meta_path = find_file(catalog.parent, METADATA)
        meta = _metadata(meta_path) if meta_path is not None else {}
        return ItemCollection(
            (_item(row, meta.get(row["movieId"], {})) for row in read_catalog(catalog)), "redial"
        )

    # --- one dialogue --------------------------------------------------------------------------

    def convert(self, record: RawRecord) -> Dialogue:
        if self._names is None:
            raise record.error("the catalog is not loaded; call records() first")
        record = parsed(record)
        conversation = record.get("conversationId", str)
        seeker = record.get("initiatorWorkerId", int)
        recommender = record.get("respondentWorkerId", int)
        mentions = record.get("movieMentions", dict)
        messages = record.get("messages", list)
        if not messages:
            raise record.error("a dialogue needs at least one message", "messages")
        feedback = self._feedback(record)
        titles = {m: clean_name(n) for m, n in mentions.items() if isinstance(n, str) and n.strip()}
        roles = {seeker: Role.USER, recommender: Role.CRS}
        groups = _group(record, messages, roles)
        utterances: list[Utterance] = []
        said_by_seeker: set[str] = set()
        for role, indices in groups:
            utterance = self._utterance(record, messages, indices, role, titles, feedback, said_by_seeker)
            if role == Role.USER:
                said_by_seeker.update(utterance.mentioned_items)
            utterances.append(utterance)
        split = split_of(record.path)
        metadata = {
            "dataset": "redial",
            "split": split,
            "conversation_id": conversation,
            "initiator_worker_id": seeker,
            "respondent_worker_id": recommender,
            "source_file": record.path.name,
            "item_feedback": feedback,
        }
        return Dialogue(id=f"redial/{split}/{conversation}", utterances=utterances, metadata=metadata)

    def _feedback(self, record: RawRecord) -> dict[str, dict[str, dict[str, Any]]]:
        """Item id -> {'initiator'|'respondent': decoded answers}; an empty list means no answers."""
        assert self._names is not None
        result: dict[str, dict[str, dict[str, Any]]] = {}
        for key, who in (("initiatorQuestions", "initiator"), ("respondentQuestions", "respondent")):
            if isinstance(record.data.get(key), list) and not record.data[key]:
                continue  # some dialogues carry [] instead of an object: no answers
            answers = record.get(key, dict)
            for movie, labels in answers.items():
                if movie not in self._names:
                    raise record.error(f"movie {movie} is not in the catalog ({CATALOG})", f"{key}.{movie}")
                result.setdefault(movie, {})[who] = _decode(record, labels, f"{key}.{movie}")
        return result

    def _utterance(
        self,
        record: RawRecord,
        messages: list[Any],
        indices: list[int],
        role: Role,
        titles: dict[str, str],
        feedback: dict[str, dict[str, dict[str, Any]]],
        said_by_seeker: set[str],
    ) -> Utterance:
        texts: list[str] = []
        raw_texts: list[str] = []
        extras: list[dict[str, Any]] = []
        mentioned: list[str] = []
        for i in indices:
            raw = record.get("text", str, messages[i], where=f"messages[{i}]")
            text, ids = self._render(record, raw, titles, f"messages[{i}].text")
            texts.append(text)
            raw_texts.append(raw)
            extras.append({k: v for k, v in messages[i].items() if k not in ("text", "senderWorkerId")})
            mentioned.extend(m for m in ids if m not in mentioned)
        annotations: dict[str, Any] = {"original_text": "\n".join(raw_texts), "messages": extras}
        recommended: list[str] = []
        if mentioned:
            rated = {m: feedback[m] for m in mentioned if m in feedback}
            if rated:
                annotations["item_feedback"] = rated
            if role == Role.CRS:
                recommended = [m for m in mentioned if _suggested(m, feedback, said_by_seeker)]
        acts = [
            DialogueAct(intent=Intent.RECOMMEND, slots=[("title", self._title(m, titles)), ("item", m)])
            for m in recommended
        ]
        return Utterance(
            role=role,
            text="\n".join(texts),
            acts=acts,
            recommended_items=recommended,
            mentioned_items=split_named(mentioned, recommended),
            annotations=annotations,
        )

    def _title(self, movie: str, titles: dict[str, str]) -> str:
        assert self._names is not None
        return titles.get(movie) or clean_name(self._names[movie])

    def _render(
        self, record: RawRecord, raw: str, titles: dict[str, str], field: str
    ) -> tuple[str, list[str]]:
        """The text with each `@id` replaced by the movie's name, and the ids in order."""
        assert self._names is not None
        ids = _MENTION.findall(raw)
        for movie in ids:
            if movie not in self._names:
                raise record.error(f"mentioned movie @{movie} is not in the catalog ({CATALOG})", field)
        return _MENTION.sub(lambda m: self._title(m.group(1), titles), raw), ids


def _group(record: RawRecord, messages: list[Any], roles: dict[int, Role]) -> list[tuple[Role, list[int]]]:
    """Runs of consecutive messages by one sender, as (role, message indices)."""
    groups: list[tuple[Role, list[int]]] = []
    for i, message in enumerate(messages):
        sender = record.get("senderWorkerId", int, message, where=f"messages[{i}]")
        role = roles.get(sender)
        if role is None:
            raise record.error(
                f"sender {sender} is neither the initiator nor the respondent",
                f"messages[{i}].senderWorkerId",
            )
        if groups and groups[-1][0] == role:
            groups[-1][1].append(i)
        else:
            groups.append((role, [i]))
    return groups


def _decode(record: RawRecord, labels: Any, where: str) -> dict[str, Any]:
    """{'suggested': 0|1, 'seen': 0|1|2, 'liked': 0|1|2} -> readable feedback (2 = did not say)."""
    suggested = record.get("suggested", int, labels, where)
    seen = record.get("seen", int, labels, where)
    liked = record.get("liked", int, labels, where)
    for name, value, allowed in (
        ("suggested", suggested, (0, 1)),
        ("seen", seen, (0, 1, 2)),
        ("liked", liked, (0, 1, 2)),
    ):
        if value not in allowed:
            raise record.error(f"expected one of {allowed}, got {value}", f"{where}.{name}")
    return {
        "suggested_by": "recommender" if suggested else "seeker",
        "seen": _SEEN_LIKED[seen],
        "liked": _SEEN_LIKED[liked],
    }


def _suggested(movie: str, feedback: dict[str, dict[str, dict[str, Any]]], said_by_seeker: set[str]) -> bool:
    answers = feedback.get(movie)
    if answers:
        return any(a["suggested_by"] == "recommender" for a in answers.values())
    return movie not in said_by_seeker


# --- catalog -----------------------------------------------------------------------------------


def read_catalog(path: str | Path) -> list[dict[str, str]]:
    """Rows of `movies_with_mentions.csv` (movieId, movieName, nbMentions), checked."""
    path = Path(path)
    reader = csv.DictReader(io.StringIO(read_text(path)))
    try:
        missing = [c for c in ("movieId", "movieName") if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(
                f"missing column(s) {', '.join(missing)}; expected movieId,movieName,nbMentions",
                path=str(path),
            )
        rows = []
        for row in reader:
            if not (row.get("movieId") or "").strip().isdigit():
                raise DataError(
                    f"expected a numeric movie id, got {row.get('movieId')!r}",
                    path=str(path),
                    record=reader.line_num,
                    field="movieId",
                )
            rows.append(row)
    except csv.Error as exc:  # e.g. a field over the csv module's size limit, on the line after the last read
        raise DataError(f"not readable CSV ({exc})", path=str(path), record=reader.line_num + 1) from None
    return rows


def _metadata(path: Path) -> dict[str, dict[str, Any]]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError("expected a JSON object of movie id -> metadata", path=str(path))
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def _item(row: dict[str, str], meta: dict[str, Any]) -> Item:
    """One catalog movie; a name that is only a year ('(2015)') keeps it as the title."""
    name = clean_name(row["movieName"])
    title, year = split_title_year(name)
    extra: dict[str, Any] = {"redial_id": row["movieId"]}
    mentions = (row.get("nbMentions") or "").strip()
    if mentions.isdigit():
        extra["popularity"] = int(mentions)
    for key in ("writer", "imdb_id"):
        if meta.get(key):
            extra[key] = meta[key]
    return Item(
        id=row["movieId"],
        title=title or name,
        year=year,
        genres=_strings(meta.get("genre")),
        directors=_strings(meta.get("director")),
        actors=_strings(meta.get("star")),
        plot=meta.get("plot") if isinstance(meta.get("plot"), str) else None,
        extra=extra,
    )


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
