"""CRS Arena (Bernard et al., WSDM 2025): crowd conversations with nine CRSs, and their human ratings.

`crsarena_dial` reads CRSArena-Dial (`crs_arena_dial_open.json`, `crs_arena_dial_closed.json`: the
two crowdsourcing settings, DialogueKit-like JSON with `conversation ID`/`utterance ID` keys and the
user's self-reported sentiment). `crsarena_eval` reads CRSArena-Eval (`crs_arena_eval.json`: 467 of
those conversations with aggregated human labels; the older copy's `dialog`/`dialog_overall` keys
are accepted). Human labels are kept under stable keys: `annotations["human"]` on assistant
utterances (relevance 0-3, interestingness 0-2) and `metadata["human"]` on the dialogue
(understanding, task_completion, interest_arousal, efficiency, dialogue_overall, and the
undocumented preference_elicitation and explanation). The CRS name (`metadata["crs"]`, also
`crs_id`) ends in the dataset it was trained on (`metadata["crs_dataset"]`: redial or opendialkg).

Titles are linked to the shipped movie domain (`link_items`); as these files carry no act labels,
a CRS utterance counts as recommending the items it names that the user has not named before.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field

from crsim.data.datasets.base import DatasetReader, RawRecord, dataset
from crsim.data.datasets.dialoguekit import convert_record
from crsim.data.datasets.files import iter_files, iter_json_array
from crsim.data.movies import movie_items
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.linking import ItemLinker
from crsim.model.mentions import split_named
from crsim.registry import Params as ComponentParams

CRS_DATASETS = ("redial", "opendialkg")
#: Documented value ranges of the aggregated labels (CRSArena-Eval README); others must be >= 0.
TURN_LABELS = {"relevance": (0, 3), "interestingness": (0, 2)}
DIALOGUE_LABELS = {
    "understanding": (0, 2),
    "task_completion": (0, 2),
    "interest_arousal": (0, 2),
    "efficiency": (0, 1),
    "dialogue_overall": (0, 4),
}
_UNBOUNDED = 2**31
_EVAL_ROLES = {"USER": Role.USER, "ASST": Role.CRS}


class CrsArenaParams(ComponentParams):
    link_items: bool = Field(
        True,
        description="Link movie titles in the text to the shipped movie domain (mentioned, recommended).",
    )


class _CrsArenaReader(DatasetReader):
    Params = CrsArenaParams

    @cached_property
    def _linker(self) -> ItemLinker | None:
        params = self.params
        assert isinstance(params, CrsArenaParams)
        return movie_items().linker if params.link_items else None

    def _link(self, utterances: list[Utterance]) -> None:
        """Set mentioned items of every utterance and recommended items of CRS utterances."""
        if self._linker is None:
            return
        user_items: set[str] = set()
        for utterance in utterances:
            found = list(dict.fromkeys(m.item_id for m in self._linker.link(utterance.text)))
            if utterance.role == Role.USER:
                user_items.update(found)
            else:
                utterance.recommended_items = [i for i in found if i not in user_items]
            utterance.mentioned_items = split_named(found, utterance.recommended_items)


def split_crs(record: RawRecord, name: str, field: str) -> str:
    """The dataset a CRS name ends in (`kbrd_redial` -> `redial`); anything else is an error."""
    crs_dataset = name.rsplit("_", 1)[-1]
    if crs_dataset not in CRS_DATASETS or "_" not in name:
        raise record.error(f"expected a CRS name ending in _redial or _opendialkg, got {name!r}", field)
    return crs_dataset


@dataset("crsarena_dial")
class CrsArenaDialReader(_CrsArenaReader):
    """CRSArena-Dial: both settings (open, closed) from the data folder or one file."""

    description = "CRSArena-Dial: crs_arena_dial_{open,closed}.json (a file, the data folder or the repo)"

    def records(self, src: Path) -> Iterator[RawRecord]:
        folder = src / "data" if (src / "data").is_dir() else src
        for path in iter_files(folder, "crs_arena_dial_*.json"):
            yield from iter_json_array(path)

    def convert(self, record: RawRecord) -> Dialogue:
        setting = record.path.name.split(".")[0].rsplit("_", 1)[-1]
        dialogue = convert_record(
            record, dataset_name="crsarena_dial", split=setting, scheme=None, reader=self
        )
        agent = record.get("agent", dict)
        crs = record.get("id", str, agent, "agent")
        sentiment = record.get("sentiment", str, record.get("metadata", dict), "metadata")
        user = record.data.get("user")
        dialogue.crs_id = crs
        dialogue.metadata.update(
            crs=crs,
            crs_dataset=split_crs(record, crs, "agent.id"),
            user=user.get("id") if isinstance(user, dict) else None,
            **keys.HUMAN_DIALOGUE_LABELS.entry({"sentiment": sentiment}),
        )
        self._link(dialogue.utterances)
        return dialogue


@dataset("crsarena_eval")
class CrsArenaEvalReader(_CrsArenaReader):
    """CRSArena-Eval: conversations with aggregated human turn and dialogue labels."""

    description = "CRSArena-Eval: crs_arena_eval.json (informagi/face or hideaki-j copy), file or folder"

    def records(self, src: Path) -> Iterator[RawRecord]:
        for path in iter_files(src, "crs_arena_eval.json"):
            yield from iter_json_array(path)

    def convert(self, record: RawRecord) -> Dialogue:
        original_id = record.get("conv_id", str)
        crs, _, user = original_id.rpartition("_")
        crs_dataset = split_crs(record, crs, "conv_id")
        key = "dialog" if "dialog" in record.data and "dialogue" not in record.data else "dialogue"
        turns = record.get(key, list)
        if not turns:
            raise record.error("empty dialogue: no utterances", key)
        utterances = [_eval_turn(record, turn, f"{key}[{n}]", n) for n, turn in enumerate(turns)]
        self._link(utterances)
        raw_labels = record.get("dial_level_aggregated", dict)
        labels = {("dialogue_overall" if k == "dialog_overall" else k): v for k, v in raw_labels.items()}
        for name in DIALOGUE_LABELS:
            if name not in labels:
                raise record.error("missing", f"dial_level_aggregated.{name}")
        return Dialogue(
            id=f"crsarena_eval/{crs_dataset}/{original_id}",
            utterances=utterances,
            crs_id=crs,
            metadata={
                "dataset": "crsarena_eval",
                "split": crs_dataset,
                "conversation_id": original_id,
                "crs": crs,
                "crs_dataset": crs_dataset,
                "user": user,
                **keys.HUMAN_DIALOGUE_LABELS.entry(
                    _checked_labels(record, labels, DIALOGUE_LABELS, "dial_level_aggregated")
                ),
            },
        )


def _eval_turn(record: RawRecord, turn: Any, where: str, position: int) -> Utterance:
    role_name = record.get("role", str, turn, where)
    if role_name not in _EVAL_ROLES:
        raise record.error(f"expected USER or ASST, got {role_name!r}", f"{where}.role")
    if record.get("turn_ind", int, turn, where) != position:
        raise record.error(f"expected turn index {position}", f"{where}.turn_ind")
    utterance = Utterance(role=_EVAL_ROLES[role_name], text=record.get("utterance", str, turn, where))
    if "turn_level_aggregated" in turn:
        if utterance.role != Role.CRS:
            raise record.error("labels on a user turn; only assistant turns are rated", where)
        labels = record.get("turn_level_aggregated", dict, turn, where)
        human = _checked_labels(record, labels, TURN_LABELS, f"{where}.turn_level_aggregated")
        keys.HUMAN_TURN_LABELS.put(utterance.annotations, human)
    return utterance


def _checked_labels(
    record: RawRecord, labels: dict[str, Any], ranges: dict[str, tuple[int, int]], where: str
) -> dict[str, int]:
    """Integer labels within their documented range (undocumented ones: non-negative)."""
    for name, value in labels.items():
        low, high = ranges.get(name, (0, _UNBOUNDED))
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            expected = f"{low}-{high}" if high != _UNBOUNDED else f">= {low}"
            raise record.error(f"expected an integer label {expected}, got {value!r}", f"{where}.{name}")
    return dict(labels)
