"""The converter framework: read a published dataset record by record into unified dialogues.

A reader splits its source files into raw records (`records`) and turns one record into a
`Dialogue` (`convert`). The driver (`convert_dataset`) wraps every failure into a `DataError`
that names the file, the record and the field, and either stops at the first bad record or,
with `skip_invalid`, counts it and goes on. It also makes dialogue ids unique (`UniqueIds`):
published files repeat ids (a UserSimCRS export gave 93 of 100 dialogues one id), and every later
step keys records by id. Readers stream: nothing holds a whole dataset of converted dialogues in
memory (only the set of ids given out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from crsim.errors import DataError
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue
from crsim.model.items import ItemCollection
from crsim.model.text import clean_value
from crsim.registry import Params as ComponentParams
from crsim.registry import Registry

T = TypeVar("T")


@dataclass(frozen=True)
class BadLine:
    """The data of a record whose line could not be read: the driver reports it and goes on.

    (A generator that raises is finished, so a reader yields this instead of raising mid-file.)
    """

    message: str


@dataclass(frozen=True)
class RawRecord:
    """One record of a source file, before conversion: where it is and what it holds."""

    path: Path
    number: int
    data: Any
    #: Lone surrogates the file reader already replaced in `data` (None: not checked yet, the
    #: driver cleans and counts; see `crsim.model.text`).
    replaced: int | None = None
    #: The record's own id once the reader knows it (a conversation id), named in its errors.
    label: str | None = None

    def error(self, message: str, field: str | None = None) -> DataError:
        located = f"dialogue {self.label!r}: {message}" if self.label else message
        return DataError(located, path=str(self.path), record=self.number, field=field)

    def get(self, key: str, kind: type[T], data: Mapping[str, Any] | None = None, where: str = "") -> T:
        """`data[key]` checked to be of `kind`; a missing key or wrong type names the field."""
        source = self.data if data is None else data
        name = f"{where}.{key}" if where else key
        if not isinstance(source, Mapping):
            raise self.error(f"expected a JSON object, got {type(source).__name__}", where or None)
        if key not in source:
            raise self.error("missing", name)
        value = source[key]
        if not isinstance(value, kind):
            raise self.error(f"expected {kind.__name__}, got {type(value).__name__}", name)
        return value


class DatasetReader:
    """Base class for converters. Subclasses set `Params` and implement `records` and `convert`."""

    Params: ClassVar[type[ComponentParams]] = ComponentParams
    #: One line on what the dataset is and which files `src` may name.
    description: ClassVar[str] = ""
    #: Records the last `records` pass left out as copies of ones it already gave (e.g. a ReDial
    #: conversation that an earlier file held); the conversion reports the count, never silently.
    duplicates: int = 0

    def __init__(self, params: ComponentParams) -> None:
        self.params = params
        #: What the reader kept but a researcher should know about: kind -> count (`warn`).
        self.warnings: dict[str, int] = {}
        #: Kind -> where it first occurred (file, record, dialogue, field).
        self.warning_examples: dict[str, str] = {}

    def warn(self, kind: str, record: RawRecord, field: str) -> None:
        """Count one occurrence of `kind` (not an error: the record is converted), at `field`."""
        self.warnings[kind] = self.warnings.get(kind, 0) + 1
        dialogue = f", dialogue {record.label!r}" if record.label else ""
        self.warning_examples.setdefault(
            kind, f"{record.path}, record {record.number}{dialogue}, field '{field}'"
        )

    def records(self, src: Path) -> Iterator[RawRecord]:
        """Raw records from `src` (a file or the dataset's folder), in file order."""
        raise NotImplementedError

    def convert(self, record: RawRecord) -> Dialogue:
        """One record as a unified dialogue; raise `record.error(...)` for bad input."""
        raise NotImplementedError

    def items(self, src: Path) -> ItemCollection | None:
        """The dataset's item collection, when it has one."""
        return None


#: `Dialogue.metadata` key of a renamed dialogue: the id its record gave (`UniqueIds`).
ORIGINAL_ID = keys.ORIGINAL_ID.name


@dataclass
class ConversionReport:
    """What a conversion did: dialogues written, records skipped (first 20 reasons kept), the code
    points in written records that could not be written as UTF-8 (lone surrogates from
    `\\uD800`-style escapes) and were replaced with U+FFFD, and dialogues renamed because their id
    was taken (with the first renamings, `old -> new`), and records the reader left out as copies."""

    written: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    replaced_code_points: int = 0
    renamed: int = 0
    renamings: list[str] = field(default_factory=list)
    #: Records the reader left out as copies of records an earlier file held (`DatasetReader.duplicates`).
    left_out: int = 0
    #: What the reader kept with a warning: kind -> count, and where each kind first occurred.
    warnings: dict[str, int] = field(default_factory=dict)
    warning_examples: dict[str, str] = field(default_factory=dict)


#: The dataset-reader registry (entry points `crsim.dataset`), typed: `get` gives a reader class.
dataset_registry: Registry[type[DatasetReader]] = Registry("dataset")

_ReaderClass = TypeVar("_ReaderClass", bound=type[DatasetReader])


def dataset(name: str) -> Callable[[_ReaderClass], _ReaderClass]:
    """Register a dataset reader class under `name` (`@dataset("redial")`)."""
    return dataset_registry.register(name)  # type: ignore[return-value]


def build_reader(name: str, args: dict[str, Any], where: str = "--arg") -> DatasetReader:
    """The registered reader `name` with validated arguments (errors name the field `where`)."""
    cls = dataset_registry.get(name)
    params = cast(ComponentParams, dataset_registry.params(name, args, where=where))
    return cls(params)


class UniqueIds:
    """Gives each dialogue an id no earlier dialogue of the conversion has, deterministically.

    The first dialogue with an id keeps it; a later one whose id is taken (by an earlier record or
    by an earlier renaming) becomes `<id>-2`, `<id>-3`, ..., the first of these still free, in file
    order, and keeps the id it had in `metadata["original_id"]`. Conversion streams, so an id that
    only a later record uses cannot be reserved: that record is renamed in turn when it comes.
    """

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._next: dict[str, int] = {}

    def assign(self, dialogue: Dialogue) -> tuple[Dialogue, str | None]:
        """The dialogue with a free id, and its old id when it was renamed (else None)."""
        original = dialogue.id
        if original not in self._taken:
            self._taken.add(original)
            return dialogue, None
        suffix = self._next.get(original, 2)
        while f"{original}-{suffix}" in self._taken:
            suffix += 1
        self._next[original] = suffix + 1
        new_id = f"{original}-{suffix}"
        self._taken.add(new_id)
        metadata = {**dialogue.metadata, **keys.ORIGINAL_ID.entry(original)}
        return dialogue.model_copy(update={"id": new_id, "metadata": metadata}), original


def convert_dataset(
    reader: DatasetReader,
    src: str | Path,
    *,
    skip_invalid: bool = False,
    report: ConversionReport | None = None,
) -> Iterator[Dialogue]:
    """Stream dialogues with unique ids (`UniqueIds`); the first bad record raises DataError unless
    `skip_invalid`. `report` counts what was written, skipped and renamed. A failure before the first
    dialogue, on a file that looks like another dataset's, says which one (`sniff.py`)."""
    src = Path(src)
    report = report if report is not None else ConversionReport()
    try:
        yield from _convert(reader, src, skip_invalid, report)
    except DataError as exc:
        from crsim.data.datasets.sniff import other_format_hint

        hint = other_format_hint(getattr(reader, "registry_name", None), src) if not report.written else ""
        if not hint:
            raise
        raise DataError(f"{exc}; {hint}") from None


def _convert(
    reader: DatasetReader, src: Path, skip_invalid: bool, report: ConversionReport
) -> Iterator[Dialogue]:
    """`convert_dataset` without the hint."""
    ids = UniqueIds()
    if not src.exists():
        raise DataError("not found; expected the dataset's file or folder", path=str(src))
    records = reader.records(src)
    while True:
        try:
            record = next(records)
        except StopIteration:
            report.left_out = reader.duplicates
            report.warnings, report.warning_examples = dict(reader.warnings), dict(reader.warning_examples)
            return
        except DataError as exc:  # an unreadable record that the reader could step over
            if not skip_invalid:
                raise
            _skip(report, str(exc))
            continue
        try:
            if isinstance(record.data, BadLine):
                raise record.error(record.data.message)
            record, replaced = _cleaned(record)
            dialogue = _checked(reader.convert(record), record)
        except ValidationError as exc:  # a model built inside the reader rejected a value
            err = exc.errors()[0]
            error = record.error(err["msg"], ".".join(str(p) for p in err["loc"]) or None)
            if not skip_invalid:
                raise error from None
            _skip(report, str(error))
            continue
        except DataError as exc:
            if not skip_invalid:
                raise
            _skip(report, str(exc))
            continue
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            error = record.error(f"unexpected content ({type(exc).__name__}: {exc})")
            if not skip_invalid:
                raise error from exc
            _skip(report, str(error))
            continue
        dialogue, original = ids.assign(dialogue)
        if original is not None:
            report.renamed += 1
            if len(report.renamings) < 20:
                report.renamings.append(f"{record.path}, record {record.number}: {original} -> {dialogue.id}")
        report.written += 1
        report.replaced_code_points += replaced
        yield dialogue


def _skip(report: ConversionReport, message: str) -> None:
    report.skipped += 1
    if len(report.errors) < 20:
        report.errors.append(message)


def _cleaned(record: RawRecord) -> tuple[RawRecord, int]:
    """The record with lone surrogates in its strings replaced by U+FFFD (text from outside), and
    how many; every reader gets its data through here, so no reader has to remember it. Records
    from `files.iter_json_lines` / `iter_json_array` come cleaned and counted (only a text with a
    surrogate escape is walked)."""
    if record.replaced is not None:
        return record, record.replaced
    try:
        data, replaced = clean_value(record.data)
    except RecursionError:
        raise record.error("nested too deeply to read") from None
    return (replace(record, data=data) if replaced else record), replaced


def _checked(dialogue: Dialogue, record: RawRecord) -> Dialogue:
    """Re-validate what a reader built field by field (assignment is not validated), through the
    JSON it will be written as, so a record that cannot be written is this record's error."""
    try:
        return Dialogue.model_validate_json(dialogue.model_dump_json())
    except ValidationError as exc:
        err = exc.errors()[0]
        raise record.error(err["msg"], ".".join(str(p) for p in err["loc"])) from None
    except PydanticSerializationError as exc:
        raise record.error(f"cannot be written as JSON ({str(exc).splitlines()[0]})") from None
