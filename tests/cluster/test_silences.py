"""Which peers a primary asks to take a commit: a silent one is left out for a pause, then one
call probes it; it is still asked when the others cannot make `min_replicas` alone."""

from __future__ import annotations

from gitstore.cluster.silences import Silences

PEERS = ["http://b", "http://c"]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_silent_peer_is_left_out_for_the_pause_then_probed_by_one_call():
    clock = Clock()
    silences = Silences(pause=2.0, clock=clock)
    assert silences.to_ask(PEERS, needed=1) == PEERS
    silences.silent("http://c")
    assert silences.to_ask(PEERS, needed=1) == ["http://b"]
    clock.now += 2.0
    assert silences.to_ask(PEERS, needed=1) == PEERS  # the probe
    assert silences.to_ask(PEERS, needed=1) == ["http://b"]  # one probe at a time
    silences.answered("http://c")
    assert silences.to_ask(PEERS, needed=1) == PEERS


def test_a_probe_that_gets_no_answer_starts_a_new_pause():
    clock = Clock()
    silences = Silences(pause=2.0, clock=clock)
    silences.silent("http://c")
    clock.now += 2.0
    assert silences.to_ask(PEERS, needed=1) == PEERS
    clock.now += 1.5  # the probe timed out
    silences.silent("http://c")
    clock.now += 1.0
    assert silences.to_ask(PEERS, needed=1) == ["http://b"]


def test_silent_peers_are_asked_when_the_others_are_too_few():
    silences = Silences(pause=2.0, clock=Clock())
    silences.silent("http://c")
    assert silences.to_ask(PEERS, needed=2) == PEERS
    silences.silent("http://b")
    assert silences.to_ask(PEERS, needed=1) == PEERS  # whichever answers first
    silences.answered("http://b")
    assert silences.to_ask(PEERS, needed=1) == ["http://b"]
