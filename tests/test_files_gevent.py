"""`files.exclusive_lock` in a gevent worker: a green thread waiting for the flock stops
neither the hub nor the green thread that holds it, wakes when it is released, and one killed
while it waits leaves the lock free.

Each case runs in a child Python that gevent has patched, as `gitstore serve`'s workers are
(patching this test process would change every other test).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    from gevent import monkey

    monkey.patch_all()

    import sys
    import time
    from pathlib import Path

    import gevent

    from gitstore.files import exclusive_lock

    LOCK = Path(sys.argv[1])
    events = []


    def holder():
        with exclusive_lock(LOCK):
            events.append("held")
            gevent.sleep(0.3)  # yields inside the critical section
            events.append("released")


    def waiter(name):
        with exclusive_lock(LOCK):
            events.append(name)


    def ticker():
        for _ in range(10):
            events.append("tick")
            gevent.sleep(0.02)


    first = gevent.spawn(holder)
    gevent.sleep(0.05)
    killed = gevent.spawn(waiter, "killed waiter got it")
    gevent.sleep(0.05)
    killed.kill()  # while it waits for the flock
    second = gevent.spawn(waiter, "waiter")
    tick = gevent.spawn(ticker)
    gevent.joinall([first, second, tick], timeout=20)
    print(" ".join(event.replace(" ", "_") for event in events))
    """
)


def test_a_green_waiter_blocks_nothing_and_a_killed_one_leaves_the_lock_free(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "test.lock")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = done.stdout.split()
    assert events[0] == "held" and "waiter" in events, events
    # the holder and the hub ran while a waiter waited: ticks before the release
    assert events.index("tick") < events.index("released") < events.index("waiter")
    assert "killed_waiter_got_it" not in events
