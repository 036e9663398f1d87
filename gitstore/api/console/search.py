"""`/ui/environments/<id>/search`: keys and values of an environment at a version.

What is searched is what REST serves: the effective values at global and at every node (the
Hiera node document), secrets already masked, so a search never finds a secret's text. Each
leaf (a dotted key of a resource) matches when its key or its value (as JSON) does.

A substring is matched ignoring case. A regular expression is bounded, because one can
backtrack for ever: at most `PATTERN_CHARS` characters, and all of its matching together at
most `REGEX_SECONDS` (the `regex` package's timeout); past either, or when it does not compile,
the answer is a 400 naming it. At most `MAX_HITS` results are listed and `MAX_KEYS` keys read;
the page says when a search stopped early.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import regex
from flask import g, render_template

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.console.shared import attached_resources, known_nodes, leaves
from gitstore.api.deadlines import deadline
from gitstore.api.http import app_store
from gitstore.configdb.values import Query
from gitstore.errors import InvalidInput
from gitstore.schema_regex import RECURSION as PATTERN_RECURSION
from gitstore.schema_regex import recursive as recursive_pattern

PATTERN_CHARS = 200
REGEX_SECONDS = 2.0
MAX_HITS = 500
#: Keys read at most (global and every node, each leaf once): a bound on a search's work.
MAX_KEYS = 500_000
MODES = ("substring", "regex")


#: Characters of a value shown on each side of its match (a hit shows an excerpt, not a
#: whole list of 1,000 nodes), and the longest value shown whole.
CONTEXT_CHARS = 40
WHOLE_CHARS = 120

#: Where a matcher found its text in a string, `(start, end)`; None: no match.
Span = tuple[int, int] | None


@dataclass(frozen=True)
class Hit:
    """One leaf that matched: where (`node` None for global), which resource and key, and its
    (masked) value; `excerpt` is the value as JSON around the match, `(before, match, after)`
    (the match empty when only the key matched)."""

    node: str | None
    resource: str
    key: str
    value: Any
    excerpt: tuple[str, str, str] = ("", "", "")


@bp.get("/environments/<int:env_id>/search")
def search(env_id: int):
    version, text, mode = pinned(), pinned("q"), pinned("mode") or "substring"
    if mode not in MODES:
        raise InvalidInput(f"search mode {mode!r} must be one of {', '.join(MODES)}", key="mode")
    hits, cut = (None, None) if text is None else _find(env_id, version, _matcher(text, mode))
    return render_template(
        "console/search.html",
        env_id=env_id,
        text=text,
        mode=mode,
        hits=hits,
        cut=cut,
        commit=app_store().environments.get(env_id, version).commit,
        version=version,
    )


def _find(
    env_id: int, version: str | None, find: Callable[[str], Span]
) -> tuple[list[Hit], str | None]:
    """The hits, and why the search stopped early (None when it read every key)."""
    hits: list[Hit] = []
    steps = deadline()
    for number, hit in enumerate(_leaves(env_id, version)):
        steps.check()
        if number >= MAX_KEYS:
            return hits, f"the search stopped after {MAX_KEYS} keys"
        text = json.dumps(hit.value, sort_keys=True)
        in_value = find(text)
        if in_value is None and find(hit.key) is None:
            continue
        if len(hits) == MAX_HITS:
            return hits, f"only the first {MAX_HITS} matches are listed"
        hits.append(replace(hit, excerpt=excerpt(text, in_value)))
    return hits, None


def excerpt(text: str, span: Span) -> tuple[str, str, str]:
    """`text` around `span` as (before, match, after), with an ellipsis where it is cut; a
    text without a span is shown from its start."""
    start, end = span or (0, 0)
    if len(text) <= WHOLE_CHARS:
        return text[:start], text[start:end], text[end:]
    if span is None:
        return text[:WHOLE_CHARS] + "…", "", ""
    left, right = max(start - CONTEXT_CHARS, 0), min(end + CONTEXT_CHARS, len(text))
    match = text[start:end]
    if len(match) > WHOLE_CHARS:
        match = match[:WHOLE_CHARS] + "…"
    before = ("…" if left else "") + text[left:start]
    return before, match, text[end:right] + ("…" if right < len(text) else "")


def _matcher(text: str, mode: str) -> Callable[[str], Span]:
    """Where a string holds the text; InvalidInput (400) for a pattern that is too long, does
    not compile, or takes longer than the time limit."""
    if mode == "substring":
        return _substring(text)
    if len(text) > PATTERN_CHARS:
        raise InvalidInput(
            f"regular expression is {len(text)} characters long; at most {PATTERN_CHARS}",
            key="q",
        )
    if recursive_pattern(text):
        raise InvalidInput(f"regular expression {text!r} {PATTERN_RECURSION}", key="q")
    try:
        pattern = regex.compile(text)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise InvalidInput(f"regular expression {text!r} is invalid: {exc}", key="q") from exc
    deadline = time.monotonic() + REGEX_SECONDS

    def matches(haystack: str) -> regex.Match[str] | None:
        try:
            return pattern.search(haystack, timeout=max(deadline - time.monotonic(), 0.001))
        except TimeoutError as exc:
            raise InvalidInput(
                f"regular expression {text!r} took longer than {REGEX_SECONDS:g} s to match; "
                "make it simpler (or search for a substring)",
                key="q",
            ) from exc

    def span(haystack: str) -> Span:
        found = matches(haystack)
        return None if found is None else found.span()

    return span


def _substring(text: str) -> Callable[[str], Span]:
    needle = text.casefold()

    def span(haystack: str) -> Span:
        folded = haystack.casefold()
        at = folded.find(needle)
        if at < 0:
            return None
        if len(folded) != len(haystack):  # folding changed lengths (ß): no exact place
            return 0, 0
        return at, at + len(needle)

    return span


def _leaves(env_id: int, version: str | None) -> Iterator[Hit]:
    """Every leaf of the effective values at global, then at each node (masked, as served)."""
    store = app_store()
    config = store.config
    for definition in attached_resources(env_id, version):
        name = definition["name"]
        query = Query(effective=True, version=version)
        document = config.read(env_id, [], name, "values", query).data
        for key, value in leaves(document):
            yield Hit(None, name, key, value)
    for node in known_nodes(env_id, version):
        document = store.hiera.node_document(env_id, node, version, who=g.get("user")).data
        for name, values in document["resources"].items():
            for key, value in leaves(values):
                yield Hit(str(document["node"]), name, key, value)
