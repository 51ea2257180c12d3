"""INSPIRED (Hayati et al., EMNLP 2020): movie recommendation chats annotated with sociable strategies.

Two published forms are read, chosen by `version` (by default from the files present):

- `original`: the authors' TSV files (`dev.tsv`, `test.tsv`, and `train.tsv` when present;
  the shared copy lacks the train file). One row is one sentence with its recommender strategy
  (`expert_label`, `second_label`), the movies, genres and people it mentions, and the
  dialogue's outcome (`fine_label`, `coarse_label`: whether the seeker accepted the
  recommendation). This is the only form with the strategy labels.
- `processed`: UniCRS-style JSON Lines (`{train,valid,test}_data_dbpedia.jsonl` as shipped by
  LLMKB), one dialogue per line as a list of turns with movie titles and DBpedia entity links.
  This is the only form with the full 801/99/99 split; its `valid` split is called `dev` here.

Both: consecutive sentences of one speaker become one utterance (joined by a space, the way
the processed files join them; the TSV's `QUOTATION_MARK` becomes a quote); the seeker is the
user, the recommender the CRS. Items are identified by the title as written ("Hustlers (2019)").
A movie the recommender mentions that the seeker has not mentioned before counts as
recommended (INSPIRED marks no recommendation act) and also gets a `recommend(title, item)`
act. Strategy labels map to crsim intents where the meaning matches (`STRATEGY_INTENTS`); the
labels themselves stay in the `labels` annotation and per sentence in `annotations["sentences"]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from crsim.core.errors import DataError
from crsim.core.plugins import Params as ComponentParams
from crsim.datasets.base import BadLine, DatasetReader, RawRecord, dataset
from crsim.datasets.files import find_file, iter_json_lines, iter_lines, parsed
from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.items import Item, ItemCollection
from crsim.model.mentions import named_items, split_named
from crsim.model.text import split_title_year

ORIGINAL_FILES = {"train.tsv": "train", "dev.tsv": "dev", "test.tsv": "test"}
PROCESSED_FILES = {
    "train_data_dbpedia.jsonl": "train",
    "valid_data_dbpedia.jsonl": "dev",
    "test_data_dbpedia.jsonl": "test",
}
COLUMNS = ("dialog_id", "utt_id", "speaker", "turn_id", "text", "movies", "expert_label", "second_label")
_ROLES = {"SEEKER": Role.USER, "RECOMMENDER": Role.CRS}
_DIALOGUE_FIELDS = ("fine_label", "coarse_label", "movie_id")
_MISSING = ("", "nan")
#: How the TSV files spell a double quote inside a text.
_QUOTE = "QUOTATION_MARK"

#: INSPIRED's recommender strategies -> crsim intents (sociable moves without a counterpart: other).
STRATEGY_INTENTS: dict[str, str] = {
    "opinion_inquiry": Intent.ELICIT,  # asks what the seeker thinks of a movie or genre
    "experience_inquiry": Intent.ELICIT,  # asks which movies the seeker has seen
    "preference_confirmation": Intent.ELICIT,  # checks a preference the seeker stated
    "rephrase_preference": Intent.ELICIT,  # restates the preference to confirm it
    "credibility": Intent.INFORM,  # facts about a movie
    "personal_opinion": Intent.INFORM,  # the recommender's opinion of a movie
    "personal_experience": Intent.INFORM,  # the recommender's own viewing experience
    "transparency": Intent.INFORM,  # says what the recommender is doing or thinking
    "offer_help": Intent.OTHER,
    "encouragement": Intent.OTHER,  # praises the seeker's taste, urges them to watch
    "similarity": Intent.OTHER,  # shares the seeker's taste
    "self_modeling": Intent.OTHER,
    "acknowledgment": Intent.OTHER,
    "no_strategy": Intent.OTHER,
}


def movie_list(value: str) -> list[str]:
    """'San Andreas (2015);  Die Hard (1988)' -> the two titles, spacing cleaned."""
    return [" ".join(part.split()) for part in value.split(";") if part.strip()]


@dataset("inspired")
class InspiredReader(DatasetReader):
    """Converter for INSPIRED, from the original TSV files or the processed 801/99/99 split."""

    description = (
        "INSPIRED: a folder (or file) with dev.tsv/test.tsv or {train,valid,test}_data_dbpedia.jsonl"
    )

    class Params(ComponentParams):
        version: Literal["auto", "original", "processed"] = Field(
            "auto", description="Which published form to read; 'auto' picks from the files present."
        )

    def __init__(self, params: ComponentParams) -> None:
        super().__init__(params)
        self.options = InspiredReader.Params.model_validate(params.model_dump())

    def paths(self, src: Path) -> list[tuple[Path, str]]:
        """(file, split) pairs to read, in split order."""
        if src.is_file():
            known = {**ORIGINAL_FILES, **PROCESSED_FILES}
            return [(src, known.get(src.name.removesuffix(".gz"), src.name.split(".")[0]))]
        versions = ("original", "processed") if self.options.version == "auto" else (self.options.version,)
        for version in versions:
            names = ORIGINAL_FILES if version == "original" else PROCESSED_FILES
            found = [(p, split) for name, split in names.items() if (p := find_file(src, name)) is not None]
            if found:
                return found
        expected = ", ".join([*ORIGINAL_FILES, *PROCESSED_FILES])
        raise DataError(f"no INSPIRED file; expected some of {expected}", path=str(src))

    def records(self, src: Path) -> Iterator[RawRecord]:
        for path, _ in self.paths(src):
            if path.name.removesuffix(".gz").endswith(".tsv"):
                yield from _tsv_dialogues(path)
            else:
                yield from iter_json_lines(path)

    def convert(self, record: RawRecord) -> Dialogue:
        record = parsed(record)
        split = _split_of(record.path)
        if isinstance(record.data, dict) and "rows" in record.data:
            return _convert_original(record, split)
        return _convert_processed(record, split)

    def items(self, src: Path) -> ItemCollection:
        """Every movie title mentioned in the files, as an item (title and year)."""
        titles: dict[str, None] = {}
        for record in self.records(src):
            if isinstance(record.data, BadLine):
                continue
            dialogue = self.convert(record)
            for utterance in dialogue.utterances:
                titles.update(dict.fromkeys(named_items(utterance)))
        return ItemCollection((_item(t) for t in titles), name="inspired")


def _split_of(path: Path) -> str:
    name = path.name.removesuffix(".gz")
    return {**ORIGINAL_FILES, **PROCESSED_FILES}.get(name, name.split(".")[0])


def _item(title: str) -> Item:
    name, year = split_title_year(title)
    return Item(id=title, title=name or title, year=year)


# --- original TSV --------------------------------------------------------------------------------


def _tsv_dialogues(path: Path) -> Iterator[RawRecord]:
    """One record per dialogue: {'dialog_id', 'rows': [(line, row)]}; a bad line is its own record."""
    lines = iter_lines(path)
    header_line = next(lines, None)
    if header_line is None or isinstance(header_line[1], BadLine):
        raise DataError("expected a header row of INSPIRED columns", path=str(path), record=1)
    header = header_line[1].rstrip("\r\n").split("\t")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise DataError(f"missing column(s) {', '.join(missing)}", path=str(path), record=1)
    current: list[tuple[int, dict[str, str]]] = []
    for number, line in lines:
        if isinstance(line, BadLine):
            yield RawRecord(path, number, line)
            continue
        if not line.strip():
            continue
        values = line.rstrip("\r\n").split("\t")
        if len(values) != len(header):
            yield RawRecord(
                path, number, BadLine(f"expected {len(header)} tab-separated fields, got {len(values)}")
            )
            continue
        row = dict(zip(header, values, strict=True))
        if current and current[0][1]["dialog_id"] != row["dialog_id"]:
            yield RawRecord(path, current[0][0], {"dialog_id": current[0][1]["dialog_id"], "rows": current})
            current = []
        current.append((number, row))
    if current:
        yield RawRecord(path, current[0][0], {"dialog_id": current[0][1]["dialog_id"], "rows": current})


def _convert_original(record: RawRecord, split: str) -> Dialogue:
    rows: list[tuple[int, dict[str, str]]] = record.data["rows"]
    turns: list[tuple[Role, list[dict[str, Any]]]] = []
    for number, row in rows:
        role = _ROLES.get(row["speaker"])
        if role is None:
            raise DataError(
                f"expected SEEKER or RECOMMENDER, got {row['speaker']!r}",
                path=str(record.path),
                record=number,
                field="speaker",
            )
        sentence = _sentence(row)
        if turns and turns[-1][0] == role:
            turns[-1][1].append(sentence)
        else:
            turns.append((role, [sentence]))
    utterances = _utterances(turns, record)
    dialog_id = record.data["dialog_id"]
    metadata: dict[str, Any] = {"dataset": "inspired", "split": split, "dialog_id": dialog_id}
    for field in _DIALOGUE_FIELDS:
        values = list(dict.fromkeys(r[field] for _, r in rows if r.get(field, "") not in _MISSING))
        if values:
            metadata[field] = values[0] if len(values) == 1 else values
    metadata["source_file"] = record.path.name
    return Dialogue(id=f"inspired/{split}/{dialog_id}", utterances=utterances, metadata=metadata)


def _sentence(row: dict[str, str]) -> dict[str, Any]:
    """One TSV row as kept in `annotations['sentences']` (labels, mentions, placeholders)."""
    sentence: dict[str, Any] = {"utt_id": row["utt_id"], "turn_id": row["turn_id"], "text": row["text"]}
    for key in ("expert_label", "second_label"):
        if row.get(key, "") not in _MISSING:
            sentence[key] = row[key]
    for key in ("text_with_placeholder", "genres", "people_names"):
        if row.get(key):
            sentence[key] = movie_list(row[key]) if key != "text_with_placeholder" else row[key]
    sentence["movies"] = movie_list(row["movies"])
    return sentence


def _utterances(turns: list[tuple[Role, list[dict[str, Any]]]], record: RawRecord) -> list[Utterance]:
    utterances = []
    said_by_seeker: set[str] = set()
    for role, sentences in turns:
        mentioned = list(dict.fromkeys(m for s in sentences for m in s.pop("movies")))
        labels = {
            "strategy": [s["expert_label"] for s in sentences if "expert_label" in s],
            "second_strategy": [s["second_label"] for s in sentences if "second_label" in s],
        }
        for label in labels["strategy"] + labels["second_strategy"]:
            if label not in STRATEGY_INTENTS:
                raise record.error(f"unknown strategy label {label!r}", "expert_label")
        intents = dict.fromkeys(STRATEGY_INTENTS[label] for label in labels["strategy"])
        annotations: dict[str, Any] = {"sentences": sentences}
        if any(labels.values()):
            keys.DATASET_LABELS.put(annotations, {k: v for k, v in labels.items() if v})
        text = " ".join(s["text"].strip() for s in sentences).replace(_QUOTE, '"')
        utterances.append(_utterance(role, text, mentioned, annotations, said_by_seeker, list(intents)))
    return utterances


def _utterance(
    role: Role,
    text: str,
    mentioned: list[str],
    annotations: dict[str, Any],
    said_by_seeker: set[str],
    intents: list[str] | None = None,
) -> Utterance:
    """An utterance with its mentions; recommender mentions new to the dialogue are recommendations."""
    recommended: list[str] = []
    if role == Role.USER:
        said_by_seeker.update(mentioned)
    else:
        recommended = [m for m in mentioned if m not in said_by_seeker]
    acts = [DialogueAct(intent=i) for i in intents or []]
    acts += [DialogueAct(intent=Intent.RECOMMEND, slots=[("title", m), ("item", m)]) for m in recommended]
    return Utterance(
        role=role,
        text=text,
        acts=acts,
        recommended_items=recommended,
        mentioned_items=split_named(mentioned, recommended),
        annotations=annotations,
    )


# --- processed JSON Lines ------------------------------------------------------------------------


def _convert_processed(record: RawRecord, split: str) -> Dialogue:
    if not isinstance(record.data, list):
        raise record.error(f"expected a JSON array of turns, got {type(record.data).__name__}")
    if not record.data:
        raise record.error("a dialogue needs at least one turn")
    turns: list[tuple[Role, list[dict[str, Any]]]] = []
    for i, turn in enumerate(record.data):
        where = f"[{i}]"
        speaker = record.get("role", str, turn, where)
        role = _ROLES.get(speaker)
        if role is None:
            raise record.error(f"expected SEEKER or RECOMMENDER, got {speaker!r}", f"{where}.role")
        movies = record.get("movie", list, turn, where)
        if not all(isinstance(m, str) for m in movies):
            raise record.error("expected a list of movie titles", f"{where}.movie")
        movies = [m for m in movies if m.strip()]  # one turn of the train split lists an empty title
        part = {"text": record.get("text", str, turn, where), "movies": movies}
        for key in ("entity_name", "entity_link", "movie_name", "movie_link"):
            if turn.get(key):
                part[key] = turn[key]
        if turns and turns[-1][0] == role:
            turns[-1][1].append(part)
        else:
            turns.append((role, [part]))
    utterances = []
    said_by_seeker: set[str] = set()
    for role, parts in turns:
        mentioned = list(dict.fromkeys(" ".join(m.split()) for p in parts for m in p.pop("movies")))
        text = " ".join(p.pop("text").strip() for p in parts)
        annotations: dict[str, Any] = {"entities": parts} if any(parts) else {}
        utterances.append(_utterance(role, text, mentioned, annotations, said_by_seeker))
    metadata = {"dataset": "inspired", "split": split, "line": record.number, "source_file": record.path.name}
    return Dialogue(id=f"inspired/{split}/{record.number}", utterances=utterances, metadata=metadata)
