"""The gold side of meta-evaluation: CRSArena-Eval's 467 human-rated conversations, split by dataset.

The conversations ship with the package (`data/crs_arena_eval.json.gz`) and are read through the
`crsarena_eval` converter, so they are ordinary crsim dialogues. Their human labels are taken out of
the dialogues (`annotations["human"]`, `metadata["human"]`) and kept beside them: an evaluator under
test sees the conversation, never the labels it is compared with.

Turns. Gold turn labels sit on assistant utterances, addressed by `turn_ind` (the utterance's
0-based position). crsim evaluators address turns by t, the CRS reply to the t-th user utterance
(CRS utterances before the first user utterance belong to turn 1). `turn_of` maps each assistant
`turn_ind` to its t; in CRSArena-Eval every conversation opens with the user and strictly
alternates, so t = (turn_ind + 1) / 2.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib.resources import files
from pathlib import Path

from crsim.core.errors import DataError
from crsim.datasets.base import RawRecord, convert_dataset
from crsim.datasets.crsarena import CrsArenaEvalReader, CrsArenaParams
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue
from crsim.studies.meta.aspects import DIALOGUE_ASPECTS, TURN_ASPECTS, canonical_aspect

#: The two splits, named after the dataset the CRSs were trained on, in report order.
SPLITS: tuple[str, ...] = ("redial", "opendialkg")
SPLIT_TITLES = {"redial": "ReDial", "opendialkg": "OpenDialKG"}
#: Conversations per split in the published dataset.
SPLIT_SIZES = {"redial": 267, "opendialkg": 200}


def default_gold_path() -> Path:
    """The CRSArena-Eval file shipped in the package."""
    return Path(str(files("crsim.studies.meta") / "data" / "crs_arena_eval.json.gz"))


@dataclass(frozen=True)
class GoldConversation:
    """One conversation with its human labels (canonical aspect names) kept beside the dialogue."""

    conv_id: str
    split: str
    crs: str
    #: The conversation as a crsim dialogue, without the human labels.
    dialogue: Dialogue
    #: Assistant `turn_ind` -> aspect -> label (only the aspects rated there).
    turn_labels: Mapping[int, Mapping[str, int]]
    #: Aspect -> label, for the five dialogue-level aspects.
    dialogue_labels: Mapping[str, int]
    #: Assistant `turn_ind` -> turn number t (1-based) of crsim's turn convention.
    turn_of: Mapping[int, int]

    def turn_inds(self, turn: int) -> list[int]:
        """The assistant `turn_ind`s that make up turn t (one in CRSArena-Eval; none past the end)."""
        return [ind for ind, t in self.turn_of.items() if t == turn]


@dataclass(frozen=True)
class GoldSet:
    """The gold conversations in file order; `source` names the file they came from."""

    conversations: tuple[GoldConversation, ...]
    source: str
    #: Conversations of the file left out of this selection (`limit_per_split`).
    excluded: frozenset[str] = frozenset()
    by_id: Mapping[str, GoldConversation] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {c.conv_id: c for c in self.conversations})

    def __iter__(self) -> Iterator[GoldConversation]:
        return iter(self.conversations)

    def __len__(self) -> int:
        return len(self.conversations)

    def split(self, name: str) -> list[GoldConversation]:
        return [c for c in self.conversations if c.split == name]

    @cached_property
    def systems(self) -> list[str]:
        """The CRS names, sorted."""
        return sorted({c.crs for c in self.conversations})


def _canonical_labels(labels: Mapping[str, int], wanted: tuple[str, ...]) -> dict[str, int]:
    """The labels of the wanted aspects under their canonical names (undocumented ones dropped)."""
    out: dict[str, int] = {}
    for name, value in labels.items():
        aspect = canonical_aspect(name)
        if aspect in wanted:
            out[aspect] = value
    return out


def gold_conversation(dialogue: Dialogue) -> GoldConversation:
    """Split a converted `crsarena_eval` dialogue into the label-free dialogue and its labels."""
    meta = dialogue.metadata
    turn_labels: dict[int, dict[str, int]] = {}
    clean = dialogue.model_copy(deep=True)
    for position, utterance in enumerate(clean.utterances):
        human = keys.annotation(keys.HUMAN_TURN_LABELS, dialogue, position)
        keys.HUMAN_TURN_LABELS.pop(utterance.annotations)
        if human:
            turn_labels[position] = _canonical_labels(human, TURN_ASPECTS)
    human_dialogue = keys.metadata(keys.HUMAN_DIALOGUE_LABELS, dialogue) or {}
    keys.HUMAN_DIALOGUE_LABELS.pop(clean.metadata)
    return GoldConversation(
        conv_id=str(meta["conversation_id"]),
        split=str(meta["crs_dataset"]),
        crs=str(meta["crs"]),
        dialogue=clean,
        turn_labels=turn_labels,
        dialogue_labels=_canonical_labels(human_dialogue, DIALOGUE_ASPECTS),
        turn_of=clean.crs_turn_numbers(),
    )


class _FirstPerSplit(CrsArenaEvalReader):
    """The `crsarena_eval` reader passing on only the first N records of each split (before the
    costly title linking); records it cannot place are passed on, so the converter reports them."""

    def __init__(self, params: CrsArenaParams, limit: int) -> None:
        super().__init__(params)
        self.limit = limit
        self.kept: dict[str, int] = {}
        self.skipped: set[str] = set()

    def records(self, src: Path) -> Iterator[RawRecord]:
        for record in super().records(src):
            conv_id = record.data.get("conv_id") if isinstance(record.data, dict) else None
            split = _raw_split(conv_id)
            if split is None or not isinstance(conv_id, str):
                yield record
            elif self.kept.get(split, 0) < self.limit:
                self.kept[split] = self.kept.get(split, 0) + 1
                yield record
            else:
                self.skipped.add(conv_id)


def _raw_split(conv_id: object) -> str | None:
    """The split a raw `conv_id` (`<crs>_<dataset>_<user>`) belongs to, if it reads as one."""
    if not isinstance(conv_id, str):
        return None
    crs = conv_id.rpartition("_")[0]
    split = crs.rpartition("_")[2]
    return split if split in SPLITS else None


def load_gold(
    path: str | Path | None = None, *, link_items: bool = False, limit_per_split: int | None = None
) -> GoldSet:
    """Read CRSArena-Eval (default: the shipped copy) through the `crsarena_eval` converter.

    `link_items` links movie titles to the shipped domain (a few seconds for all 467; evaluators
    that look at recommended items want it). `limit_per_split` keeps the first N conversations of
    each split; the others are listed in `GoldSet.excluded`.
    """
    path = None if path is None else Path(path)
    source = path or default_gold_path()
    params = CrsArenaParams(link_items=link_items)
    reader = (
        CrsArenaEvalReader(params) if limit_per_split is None else _FirstPerSplit(params, limit_per_split)
    )
    conversations = [gold_conversation(d) for d in convert_dataset(reader, source)]
    seen: set[str] = set()
    for number, conversation in enumerate(conversations, start=1):
        if conversation.conv_id in seen:
            raise DataError("conversation appears twice", path=str(source), record=number, field="conv_id")
        seen.add(conversation.conv_id)
    excluded = frozenset(reader.skipped) if isinstance(reader, _FirstPerSplit) else frozenset()
    return GoldSet(tuple(conversations), str(source), excluded)
