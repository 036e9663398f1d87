"""The per-process ref watcher and the blocking comparison, on real repositories in-process
(threads here; greenlets under the gevent worker, tested in test_served.py)."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import replace

from gitstore.configdb.values import Query
from gitstore.watch.inotify import _HEADER, Inotify, _parse

NODE = [("nodes", "1")]


def _set(store, node: str, kind: str, key: str, value) -> str:
    served = store.config.update_keys(1, [("nodes", node)], "astute", kind, "set", [[key, value]])
    return served.commit


def test_another_process_moving_main_wakes_a_waiter(fuel_store):
    heads = fuel_store.watch.heads
    path = fuel_store.environment_path(1)
    head = heads.head(1)
    _set(fuel_store, "1", "values", "a", 1)
    new = heads.head(1)
    subprocess.run(["git", "update-ref", "refs/heads/main", head, new], cwd=path, check=True)
    woke: list[str | None] = []
    waiter = threading.Thread(target=lambda: woke.append(heads.wait(1, head, 30)))
    waiter.start()
    time.sleep(0.5)
    assert not woke
    subprocess.run(["git", "update-ref", "refs/heads/main", new, head], cwd=path, check=True)
    waiter.join(20)
    assert woke == [new]
    assert heads.wakeups >= 1


def test_a_wait_without_a_commit_returns_at_its_timeout(fuel_store):
    heads = fuel_store.watch.heads
    head = heads.head(1)
    started = time.monotonic()
    assert heads.wait(1, head, 0.5) == head
    assert 0.4 <= time.monotonic() - started < 10
    assert heads.wakeups == 0


def test_hold_ignores_a_layer_change_under_an_unchanged_result(fuel_store):
    _set(fuel_store, "1", "overrides", "a", "override")
    index = fuel_store.watch.heads.head(1)
    query = Query(effective=True)

    def read_at(version):
        return fuel_store.config.read(1, NODE, "astute", "values", replace(query, version=version))

    def later() -> None:
        time.sleep(0.3)
        _set(fuel_store, "1", "values", "a", "hidden")  # the override still wins
        _set(fuel_store, "2", "overrides", "a", "another node")

    writer = threading.Thread(target=later)
    writer.start()
    started = time.monotonic()
    result, head = fuel_store.watch.hold(1, index, 2.0, read_at)
    writer.join()
    assert time.monotonic() - started >= 1.9
    assert result.data == {"a": "override"}
    assert head == fuel_store.watch.heads.head(1) != index


def test_inotify_reports_a_rename_into_a_watched_folder(tmp_path):
    inotify = Inotify()
    try:
        wd = inotify.add_watch(tmp_path)
        (tmp_path / "main.lock").write_text("x")
        (tmp_path / "main.lock").rename(tmp_path / "main")
        time.sleep(0.1)
        names = [name for got, _mask, name in inotify.read() if got == wd]
        assert "main" in names
        assert inotify.read() == []
    finally:
        inotify.close()


def test_events_are_parsed_with_their_padded_names():
    raw = _HEADER.pack(1, 0x80, 0, 16) + b"main".ljust(16, b"\0") + _HEADER.pack(2, 0x8, 0, 0)
    assert list(_parse(raw)) == [(1, 0x80, "main"), (2, 0x8, "")]
