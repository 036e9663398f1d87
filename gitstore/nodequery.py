"""A node list's filters and page: `?role=&tag=&status=&fqdn_contains=&limit=&marker=`.

Paging is OpenStack's (Ironic's node list): `limit` nodes after the node id `marker`, in id
order, so a page stays put while nodes are added or removed elsewhere in the list. Without
`limit` every matching node is answered, as Nailgun's node list did (its clients read one
list). A filter matches a node's fields as the list shows them: `role` one of `roles` or
`pending_roles`, `tag` one of `tags`, `status` equal, `fqdn_contains` a case-insensitive
substring of `fqdn`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitstore.errors import InvalidInput
from gitstore.names import is_number

#: The largest page (`limit`); a larger one is a 400 naming it.
MAX_LIMIT = 1000
#: The longest filter value accepted (an fqdn is at most 253 characters).
MAX_FILTER_CHARS = 255
#: The query arguments, in the order the docs list them.
ARGUMENTS = ("role", "tag", "status", "fqdn_contains", "limit", "marker")
_TEXT_FILTERS = ("role", "tag", "status", "fqdn_contains")


@dataclass(frozen=True)
class NodeQuery:
    """Filters (None: any) and a page (`limit` None: every node) over a list of nodes."""

    role: str | None = None
    tag: str | None = None
    status: str | None = None
    fqdn_contains: str | None = None
    limit: int | None = None
    marker: int | None = None

    @classmethod
    def parse(cls, args: Mapping[str, Any]) -> NodeQuery:
        """The query of request arguments; InvalidInput names a bad one."""
        texts = {name: _text(args, name) for name in _TEXT_FILTERS}
        return cls(**texts, limit=_limit(args.get("limit")), marker=_marker(args.get("marker")))

    @property
    def filtered(self) -> bool:
        return any(getattr(self, name) is not None for name in _TEXT_FILTERS)

    def matches(self, node: Mapping[str, Any]) -> bool:
        if self.role is not None and self.role not in _roles(node):
            return False
        if self.tag is not None and self.tag not in (node.get("tags") or ()):
            return False
        if self.status is not None and node.get("status") != self.status:
            return False
        if self.fqdn_contains is not None:
            return self.fqdn_contains.casefold() in str(node.get("fqdn") or "").casefold()
        return True

    def select(self, nodes: Iterable[Mapping[str, Any]]) -> Selection:
        """The matching nodes (in the order given, which must be id order for a marker), and
        the page of them after `marker`."""
        matching = [node for node in nodes if self.matches(node)]
        after = matching
        if self.marker is not None:
            marker = _order(self.marker)
            after = [node for node in matching if _order(node["id"]) > marker]
        page = after if self.limit is None else after[: self.limit]
        more = self.limit is not None and len(after) > self.limit
        return Selection(page, len(matching), str(page[-1]["id"]) if more else None)


@dataclass(frozen=True)
class Selection:
    """A page of nodes, how many match the filters in all, and the marker of the next page
    (None on the last)."""

    nodes: list[Any]
    total: int
    next_marker: str | None


def _order(node_id: Any) -> tuple[int, str]:
    """Ids in numeric order: an inventory's are numbers, a level value's digits (no leading
    zeros), so length first, then the text."""
    text = str(node_id)
    return len(text), text


def _roles(node: Mapping[str, Any]) -> list[Any]:
    return [*(node.get("roles") or ()), *(node.get("pending_roles") or ())]


def _text(args: Mapping[str, Any], name: str) -> str | None:
    value: str | None = args.get(name)
    if value is None or value == "":
        return None
    if len(value) > MAX_FILTER_CHARS:
        raise InvalidInput(f"{name} is longer than {MAX_FILTER_CHARS} characters", key=name)
    return value


def _limit(raw: Any) -> int | None:
    if raw is None:
        return None
    text = str(raw).strip()
    if not is_number(text) or int(text) < 1:
        raise InvalidInput(f"limit {raw!r} must be a whole number from 1", key="limit")
    if int(text) > MAX_LIMIT:
        raise InvalidInput(f"limit {text} is over the maximum page of {MAX_LIMIT}", key="limit")
    return int(text)


def _marker(raw: Any) -> int | None:
    if raw is None:
        return None
    text = str(raw).strip()
    if not is_number(text) or len(text) > 19:
        raise InvalidInput(f"marker {raw!r} must be a node id", key="marker")
    return int(text)
