"""Data-level differences between two documents, named by dotted key paths (`a.b.c`).

Pure functions. Mappings are compared key by key; any other value (a list, a scalar) is compared
whole, the same granularity at which effective values merge (lists are replaced, not merged). A key
present on one side only is reported with its whole value, not leaf by leaf.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: The three sections of a document diff.
SECTIONS = ("added", "removed", "changed")


def dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(segment) for segment in path)


def diff_documents(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any]:
    """`{"added": {k: v}, "removed": {k: v}, "changed": {k: {"old", "new"}}}`, or `{}` if equal."""
    return sections(differences(old, new))


#: One difference as `differences` yields it: (section, key path, old value, new value).
Difference = tuple[str, tuple[Any, ...], Any, Any]


def differences(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[Difference]:
    """Every difference of two documents by key path, in the order `diff_documents` lists them."""
    return list(_walk(old or {}, new or {}, ()))


def sections(found: list[Difference]) -> dict[str, Any]:
    """`differences` as `diff_documents` answers them (dotted keys), or `{}` when none."""
    result: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    for section, path, before, after in found:
        key = dotted(path)
        if section == "added":
            result["added"][key] = after
        elif section == "removed":
            result["removed"][key] = before
        else:
            result["changed"][key] = {"old": before, "new": after}
    return result if found else {}


def changed_keys(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any]:
    """`{"keys_added": [...], "keys_removed": [...], "keys_changed": [...]}` as dotted paths."""
    found: dict[str, list[str]] = {f"keys_{section}": [] for section in SECTIONS}
    for section, path, _, _ in _walk(old or {}, new or {}, ()):
        found[f"keys_{section}"].append(dotted(path))
    return found


def _walk(
    old: Mapping[str, Any], new: Mapping[str, Any], prefix: tuple[Any, ...]
) -> Iterator[tuple[str, tuple[Any, ...], Any, Any]]:
    for key in old:
        if key not in new:
            yield "removed", (*prefix, key), old[key], None
    for key, after in new.items():
        path = (*prefix, key)
        if key not in old:
            yield "added", path, None, after
            continue
        before = old[key]
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            yield from _walk(before, after, path)
        elif not same_value(before, after):
            yield "changed", path, before, after


def same_value(a: Any, b: Any) -> bool:
    """Equal and of the same kind: `1`, `1.0` and `true` are different configuration values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def leaf_paths(
    document: Mapping[str, Any], prefix: tuple[Any, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """Every key path that ends at a non-mapping value or an empty mapping, in document order."""
    for key, value in document.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and value:
            yield from leaf_paths(value, path)
        else:
            yield path


def related(key: str, other: str) -> bool:
    """Whether two dotted paths name the same value or one contains the other."""
    return key == other or other.startswith(key + ".") or key.startswith(other + ".")
