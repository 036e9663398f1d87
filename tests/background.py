"""Load that runs in threads for the length of a `with` block (writers, readers, pushers).

A subclass builds its threads in `__init__` (after calling this one's) and loops while
`self.stop` is not set; leaving the block stops and joins them.
"""

from __future__ import annotations

import threading


class Background:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
