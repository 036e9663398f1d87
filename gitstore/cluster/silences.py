"""The peers that did not answer this member's calls lately (hung, dead, blackholed).

A commit needs `min_replicas` peers. Asking a silent peer again at every round would cost a
thread for a call deadline each time; rounds come faster than deadlines pass, so the threads of
the hand-over pool would fill up with calls to the silent peer, the calls to the peers that
answer would wait behind them (every write slowed), and the silent peer, once back, would find
a backlog of stale calls on its socket to work through before it can catch up. So a peer whose
call got no answer is left out of the hand-overs for a pause (one lease TTL), then a single
call probes it: while it stays silent, it costs one call per pause. Every peer is asked when
the others alone are fewer than `min_replicas`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

#: A probe in flight: no other call goes to that peer until it ends.
_PROBING = float("inf")


class Silences:
    """When each silent peer may be probed again; thread-safe (the hand-over pool's threads
    report to it)."""

    def __init__(self, pause: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.pause = pause
        self._clock = clock
        self._lock = threading.Lock()
        self._until: dict[str, float] = {}

    def to_ask(self, peers: Iterable[str], needed: int) -> list[str]:
        """The peers to call now: every peer that answered lately and a silent one whose pause
        is over (one probe at a time); every peer when those are fewer than `needed`."""
        peers = list(peers)
        now = self._clock()
        with self._lock:
            chosen = []
            for peer in peers:
                until = self._until.get(peer)
                if until is None:
                    chosen.append(peer)
                elif until <= now:
                    self._until[peer] = _PROBING
                    chosen.append(peer)
            if len(chosen) < needed:  # which silent peer answers first is anyone's guess
                chosen += [peer for peer in peers if peer not in chosen]
        return chosen

    def silent(self, peer: str) -> None:
        """`peer` gave no answer (timed out, refused the connection)."""
        with self._lock:
            self._until[peer] = self._clock() + self.pause

    def answered(self, peer: str) -> None:
        with self._lock:
            self._until.pop(peer, None)
