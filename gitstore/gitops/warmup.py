"""A server worker's warm-up: each environment's `main` checked in the background, as an edit
preview checks it, so that the worker's first preview costs what a later one does.

A preview checks the proposed tree with the gate's rules and diffs it from its parent. In a
worker that never checked the environment, that first check parses every file (every node's
facts) and the blast radius indexes every node's keys; later previews replay the per-file
results kept in the Store's `FileChecks` and ask the kept `KeyIndex`es (docs/gitops.md). The
proposed tree differs from `main` in the file edited, so checking `main` once, with the same
catalog, `environment.yaml` and limits, keeps what the first preview would otherwise compute.

The worker checks every environment once it has loaded its app, then follows them: every
`INTERVAL` it looks at the heads, and checks again an environment whose `main` moved (a bulk
facts upload, a push landed by another process) or whose context did (the catalog, the
limits), once that `main` has stayed where it is for `SETTLE` seconds: a stream of writes
(nodes created one by one, a deployment recording its tasks) is not followed step by step,
which would cost each worker a walk of the environment's files per interval while the writes
go on. A later check parses only the files that changed; the rest is replayed.

Bounded, and polite to the worker's requests:

- each file judged and each index made is a step of the warm-up's deadline; every
  `deadlines.SLICE` the served warm-up waits until no worker of its server has had a request
  start or end for `serve.activity.QUIET` (it runs in the server's idle time: a CPU it shared
  with a stream of cold lookups was CPU the lookups lacked), so a lookup waits about one step;
- an environment of more than `MAX_FILES` files is left cold (its first preview pays);
- one round over the environments stops after `BUDGET` seconds; what it kept stays kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitstore import limits
from gitstore.catalog.view import CatalogView
from gitstore.deadlines import Deadline
from gitstore.errors import DeadlineExceeded, GitstoreError
from gitstore.gitops.rules import check
from gitstore.validation import ENVIRONMENT
from gitstore.versions.diffs import keep_indexes

if TYPE_CHECKING:
    from gitstore.filechecks import FileChecks
    from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.gitops")

#: Files above which an environment is not warmed: ~2,000 for 1,000 nodes (facts and inventory
#: records), so several thousand nodes are still warmed.
MAX_FILES = 20_000
#: Seconds one round may take, all environments together (on a host as loaded as the
#: worker's other requests make it).
BUDGET = 300.0
#: Seconds between two looks at the heads: a burst of writes costs each worker one check per
#: environment and interval, of the files that changed (the rest replayed).
INTERVAL = 2.0
#: Seconds a moved `main` must stay still before it is checked again.
SETTLE = 5.0
_LIMIT = "warm-up"  # the deadline's name in the logs when the budget runs out


@dataclass(frozen=True)
class Warmed:
    """What the warm-up did with one environment: files checked, key indexes made, seconds,
    and why it was left cold (None when warmed)."""

    env_id: int
    files: int
    indexes: int
    seconds: float
    skipped: str | None = None


class Warmer:
    """Keeps `checks` (and the key indexes) filled for every environment's current `main`."""

    def __init__(
        self,
        repos: Repositories,
        checks: FileChecks,
        *,
        max_files: int = MAX_FILES,
        budget: float = BUDGET,
        settle: float = SETTLE,
    ) -> None:
        self._repos = repos
        self._checks = checks
        self._max_files = max_files
        self._budget = budget
        self._settle = settle
        #: env id -> (main, when this warmer first saw it there)
        self._seen: dict[int, tuple[str, float]] = {}
        #: env id -> (main, catalog commit, limits) last checked
        self._checked: dict[int, tuple] = {}
        self._rounds = 0

    def round(self, give_way: Callable[[], None] | None = None) -> list[Warmed]:
        """Check each environment whose `main` or context changed since the last round (every
        one, the first time); stop after `budget` s. Between steps it waits in `give_way`
        (default: it lets the worker's ready requests run first)."""
        deadline = Deadline(self._budget, _LIMIT, give_way=give_way)
        catalog = CatalogView(self._repos.catalog().snapshot())
        context = (catalog.snapshot.commit_id, limits.current())
        env_ids = self._repos.environment_ids()
        first = self._rounds == 0
        self._rounds += 1
        if first:
            log.info("warm-up: checking the main of %d environments", len(env_ids))
        done = []
        for env_id in env_ids:
            try:
                head = self._repos.environment_repo(env_id).head()
                if head is None or self._checked.get(env_id) == (head, *context):
                    continue  # no commit yet, or checked as it is
                if env_id in self._checked and not self._settled(env_id, head):
                    continue  # still moving: checked once the writes pause
                done.append(self._warm(env_id, head, catalog, deadline))
                self._checked[env_id] = (head, *context)
            except DeadlineExceeded:
                log.warning("warm-up stopped after %g s at environment %s", self._budget, env_id)
                break
            except GitstoreError as exc:  # deleted meanwhile, or unreadable: a preview says
                done.append(Warmed(env_id, 0, 0, 0.0, exc.message))
        for warmed in done:
            _log(warmed, logging.INFO if first else logging.DEBUG)
        return done

    def _settled(self, env_id: int, head: str) -> bool:
        """Whether `head`, environment `env_id`'s `main`, has stayed there `settle` s."""
        now = time.monotonic()
        seen = self._seen.get(env_id)
        if seen is None or seen[0] != head:
            self._seen[env_id] = seen = (head, now)
        return now - seen[1] >= self._settle

    def follow(
        self, interval: float = INTERVAL, give_way: Callable[[], None] | None = None
    ) -> None:
        """Run a round every `interval` s, forever (a worker's background task), each waiting
        in `give_way` between its steps."""
        while True:
            try:
                self.round(give_way)
            except Exception:  # a cold first preview is slower, never wrong: keep following
                log.exception("the warm-up of the gate's results failed")
            time.sleep(interval)

    def _warm(self, env_id: int, head: str, catalog: CatalogView, deadline: Deadline) -> Warmed:
        started = time.monotonic()
        snapshot = self._repos.environment_repo(env_id).snapshot(head)
        files = sum(1 for _ in snapshot.walk_entries())
        if files > self._max_files:
            return Warmed(env_id, files, 0, 0.0, f"{files} files, over {self._max_files}")
        tree = check(
            snapshot,
            ENVIRONMENT,
            catalog=catalog,
            env_id=env_id,
            checks=self._checks,
            deadline=deadline,
        )
        layers = ((path, tree.blob_id(path)) for path in tree.files)
        made = keep_indexes(
            snapshot.caches,
            ((path, blob) for path, blob in layers if blob),
            tree.parsed_mapping,
            deadline,
        )
        return Warmed(env_id, files, made, time.monotonic() - started)


def _log(warmed: Warmed, level: int) -> None:
    if warmed.skipped:
        log.log(level, "warm-up left environment %s cold: %s", warmed.env_id, warmed.skipped)
    else:
        log.log(
            level,
            "warmed environment %s: %d files checked, %d key indexes in %.1f s",
            warmed.env_id, warmed.files, warmed.indexes, warmed.seconds,
        )  # fmt: skip
