"""The attribute index of an item collection: for one attribute, each lower-cased value and the
catalogue positions of the items holding it, built from the columns in one pass and a stable sort."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Positions = npt.NDArray[np.intp]


class Columns(Protocol):
    """What the index reads of a collection (`crsim.model.items.ItemCollection` has it)."""

    def extra_column(self, key: str) -> list[Any] | None: ...
    def values_of(self, attribute: str) -> Iterator[list[str]]: ...


def value_index(items: Columns, attribute: str, single: bool) -> dict[str, Positions]:
    """The index of one attribute (see `ItemCollection._index`): each item's values lower-cased,
    through one lookup per distinct raw value, then grouped with a stable sort. `single`: the
    attribute is an `extra` column of single values (read raw, not as lists of strings)."""
    import numpy as np

    codes: list[int] = []
    holders: list[int] = []
    keys: dict[str, int] = {}
    lowered: dict[Any, int] = {}
    for p, values in enumerate(_raw_values(items, attribute) if single else items.values_of(attribute)):
        if single:
            if values is None:
                continue
            if type(values) is list:
                texts: Iterable[Any] = [str(v) for v in values]
            else:
                key: Any = values if type(values) is str else (type(values), values)
                try:
                    code = lowered.get(key)
                except TypeError:  # an unhashable value (a mapping): as Item.values reads it
                    code, key = None, None
                if code is None:
                    code = keys.setdefault(str(values).lower(), len(keys))
                    if key is not None:
                        lowered[key] = code
                codes.append(code)
                holders.append(p)
                continue
        else:
            texts = values
        for text in texts:
            codes.append(keys.setdefault(text.lower(), len(keys)))
            holders.append(p)
    if not codes:
        return {}
    code_array = np.asarray(codes, dtype=np.intp)
    order = np.argsort(code_array, kind="stable")
    grouped = np.asarray(holders, dtype=np.intp)[order]
    bounds = np.searchsorted(code_array[order], np.arange(len(keys) + 1))
    found: dict[str, Positions] = {}
    for value, code in keys.items():
        positions = grouped[bounds[code] : bounds[code + 1]]
        if len(positions) > 1 and (np.diff(positions) == 0).any():  # a value listed twice in one item
            positions = np.unique(positions)
        found[value] = positions
    return found


def _raw_values(items: Columns, key: str) -> list[Any]:
    return items.extra_column(key) or []
