"""Mapping tables from datasets' own dialogue-act labels to crsim intents and slots.

Each dataset labels utterances with its own scheme (IARD's user intents and recommender actions,
the CIR6 scheme of IAI MovieBot's annotated dialogues). A label is mapped to the crsim intent
(`crsim.model.acts.Intent`) whose meaning matches and to `other` where nothing does; converters
always keep the original label next to the mapped one. Tables are per role because some schemes
use one label on both sides with different meanings (MovieBot's `INQUIRE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from crsim.model.acts import Intent
from crsim.model.dialogue import Role

#: IARD seeker intents (Cai and Chen, UMAP 2020), plus `END` from UserSimCRS's augmented copy.
IARD_USER_INTENTS: dict[str, str] = {
    "IQU": Intent.REQUEST_RECOMMENDATION,  # initial query
    "CON": Intent.REQUEST_RECOMMENDATION,  # asks for more recommendations
    "REF": Intent.REQUEST_RECOMMENDATION,  # restates the query
    "STO": Intent.REQUEST_RECOMMENDATION,  # starts a new query
    "CRI-C": Intent.REQUEST_RECOMMENDATION,  # asks for something similar to the recommendation
    "PRO": Intent.DISCLOSE,  # provides a preference
    "ANS": Intent.DISCLOSE,  # answers the recommender's question
    "CRI-A": Intent.DISCLOSE,  # adds a constraint on top of the recommendation
    "CRI-F": Intent.REJECT,  # critiques a feature of the recommendation
    "REJ": Intent.REJECT,
    "ACC": Intent.ACCEPT,
    "SEE": Intent.SEEN,
    "INQ": Intent.INQUIRE,  # asks about the recommended item
    "ASK": Intent.OTHER,  # asks the recommender's personal opinion: no crsim counterpart
    "NRE": Intent.OTHER,  # neutral response to a recommendation
    "OTH": Intent.OTHER,  # greetings, thanks, chit-chat
    "END": Intent.GOODBYE,
}
#: IARD recommender actions. The published file spells three codes differently from the paper's
#: table (RESP for RES, R-ANS for ANS, CLQ for CLA); UserSimCRS's copy uses CLA.
IARD_CRS_INTENTS: dict[str, str] = {
    "REQ": Intent.ELICIT,  # requests the seeker's preference
    "CLQ": Intent.ELICIT,  # clarifying question
    "CLA": Intent.ELICIT,
    "REC-S": Intent.RECOMMEND,  # recommends by showing
    "REC-E": Intent.RECOMMEND,  # recommends by asking ("have you seen ...?")
    "EXP-I": Intent.INFORM,  # explains with a non-personalised introduction
    "EXP-P": Intent.INFORM,  # explains from the seeker's preferences
    "EXP-S": Intent.INFORM,  # explains in a suggestive way
    "R-ANS": Intent.INFORM,  # answers the seeker's question
    "RESP": Intent.OTHER,  # responds to other feedback
    "OTH": Intent.OTHER,
    "END": Intent.GOODBYE,
}
#: IAI MovieBot dialogues annotated with the CIR6 scheme (Afzali, Drzewiecki and Balog), user side.
MOVIEBOT_USER_INTENTS: dict[str, str] = {
    "DISCLOSE.NON-DISCLOSE": Intent.GREETING,  # opens the conversation without a preference
    "DISCLOSE": Intent.DISCLOSE,
    "REVEAL.EXPAND": Intent.DISCLOSE,
    "REVEAL.REFINE": Intent.DISCLOSE,
    "REVEAL.REVISE": Intent.DISCLOSE,
    "INQUIRE": Intent.REQUEST_RECOMMENDATION,  # "anything else?"
    "INQUIRE.SIMILAR": Intent.REQUEST_RECOMMENDATION,
    "INQUIRE.ITEMINFO": Intent.INQUIRE,
    "INQUIRE.MORE": Intent.INQUIRE,  # names the attribute asked about
    "NOTE.YES": Intent.SEEN,  # has consumed the item
    "NOTE.LIKE": Intent.ACCEPT,
    "NOTE.ACCEPT": Intent.ACCEPT,
    "NOTE.DISLIKE": Intent.REJECT,
    "NOTE.NO": Intent.OTHER,  # has not consumed the item
    "NOTE.NEUTRAL": Intent.OTHER,
    "NOTE": Intent.OTHER,
    "DONT-KNOW": Intent.OTHER,
    "YES": Intent.AFFIRM,
    "NO": Intent.DENY,
    "COMPLETE": Intent.GOODBYE,
}
#: MovieBot's side of the CIR6 annotations.
MOVIEBOT_CRS_INTENTS: dict[str, str] = {
    "DISCLOSE.NON-DISCLOSE": Intent.GREETING,
    "INQUIRE": Intent.ELICIT,
    "INQUIRE.ELICIT": Intent.ELICIT,
    "INQUIRE.MORE": Intent.ASK,  # "what would you like to know about X?"
    "INQUIRE.NEXT": Intent.ASK,  # "please choose your next step"
    "REVEAL": Intent.RECOMMEND,
    "REVEAL.SIMILAR": Intent.RECOMMEND,
    "REVEAL.NONE": Intent.INFORM,  # no item matches the preferences
    "DISCLOSE.MORE": Intent.INFORM,  # answers a question about the item
    "END": Intent.GOODBYE,
    "FAILED": Intent.OTHER,
}

#: Per-role tables of every dataset whose act labels crsim maps.
INTENT_TABLES: Mapping[str, Mapping[Role, Mapping[str, str]]] = MappingProxyType(
    {
        "iard": {Role.USER: IARD_USER_INTENTS, Role.CRS: IARD_CRS_INTENTS},
        "moviebot": {Role.USER: MOVIEBOT_USER_INTENTS, Role.CRS: MOVIEBOT_CRS_INTENTS},
    }
)
#: Both roles of IARD in one table (its labels never mean different things on the two sides).
IARD_INTENTS: dict[str, str] = {**IARD_USER_INTENTS, **IARD_CRS_INTENTS}

#: Slot names of the annotated datasets (upper case, DialogueKit style) -> crsim slot names.
SLOTS: dict[str, str] = {
    "TITLE": "title",
    "GENRE": "genre",
    "ACTOR": "actor",
    "DIRECTOR": "director",
    "KEYWORD": "keyword",  # MovieBot
    "KEYWORDS": "keyword",  # IARD
    "PLOT": "plot",
    "YEAR": "year",
    "RATING": "rating",
    "OTHER": "other",
}
#: crsim slot -> the dataset's own slot name, where it is not just the upper-cased crsim name.
SLOT_LABELS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {"iard": {"keyword": "KEYWORDS"}, "moviebot": {"keyword": "KEYWORD"}}
)


def map_intent(dataset: str, label: str, role: Role | str | None = None) -> str:
    """The crsim intent for `label` of `dataset` ('iard', 'moviebot'); KeyError names what is unknown.

    `role` ('user' or 'crs') is needed only where a scheme uses the label on both sides with
    different meanings; without it, a label whose two readings differ raises ValueError.
    """
    if dataset not in INTENT_TABLES:
        raise KeyError(f"no intent table for dataset {dataset!r}; known: {', '.join(INTENT_TABLES)}")
    tables = INTENT_TABLES[dataset]
    if role is not None:
        table = tables[Role(role)]
        if label not in table:
            raise KeyError(f"unknown {dataset} {Role(role).value} label {label!r}")
        return table[label]
    readings = {table[label] for table in tables.values() if label in table}
    if not readings:
        raise KeyError(f"unknown {dataset} label {label!r}")
    if len(readings) > 1:
        raise ValueError(f"{dataset} label {label!r} means different intents per role; pass role")
    return readings.pop()


def map_slot(label: str) -> str:
    """The crsim slot for a dataset slot name: the table above, else the name in lower case."""
    return SLOTS.get(label, SLOTS.get(label.upper(), label.lower()))


def slot_label(dataset: str | None, slot: str) -> str:
    """The dataset's own name for a crsim slot (upper case unless the dataset spells it otherwise)."""
    return SLOT_LABELS.get(dataset or "", {}).get(slot, slot.upper())
