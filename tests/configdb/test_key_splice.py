"""A one-key write splices the entry's text (documents.set_keys) instead of parsing the whole
document: through the real store, the stored document must be exactly the full path's edit,
every other line keeps its bytes, secrets are sealed at their place, the limits, plain-data
rules and schema still refuse, and text the scanner cannot be sure of takes the full path."""

from __future__ import annotations

import json

import pytest

from gitstore import keypaths, limits, yamlio
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.configdb.values import Query
from gitstore.errors import Conflict, InvalidInput, ValidationFailed
from gitstore.secrets import cipher

FUEL = __import__("fuel_data").ASTUTE
AUTHOR = Author("test", "test@example.com")
PATH = "nodes/1/values/astute.yaml"
LEVEL = [("nodes", "1")]


def seed(store, text: bytes) -> None:
    def put(snapshot):
        changes = ChangeSet("seed")
        changes.put(PATH, text)
        return changes

    store.environment_repo(1).update(put, AUTHOR)


def stored_sealed(store, source) -> bytes:
    """A Fuel file as a store holds it: written through the store, its passwords sealed."""
    store.config.put(1, LEVEL, "astute", "values", yamlio.load(source.read_bytes()), AUTHOR)
    return stored(store)


def stored(store) -> bytes:
    return store.environment_repo(1).snapshot().read(PATH)


def set_keys(store, *paths) -> None:
    store.config.update_keys(1, LEVEL, "astute", "values", "set", list(paths), AUTHOR)


def exact(value) -> str:
    return json.dumps(value)


@pytest.mark.parametrize("source", sorted(FUEL.glob("*.yaml")), ids=lambda path: path.stem)
def test_key_writes_into_fuel_files_read_back_as_the_full_edit(fuel_store, source):
    text = stored_sealed(fuel_store, source)
    document = yamlio.load(text)
    nested = next(k for k, v in document.items() if isinstance(v, dict) and v)
    inner = next(iter(document[nested]))
    batches = [
        [["bench_new", 1]],
        [[nested, inner, {"a": [1, "on", None]}]],
        [[nested, "added", "deep", "x: y"]],
        [["bench_new", 2.5], [nested, inner, "again"]],
    ]
    for batch in batches:
        before = stored(fuel_store)
        set_keys(fuel_store, *batch)
        after = stored(fuel_store)
        document = keypaths.apply_batch(document, "set", batch)
        assert exact(yamlio.load(after)) == exact(document), batch
        # every line but the changed entries is kept (the full path re-dumps a top-level entry)
        kept = [line for line in before.splitlines() if line.startswith(b"  ")]
        assert sum(line in after.splitlines() for line in kept) >= len(kept) - 12


def test_other_lines_keep_their_bytes_hand_written_style_included(fuel_store):
    text = (
        b"# facts of the controller\n"
        b"uid: '1'\n"
        b"nova:\n"
        b"    user:   nova        # four spaces, odd alignment\n"
        b"    workers: 4\n"
        b"\n"
        b"    limits:\n"
        b"        cpu: 2\n"
        b"zeta: 'last'   \n"
    )
    seed(fuel_store, text)
    set_keys(fuel_store, ["nova", "limits", "cpu", 8])
    assert stored(fuel_store) == text.replace(b"        cpu: 2\n", b"        cpu: 8\n")
    set_keys(fuel_store, ["nova", "limits", "mem", "2G"])
    assert stored(fuel_store).endswith(b"        cpu: 8\n        mem: 2G\nzeta: 'last'   \n")


@pytest.mark.parametrize(
    "text, batch",
    [
        (b'a: "x\nb: c"\nd: 1\n', [["b", 2]]),
        (b"a: 'x\nb: c'\nd: 1\n", [["b", 2]]),
        (b"a: {x: 1,\nb: 2}\n", [["b", 3]]),
        (b"a: &x\n  k: 1\nb: *x\n", [["a", "k", 2]]),
        (b"a: 1\na: 2\n", [["a", 3]]),
        (b"a:\n  # why\n  b: 1\nc: 2\n", [["a", {"b": 2}]]),
        (b"1: x\n", [["1", "y"]]),
        (b"a: 1\r\nb: 2\r\n", [["b", 3]]),
        (b"a: |+\n  text\n\nb: 1\n", [["a", "t"]]),
        (b"---\na: 1\n", [["a", 2]]),
    ],
)
def test_text_the_scanner_refuses_takes_the_full_path_and_reads_back_right(fuel_store, text, batch):
    seed(fuel_store, text)
    expected = keypaths.apply_batch(yamlio.load(text), "set", batch)
    set_keys(fuel_store, *batch)
    assert exact(yamlio.load(stored(fuel_store))) == exact(expected)


def test_a_spliced_secret_is_sealed_at_its_place_and_kept_when_unchanged(fuel_store):
    stored_sealed(fuel_store, FUEL / "controller.yaml")
    set_keys(
        fuel_store, ["keystone", "db_password", "s3cret"], ["keystone", "nested", {"token": 7}]
    )
    after = stored(fuel_store)
    parsed = yamlio.load(after)
    sealed = parsed["keystone"]["db_password"]
    assert cipher.is_sealed(sealed) and cipher.is_sealed(parsed["keystone"]["nested"]["token"])
    assert b"s3cret" not in after
    served = fuel_store.config.read(
        1, LEVEL, "astute", "values", Query(key="keystone", reveal=True)
    )
    assert served.data["db_password"] == "s3cret" and served.data["nested"] == {"token": 7}
    head = fuel_store.environment_repo(1).head()
    set_keys(fuel_store, ["keystone", "db_password", "s3cret"])  # the same value: no commit
    set_keys(fuel_store, ["keystone", "db_password", "******"])  # "unchanged"
    assert fuel_store.environment_repo(1).head() == head
    with pytest.raises(InvalidInput, match="unchanged"):
        set_keys(fuel_store, ["keystone", "new_password", "******"])


def test_limits_plain_data_and_schema_still_refuse_a_spliced_write(fuel_store):
    stored_sealed(fuel_store, FUEL / "controller.yaml")
    head = fuel_store.environment_repo(1).head()
    deep: dict = {}
    node = deep
    for _ in range(70):
        node["d"] = {}
        node = node["d"]
    with pytest.raises(InvalidInput, match="nests deeper"):
        set_keys(fuel_store, ["keystone", deep])
    with pytest.raises(InvalidInput, match="finite"):
        set_keys(fuel_store, ["keystone", "ratio", float("nan")])
    limits.configure(fuel_store.root, {"document_keys": 1_000})  # Fuel's file holds ~1,600
    try:
        with pytest.raises(InvalidInput, match="document_keys"):
            set_keys(fuel_store, ["one_more", 1])
    finally:
        limits.configure(fuel_store.root / "nowhere")
    assert fuel_store.environment_repo(1).head() == head


def test_a_resource_with_a_schema_is_judged_on_the_whole_document(fuel_store):
    fuel_store.components.create(
        {
            "name": "typed",
            "resource_definitions": [
                {
                    "name": "typed",
                    "schema": {"type": "object", "properties": {"port": {"type": "integer"}}},
                }
            ],
        }
    )
    fuel_store.environments.update(1, {"components": ["fuel", "typed"]})
    fuel_store.config.put(1, LEVEL, "typed", "values", {"port": 1, "name": "x"}, AUTHOR)
    with pytest.raises(ValidationFailed):
        fuel_store.config.update_keys(1, LEVEL, "typed", "values", "set", [["port", "no"]])


def test_key_deletes_cut_the_entry_out_and_read_back_as_the_full_delete(fuel_store):
    text = stored_sealed(fuel_store, FUEL / "controller.yaml")
    document = yamlio.load(text)
    fuel_store.config.update_keys(
        1, LEVEL, "astute", "values", "delete", [["keystone", "db_password"], ["uid"]], AUTHOR
    )
    after = stored(fuel_store)
    expected = keypaths.apply_batch(document, "delete", [["keystone", "db_password"], ["uid"]])
    assert exact(yamlio.load(after)) == exact(expected)
    assert len(text.splitlines()) - len(after.splitlines()) == 2  # two lines cut, no other
    seed(fuel_store, b"a:\n  b: 1\nc: 2\n")
    fuel_store.config.update_keys(1, LEVEL, "astute", "values", "delete", [["a", "b"]], AUTHOR)
    assert yamlio.load(stored(fuel_store)) == {"a": {}, "c": 2}  # the full path: not null
    with pytest.raises(Conflict):
        fuel_store.config.update_keys(1, LEVEL, "astute", "values", "delete", [["c", "x"]])


@pytest.mark.parametrize(
    "kept, refused",
    [
        (b"a: .nan\n", "finite"),
        (b"a: 1.0e+999\n", "finite"),
        (b"a:\n" + b"".join(b"  " * i + b"- \n" for i in range(1, 70)), "nests deeper"),
    ],
)
def test_a_key_write_into_a_document_that_breaks_a_rule_elsewhere_is_refused_as_before(
    fuel_store, kept, refused
):
    """The full path judges the whole document; so must a splice, or send it there."""
    seed(fuel_store, kept + b"b: 1\n")
    with pytest.raises(InvalidInput, match=refused):
        set_keys(fuel_store, ["b", 2])


def test_a_plain_secret_kept_elsewhere_is_sealed_by_a_key_write_as_before(fuel_store):
    """A value a newer rule makes secret is stored plain until the document is written: a key
    write into it seals it, as the full path always did (the splice leaves such text to it)."""
    seed(fuel_store, b"keystone:\n  db_password: plain-old\n  user: keystone\nuid: '1'\n")
    set_keys(fuel_store, ["uid", "2"])
    after = stored(fuel_store)
    assert b"plain-old" not in after
    assert cipher.is_sealed(yamlio.load(after)["keystone"]["db_password"])
    seed(fuel_store, b"keystone:\n  db_password: plain-old\n  user: keystone\nuid: '1'\n")
    fuel_store.config.update_keys(1, LEVEL, "astute", "values", "delete", [["uid"]], AUTHOR)
    assert b"plain-old" not in stored(fuel_store)


def test_a_new_secret_rule_is_applied_though_the_process_judged_the_text_before(fuel_store):
    """The splice remembers which texts it judged, under which rules: a rule added since must
    not be served the old verdict (the write then seals the newly secret value)."""
    seed(fuel_store, b"ssh:\n  private: PRIVATE-KEY-1\n  public: pub\nuid: '1'\n")
    set_keys(fuel_store, ["uid", "2"])  # judged (no secret rule matches) and remembered
    set_keys(fuel_store, ["uid", "3"])
    assert b"PRIVATE-KEY-1" in stored(fuel_store)
    fuel_store.environments.update(1, {"secret_keys": ["ssh.private"]})
    set_keys(fuel_store, ["uid", "4"])
    after = stored(fuel_store)
    assert b"PRIVATE-KEY-1" not in after and b"public: pub" in after
