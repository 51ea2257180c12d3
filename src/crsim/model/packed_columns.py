"""Columns of an item collection packed for pickling (the domain cache): strings joined into one text,
repeated values coded, so a pickled catalogue holds no per-item objects."""

from __future__ import annotations

from typing import Any


class StringColumn(list[str]):
    """A list of strings pickled as one joined string (no per-string objects in a pickle's memo)."""

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (_strings, (PackedColumn.pack(list(self)),))


def _strings(packed: PackedColumn) -> StringColumn:
    return StringColumn(packed.unpack())


class PositionMap(dict[str, int]):
    """Item id -> position; pickled as the ids alone (the map is rebuilt on loading), by reference to
    the collection's id column when it has one (one copy of the ids in a pickle and after it)."""

    ids: StringColumn | None = None

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        ids = self.ids if self.ids is not None and len(self.ids) == len(self) else StringColumn(self)
        return (_position_map, (ids,))


def _position_map(ids: StringColumn) -> PositionMap:
    positions = PositionMap(zip(ids, range(len(ids)), strict=True))
    positions.ids = ids
    return positions


#: Separates joined strings; a column holding it is pickled as a list.
_SEPARATOR = "\x00"


class PackedColumn:
    """A column of values packed for pickling: strings joined into one, repeated values as codes
    into their distinct values, numbers as an array; anything else as a plain list."""

    __slots__ = ("data", "form", "size")

    def __init__(self, form: str, data: Any, size: int) -> None:
        self.form, self.data, self.size = form, data, size

    def __getstate__(self) -> tuple[str, Any, int]:
        return self.form, self.data, self.size

    def __setstate__(self, state: tuple[str, Any, int]) -> None:
        self.form, self.data, self.size = state

    @classmethod
    def pack(cls, column: list[Any]) -> PackedColumn:
        import numpy as np

        n = len(column)
        kinds = set(map(type, column))
        if kinds <= {str, type(None)} or kinds <= {int, type(None)} or kinds <= {tuple, type(None)}:
            distinct = dict.fromkeys(column)
            if len(distinct) * 4 <= n:
                index = {v: k for k, v in enumerate(distinct)}
                codes = np.fromiter(map(index.__getitem__, column), dtype=np.int32, count=n)
                return cls("codes", (list(distinct), codes), n)
        if kinds == {str}:
            joined = _SEPARATOR.join(column)
            if joined.count(_SEPARATOR) == n - 1 and n:
                return cls("joined", joined, n)
        if kinds == {int}:
            try:
                return cls("ints", np.array(column, dtype=np.int64), n)
            except OverflowError:
                pass
        if kinds == {list}:
            try:
                shared: dict[tuple[Any, ...], int] = {}
                codes = np.fromiter(
                    (shared.setdefault(tuple(v), len(shared)) for v in column), dtype=np.int32, count=n
                )
            except TypeError:  # lists of unhashable values
                return cls("list", column, n)
            if len(shared) * 4 <= n:
                return cls("lists", ([list(v) for v in shared], codes), n)
        return cls("list", column, n)

    def unpack(self) -> list[Any]:
        if self.form == "codes" or self.form == "lists":
            distinct, codes = self.data
            return list(map(distinct.__getitem__, codes.tolist()))
        if self.form == "joined":
            return self.data.split(_SEPARATOR)  # type: ignore[no-any-return]
        if self.form == "ints":
            return self.data.tolist()  # type: ignore[no-any-return]
        return list(self.data)
