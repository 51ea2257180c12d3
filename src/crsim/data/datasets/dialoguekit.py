"""DialogueKit JSON (the dialogue format of UserSimCRS): import into and export from unified dialogues.

A file is a JSON array of records `{"conversation_id", "conversation": [{"participant": "USER" |
"AGENT", "utterance", "dialogue_acts": [{"intent", "slot_values": [[slot, value, start, end]]}]}],
"agent", "user", "metadata"}`. On import, each act becomes a crsim act (intent mapped through a
label scheme of `intents.py` when one is named, slot names to crsim slots), and everything the
unified format has no field for is kept verbatim: the original acts in
`annotations["labels"]["dialogue_acts"]`, other utterance keys in `annotations["dialoguekit"]`,
the record's other top-level keys in `metadata["dialoguekit"]`. Export writes those back, so
DialogueKit -> unified -> DialogueKit gives the same bytes. With `lossless=True` the export also
embeds every unified field the format cannot carry under a `"crsim"` key, which import restores.

An act without an intent (`null`, `""` or no `intent` key, as in UserSimCRS's published case-study
dialogues; DialogueKit's reader keeps such acts with no intent) becomes an act with the intent
`other` (`NO_INTENT`) and its slots; the original act stays verbatim in the labels, and the reader
counts such acts (`DatasetReader.warn`). The `dialoguekit` reader also maps the record's `agent.id`
to `crs_id`, its `user.id` to `simulator_id` (or to `user_id` with `simulated=False`), and an
exception UserSimCRS recorded (`metadata.error`: `error_type`, `trace`) to an `error` termination
whose `ErrorInfo` has source `loop` (UserSimCRS does not record which side raised it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from crsim.data.datasets.base import DatasetReader, RawRecord, dataset
from crsim.data.datasets.files import iter_files, iter_json_array
from crsim.data.datasets.intents import INTENT_TABLES, map_slot, slot_label
from crsim.errors import DataError
from crsim.model import annotations as keys
from crsim.model.acts import DialogueAct, Intent
from crsim.model.dialogue import Dialogue, ErrorInfo, Role, Termination, TerminationReason, Utterance
from crsim.registry import Params as ComponentParams

PARTICIPANTS = {"USER": Role.USER, "AGENT": Role.CRS}
_LABELS = {role: name for name, role in PARTICIPANTS.items()}
#: Keys of a record and of an utterance that the conversion interprets (the rest is kept verbatim).
_ID_KEYS = ("conversation_id", "conversation ID")
#: Where an act keeps its slot values (`slots` in UserSimCRS's INSPIRED sample).
_SLOT_KEYS = ("slot_values", "slots")
_UTTERANCE_KEYS = frozenset({"participant", "utterance", "dialogue_acts"})
#: Key under which a lossless export keeps the unified fields DialogueKit has no place for.
EXTENSION = "crsim"
_UTTERANCE_FIELDS = {"acts", "recommended_items", "mentioned_items", "shown_items", "annotations"}
#: The crsim intent of an act that has none in the file (`null`, `""` or no `intent` key).
NO_INTENT = Intent.OTHER.value
#: `DatasetReader.warn` kind for such acts.
ACTS_WITHOUT_INTENT = f"acts without an intent (kept with the intent {NO_INTENT!r})"


def conversation_id(record: RawRecord) -> str:
    """The record's conversation id (either spelling of the key), without stray quotes."""
    key = next((k for k in _ID_KEYS if isinstance(record.data, Mapping) and k in record.data), _ID_KEYS[0])
    raw = record.data.get(key) if isinstance(record.data, Mapping) else None
    if not isinstance(raw, str | int) or isinstance(raw, bool) or not str(raw).strip('" '):
        raise record.error("expected a non-empty conversation id (string or number)", key)
    return str(raw).strip('" ')


def convert_acts(
    raw_acts: Any,
    scheme: str | None,
    role: Role,
    record: RawRecord,
    where: str,
    without_intent: list[str] | None = None,
) -> list[DialogueAct]:
    """DialogueKit acts as crsim acts: intents through `scheme` (kept as they are without one). An act
    without an intent gets `NO_INTENT`; the field of each such act is appended to `without_intent`."""
    if not isinstance(raw_acts, list):
        raise record.error(f"expected a list, got {type(raw_acts).__name__}", where)
    table = INTENT_TABLES[scheme][role] if scheme else None
    acts = []
    for n, raw in enumerate(raw_acts):
        if not isinstance(raw, Mapping):
            raise record.error(f"expected an act object, got {type(raw).__name__}", f"{where}[{n}]")
        label = raw.get("intent")
        if label is not None and not isinstance(label, str):
            raise record.error(
                f"expected a text intent or null, got {type(label).__name__}", f"{where}[{n}].intent"
            )
        if not label:
            if without_intent is not None:
                without_intent.append(f"{where}[{n}].intent")
        elif table is not None and label not in table:
            raise record.error(f"unknown {scheme} {role.value} intent {label!r}", f"{where}[{n}].intent")
        key = next((k for k in _SLOT_KEYS if k in raw), None)
        values = record.get(key, list, raw, f"{where}[{n}]") if key else []
        slots = [_slot(value, record, f"{where}[{n}].{key}[{k}]") for k, value in enumerate(values)]
        intent = NO_INTENT if not label else table[label] if table else label
        try:
            acts.append(DialogueAct(intent=intent, slots=slots))
        except ValidationError as exc:
            raise record.error(exc.errors()[0]["msg"], f"{where}[{n}]") from None
    return acts


def _slot(raw: Any, record: RawRecord, where: str) -> tuple[str, str | None]:
    if not isinstance(raw, list) or not 1 <= len(raw) <= 4 or not isinstance(raw[0], str) or not raw[0]:
        raise record.error("expected [slot, value, start, end] with a slot name", where)
    value = raw[1] if len(raw) > 1 else None
    if value is not None and not isinstance(value, str | int | float):
        raise record.error(f"expected a text value, got {type(value).__name__}", where)
    return map_slot(raw[0]), None if value is None else str(value)


def convert_utterance(
    raw: Any, scheme: str | None, record: RawRecord, where: str, without_intent: list[str] | None = None
) -> Utterance:
    """One DialogueKit utterance; interpreted keys become fields, the others stay verbatim."""
    participant = record.get("participant", str, raw, where)
    if participant not in PARTICIPANTS:
        raise record.error(f"expected USER or AGENT, got {participant!r}", f"{where}.participant")
    role = PARTICIPANTS[participant]
    utterance = Utterance(role=role, text=record.get("utterance", str, raw, where))
    if "dialogue_acts" in raw:
        where_acts = f"{where}.dialogue_acts"
        utterance.acts = convert_acts(raw["dialogue_acts"], scheme, role, record, where_acts, without_intent)
        labels = {
            "intents": [a.get("intent") or "" for a in raw["dialogue_acts"]],
            "dialogue_acts": raw["dialogue_acts"],
        }
        keys.DATASET_LABELS.put(utterance.annotations, labels)
    extra = {k: v for k, v in raw.items() if k not in _UTTERANCE_KEYS and k != EXTENSION}
    if extra:
        utterance.annotations["dialoguekit"] = extra
    if EXTENSION in raw:
        utterance = _extended(utterance, raw[EXTENSION], record, f"{where}.{EXTENSION}")
    return utterance


def convert_record(
    record: RawRecord,
    *,
    dataset_name: str,
    split: str,
    scheme: str | None,
    reader: DatasetReader | None = None,
) -> Dialogue:
    """A DialogueKit record as a dialogue with id `<dataset>/<split>/<conversation id>`; problems name
    the conversation id beside the record and field. Acts without an intent are counted through
    `reader.warn` (`ACTS_WITHOUT_INTENT`)."""
    original_id = conversation_id(record)
    record = replace(record, label=original_id)
    raw_utterances = record.get("conversation", list)
    if not raw_utterances:
        raise record.error("empty dialogue: no utterances", "conversation")
    missing: list[str] = []
    utterances = [
        convert_utterance(raw, scheme, record, f"conversation[{n}]", missing)
        for n, raw in enumerate(raw_utterances)
    ]
    kept = {k: v for k, v in record.data.items() if k not in ("conversation", EXTENSION)}
    dialogue = Dialogue(
        id=f"{dataset_name}/{split}/{original_id}",
        utterances=utterances,
        metadata={
            "dataset": dataset_name,
            "split": split,
            "conversation_id": original_id,
            "label_scheme": scheme,
            "dialoguekit": kept,
        },
    )
    if EXTENSION in record.data:
        extension = record.get(EXTENSION, dict)
        dialogue = _validated({**extension, "utterances": dialogue.model_dump()["utterances"]}, record)
    if reader is not None:
        for where in missing:
            reader.warn(ACTS_WITHOUT_INTENT, record, where)
    return dialogue


def _extended(utterance: Utterance, extension: Any, record: RawRecord, where: str) -> Utterance:
    if not isinstance(extension, dict) or not set(extension) <= _UTTERANCE_FIELDS:
        raise record.error(f"expected an object with keys among {sorted(_UTTERANCE_FIELDS)}", where)
    try:
        return Utterance.model_validate({**utterance.model_dump(), **extension})
    except ValueError as exc:
        raise record.error(f"invalid crsim extension ({exc})", where) from None


def _validated(data: dict[str, Any], record: RawRecord) -> Dialogue:
    try:
        return Dialogue.model_validate(data)
    except ValueError as exc:
        raise record.error(f"invalid crsim extension ({exc})", EXTENSION) from None


class DialogueKitParams(ComponentParams):
    scheme: str | None = Field(
        None,
        description="Label scheme to map intents with ('iard', 'moviebot'); None keeps them as they are.",
    )
    dataset: str = Field("dialoguekit", description='First part of dialogue ids and `metadata["dataset"]`.')
    split: str | None = Field(
        None, description="Second part of dialogue ids; by default the stem of each file's name."
    )
    simulated: bool = Field(
        True,
        description="The records' `user.id` names the simulator that played the user (UserSimCRS's "
        "synthetic dialogues): it becomes `simulator_id`; false for dialogues with people (`user_id`).",
    )

    @field_validator("scheme")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is not None and value not in INTENT_TABLES:
            raise ValueError(f"unknown label scheme {value!r}; known: {', '.join(INTENT_TABLES)}")
        return value


@dataset("dialoguekit")
class DialogueKitReader(DatasetReader):
    """Any file in DialogueKit JSON, e.g. one written by UserSimCRS or by `write_dialoguekit`."""

    Params = DialogueKitParams
    description = "DialogueKit/UserSimCRS dialogue JSON: a .json file or a folder of them"

    def records(self, src: Path) -> Iterator[RawRecord]:
        for path in iter_files(src):
            yield from iter_json_array(path)

    def convert(self, record: RawRecord) -> Dialogue:
        params = self.params
        assert isinstance(params, DialogueKitParams)
        split = params.split or record.path.name.split(".")[0]
        dialogue = convert_record(
            record, dataset_name=params.dataset, split=split, scheme=params.scheme, reader=self
        )
        record = replace(record, label=conversation_id(record))
        if EXTENSION in record.data:
            return dialogue
        agent, user = _participant_id(record, "agent"), _participant_id(record, "user")
        update: dict[str, Any] = {"crs_id": agent}
        update["simulator_id" if params.simulated else "user_id"] = user
        termination = _recorded_error(record)
        if termination is not None:
            update["termination"] = termination
        return dialogue.model_copy(update={k: v for k, v in update.items() if v is not None})


def _participant_id(record: RawRecord, key: str) -> str | None:
    """`record[key]["id"]` (UserSimCRS: the CRS's or the simulator's name), None when absent."""
    raw = record.data.get(key)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise record.error(f"expected an object with an id, got {type(raw).__name__}", key)
    value = raw.get("id")
    if value is None:
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise record.error(f"expected a text or number id, got {type(value).__name__}", f"{key}.id")
    return str(value) or None


def _recorded_error(record: RawRecord) -> Termination | None:
    """The exception UserSimCRS recorded (`metadata.error`) as an `error` termination. UserSimCRS does
    not say which participant raised it, so the source is the loop that caught it (crsim charges
    it to neither side: the dialogue is left out of the metrics unless scored with `score_unevaluable`)."""
    metadata = record.data.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("error") is None:
        return None
    error = record.get("error", dict, metadata, "metadata")
    kind = error.get("error_type")
    trace = error.get("trace", "")
    if not isinstance(kind, str) or not kind or not isinstance(trace, str):
        raise record.error("expected {error_type: text, trace: text}", "metadata.error")
    return Termination(
        reason=TerminationReason.ERROR, error=ErrorInfo(source="loop", type=kind, message=trace)
    )


# --- export -------------------------------------------------------------------------------------


def to_dialoguekit(dialogue: Dialogue, *, lossless: bool = False) -> dict[str, Any]:
    """One dialogue as a DialogueKit record (see the module docstring for what `lossless` adds)."""
    kept = dict(dialogue.metadata.get("dialoguekit") or {})
    scheme = dialogue.metadata.get("label_scheme")
    id_key = next((k for k in _ID_KEYS if k in kept), _ID_KEYS[0])
    record: dict[str, Any] = {id_key: kept.pop(id_key, dialogue.metadata.get("conversation_id", dialogue.id))}
    record["conversation"] = [_utterance_record(u, scheme, lossless) for u in dialogue.utterances]
    record["agent"] = kept.pop("agent", {"id": dialogue.crs_id or "AGENT", "type": "AGENT"})
    record["user"] = kept.pop("user", {"id": dialogue.user_id or "USER", "type": "USER"})
    record.update(kept)
    if lossless:
        record[EXTENSION] = dialogue.model_dump(mode="json", exclude={"utterances"})
    return record


def _utterance_record(utterance: Utterance, scheme: str | None, lossless: bool) -> dict[str, Any]:
    record: dict[str, Any] = {"participant": _LABELS[utterance.role], "utterance": utterance.text}
    original = utterance.annotations.get(keys.DATASET_LABELS.name, {}).get("dialogue_acts")
    verbatim = original is not None and _same_acts(original, scheme, utterance)
    if verbatim:
        record["dialogue_acts"] = original
    elif utterance.acts or original is not None:
        record["dialogue_acts"] = [_act_record(act, scheme) for act in utterance.acts]
    record.update(utterance.annotations.get("dialoguekit") or {})
    if lossless:
        fields = _UTTERANCE_FIELDS if verbatim else _UTTERANCE_FIELDS - {"acts"}
        extension = utterance.model_dump(mode="json", include=fields, exclude_defaults=True)
        # always: reading the record back would otherwise add the acts it finds as labels
        extension["annotations"] = utterance.model_dump(mode="json", include={"annotations"})["annotations"]
        record[EXTENSION] = extension
    return record


def _same_acts(original: Any, scheme: str | None, utterance: Utterance) -> bool:
    """Whether the kept original acts still say what `utterance.acts` says (nobody re-annotated)."""
    probe = RawRecord(Path("<export>"), 0, {})
    try:
        return convert_acts(original, scheme, utterance.role, probe, "dialogue_acts") == utterance.acts
    except (DataError, KeyError, TypeError):
        return False


def _act_record(act: DialogueAct, scheme: str | None) -> dict[str, Any]:
    slots = [[slot_label(scheme, slot), value, None, None] for slot, value in act.slots]
    return {"intent": act.intent, "slot_values": slots}


def write_dialoguekit(
    dialogues: Iterable[Dialogue], path: str | Path, *, lossless: bool = False, indent: int = 4
) -> int:
    """Write dialogues as a DialogueKit JSON array (formatted like UserSimCRS's files); returns the count."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for dialogue in dialogues:
            text = json.dumps(to_dialoguekit(dialogue, lossless=lossless), indent=indent)
            handle.write(("[\n" if count == 0 else ",\n") + _indented(text, indent))
            count += 1
        handle.write("\n]" if count else "[]")
    return count


def _indented(text: str, indent: int) -> str:
    pad = " " * indent
    return "\n".join(pad + line for line in text.split("\n"))
