"""Size limits under real gunicorn: request bodies (413), documents (400), pushed files (gate).

The server runs with the default limits (gitstore/limits.py); `test_limits_can_be_raised` shows
an operator's `<root>/limits.yaml` at work on the real app.
"""

from __future__ import annotations

import os
import socket
import time

import pytest
import requests

from gitstore import Store, limits
from gitstore.api import create_app
from gitstore.errors import InvalidInput

from .helpers import commit_files, fill, git, start_gunicorn
from .test_push import clone, push, served_commit

ASTUTE = "/api/v1/config/environments/1/resources/astute/values"
#: The defaults of gitstore/limits.py, spelled out: these tests also ran against the code before it.
DOCUMENT_KEYS, DOCUMENT_BYTES, BLOB_BYTES = 150_000, 4 * 1024 * 1024, 4 * 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("limits")
    store = fill(Store.init(workdir / "root"))
    running = start_gunicorn(store.root, workdir)
    yield running
    running.stop()


def _raw_put(url: str, path: str, claimed: int, sent: bytes) -> tuple[bytes, float]:
    """PUT claiming a `claimed`-byte body but sending only `sent`: the answer and its delay."""
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        head = (
            f"PUT {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {claimed}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + sent)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer, time.monotonic() - started


def test_a_body_over_the_limit_is_413_before_it_is_read(server):
    answer, took = _raw_put(server.url, ASTUTE, 50 * 1024 * 1024, b'{"a": "')
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b'"status":413' in answer and b"body_bytes" in answer
    assert took < 20  # the server did not wait for the 50 MB it was promised


def test_a_50_mb_string_is_refused(server):
    before = served_commit(server)
    body = b'{"a": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    response = requests.put(
        server.url + ASTUTE, data=body, headers={"Content-Type": "application/json"}, timeout=60
    )
    assert response.status_code == 413
    assert response.json()["status"] == 413
    assert served_commit(server) == before


def _chunked(body: bytes, size: int = 1 << 20):
    """`body` in pieces: requests sends a generator with `Transfer-Encoding: chunked` and no
    declared length, so the limit can only be found by reading."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _put_chunked(server, body: bytes) -> requests.Response:
    return requests.put(
        server.url + ASTUTE + "/keys/set",
        data=_chunked(body),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )


def test_a_chunked_body_over_the_limit_is_413_and_writes_nothing(server):
    # What fits in the limit is a whole key write; the rest would make it invalid JSON.
    # Werkzeug stopped reading at the limit without a word, so the first part was committed.
    head = b'[["cut_short", true]]'
    body = head + b" " * (16 * 1024 * 1024 - len(head)) + b" not JSON"
    before = served_commit(server)
    response = _put_chunked(server, body)
    assert response.status_code == 413, response.text[:300]
    assert response.json()["status"] == 413 and "body_bytes" in response.json()["message"]
    assert served_commit(server) == before


def test_a_chunked_body_of_exactly_the_limit_is_read_whole(server):
    head = b'[["chunked_at_the_limit", true]]'
    body = head + b" " * (16 * 1024 * 1024 - len(head))
    response = _put_chunked(server, body)
    assert response.status_code == 204, response.text[:300]
    assert requests.get(server.url + ASTUTE, timeout=10).json()["chunked_at_the_limit"] is True


def test_a_chunked_push_over_push_bytes_is_413_and_changes_nothing(tmp_path):
    # git sends a pack over http.postBuffer (1 MiB) chunked; cut at push_bytes, git was
    # given a truncated pack and answered with its own unpack error. The pack here is just
    # over the limit, so git has sent it all when the 413 comes and reads it (a pack far over
    # it is refused too, but git may fail its send before it reads why).
    store = fill(Store.init(tmp_path / "root"))
    (store.root / limits.LIMITS_FILE).write_text("push_bytes: 1500000\n")
    server = start_gunicorn(store.root, tmp_path)
    try:
        work = clone(server, tmp_path)
        (work / "blob.bin").write_bytes(os.urandom(1_520_000))
        commit_files(work, {}, "a file over push_bytes")
        before = served_commit(server)
        done = push(work)
        assert done.returncode != 0 and "413" in done.stderr, done.stderr
        assert served_commit(server) == before
    finally:
        server.stop()


def test_a_document_over_the_key_or_size_limit_is_400_naming_it(server):
    before = served_commit(server)
    many = {f"k{i}": i for i in range(DOCUMENT_KEYS + 1)}
    response = requests.put(server.url + ASTUTE, json=many, timeout=60)
    assert response.status_code == 400
    message = response.json()["message"]
    assert "global/values/astute.yaml" in message and "document_keys" in message
    big = {"a": "x" * (DOCUMENT_BYTES + 1)}
    response = requests.put(server.url + ASTUTE, json=big, timeout=60)
    assert response.status_code == 400
    assert "document_bytes of 4194304" in response.json()["message"]
    assert served_commit(server) == before


def test_a_pushed_file_over_the_limit_is_refused_naming_it(server, tmp_path):
    before = served_commit(server)
    work = clone(server, tmp_path)
    big = "a: '" + "x" * (BLOB_BYTES + 10) + "'\n"
    commit_files(work, {"nodes/1/values/globals.yaml": big}, "a very large file")
    done = push(work)
    assert done.returncode != 0
    assert "nodes/1/values/globals.yaml:" in done.stderr, done.stderr
    assert "over the limit blob_bytes of 4194304" in done.stderr
    assert served_commit(server) == before
    git("reset", "-q", "--hard", "HEAD~1", cwd=work)


def test_the_defaults_are_the_documented_ones():

    assert (limits.DEFAULT.document_keys, limits.DEFAULT.document_bytes) == (
        DOCUMENT_KEYS,
        DOCUMENT_BYTES,
    )
    assert limits.DEFAULT.blob_bytes == BLOB_BYTES
    assert limits.DEFAULT.waiting_requests == 500


def test_limits_can_be_raised_in_the_store_root(fuel_store):

    (fuel_store.root / limits.LIMITS_FILE).write_text("body_bytes: 100\ndocument_keys: 3\n")
    try:
        client = create_app({"TESTING": True}, store=fuel_store).test_client()
        assert client.put(ASTUTE, json={"a": "x" * 200}).status_code == 413
        response = client.put(ASTUTE, json={"a": 1, "b": [1, 2]})
        assert response.status_code == 400 and "more than 3 keys" in response.get_json()["message"]
        assert client.put(ASTUTE, json={"a": 1, "b": 2}).status_code == 204
    finally:
        limits.configure(fuel_store.root / "nowhere")  # the defaults again for later tests


def test_a_bad_limits_file_is_named(fuel_store):

    (fuel_store.root / limits.LIMITS_FILE).write_text("body_byte: 100\n")
    with pytest.raises(InvalidInput, match="unknown limit 'body_byte'"):
        limits.load(fuel_store.root)
    (fuel_store.root / limits.LIMITS_FILE).write_text("body_bytes: -1\n")
    with pytest.raises(InvalidInput, match="'body_bytes' must be a positive integer"):
        limits.load(fuel_store.root)
