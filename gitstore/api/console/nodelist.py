"""The environment page's node list: a page of the roster's rows (fqdn, roles, status), filtered
as REST's node list filters (`?fqdn_contains=&role=&status=`), numbered pages (`?page=`,
`?per_page=` up to MAX_PER_PAGE). The rows come from `store.roster`, computed once per commit."""

from __future__ import annotations

from dataclasses import dataclass

from flask import request

from gitstore.errors import InvalidInput
from gitstore.names import is_number
from gitstore.nodequery import NodeQuery

PER_PAGE = 50
MAX_PER_PAGE = 500
#: The filters the page offers (REST's names).
FILTERS = ("fqdn_contains", "role", "status")


@dataclass(frozen=True)
class NodePage:
    """One page of the node list, and what its form and pager show."""

    rows: list
    number: int
    pages: int
    per_page: int
    total: int  # rows matching the filters
    known: int  # rows of the environment
    roles: list  # every role of the environment's rows, for the filter's choices
    statuses: list
    filters: dict

    @property
    def first(self) -> int:
        """The position of the page's first row (1-based), 0 when there is none."""
        return (self.number - 1) * self.per_page + 1 if self.rows else 0


def node_page(rows: list[dict]) -> NodePage:
    """The page of `rows` that the request's arguments ask for."""
    filters = {name: request.args.get(name, "").strip() for name in FILTERS}
    query = NodeQuery.parse({name: value for name, value in filters.items() if value})
    per_page = _number("per_page", PER_PAGE, MAX_PER_PAGE)
    number = _number("page", 1, None)
    matching = query.select(rows).nodes
    start = (number - 1) * per_page
    return NodePage(
        rows=matching[start : start + per_page],
        number=number,
        pages=max(1, -(-len(matching) // per_page)),
        per_page=per_page,
        total=len(matching),
        known=len(rows),
        roles=sorted({role for row in rows for role in row["roles"]}),
        statuses=sorted({row["status"] for row in rows if row["status"]}),
        filters=filters,
    )


def _number(name: str, default: int, maximum: int | None) -> int:
    raw = request.args.get(name, "").strip()
    if not raw:
        return default
    if not is_number(raw) or int(raw) < 1:
        raise InvalidInput(f"{name} {raw!r} must be a whole number from 1", key=name)
    if maximum is not None and int(raw) > maximum:
        raise InvalidInput(f"{name} {raw} is over the maximum of {maximum}", key=name)
    return int(raw)
