"""Reading YAML/JSON config files into pydantic models, with errors that name the file and the field.

Every YAML text crsim reads (experiment, judge and LLM configs, rubrics, criteria, profile
dictionaries, NLG templates, GCDF1 configs, `--arg` values) goes through `load_yaml`, which refuses
what `yaml.safe_load` silently accepts:

- a key written twice in one mapping (YAML requires unique keys; PyYAML keeps the last one);
- aliases that expand a small file into a huge structure (a "billion laughs": nine nested aliases
  of nine make 387 million values), or that refer to the node containing them;
- nesting deeper than `MAX_DEPTH` levels.

JSON configs are read with `json` and refuse duplicate keys the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar, get_args

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from crsim.core.errors import ConfigError, did_you_mean

M = TypeVar("M", bound=BaseModel)

#: Most nodes (keys, values, list entries) a YAML text may stand for, an alias counting as the whole
#: structure it refers to at every use. The largest shipped file has under 300.
MAX_NODES = 100_000
#: Deepest nesting of mappings and lists (aliases followed); shipped files nest at most 7 levels.
MAX_DEPTH = 64

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlRefused(yaml.YAMLError):
    """Well-formed YAML that crsim refuses: a duplicate key, too large an expansion, too deep."""


class _BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses duplicate keys and bounds nesting and alias expansion."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
                raise YamlRefused(f"nested deeper than {MAX_DEPTH} levels (line {line})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Node | None:
        node = super().get_single_node()
        if node is not None:
            _expanded_size(node, 1, {}, set())
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            _refuse_duplicate_keys(self, node)
        return super().construct_mapping(node, deep=deep)


def _refuse_duplicate_keys(loader: _BoundedLoader, node: MappingNode) -> None:
    """Raise on the second occurrence of a scalar key among the keys written in this mapping.

    Keys brought in by a merge (`<<: *base`) may be overridden, as YAML intends, so they are skipped.
    """
    first_line: dict[Any, int] = {}
    for key_node, _value in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node)
        mark = key_node.start_mark
        line = mark.line + 1
        if key in first_line:
            where = f"line {line}, column {mark.column + 1}"
            raise YamlRefused(f"duplicate key {key!r} at {where} (first at line {first_line[key]})")
        first_line[key] = line


def _expanded_size(
    node: Node, depth: int, seen: dict[int, tuple[int, int]], open_nodes: set[int]
) -> tuple[int, int]:
    """(nodes, levels) `node` stands for with every alias expanded, `node` sitting at level `depth`;
    raises past `MAX_NODES` or `MAX_DEPTH`.

    An alias is the very node object of its anchor, so results are memoised by identity: the count
    takes time linear in the written file even when the expansion is astronomically large.
    """
    if isinstance(node, ScalarNode):
        return 1, 0
    line = node.start_mark.line + 1
    size, height = seen.get(id(node), (0, 0))
    if id(node) in open_nodes:
        raise YamlRefused(f"an alias refers to a structure that contains it (line {line})")
    if depth + max(height, 1) - 1 > MAX_DEPTH:
        raise YamlRefused(f"nested deeper than {MAX_DEPTH} levels once aliases are expanded (line {line})")
    if size:
        return size, height
    open_nodes.add(id(node))
    children: list[Node] = (
        list(node.value) if isinstance(node, SequenceNode) else [n for pair in node.value for n in pair]
    )
    size = 1
    for child in children:
        child_size, child_height = _expanded_size(child, depth + 1, seen, open_nodes)
        size, height = size + child_size, max(height, child_height + 1)
        if size > MAX_NODES:
            raise YamlRefused(
                f"expands to more than {MAX_NODES} values once aliases are expanded (line {line}); "
                "write the values out or use fewer aliases"
            )
    open_nodes.discard(id(node))
    seen[id(node)] = (size, max(height, 1))
    return size, max(height, 1)


def load_yaml(text: str) -> Any:
    """`yaml.safe_load(text)` with duplicate keys, huge alias expansions and deep nesting refused.

    Raises `yaml.YAMLError` (`YamlRefused` for the refusals); `describe_yaml_error` words it.
    """
    return yaml.load(text, Loader=_BoundedLoader)


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Key path -> 1-based line of every mapping key and list entry of a YAML text (empty if it does not
    parse), so errors about a field of a file can name its line."""
    lines: dict[tuple[str, ...], int] = {}

    def walk(node: Node, prefix: tuple[str, ...]) -> None:
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key, ScalarNode):
                    lines[(*prefix, str(key.value))] = key.start_mark.line + 1
                    walk(value, (*prefix, str(key.value)))
        elif isinstance(node, SequenceNode):
            for i, value in enumerate(node.value):
                lines[(*prefix, str(i))] = value.start_mark.line + 1
                walk(value, (*prefix, str(i)))

    try:
        root = yaml.compose(text, Loader=_BoundedLoader)
    except yaml.YAMLError:
        return lines
    if root is not None:
        walk(root, ())
    return lines


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """One line for a YAML problem: what it is and where ("not valid YAML (...) at line 3, column 5")."""
    if isinstance(exc, YamlRefused):
        return str(exc)
    if isinstance(exc, yaml.MarkedYAMLError) and (exc.problem or exc.context):
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"not valid YAML ({exc.problem or exc.context}{where})"
    lines = str(exc).splitlines()
    return f"not valid YAML ({lines[0] if lines else type(exc).__name__})"


class _DuplicateJsonKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateJsonKey(key)
        result[key] = value
    return result


def load_json(text: str) -> Any:
    """`json.loads(text)` refusing duplicate keys and nesting deeper than `MAX_DEPTH`.

    Raises `ValueError` with a one-line message (the key, and its line where it can be found).
    """
    try:
        loaded = json.loads(text, object_pairs_hook=_unique_pairs)
    except _DuplicateJsonKey as exc:
        raise ValueError(_locate_duplicate(text, exc.key)) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if _depth(loaded) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return loaded


def _locate_duplicate(text: str, key: str) -> str:
    """The duplicate-key message, with the line when the YAML reader (JSON is YAML) can place it."""
    try:
        load_yaml(text)
    except YamlRefused as exc:
        if "duplicate key" in str(exc):
            return str(exc)
    except yaml.YAMLError:
        pass
    return f"duplicate key {key!r}"


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value, iteratively (a JSON text nests at most as deep as it is long)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, dict | list):
            deepest = max(deepest, level)
            children = current.values() if isinstance(current, dict) else current
            stack.extend((child, level + 1) for child in children)
    return deepest


def read_yaml_mapping(path: Path, expected: str) -> dict[str, Any]:
    """The top-level mapping of a YAML (or JSON, by suffix) file; an empty file is an empty mapping.

    `expected` says what the file should be ("an experiment config"), for the error messages.
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; expected {expected}")
    if not path.is_file():
        raise ConfigError(f"{path}: file not found; expected {expected}")
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: not readable as YAML/JSON ({str(exc).splitlines()[0]})") from None
    if path.suffix.lower() == ".json":
        try:
            loaded = load_json(text) if text.strip() else None
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    else:
        try:
            loaded = load_yaml(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: {describe_yaml_error(exc)}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level ({expected})")
    return loaded


def validate_located(model: type[M], data: Any, where: str, prefix: tuple[str, ...] = ()) -> M:
    """`model.model_validate(data)`; the first problem becomes "where: field 'a.b': message"."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in (*prefix, *err["loc"])) or "(top level)"
        raise ConfigError(f"{where}: field '{field}': {err['msg']}{typo_hint(model, err)}") from None


def typo_hint(model: type[BaseModel], error: Any) -> str:
    """For an unknown field, ` (did you mean 'x'?)` naming the closest field the model has at that place."""
    if error.get("type") != "extra_forbidden" or not error.get("loc"):
        return ""
    fields = _fields_at(model, tuple(error["loc"][:-1]))
    return did_you_mean(str(error["loc"][-1]), fields) if fields else ""


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the (nested) model found by following `loc` (list indices and dict keys skipped)."""
    current: Any = model
    for part in loc:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        if isinstance(part, int) or part not in current.model_fields:
            continue
        current = _model_in(current.model_fields[part].annotation)
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds: itself, or inside list[...] / X | None / dict[str, ...]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
