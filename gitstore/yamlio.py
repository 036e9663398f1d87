"""The one module that reads and writes YAML.

Reads of plain block-style text (a node's facts as Fuel writes them) go through a line reader
(`yamlblock`, the same values, tests/test_yamlblock.py); any other text goes to PyYAML's C safe
loader (results are cached by blob id upstream), with its YAML 1.1 resolution and construction
done in fewer Python calls for a document without aliases (`_QuickLoader`: the same values and
errors, tests/test_yamlio_quick.py). Writes that
change an existing file keep its comments and key order (`rewrite`): unchanged entries keep their
text, and a file with comments goes through ruamel.yaml round-trip.

Every read refuses a document whose aliases would expand it by more than `MAX_ALIAS_NODES`
nodes, or that refers to itself: a few hundred bytes of nested anchors otherwise become
hundreds of megabytes in every answer, dump and merge that walks them (docs/security.md).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import SingleQuotedScalarString
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from gitstore import yamlblock
from gitstore.errors import InvalidInput

if TYPE_CHECKING:  # the C classes share the pure ones' interface
    _BaseLoader = yaml.SafeLoader
    _BaseDumper = yaml.SafeDumper
else:  # libyaml's C classes when PyYAML was built with it
    _BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    _BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _FastLoader(_BaseLoader):
    """PyYAML's C safe loader, where a scalar Python cannot build (`2024-02-30`, an integer of
    5,000 digits) is a YAML error at its line, not a ValueError that no caller expects."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except ValueError as exc:
            kind = node.tag.rpartition(":")[2]
            text = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            problem = f"the {kind} {text!r} cannot be built: {exc}"
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from exc


class _Dumper(_BaseDumper):
    """The fast safe dumper, without `&id001` anchors: a list shared by two keys (a graph task's
    `role` and `roles`) is written out twice, as a person would write it."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


#: How many nodes aliases may add to one document when expanded. Sharing a list or a mapping
#: between a few keys (graph tasks, `<<: *defaults`) stays far below; an alias bomb is far above.
MAX_ALIAS_NODES = 10_000
#: How deeply a document may nest (a leaf at depth 64 under the document): the bound of a REST
#: body (`limits.MAX_DEPTH` is this one), so a pushed file holds nothing a REST write could
#: not; the recursive readers and writers of a document (masking, merging, the console) ran
#: out of stack at ~700 levels.
MAX_DEPTH = 64


class _Loader(_FastLoader):
    """The fast safe loader, refusing alias bombs before anything is built from them."""

    def construct_document(self, node: yaml.Node) -> Any:
        check_aliases(node)
        return super().construct_document(node)


def check_aliases(root: Any, limit: int = MAX_ALIAS_NODES) -> None:
    """Raise a YAML error unless the composed `root` expands to at most `limit` extra nodes
    and nests at most `MAX_DEPTH` levels deep once written out.

    An alias is the node of its anchor met a second time, so the composed graph is walked once
    (iteratively: depth costs no stack) counting, per container, what its repeated children
    would add when written out, and how tall it is (an anchor's height goes wherever its
    aliases are). The error points at the container holding the alias, or at the container
    that is too tall.
    """
    if root is None:
        return
    state: dict[int, int] = {}  # node id -> its expanded size; -1 while on the path
    heights: dict[int, int] = {}
    used: set[int] = set()
    added = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            total, height = 1, 1
            for child in _children(node):
                size = state[id(child)]
                total += size
                height = max(height, heights[id(child)] + 1)
                if id(child) in used:
                    added += size
                    if added > limit:
                        raise _alias_error(node, f"aliases expand it by more than {limit} nodes")
                used.add(id(child))
            if height > MAX_DEPTH:
                raise _too_deep(node)
            state[key] = total
            heights[key] = height
        elif state.get(key) == -1:
            raise _alias_error(node, "an alias refers to a node that contains it")
        elif key not in state:
            state[key] = -1
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(_children(node)))


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        children: list[Any] = node.value
        return children
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
#: Scalar tags whose SafeConstructor functions build the value from the node alone.
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null", "timestamp")
)


class _Unusual(Exception):
    """A node the quick construction leaves to PyYAML's own (merge keys, other tags)."""


class _QuickLoader(_FastLoader):
    """The fast safe loader with PyYAML's YAML 1.1 resolution and construction done with
    fewer Python calls, for documents without aliases (`load` picks it when there is no `*`).

    The C parser calls `resolve` for every node: here a plain scalar's text is matched only
    against the implicit resolvers of its first character (PyYAML's own table and order), a
    short text's tag is kept, and any other scalar is a string. Construction builds dicts,
    lists, strings and the five plain scalar types directly, calling the SafeConstructor's
    own functions for the scalars; anything else (`<<` merge keys, `=`, explicit tags, keys
    that are not scalars) and any error gives the document to PyYAML's constructor, which
    builds it or raises exactly what it raised before (docs/performance.md, cold lookups).
    """

    def resolve(  # noqa: D102 - PyYAML's hook
        self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]
    ) -> str:
        if kind is not ScalarNode:
            # PyYAML's stub leaves `resolve` untyped
            tag: str = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
            return tag
        return yamlblock.plain_tag(value) if implicit[0] else _STR_TAG

    def construct_document(self, node: yaml.Node) -> Any:
        try:
            return self._quick(node, 1)
        except _TooDeep as exc:
            raise _too_deep(exc.node) from None
        except Exception:  # noqa: BLE001 - PyYAML's constructor decides, and raises its own error
            # `_quick` keeps no state, so PyYAML starts afresh: a document with two faults
            # (a bad date, an unknown tag) fails on the one PyYAML meets first, as before.
            check_aliases(node)  # its recursion would fail on a document that is too deep
            return super().construct_document(node)

    def _quick(self, node: yaml.Node, depth: int) -> Any:
        kind, tag = type(node), node.tag
        if kind is ScalarNode:
            if tag == _STR_TAG:
                return node.value
            if tag in _SCALAR_TAGS:
                return self.yaml_constructors[tag](self, node)
            raise _Unusual
        if depth >= MAX_DEPTH:
            raise _TooDeep(node)  # its children lie deeper than a document may nest
        if kind is MappingNode and tag == _MAP_TAG:
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if type(key_node) is not ScalarNode or key_node.tag not in _KEY_TAGS:
                    raise _Unusual  # merge and value keys, unhashable keys: PyYAML's way
                result[self._quick(key_node, depth + 1)] = self._quick(value_node, depth + 1)
            return result
        if kind is SequenceNode and tag == _SEQ_TAG:
            return [self._quick(child, depth + 1) for child in node.value]
        raise _Unusual


#: Key tags built here: strings and the plain scalars (a `<<` or `=` key has a tag of its own).
_KEY_TAGS = _SCALAR_TAGS | {_STR_TAG}
if None in _FastLoader.yaml_implicit_resolvers or _FastLoader.yaml_path_resolvers:
    # `resolve` reads neither wildcard nor path resolvers: with any, PyYAML's own resolution.
    _QuickLoader = _FastLoader  # type: ignore[assignment, misc]  # noqa: F811 - the fallback


class _Refused(yaml.constructor.ConstructorError):
    """A document that parses but is refused (an alias bomb)."""


def _alias_error(node: Any, problem: str) -> yaml.YAMLError:
    return _Refused(None, None, f"{problem} (see docs/security.md)", node.start_mark)


def _too_deep(node: Any) -> yaml.YAMLError:
    return _alias_error(node, f"it nests deeper than {MAX_DEPTH} levels")


class _TooDeep(Exception):
    """The quick construction went past `MAX_DEPTH` at `node`."""

    def __init__(self, node: Any) -> None:
        super().__init__()
        self.node = node


def _describe(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    verdict = "is refused" if isinstance(exc, _Refused) else "does not parse"
    return f"YAML {verdict}: {problem}"


_UNPARSED = object()


def _has_alias(data: bytes | str) -> bool:
    """Whether `data` has a `*`: without one there is no alias to expand."""
    return "*" in data if isinstance(data, str) else b"*" in data


def _round_trip() -> YAML:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=2, sequence=4, offset=2)
    return rt


def load(data: bytes | str, *, path: str = "<document>", strict: bool = False) -> Any:
    """Parse one YAML document; a syntax error becomes InvalidInput naming `path` and the line.

    `strict` also refuses a key repeated in one mapping, as the push gate does (`load_strict`):
    for input a person wrote, where YAML would otherwise keep the last value without a word.
    """
    if strict:
        block = _unrepeated_block(data)
        return _parsed(data, _StrictLoader, path) if block is _UNPARSED else block
    try:
        return yamlblock.read(data if isinstance(data, str) else data.decode())
    except (yamlblock.NotPlainBlock, UnicodeDecodeError):
        pass  # PyYAML reads it, or names what is wrong with it
    # Without a `*` there is no alias to expand, so nothing for `check_aliases` to find: its
    # walk of every node is a large share of parsing a facts file.
    loader = _Loader if _has_alias(data) else _QuickLoader
    return _parsed(data, loader, path)


#: A line that yamlblock reads as one mapping key: `key:` or `- key:` (`yamlblock._PLAIN_KEY`).
_KEY_LINE = re.compile(
    r"^ *(?:- +)?(?!---)(?:[A-Za-z0-9_./=+]|-[A-Za-z0-9_./=+-])[A-Za-z0-9_./=+-]*:(?: |$)",
    re.MULTILINE,
)


def _unrepeated_block(data: bytes | str) -> Any:
    """`data` read by the line reader when it certainly repeats no key, else `_UNPARSED`.

    In the text the line reader accepts, every mapping key starts a line of its own, so a
    document holding as many keys as the text has key lines repeats none; any other count (a
    repeated key, or a line that only looks like a key) goes to the strict PyYAML loader, which
    decides and names the line. The push gate reads every pushed file strictly, and PyYAML's
    Python constructor was most of a large push's gate time (docs/performance.md, "Scale").
    """
    try:
        text = data if isinstance(data, str) else data.decode()
        document = yamlblock.read(text)
    except (yamlblock.NotPlainBlock, UnicodeDecodeError):
        return _UNPARSED
    if len(_KEY_LINE.findall(text)) != _key_count(document):
        return _UNPARSED
    return document


def _key_count(document: Any) -> int:
    count = 0
    stack = [document]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            count += len(item)
            stack.extend(value for value in item.values() if type(value) in (dict, list))
        elif type(item) is list:
            stack.extend(value for value in item if type(value) in (dict, list))
    return count


def _parsed(data: bytes | str, loader: type, path: str) -> Any:
    try:
        return yaml.load(data, Loader=loader)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}:{_at_line(exc)} {_describe(exc)}", path=path) from exc


def _at_line(exc: yaml.YAMLError) -> str:
    """` line N` where the parser stopped, or nothing when it does not say."""
    mark = getattr(exc, "problem_mark", None)
    return f" line {mark.line + 1}" if mark is not None else ""


def load_mapping(data: bytes | str, *, path: str, strict: bool = False) -> dict[str, Any]:
    """Parse a document that must be a mapping (an empty file is `{}`); `strict` as `load`."""
    doc = load(data, path=path, strict=strict)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        kind = type(doc).__name__
        raise InvalidInput(f"{path}: document must be a mapping, not {kind}", path=path)
    return doc


class _StrictLoader(_Loader):
    """The fast loader, refusing a key repeated in one mapping (YAML would keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges are resolved by the base constructor
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable keys are refused by the base constructor
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is repeated in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_strict(data: bytes | str, *, path: str) -> Any:
    """Parse for validation: as `load`, also refusing repeated keys.

    A failure is InvalidInput whose `errors` holds one `{file, line?, message}` problem.
    """
    block = _unrepeated_block(data)
    if block is not _UNPARSED:
        return block
    try:
        return yaml.load(data, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        found: dict[str, Any] = {"file": path}
        if mark is not None:
            found["line"] = mark.line + 1
        found["message"] = _describe(exc)
        where = f" line {found['line']}" if "line" in found else ""
        raise InvalidInput(f"{path}:{where} {found['message']}", path=path, errors=[found]) from exc


@dataclass(frozen=True)
class RepeatedKey:
    """A key written twice in one mapping of a facts file: YAML keeps the value at `line`."""

    path: tuple[str, ...]
    first_line: int
    line: int

    def describe(self, file: str) -> str:
        dotted = ".".join(self.path)
        return (
            f"{file}: key {dotted} is repeated (lines {self.first_line} and {self.line}); "
            f"the value of line {self.line} is kept"
        )


def load_facts(data: bytes | str, *, path: str) -> tuple[Any, list[RepeatedKey]]:
    """Parse a machine-written facts file as its producers read it: a key repeated in one
    mapping keeps its last value (PyYAML, Ruby Psych), and each repetition is reported.

    Fuel 9.x writes `network_scheme.roles` with repeated keys; such a file must upload, while
    documents people author stay strict (`load(strict=True)`).
    """
    block = _unrepeated_block(data)
    if block is not _UNPARSED:
        return block, []  # as many keys as key lines: none repeats, no need to look
    document = load(data, path=path)
    return document, repeated_keys(data)


def repeated_keys(data: bytes | str) -> list[RepeatedKey]:
    """Every key repeated in one mapping of `data`, in file order (none if it does not parse)."""
    try:
        root = yaml.compose(data, Loader=_Loader)
        if _has_alias(data):
            check_aliases(root)  # an alias bomb; without a `*` there is no alias to expand
    except yaml.YAMLError:
        return []
    found: list[RepeatedKey] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    seen_nodes: set[int] = set()
    while stack:
        node, prefix = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, (*prefix, str(i))) for i, child in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            _mapping_repeats(node, prefix, found, stack)
    return sorted(found, key=lambda repeat: repeat.line)


def _mapping_repeats(
    node: Any, prefix: tuple[str, ...], found: list[Any], stack: list[Any]
) -> None:
    lines: dict[Any, int] = {}
    for key_node, value_node in node.value:
        stack.append((value_node, (*prefix, str(getattr(key_node, "value", "?")))))
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        key = _key_identity(key_node)
        line = key_node.start_mark.line + 1
        if key in lines:
            found.append(RepeatedKey((*prefix, key_node.value), lines[key], line))
        lines[key] = line


_MERGE_TAG = "tag:yaml.org,2002:merge"
_KEY_BUILDER = yaml.constructor.SafeConstructor()


def _key_identity(node: Any) -> Any:
    """The key a scalar node builds (`1` and `01` are one key, as the loader makes them)."""
    if node.tag == _STR_TAG:
        return node.value
    try:
        return (node.tag, _KEY_BUILDER.construct_object(node))
    except (yaml.YAMLError, ValueError):
        return (node.tag, node.value)


def load_all_first(data: bytes | str, *, path: str = "<stdin>") -> tuple[Any, int]:
    """The first document of a stream and how many documents there were (the CLI's stdin).

    Strict as `load(strict=True)`: every document is read, so a repeated key is refused in any.
    """
    try:
        docs = list(yaml.load_all(data, Loader=_StrictLoader))
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}:{_at_line(exc)} {_describe(exc)}", path=path) from exc
    return (docs[0] if docs else None), len(docs)


def key_lines(data: bytes | str) -> dict[tuple[str, ...], int]:
    """The 1-based line of every mapping key, by key path (keys as strings; lists not entered).

    Used to point at the line that set a value; a file that does not parse has no lines.
    """
    try:
        root = yaml.compose(data, Loader=_Loader)
        check_aliases(root)  # the walk below would expand an alias bomb
    except yaml.YAMLError:
        return {}
    lines: dict[tuple[str, ...], int] = {}
    _collect_lines(root, (), lines)
    return lines


def _collect_lines(node: Any, prefix: tuple[str, ...], lines: dict[tuple[str, ...], int]) -> None:
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        path = (*prefix, key_node.value)
        lines[path] = key_node.start_mark.line + 1  # a repeated key: the last one wins
        _collect_lines(value_node, path, lines)


def dump(data: Any) -> bytes:
    """Serialize a plain document for a new file (key order kept, block style)."""
    text = yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    return text.encode("utf-8")


def load_round_trip(data: bytes | str) -> Any:
    """Parse keeping comments and order, for an edit that will be dumped again."""
    return _round_trip().load(data)


def dump_round_trip(doc: Any) -> bytes:
    out = io.StringIO()
    _round_trip().dump(doc, out)
    return out.getvalue().encode("utf-8")


def update_in_place(old: Any, new: Any) -> Any:
    """Make round-trip document `old` equal to plain `new`, keeping comments of kept keys.

    Mappings are edited key by key (removed keys dropped, existing keys keep their place, new
    keys appended); anything else is replaced by `new`.
    """
    if isinstance(old, CommentedMap) and isinstance(new, dict):
        for key in [k for k in old if k not in new]:
            del old[key]
        for key, value in new.items():
            if key in old:
                old[key] = update_in_place(old[key], value)
            else:
                old[_read_back_safe(key)] = _read_back_safe(value)
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list) and len(old) == len(new):
        for index, value in enumerate(new):
            old[index] = update_in_place(old[index], value)
        return old
    if _same_scalar(old, new):
        return old  # keeps the quoting and number format the file's author chose
    return _read_back_safe(new)


def _read_back_safe(value: Any) -> Any:
    """`value` with every string that PyYAML would read as something else marked for quotes.

    ruamel.yaml writes YAML 1.2, where `yes`, `on` or `0777` are plain strings; PyYAML, which
    reads every stored file, resolves YAML 1.1 and would turn them into booleans and numbers.
    """
    if isinstance(value, dict):
        return {_read_back_safe(k): _read_back_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_read_back_safe(item) for item in value]
    if isinstance(value, str) and not plain_reads_as_string(value):
        return SingleQuotedScalarString(value)
    return value


def plain_reads_as_string(text: str) -> bool:
    """Whether `text` written as a plain scalar reads back as that string under YAML 1.1
    (not `yes`, `1`, `null`, `0777`)."""
    return yamlblock.plain_tag(text) == _STR_TAG


def _same_scalar(old: Any, new: Any) -> bool:
    """`old` is a round-trip scalar (a str/int/float subclass) equal in value and kind to `new`."""
    if type(new) not in (str, int, float) or isinstance(old, bool | ScalarBoolean):
        return False
    return isinstance(old, type(new)) and old == new


def rewrite(old_bytes: bytes | None, new: dict[str, Any], *, parsed: Any = _UNPARSED) -> bytes:
    """Bytes of a file whose content becomes `new`, keeping what it can of `old_bytes`.

    `parsed`, when the caller already has it, is `load(old_bytes)` (read only here). A document
    that does not change keeps its bytes. A file without comments is spliced: top-level entries
    that keep their value keep their text, the others are dumped anew (a large document costs
    a dump of what changed, not a round trip of everything). A file with comments goes through
    ruamel.yaml round-trip, which keeps them.
    """
    return rewrite_reporting(old_bytes, new, parsed=parsed)[0]


def rewrite_reporting(
    old_bytes: bytes | None, new: dict[str, Any], *, parsed: Any = _UNPARSED
) -> tuple[bytes, bool]:
    """`rewrite`, and whether the bytes were written from `new` and the kept text of `parsed`
    alone (a new file, a splice or a dump), so that they read back as `new` in `new`'s own key
    order when `new` keeps the order of `parsed` (a key batch does). False for the round trip,
    which orders keys its own way, and for an unchanged document (its bytes are `old_bytes`).
    """
    if not old_bytes:
        return dump(new), True
    if parsed is _UNPARSED:
        try:
            parsed = load(old_bytes)
        except InvalidInput:
            return dump(new), True  # an unreadable old file is simply replaced
    if _same(parsed, new):
        return old_bytes, False  # byte for byte, and without the slow round-trip parse
    spliced = _splice(old_bytes, parsed, new)
    if spliced is not None:
        return spliced, True
    try:
        old = load_round_trip(old_bytes)
    except Exception:  # noqa: BLE001 - an unreadable old file is simply replaced
        return dump(new), True
    if not isinstance(old, CommentedMap):
        return dump(new), True
    kept = dump_round_trip(update_in_place(old, new))
    if not _reads_back_as(kept, new):
        return dump(_ordered_like(parsed, new)), False  # lose the comments, not the data
    return kept, False


def _ordered_like(old: Any, new: Any) -> Any:
    """`new` with the key order `update_in_place` would give: kept keys first, in old order."""
    if isinstance(old, dict) and isinstance(new, dict):
        ordered = {key: _ordered_like(old[key], new[key]) for key in old if key in new}
        ordered.update((key, value) for key, value in new.items() if key not in old)
        return ordered
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [_ordered_like(x, y) for x, y in zip(old, new, strict=True)]
    return new


def _reads_back_as(data: bytes, document: Any) -> bool:
    try:
        return _same(load(data), document)
    except InvalidInput:
        return False


def _splice(old_bytes: bytes, plain: Any, new: dict[str, Any]) -> bytes | None:
    """`new` written entry by entry over the text of `old_bytes`; None where that is unsafe.

    Unsafe: comments (only the round trip keeps them), anchors (a kept entry could name an
    anchor of a rewritten one), and any file whose lines do not split into exactly one chunk per
    top-level key.
    """
    if not new or not isinstance(plain, dict) or b"#" in old_bytes or b"&" in old_bytes:
        return None
    if not old_bytes.endswith(b"\n"):
        return None  # the last entry would run into the next one
    chunks = _top_level_chunks(old_bytes)
    if chunks is None or len(chunks) != len(plain):
        return None
    kept = dict(zip(plain, chunks, strict=True))
    out = [
        kept[key] if _same(value, new[key]) else dump({key: new[key]})
        for key, value in plain.items()
        if key in new
    ]
    out += [dump({key: value}) for key, value in new.items() if key not in plain]
    return b"".join(out)


def _top_level_chunks(data: bytes) -> list[bytes] | None:
    """The text of each top-level entry of a block mapping (`data` ends with a newline).

    Without comments, a line at column 0 that is neither blank nor a `- ` sequence item starts
    an entry: every top-level key does, so as many chunks as keys means each chunk is one key
    (a quoted scalar or a `---` that ran to column 0 would add a chunk and fail that count).
    """
    chunks: list[list[bytes]] = []
    for line in data.splitlines(keepends=True):
        if _starts_entry(line):
            chunks.append([line])
        elif chunks:
            chunks[-1].append(line)
        elif line.strip():
            return None  # indented text before the first key: not a plain block mapping
    return [b"".join(lines) for lines in chunks]


def _starts_entry(line: bytes) -> bool:
    first = line[:1]
    if first in (b"", b" ", b"\t", b"\r", b"\n"):
        return False
    return not (first == b"-" and line[1:2] in (b"", b" ", b"\t", b"\r", b"\n"))


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (`1 == True` and `1 == 1.0` must not count)."""
    return _same(a, b)


def _same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (`1 == True` and `1 == 1.0` must not count)."""
    if a is b:
        return True  # a subtree a key batch left alone is the old parse's own object
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
