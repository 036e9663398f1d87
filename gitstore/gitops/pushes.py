"""Pushes over HTTP wait their turn with REST writers, and a push whose base went stale lands.

A `git push` asks for main's value (the *advertisement*), checks on the client that this value
is in the history it pushes, then sends `<advertised> <new> refs/heads/main` and its pack; git
refuses the update unless main still is the advertised value. Under REST write load main moves
in the seconds a push takes: with 6 REST writers, 2 of 340 pushes landed. So over gitstore's
HTTP:

1. **Advertisement.** A push is told that main is `settled_head`: main with the commits
   gitstore itself made (REST writes, landed merges) in the last `ADVERTISE_SETTLED_SECONDS`
   peeled off, down to the newest pushed commit. A client that fetched since then has it, so its
   own check passes; one that has not is told to fetch first, as git always does. So a push can
   never drop a recent REST write: at worst it is merged with it (a forced push that rewrites
   what someone else pushed is still refused).
2. **Queue.** The view reads the whole request (a slow client holds no lock), then takes the
   repository's write flock (`WRITE_LOCK`, where REST commits queue) and holds it until git
   has answered: main cannot move between the gate and git's ref update.
3. **Re-aiming.** When the command's old value is not main but in main's history, the command
   is re-aimed at the staging ref `refs/gitstore/p` (the same length as `refs/heads/main`, so
   the pkt-line framing of request and answer stays valid when the names are swapped). The gate
   sees `GITSTORE_PUSH_ONTO` and `GITSTORE_PUSH_OLD` and checks the push as it will land
   (`remote.merge_pushed`): it must contain what it was told main is; it lands as a
   fast-forward of main, or as a merge when main moved since the push's base; files both
   sides changed differently are refused, and the landed tree must pass validation.
4. **Landing.** git accepts the objects into the staging ref; the view moves main to the landed
   commit by compare-and-swap and answers `ok refs/heads/main` (or `ng refs/heads/main`).

A push whose old value is main (a quiet store) goes through git untouched, only queued; except
in a cluster (the repository's commit queue has a replication): there every push to main is
re-aimed, so that main moves only through `remote.fast_forward`, once the commit is replicated
and etcd accepted it (docs/ha.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from gitstore import files
from gitstore.backend import remote
from gitstore.backend.remote import ZERO
from gitstore.backend.repository import MAIN, WRITE_LOCK, Repository
from gitstore.backend.snapshot import Snapshot
from gitstore.errors import Conflict, GitstoreError
from gitstore.gitops import arrivals
from gitstore.validation import Problem, raise_problems

STAGING = "refs/gitstore/p"
ENV_ONTO = "GITSTORE_PUSH_ONTO"
ENV_OLD = "GITSTORE_PUSH_OLD"
ADVERTISE_SETTLED_SECONDS = 60.0
_LAND_ATTEMPTS = 3
_SHA = 40
_ADVERTISED_MAIN = re.compile(rb"([0-9a-f]{40}) refs/heads/main(?=[\0\n])")

CheckTree = Callable[[Snapshot], list[Problem]]


@dataclass(frozen=True)
class Command:
    """One `<old> <new> <ref>` line of a push request; `at`: where `old` starts in the body."""

    old: str
    new: str
    ref: str
    at: int


def parse_commands(body: bytes) -> list[Command] | None:
    """The ref commands at the start of a receive-pack request (pkt-lines up to the flush);
    None when they are not plain 40-hex commands we can re-aim (push certificates, sha256)."""
    commands: list[Command] = []
    pos = 0
    while True:
        try:
            size = int(body[pos : pos + 4], 16)
        except ValueError:
            return None
        if size == 0:
            return commands
        line = body[pos + 4 : pos + size].split(b"\0")[0].rstrip(b"\n")
        parts = line.split(b" ")
        if size < 4 or len(parts) != 3 or len(parts[0]) != _SHA or len(parts[1]) != _SHA:
            return None
        old, new, ref = (part.decode("ascii", "replace") for part in parts)
        commands.append(Command(old, new, ref, pos + 4))
        pos += size


def settle_advertisement(repo: Repository, answer: bytes) -> bytes:
    """A receive-pack advertisement naming main's settled head instead of its head (step 1)."""
    found = _ADVERTISED_MAIN.search(answer)
    if found is None:
        return answer
    head = found.group(1).decode()
    settled = remote.settled_head(repo, head, ADVERTISE_SETTLED_SECONDS)
    start = found.start(1)
    return answer[:start] + settled.encode() + answer[start + _SHA :]


def landed_commit(repo: Repository, new: str, onto: str, check_tree: CheckTree) -> str:
    """What main becomes when pushed commit `new` lands on `onto`; raises when it may not."""
    landed = remote.merge_pushed(repo, new, onto)
    if landed != onto:
        problems = check_tree(repo.snapshot(landed))
        raise_problems(problems, f"{repo.name}: push rejected, commit {new[:12]} is invalid")
    return landed


class PushAdmission:
    """One push over HTTP, from its turn in the write queue to git's answer (module docstring)."""

    def __init__(self, repo: Repository, check_tree: CheckTree) -> None:
        self.repo = repo
        self._check_tree = check_tree
        self._staged: Command | None = None

    @contextlib.contextmanager
    def turn(self) -> Iterator[PushAdmission]:
        """Hold the repository's write flock: REST commits wait while git handles the push."""
        with files.exclusive_lock(self.repo.path / WRITE_LOCK, 0o644):
            yield self

    def prepare(self, body: bytes) -> tuple[bytes, dict[str, str]]:
        """The request body for git (re-aimed if main moved) and extra environment for it."""
        commands = parse_commands(body) or []
        main = [c for c in commands if c.ref == MAIN]
        head = self.repo.head()
        if len(main) != 1 or head is None or any(c.ref == STAGING for c in commands):
            return body, {}
        command = main[0]
        quiet = command.old == head and self.repo.commits.replication is None
        if quiet or command.old == ZERO or command.new == ZERO:
            return body, {}
        if not remote.has_commit(self.repo, command.old):
            return body, {}
        if not remote.is_ancestor(self.repo, command.old, head):
            return body, {}  # not main's history: git and the gate refuse it as always
        remote.delete_ref(self.repo, STAGING)
        self._staged = command
        ref_at = command.at + 2 * _SHA + 2
        patched = (
            body[: command.at]
            + ZERO.encode()
            + body[command.at + _SHA : ref_at]
            + STAGING.encode()
            + body[ref_at + len(MAIN) :]
        )
        return patched, {ENV_ONTO: head, ENV_OLD: command.old}

    def finish(self, answer: bytes) -> bytes:
        """Land a staged push on main and tell the client about `refs/heads/main`."""
        if self._staged is None:
            return answer
        landed = False
        if remote.read_ref(self.repo, STAGING) == self._staged.new:
            landed = self._land(self._staged.new)
            remote.delete_ref(self.repo, STAGING)
        if not landed:
            answer = answer.replace(b"ok " + STAGING.encode(), b"ng " + MAIN.encode())
        return answer.replace(STAGING.encode(), MAIN.encode())

    def _land(self, new: str) -> bool:
        """Move main to the landed commit; re-checked if main moved again meanwhile (only a
        writer outside the queue, e.g. a local `git push`, can)."""
        for _ in range(_LAND_ATTEMPTS):
            head = self.repo.head()
            assert head is not None  # a push lands on a repository with commits
            try:
                landed = landed_commit(self.repo, new, head, self._check_tree)
            except GitstoreError:
                return False
            if landed == head:
                return True
            if remote.fast_forward(self.repo, head, landed):
                arrivals.record_landed(self.repo, head, landed)
                return True
        return False


def check_staged(repo: Repository, old: str, new: str, onto: str, check_tree: CheckTree) -> None:
    """The gate's check of a re-aimed push (step 3): raises when it may not land on `onto`.

    `old` is what the client was told main is: a push that does not contain it rewrites
    history (a forced push), refused as ever."""
    if not remote.has_commit(repo, new) or not remote.is_ancestor(repo, old, new):
        raise Conflict(
            f"{repo.name}: non-fast-forward push to main refused (history is never "
            "rewritten); fetch, merge or rebase onto main, and push again"
        )
    landed_commit(repo, new, onto, check_tree)


def staged_push(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(old, onto) of a push the HTTP view re-aimed at STAGING, from the hook's environment;
    None for any other push. Only gitstore's view sets these (a pusher cannot set the server's
    environment)."""
    old, onto = environ.get(ENV_OLD), environ.get(ENV_ONTO)
    return (old, onto) if old and onto else None
