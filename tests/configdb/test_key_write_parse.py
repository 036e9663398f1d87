"""A key write remembers the parse of the file it wrote (documents.encode, `edited`): that parse
must be exactly what parsing the stored bytes gives, key order and types included, for every
kind of key batch, over Fuel's real astute.yaml files; comments and order survive as before."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from gitstore import yamlio
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

FUEL = Path(__file__).resolve().parents[1] / "data" / "fuel" / "astute"
AUTHOR = Author("test", "test@example.com")
PATH = "nodes/1/values/astute.yaml"
LEVEL = [("nodes", "1")]


def fuel_files() -> list[Path]:
    return sorted(FUEL.glob("*.yaml"))


def stored_and_fresh(store) -> tuple[str, str]:
    """(the parse a reader gets now, a fresh parse of the stored bytes), both as JSON text:
    JSON keeps key order and tells 1, 1.0, true and "1" apart."""
    snapshot = store.environment_repo(1).snapshot()
    cached = snapshot.read_yaml(PATH)
    fresh = yamlio.load(snapshot.read(PATH))
    return json.dumps(cached), json.dumps(fresh)


def batches(document: dict, rng: random.Random) -> list[tuple[str, list]]:
    """Key batches of every kind on `document`: nested and top-level, new and existing keys,
    scalars of each type, lists, mappings, deletions."""
    mappings = [k for k, v in document.items() if isinstance(v, dict) and v]
    scalars = [k for k, v in document.items() if not isinstance(v, dict | list)]
    nested = rng.choice(mappings)
    inner = rng.choice(list(document[nested]))
    return [
        ("set", [["bench_new_key", 1]]),
        ("set", [[nested, inner, "changed"]]),
        ("set", [[nested, "added", {"b": [1, 2.5, True, None, "yes", "1.0", "x: y"]}]]),
        ("set", [[rng.choice(scalars), 3.0]]),
        ("set", [["a_list", ["on", "off", "0o17", "2024-01-01", ""]], ["n", {"z": 1, "a": 2}]]),
        ("delete", [[nested, inner]]),
        ("set", [[rng.choice(mappings), "deep", "er", {"k": "v"}]]),
        ("set", [["bench_new_key", "x"], ["a_list", 1, "replaced"]]),
        ("delete", [["bench_new_key"]]),
    ]


@pytest.mark.parametrize("source", fuel_files(), ids=lambda path: path.stem)
def test_a_key_write_remembers_exactly_the_parse_of_its_bytes(fuel_store, source):
    document = yaml.safe_load(source.read_text())
    fuel_store.config.put(1, LEVEL, "astute", "values", document, AUTHOR)
    # A spliced key write remembers a parse only when it knows the old one (it parses nothing).
    fuel_store.environment_repo(1).snapshot().read_yaml(PATH)
    rng = random.Random(source.stem)
    for op, paths in batches(document, rng):
        fuel_store.config.update_keys(1, LEVEL, "astute", "values", op, paths, AUTHOR)
        blob = str(fuel_store.environment_repo(1).snapshot().object_id(PATH))
        remembered = fuel_store.caches.parsed_blobs.get(blob)
        assert remembered is not None, "the write did not remember its parse"
        cached, fresh = stored_and_fresh(fuel_store)
        assert cached == fresh, (op, paths)


def test_a_file_with_comments_keeps_them_and_reads_back_the_same(fuel_store):
    text = (
        "# deployment facts\n"
        "uid: '1'\n"
        "nova:  # the compute service\n"
        "  user: nova\n"
        "  workers: 4\n"
        "zeta: last\n"
    )

    def seed(snapshot):
        changes = ChangeSet("facts with comments")
        changes.put(PATH, text.encode())
        return changes

    fuel_store.environment_repo(1).update(seed, AUTHOR)
    fuel_store.config.update_keys(1, LEVEL, "astute", "values", "set", [["nova", "workers", 8]])
    stored = fuel_store.environment_repo(1).snapshot().read(PATH).decode()
    assert "# deployment facts" in stored and "# the compute service" in stored
    assert [line.split(":")[0] for line in stored.splitlines() if line[:1].isalpha()] == [
        "uid",
        "nova",
        "zeta",
    ]
    cached, fresh = stored_and_fresh(fuel_store)
    assert cached == fresh and json.loads(cached)["nova"]["workers"] == 8
