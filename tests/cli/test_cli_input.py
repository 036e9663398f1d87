"""YAML and JSON input (stdin, --file, a folder of facts): the rules the push gate applies.

Input must be UTF-8, and a key repeated in one mapping is refused (YAML and JSON would keep the
last value silently; `gitstore/yamlio.py` `load_strict` refuses it on `git push`), in one line
that names the source, local and over HTTP.
"""

from __future__ import annotations

import pytest
from cli_helpers import assert_failure, assert_usage_error

NOT_UTF8 = b"\xff\xfe: 1\n"
REPEATED = b"a: 1\nb: 2\na: 3\n"
NODE1 = ["-e", "1", "-l", "nodes=1", "-r", "globals"]


def head(gs) -> str:
    return gs.store.environment_repo(1).snapshot().commit_id


@pytest.fixture
def files(tmp_path):
    """`bad.yaml` (not UTF-8) and `twice.yaml` (a repeated key), each in a folder of its own."""
    made = {}
    for name, data in (("bad", NOT_UTF8), ("twice", REPEATED)):
        (tmp_path / name).mkdir()
        made[name] = tmp_path / name / f"{name}.yaml"
        made[name].write_bytes(data)
    return made


# -- not UTF-8 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_stdin_that_is_not_utf8_is_refused_in_one_line(gs, fmt):
    before = head(gs)
    result = gs("config", "set", *NODE1, "-f", fmt, input=NOT_UTF8)
    assert_failure(result, "Error: <stdin> is not UTF-8: byte 0xff at line 1")
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert head(gs) == before


def test_a_file_that_is_not_utf8_is_refused_naming_it(gs, files):
    bad = str(files["bad"])
    assert_failure(gs("def", "create", "--name", "x", "--file", bad), f"{bad} is not UTF-8")
    assert_failure(
        gs("def", "create", "--name", "x", "--input-format", "yaml", input=NOT_UTF8),
        "<stdin> is not UTF-8",
    )
    assert_failure(gs("graph", "upload", "-e", "1", "--file", bad), f"{bad} is not UTF-8")
    assert_failure(gs("role", "upload", bad), f"{bad} is not UTF-8")


def test_facts_upload_skips_a_file_that_is_not_utf8(gs, files):
    folder = files["bad"].parent
    result = gs("facts", "upload", "-e", "1", "-n", "1", "--dir", str(folder))
    assert_failure(result, f"{files['bad']}: {files['bad']} is not UTF-8")


# -- a key repeated in one mapping ---------------------------------------------------------------
def test_stdin_with_a_repeated_key_is_refused_naming_key_and_line(gs):
    before = head(gs)
    result = gs("config", "set", *NODE1, "-f", "yaml", input=REPEATED)
    expected = "<stdin>: line 3 YAML does not parse: key 'a' is repeated in one mapping"
    assert_failure(result, expected)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert head(gs) == before


def test_a_repeated_key_in_a_later_document_of_the_stream_is_refused_too(gs):
    result = gs("config", "set", *NODE1, "-f", "yaml", input=b"a: 1\n---\n" + REPEATED)
    assert_failure(result, "line 5 YAML does not parse: key 'a' is repeated")


def test_a_yaml_value_with_a_repeated_key_is_a_usage_error(gs):
    args = ["-k", "x", "-t", "yaml", "-v", "a: 1\na: 2\n"]
    assert_usage_error(gs("config", "set", *NODE1, *args), "key 'a' is repeated in one mapping")


@pytest.mark.parametrize("text", [b'{"a": 1, "a": 2}', b'{"b": {"a": 1, "c": 0, "a": 2}}'])
def test_json_stdin_with_a_repeated_key_is_refused_naming_the_key(gs, text):
    before = head(gs)
    result = gs("config", "set", *NODE1, "-f", "json", input=text)
    assert_failure(
        result, "Error: <stdin>: JSON does not parse: key 'a' is repeated in one mapping"
    )
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert head(gs) == before


def test_a_json_value_or_tag_meta_with_a_repeated_key_is_a_usage_error(gs):
    args = ["-k", "x", "-t", "json", "-v", '{"a": 1, "a": 2}']
    assert_usage_error(gs("config", "set", *NODE1, *args), "key 'a' is repeated in one mapping")
    meta = ["--env", "1", "--meta", '{"a": 1, "a": 2}']
    assert_usage_error(gs("tag", "create", "t", *meta), "key 'a' is repeated in one mapping")


def test_a_file_with_a_repeated_key_is_refused_naming_it(gs, files):
    twice = str(files["twice"])
    expected = f"{twice}: line 3 YAML does not parse: key 'a' is repeated in one mapping"
    assert_failure(gs("def", "create", "--name", "x", "--file", twice), expected)
    assert_failure(gs("graph", "upload", "-e", "1", "--file", twice), expected)


def test_facts_upload_keeps_the_last_value_of_a_repeated_key_with_a_warning(gs, files):
    """Facts are machine-written: read as their producers read them (issue 35 item 1)."""
    folder = files["twice"].parent
    result = gs("facts", "upload", "-e", "1", "-n", "1", "--dir", str(folder))
    assert result.exit_code == 0, result.stderr
    assert f"warning: {files['twice']}: key a is repeated (lines 1 and 3)" in result.stderr
