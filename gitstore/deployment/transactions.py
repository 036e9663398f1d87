"""Graph executions: transactions recorded as commits of the environment repository.

    {id, cluster, status, dry_run, noop_run, force, executor, created_at, finished_at?,
     message?, source: {commit, catalog_commit}, runner: {host, pid},
     graphs: [{type, status, nodes, tasks_graph, tasks_directory, history}]}

is the record as the API shows it; `records` stores it as a summary and one file per node.
`execute` computes every graph's plan from the merged graph at the served commits (the ones
`source` names), records the transaction, then lets the executor run the graphs one after
another (a failure aborts the rest). Each graph's history is committed when it ends; the
transaction's status goes pending -> running -> ready | error. A dry run, or the `dry-run`
executor, is recorded finished in one commit.

The size rules (`document_keys` for each node's file, `transaction_keys` for all of them) are
checked twice: on an estimate taken before the plan is built (`merge.plan_size`), so a refusal
costs milliseconds, and on the real node files before anything is recorded. Building the plan
checks the request's deadline as it goes.

Transaction ids are unique in the store (`GET /transactions/<id>` names no cluster): they are
allocated under a store-wide lock file, like node ids. At most one transaction of a cluster is
unfinished at a time, so only a cluster's newest transaction needs a look to answer 409. A
transaction whose runner process died (same host, pid gone) no longer blocks the cluster.
"""

from __future__ import annotations

import copy
import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gitstore import files, limits
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, WriteResult
from gitstore.backend.snapshot import Snapshot
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.deployment import executors, planning, records
from gitstore.deployment.executors import ERROR, READY, RunContext
from gitstore.errors import Conflict, Damaged, Forbidden, GitstoreError, InvalidInput, NotFound
from gitstore.merge import execution
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.deployment.inventory import Nodes
    from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.transactions")

LOCK_FILE = "transactions.lock"
PENDING, RUNNING = planning.PENDING, "running"
UNFINISHED = (PENDING, RUNNING)


# -- the service -------------------------------------------------------------------------
class Transactions:
    """Execute graphs; list and read what ran."""

    def __init__(self, repos: Repositories, nodes: Nodes, *, local_executor: bool = False) -> None:
        self._repos = repos
        self._nodes = nodes
        #: Whether graph execution may use the `local` executor, which runs shell commands as
        #: this process's user (off for a server unless `--enable-local-executor`).
        self.local_executor = local_executor

    # -- reading ---------------------------------------------------------------------------
    def list(self, cluster_id: int | None = None) -> Served:
        """Summaries of the transactions (no plan is read)."""
        env_ids = [cluster_id] if cluster_id is not None else self._repos.environment_ids()
        found = []
        for env_id in env_ids:
            try:
                snapshot = self._repos.environment_repo(env_id).snapshot()
            except (NotFound, Damaged):
                if cluster_id is not None:
                    raise
                continue  # archived, or damaged (see /status)
            for transaction_id in records.ids(snapshot):
                summary = records.read_summary(snapshot, transaction_id) or {}
                found.append({k: v for k, v in summary.items() if k != "runner"})
        return Served(sorted(found, key=lambda t: t.get("id") or 0))

    def get(self, transaction_id: int) -> Served:
        """The whole record; a record whose node files hold more than `document_bytes`
        together comes without `tasks_graph` and `history` (read them node by node)."""
        snapshot = self._snapshot_of(transaction_id)
        small = records.node_bytes(snapshot, transaction_id) <= limits.current().document_bytes
        doc = records.read_whole(snapshot, transaction_id, nodes=small)
        return Served(doc, snapshot.commit_id, snapshot.version)

    def node(self, transaction_id: int, node: str) -> Served:
        """One node's tasks and their statuses: `node` is a node id, `master` or `null` (the
        sync points). Reads that node's file only."""
        if not records.is_node_key(node):
            raise InvalidInput(
                f"node {node!r} must be a node id, 'master' or 'null' (the sync points)",
                key="node",
            )
        snapshot = self._snapshot_of(transaction_id)
        found = records.read_node(snapshot, transaction_id, node)
        if found is None:
            raise NotFound(f"transaction {transaction_id} has no tasks on node {node!r}")
        return Served(found, snapshot.commit_id, snapshot.version)

    def _snapshot_of(self, transaction_id: int) -> Snapshot:
        for env_id in self._repos.environment_ids():
            try:
                snapshot = self._repos.environment_repo(env_id).snapshot()
            except NotFound:
                continue
            if transaction_id in records.ids(snapshot):
                return snapshot
        raise NotFound(f"transaction {transaction_id} does not exist")

    # -- executing -------------------------------------------------------------------------
    def execute(
        self,
        body: Any,
        author: Author | None = None,
        *,
        background: bool = True,
        deadline: Deadline = UNBOUNDED,
    ) -> Served:
        """Record a transaction for the request and start running it.

        `background` runs the executor in a thread and answers at once (the REST 202); without
        it the call returns when the run has ended. Planning (and a dry run's whole run) are
        steps of `deadline`; past it before the transaction is recorded, nothing is written.
        """
        request = planning.parse_request(body)
        runner = executors.executor(request.executor)  # an unknown name is 400 in any case
        if request.dry_run:
            runner = executors.DryRun()
        elif isinstance(runner, executors.Local) and not self.local_executor:
            raise Forbidden(
                "the local executor runs shell commands as the server's user and "
                "is off; start the server with --enable-local-executor to allow it"
            )
        author = author or self._repos.default_author
        cluster = self._nodes.cluster(request.cluster)
        chosen = [planning.Chosen.of(cluster, wanted) for wanted in request.graphs]
        planning.check_estimate(cluster.env_id, chosen)  # before the plan: it costs seconds
        deadline.check()
        doc = planning.plan(cluster, request, chosen, deadline)
        finished = isinstance(runner, executors.DryRun)
        if finished:
            self._run_graphs(doc, runner, deadline=deadline)
        nodes = planning.encoded_nodes(doc, finished, deadline)
        deadline.check()
        with self._id_lock():
            doc["id"] = self._next_id()
            written = self._record(doc, author, nodes, check_running=True)
        answer = _answer(doc, nodes)
        if not finished and background:
            threading.Thread(
                target=self._run,
                args=(doc, runner, author),
                name=f"transaction-{doc['id']}",
                daemon=True,
            ).start()
        elif not finished:
            written = self._run(doc, runner, author) or written
            answer = _answer(doc, planning.encoded_nodes(doc, True))
        return Served(answer, written.commit, written.version)

    def _run(self, doc: dict, runner: executors.Runner, author: Author) -> WriteResult | None:
        """Run every graph, committing each one's history; never raises (a thread runs it)."""
        try:
            doc["status"] = RUNNING
            self._record(doc, author)
            return self._run_graphs(
                doc, runner, lambda: self._record(doc, author, planning.encoded_nodes(doc, True))
            )
        except Exception as exc:  # noqa: BLE001 - recorded: a thread has nobody to raise to
            log.exception("transaction %s failed", doc.get("id"))
            doc.update(
                status=ERROR,
                finished_at=executors.now(),
                message=f"the executor failed: {type(exc).__name__}: {exc}",
            )
            try:
                return self._record(doc, author)
            except GitstoreError:
                log.exception("transaction %s: could not record the failure", doc.get("id"))
                return None

    def _run_graphs(
        self,
        doc: dict,
        runner: executors.Runner,
        record: Callable[[], WriteResult] | None = None,
        deadline: Deadline = UNBOUNDED,
    ) -> WriteResult | None:
        """Run the graphs in order (a failed one stops the rest), calling `record` after each
        graph; the last call records the finished transaction."""
        failed = None
        for index, graph in enumerate(doc["graphs"]):
            if failed is not None:
                graph.update(status=execution.SKIPPED)
                continue
            context = RunContext(
                doc["id"] or 0, doc["cluster"], graph["type"], doc["noop_run"], deadline
            )
            graph["history"] = runner.run(graph, context)
            graph["status"] = ERROR if _aborted(graph) else READY
            last = index == len(doc["graphs"]) - 1
            if graph["status"] == ERROR:
                failed = graph["type"]
                doc["message"] = f"graph {failed!r} failed" + (
                    "" if last else "; the graphs after it did not run"
                )
            if record is not None and not last:
                record()
        doc.update(status=ERROR if failed else READY, finished_at=executors.now())
        return record() if record is not None else None

    # -- storage ---------------------------------------------------------------------------
    def _record(
        self,
        doc: dict,
        author: Author,
        nodes: dict[str, bytes] | None = None,
        *,
        check_running: bool = False,
    ) -> WriteResult:
        """Commit the summary, and the plans and node files when `nodes` are given."""

        def operation(snapshot: Snapshot) -> ChangeSet:
            if check_running:
                self._check_idle(snapshot, doc["cluster"])
            changes = ChangeSet(
                f"environment {doc['cluster']}: transaction {doc['id']} {doc['status']}"
            )
            records.put_summary(changes, snapshot.repository, doc)
            if nodes is not None:
                records.put_plans(changes, snapshot.repository, doc)
                records.put_nodes(changes, nodes, doc["id"])
            return changes

        return self._repos.environment_repo(doc["cluster"]).update(operation, author)

    def _check_idle(self, snapshot: Snapshot, env_id: int) -> None:
        ids = records.ids(snapshot)
        if not ids:
            return
        latest = records.read_summary(snapshot, ids[-1]) or {}
        if latest.get("status") in UNFINISHED and _runner_alive(latest.get("runner")):
            raise Conflict(
                f"transaction {latest.get('id')} of cluster {env_id} is still "
                f"{latest.get('status')}; wait for it to end",
                key="cluster",
            )

    def _next_id(self) -> int:
        highest = 0
        for env_id in self._repos.environment_ids():
            try:
                ids = records.ids(self._repos.environment_repo(env_id).snapshot())
            except NotFound:
                continue
            highest = max([highest, *ids])
        return highest + 1

    def _id_lock(self):
        return files.exclusive_lock(self._repos.root / LOCK_FILE, 0o644)


def _aborted(graph: Mapping[str, Any]) -> bool:
    """Whether a task failure stopped the graph (a `fail_on_error: false` failure does not)."""
    steps = {
        (s["id"], None if node == execution.SYNC else node): s
        for node, entries in graph["tasks_graph"].items()
        for s in entries
    }
    return any(
        h["status"] == ERROR
        and steps.get((h["task_name"], h["node_id"]), {}).get("fail_on_error", True) is not False
        for h in graph["history"]
    )


def _runner_alive(runner: Any) -> bool:
    """False only when the runner ran on this host and its process is gone."""
    if not isinstance(runner, dict) or runner.get("host") != socket.gethostname():
        return True
    pid: Any = runner.get("pid")  # as recorded: a bad one counts as alive below
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, TypeError, ValueError):
        return True
    return True


def _answer(doc: dict, nodes: dict[str, bytes]) -> dict:
    """What execute answers: a copy of the record (the run goes on changing it), without
    `tasks_graph` and `history` when its node files hold more than `document_bytes`, as GET
    gives it."""
    if sum(map(len, nodes.values())) <= limits.current().document_bytes:
        return copy.deepcopy(doc)
    graphs = [
        {k: copy.deepcopy(v) for k, v in g.items() if k not in ("tasks_graph", "history")}
        for g in doc["graphs"]
    ]
    return {**copy.deepcopy({k: v for k, v in doc.items() if k != "graphs"}), "graphs": graphs}
