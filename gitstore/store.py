"""The facade: the one object every front end (REST, CLI, hooks) calls, and the composition root.

A Store is a root folder holding `catalog.git` and `environments/<id>.git` (docs/design.md,
"The store on disk"). It builds the repositories and one service per entity family, and wires
each service to the services it names in its constructor: this is the only place that knows
them all. Where two families must react to each other, the later one subscribes to a
notification of the earlier (an environment deleted, a release's roles changed, a node write
about to start), so no service holds a reference back up (gitstore/README.md draws the arrows).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gitstore import limits, storeformat
from gitstore.access.policy import AccessFile
from gitstore.access.ratelimit import FailureLog
from gitstore.answers import Answers, Encoder
from gitstore.backend.cache import Caches
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, Repository
from gitstore.catalog.components import Components, ResourceDefinitions
from gitstore.catalog.releases import Plugins, Releases
from gitstore.cluster.member import Member
from gitstore.cluster.settings import ClusterSettings
from gitstore.configdb.environments import Environments
from gitstore.configdb.facts import Facts
from gitstore.configdb.hiera import Hiera
from gitstore.configdb.hieraport import HieraPort
from gitstore.configdb.importer import Importer
from gitstore.configdb.roster import Roster, RosterCaches
from gitstore.configdb.values import Config
from gitstore.deployment.graphs import Graphs
from gitstore.deployment.inventory import Nodes
from gitstore.deployment.journal import MoveJournal
from gitstore.deployment.tags import Tags
from gitstore.deployment.transactions import Transactions
from gitstore.filechecks import FileChecks
from gitstore.gitops.mirrors import MirrorSettings
from gitstore.gitops.preview import Previews
from gitstore.gitops.service import GitOps
from gitstore.plans import Plans
from gitstore.repositories import DEFAULT_AUTHOR, Repositories
from gitstore.secrets.caller import KEYRING_HOLDER, NOBODY, Caller
from gitstore.secrets.eyamlpush import EyamlPushes
from gitstore.secrets.service import Secrets
from gitstore.upgrade.moves import Moves
from gitstore.upgrade.networks import Networks
from gitstore.upgrade.relations import Relations
from gitstore.upgrade.seeds import Upgrades
from gitstore.upgrade.settings import Settings
from gitstore.versions.compare import Comparisons
from gitstore.versions.service import Versions
from gitstore.watch.heads import Heads
from gitstore.watch.service import Watch
from gitstore.watch.slots import Slots

#: How long a cluster member waits for a commit named by `?index=` that it has not yet.
CLUSTER_INDEX_WAIT_SECONDS = 10.0


class Store:
    """A gitstore root and its services."""

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        author: Author = DEFAULT_AUTHOR,
        local_executor: bool = False,
        cluster: Mapping | None = None,
        caller: Caller = NOBODY,
        encoder: Encoder | None = None,
    ) -> None:
        """`caller` decides whether a write's caller may compare sent secrets with stored ones
        (`secrets/caller.py`): nobody unless the front end names its rule (`KEYRING_HOLDER`
        for the one who holds the keyring on disk; the REST API binds its own per request).
        `encoder` gives the JSON bytes of answers (`answers.py`): the REST API hands over its
        JSON provider's settings; plain `json.dumps` settings otherwise."""
        self.root = Path(root)
        self.default_author = author
        # Refuses a newer or unreadable store here; an older one is served read-only.
        self.format = storeformat.read(self.root)
        self.mirror_settings = MirrorSettings(self.root)
        # A cluster member (docs/ha.md) when `cluster` holds its settings; None: a single node.
        self.cluster = (
            Member(ClusterSettings.from_dict(dict(cluster)), self.root) if cluster else None
        )
        #: The read caches this store owns, handed to the repositories and the services.
        self.caches = Caches()
        self.repos = Repositories(
            self.root,
            author=author,
            write_guard=self._check_writable,
            # (`Member` takes the `Repository` that the commit queue's `Branch` is)
            replication=self.cluster,  # type: ignore[arg-type]
            store_guard=self.format.check_writable,
            caches=self.caches,
        )
        #: Answers with their JSON bytes, kept in `caches.answers`.
        self.answers = Answers(self.caches.answers, encoder)
        self._build_services(self.repos, local_executor)
        self.secrets.bind_caller(caller)
        self._subscribe()

    def _build_services(self, repos: Repositories, local_executor: bool) -> None:
        """Every service, each given what it uses, in an order where those exist first."""
        self.access = AccessFile(self.root)
        self.failures = FailureLog(self.root)
        self.secrets = Secrets(repos, self.caches)
        self.definitions = ResourceDefinitions(repos)
        self.components = Components(repos, self.definitions)
        self.releases = Releases(repos)
        self.plugins = Plugins(repos)
        self.journal = MoveJournal(repos)
        self.nodes = Nodes(repos, self.journal)
        self.tags = Tags(self.nodes, self.releases, self.plugins)
        self.graphs = Graphs(repos, self.nodes)
        self.transactions = Transactions(repos, self.nodes, local_executor=local_executor)
        self.environments = Environments(repos, self.secrets, self.graphs, self.nodes)
        self.config = Config(repos, self.secrets, self.caches)
        self.facts = Facts(self.config)
        self.hiera = Hiera(repos, self.secrets, self.tags, self.caches)
        self.roster = Roster(repos, RosterCaches())
        self.importer = Importer(repos, self.secrets)
        self.eyaml_pushes = EyamlPushes(repos, self.secrets)
        self.hiera_port = HieraPort(repos, self.secrets, self.components, self.eyaml_pushes.place)
        self.versions = Versions(repos, self.config, self.secrets, self.caches)
        self.comparisons = Comparisons(repos, self.secrets)
        self.settings = Settings(repos, self.secrets)
        self.networks = Networks(repos, self.secrets)
        self.relations = Relations(repos)
        self.moves = Moves(repos, self.journal, self.nodes, self.relations)
        self.upgrades = Upgrades(
            repos,
            self.relations,
            self.environments,
            self.journal,
            self.moves,
            self.nodes,
            self.secrets,
        )
        self.plans = Plans(repos, self.secrets)
        #: What the gate's rules found per file, by immutable ids (`gitstore.filechecks`).
        self.file_checks = FileChecks()
        self.gitops = GitOps(
            repos, self.mirror_settings, self.eyaml_pushes.problems, self.file_checks
        )
        self.previews = Previews(repos, self.config, self.versions, self.secrets, self.file_checks)
        catch_up = CLUSTER_INDEX_WAIT_SECONDS if self.cluster else 0.0
        slots = Slots(lambda: limits.current().waiting_requests)
        self.watch = Watch(repos, Heads(repos), slots, catch_up)
        #: The console's drawings of deployment graphs (SVG by the SHA-256 of their DOT).
        self.drawings = self.caches.graph_drawings

    def _subscribe(self) -> None:
        """The notifications that cut what would otherwise be loops between services."""
        self.nodes.before_write(self.moves.recover)  # an interrupted move lands first
        for owners in (self.releases, self.plugins):
            owners.on_roles_changed(self.nodes.reconcile)  # re-elect primaries
        self.environments.on_deleted(self.relations.environment_deleted)

    def _check_writable(self, name: str) -> None:
        """Refuse a write through the facade: to a store of an older format (until migrated)
        or to a repository in mirror mode."""
        self.format.check_writable()
        self.mirror_settings.check_writable(name)

    @property
    def local_executor(self) -> bool:
        """Whether graph execution may use the `local` executor, which runs shell commands as
        this process's user: on for an operator at a shell (`--root`), off for a server unless
        `gitstore serve --enable-local-executor` says otherwise."""
        return self.transactions.local_executor

    @local_executor.setter
    def local_executor(self, allowed: bool) -> None:
        self.transactions.local_executor = allowed

    # -- creation --------------------------------------------------------------------------
    @classmethod
    def init(cls, root: str | os.PathLike, *, author: Author = DEFAULT_AUTHOR) -> Store:
        """Create an empty store at `root`, at the current format (an existing store is left as
        it is, its format included: an older one is moved forward by `gitstore migrate`)."""
        if not storeformat.read(root).exists:
            Path(root).mkdir(parents=True, exist_ok=True)
            storeformat.write(root)
        repos = Repositories(root, author=author)
        repos.create_catalog(ChangeSet("catalog: initialise the store"), author)
        store = cls(root, author=author, caller=KEYRING_HOLDER)  # its creator holds the keyring
        store.secrets.keyring.create()  # the keys that seal secrets live beside the repositories
        store.install_hooks()
        return store

    # -- the repositories (gitstore.repositories) -------------------------------------------
    def install_hooks(self) -> None:
        """(Re)write the git hooks (the push gate) of every repository of the store."""
        self.repos.install_hooks()

    def check(self) -> None:
        """Raise NotFound unless `root` holds a store."""
        self.repos.check()

    def catalog(self) -> Repository:
        return self.repos.catalog()

    def environment_path(self, env_id: int) -> Path:
        return self.repos.environment_path(env_id)

    def environment_repo(self, env_id: int) -> Repository:
        return self.repos.environment_repo(env_id)

    def environment_ids(self) -> list[int]:
        return self.repos.environment_ids()
