"""Schema patterns run through `regex` with a budget judge exactly as jsonschema's `re` does."""

from __future__ import annotations

import time

import jsonschema
import pytest

from gitstore import schema_regex, schemas

SCHEMA = {
    "type": "object",
    "properties": {
        "host": {"type": "string", "pattern": "^[a-z0-9-]+(\\.[a-z0-9-]+)*$"},
        "port": {"pattern": "^\\d+$"},
        "word": {"pattern": "(?<!x)y\\b"},
        "strict": {
            "type": "object",
            "properties": {"known": {}},
            "additionalProperties": False,
        },
        "open": {"additionalProperties": {"type": "integer"}},
    },
    "patternProperties": {"^opt_[a-z]+$": {"type": "boolean"}, "^n\\d$": {"type": "integer"}},
    "additionalProperties": {"type": "string"},
}
DOCUMENTS = [
    {"host": "node-1.domain.tld", "port": "8080", "word": "a y"},
    {"host": "Node_1", "port": "eighty", "word": "xy"},
    {"host": "node\n", "port": "١٢", "opt_debug": "yes", "n1": "x", "other": 5},
    {"strict": {"known": 1, "extra": 2, "more": 3}, "open": {"a": "b"}, "opt_": 1},
    {"host": 7, "opt_x": True, "n12": 3},
]


def _messages(validator, document):
    return sorted((list(e.absolute_path), e.message) for e in validator.iter_errors(document))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_results_are_those_of_jsonschema(document):
    ours = schemas.validator(SCHEMA, "svc")
    theirs = jsonschema.Draft202012Validator(SCHEMA)
    assert _messages(ours, document) == _messages(theirs, document)


def test_pattern_properties_without_additional_keep_the_message_of_jsonschema():
    schema = {"patternProperties": {"^a": {}, "^b": {}}, "additionalProperties": False}
    ours, theirs = schemas.validator(schema, "svc"), jsonschema.Draft7Validator(schema)
    assert _messages(ours, {"c": 1, "d": 2}) == _messages(theirs, {"c": 1, "d": 2})


def test_the_budget_is_shared_by_the_document():
    budget = schema_regex.Budget(0.2)
    with pytest.raises(schema_regex.PatternError, match="took longer"):
        for _ in range(100):
            schema_regex.search("^(a|aa)+$", "a" * 30 + "!", budget)


def test_the_budget_reaches_the_patterns_of_nested_subschemas():
    slow = {"type": "string", "pattern": "^(a|aa)+$"}
    inner = {"type": "object", "properties": {f"k{n}": slow for n in range(50)}}
    schema = {"type": "object", "properties": {"inner": inner}}
    document = {"inner": {f"k{n}": "a" * 22 + "!" for n in range(50)}}
    started = time.monotonic()
    with pytest.raises(schema_regex.PatternError, match="took longer"):
        schema_regex.errors(schemas.validator(schema, "svc"), document, seconds=0.2)
    assert time.monotonic() - started < 2
