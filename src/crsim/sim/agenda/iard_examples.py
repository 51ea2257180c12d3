"""The IARD few-shot examples of the LLM agenda NLU and NLG: utterances of the augmented IARD
annotations with their acts in crsim's vocabulary, a fixed deterministic selection
(`build_iard_examples`) shipped in `data/iard_nlu_examples.json` (CRS side) and
`data/iard_nlg_examples.json` (user side), and the reading of a shipped or given example file."""

from __future__ import annotations

import gzip
import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from crsim.core.errors import ConfigError, DataError
from crsim.core.seeding import derive_seed
from crsim.datasets.intents import IARD_CRS_INTENTS, IARD_USER_INTENTS, map_slot
from crsim.language.crs_text import MAX_VALUE_CHARS
from crsim.model.acts import DialogueAct, Intent, SlotValue, format_acts, parse_acts
from crsim.model.text import fold

Side = Literal["crs", "user"]


IARD_SOURCE = (
    "iai-group/UserSimCRS (HEAD), data/datasets/iard/formatted_IARD_annotated_gold.json "
    "(also tests/fixtures/iard/formatted_IARD_annotated_gold.json.gz)"
)
IARD_LICENCE = (
    "UserSimCRS data: Apache-2.0. IARD labels (Cai and Chen, UMAP 2020, wanlingcai1997/umap_2020_IARD): "
    "MIT, with research-use conditions. Utterances from ReDial (Li et al., NeurIPS 2018): CC BY 4.0."
)
#: An IARD `OTH` utterance (greetings, thanks, chit-chat) opening like this is a greeting.
_GREETING_START = re.compile(r"^\W*(hi+|hel+o+|hey+|hiya|howdy|greetings|good (morning|afternoon|evening))\b")
#: IARD slot (as crsim names it) -> the slot of an elicitation or a disclosure (a year range is a decade).
_PREFERENCE_SLOTS = {
    "genre": "genre",
    "actor": "actor",
    "director": "director",
    "keyword": "keyword",
    "year": "decade",
}
#: Slots kept on other acts (`inform`, `reject`, ...); IARD's RATING and OTHER have no crsim counterpart.
_VALUE_SLOTS = frozenset({"title", "genre", "actor", "director", "keyword", "plot", "year"})


class FewShotExample(BaseModel):
    """One annotated utterance: its text and its acts in crsim's vocabulary (string form)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="'<conversation id>:<utterance index>' in the source file.")
    labels: list[str] = Field(description="The source's own intent labels, in order.")
    text: str
    acts: str

    def parsed(self) -> list[DialogueAct]:
        return parse_acts(self.acts)


class ExampleSet(BaseModel):
    """A shipped selection of few-shot examples with where it came from and how it was chosen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Side = Field(description="Whose utterances: 'crs' (for the NLU) or 'user' (for the NLG).")
    source: str
    licence: str
    selection: str
    intent_mapping: dict[str, str]
    examples: list[FewShotExample]


def iard_intent(label: str, text: str, role: Side) -> str:
    """The crsim intent of an IARD label: the tables of `crsim.datasets.intents`, except that
    an `OTH` utterance opening with a greeting word is a `greeting` (IARD has no greeting label)."""
    table = IARD_CRS_INTENTS if role == "crs" else IARD_USER_INTENTS
    if label not in table:
        raise KeyError(f"unknown IARD {role} label {label!r}")
    if label == "OTH" and _GREETING_START.search(fold(text)):
        return Intent.GREETING
    return table[label]


def iard_acts(text: str, dialogue_acts: Iterable[dict[str, Any]], role: Side) -> list[DialogueAct]:
    """The crsim acts of one annotated IARD utterance (see `intent_mapping_notes` for the rules)."""
    acts: list[DialogueAct] = []
    for annotated in dialogue_acts:
        intent = iard_intent(str(annotated["intent"]), text, role)
        pairs = [(map_slot(str(sv[0])), sv[1]) for sv in annotated.get("slot_values") or []]
        acts.extend(_mapped_acts(intent, pairs))
    return list({str(a): a for a in acts}.values())


def _mapped_acts(intent: str, pairs: list[tuple[str, str | None]]) -> list[DialogueAct]:
    if intent == Intent.RECOMMEND:
        return [DialogueAct(intent=intent, slots=[("title", v)]) for s, v in pairs if s == "title" and v]
    if intent == Intent.ELICIT:
        slots = list(dict.fromkeys(_PREFERENCE_SLOTS[s] for s, _ in pairs if s in _PREFERENCE_SLOTS))
        return [DialogueAct(intent=intent, slots=[(s, None) for s in slots])]
    if intent == Intent.REQUEST_RECOMMENDATION:
        wanted = [(_PREFERENCE_SLOTS[s], v) for s, v in pairs if s in _PREFERENCE_SLOTS and v]
        request = DialogueAct(intent=intent)
        return [request, DialogueAct(intent=Intent.DISCLOSE, slots=wanted)] if wanted else [request]
    if intent == Intent.DISCLOSE:
        kept = [(_PREFERENCE_SLOTS.get(s, s), v) for s, v in pairs if s in _VALUE_SLOTS and v]
        return [DialogueAct(intent=intent, slots=kept)]
    if intent in (Intent.GREETING, Intent.GOODBYE, Intent.OTHER):
        return [DialogueAct(intent=intent)]
    others: list[SlotValue] = [(s, v[:MAX_VALUE_CHARS] if v else v) for s, v in pairs if s in _VALUE_SLOTS]
    return [DialogueAct(intent=intent, slots=others)]


def intent_mapping_notes(role: Side) -> dict[str, str]:
    """IARD label -> crsim intent, with the slot rules, as recorded in the shipped example files."""
    table = IARD_CRS_INTENTS if role == "crs" else IARD_USER_INTENTS
    notes = {label: str(intent) for label, intent in table.items()}
    notes["OTH"] = "greeting if the utterance opens with a greeting word, else other"
    notes["slots"] = (
        "recommend: one act per TITLE value, other slots dropped; elicit: slot names only, GENRE/ACTOR/"
        "DIRECTOR/KEYWORDS kept and YEAR read as decade, others (TITLE, OTHER) dropped; "
        "request_recommendation with preference values: followed by disclose(those values); "
        "disclose: YEAR read as decade; other acts keep TITLE/GENRE/ACTOR/DIRECTOR/KEYWORDS/PLOT/YEAR "
        "(KEYWORDS as keyword; RATING and OTHER dropped); greeting/goodbye/other carry no slots."
    )
    return notes


def build_iard_examples(
    path: Path, role: Side, *, per_label: int = 4, min_chars: int = 12, max_chars: int = 160
) -> ExampleSet:
    """A deterministic selection of annotated IARD utterances of one side, mapped to crsim acts.

    Candidates: utterances of `role` (IARD's AGENT for 'crs', USER for 'user'; HTML entities
    decoded, whitespace collapsed) of `min_chars`..`max_chars` characters whose mapped acts are
    non-empty (for the user side also without `other`, which says nothing an NLG could express).
    They are visited in an order fixed by `derive_seed("iard-few-shot", conversation, index)`; one
    is kept while any of its labels has fewer than `per_label` examples. The kept ones are listed
    round-robin over the labels (alphabetical), so any prefix covers as many labels as it can.
    """
    participant = "AGENT" if role == "crs" else "USER"
    candidates: list[FewShotExample] = []
    for conversation in _read_json(path):
        for index, utterance in enumerate(conversation["conversation"]):
            text = " ".join(html.unescape(str(utterance["utterance"])).split())
            if utterance["participant"] != participant or not min_chars <= len(text) <= max_chars:
                continue
            annotated = utterance.get("dialogue_acts") or []
            acts = iard_acts(text, annotated, role)
            if not acts or (role == "user" and any(a.intent == Intent.OTHER for a in acts)):
                continue
            labels = [str(a["intent"]) for a in annotated]
            ident = f"{conversation['conversation_id']}:{index}"
            candidates.append(FewShotExample(id=ident, labels=labels, text=text, acts=format_acts(acts)))
    candidates.sort(key=lambda e: derive_seed("iard-few-shot", *e.id.split(":")))
    counts: Counter[str] = Counter()
    kept: list[FewShotExample] = []
    for example in candidates:
        if any(counts[label] < per_label for label in example.labels):
            kept.append(example)
            counts.update(set(example.labels))
    return ExampleSet(
        role=role,
        source=IARD_SOURCE,
        licence=IARD_LICENCE,
        selection=(
            f"crsim.sim.agenda.llm_nlu.build_iard_examples(path, {role!r}, per_label={per_label}, "
            f"min_chars={min_chars}, max_chars={max_chars})"
        ),
        intent_mapping=intent_mapping_notes(role),
        examples=_round_robin(kept),
    )


def _round_robin(examples: list[FewShotExample]) -> list[FewShotExample]:
    labels = sorted({label for e in examples for label in e.labels})
    ordered: list[FewShotExample] = []
    remaining = list(examples)
    while remaining:
        for label in labels:
            chosen = next((e for e in remaining if label in e.labels), None)
            if chosen is not None:
                ordered.append(chosen)
                remaining.remove(chosen)
    return ordered


def _read_json(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, list):
        raise DataError("expected a list of conversations", path=str(path))
    return data


#: Shipped example files, by role.
EXAMPLE_FILES: dict[Side, str] = {"crs": "iard_nlu_examples.json", "user": "iard_nlg_examples.json"}


def write_iard_examples(source: Path, folder: Path) -> list[Path]:
    """Rebuild the shipped example files from the IARD gold annotations (how they were made)."""
    written = []
    for role, name in EXAMPLE_FILES.items():
        per_label = 4 if role == "crs" else 3
        target = folder / name
        target.write_text(
            build_iard_examples(source, role, per_label=per_label).model_dump_json(indent=1) + "\n"
        )
        written.append(target)
    return written


@cache
def load_examples(name: str) -> ExampleSet:
    """A shipped example file (`data/<name>`) or a JSON file by path; parsed once per process."""
    path = Path(name)
    if path.suffix and path.is_file():
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        resource = files("crsim.sim.agenda").joinpath(f"data/{name}")
        if not resource.is_file():
            raise ConfigError(
                f"few-shot examples {name!r}: neither a file nor shipped in crsim/sim/agenda/data"
            )
        text, where = resource.read_text(encoding="utf-8"), f"crsim/sim/agenda/data/{name}"
    try:
        return ExampleSet.model_validate_json(text)
    except ValueError as exc:
        raise DataError(f"not a few-shot example file: {exc}", path=where) from None


def usable_examples(
    examples: Sequence[FewShotExample], intents: Iterable[str], slots: Iterable[str]
) -> list[FewShotExample]:
    """The examples whose acts stay within `intents` and `slots` (a prompt must not show others)."""
    allowed_intents, allowed_slots = set(intents), set(slots)
    return [
        e
        for e in examples
        if all(
            a.intent in allowed_intents and all(s in allowed_slots for s, _ in a.slots) for a in e.parsed()
        )
    ]
