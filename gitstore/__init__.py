"""gitstore: a configuration store in which git is the database.

This package's face is the facade the front ends (`gitstore.api`, `cli`, `webhooks`) use: the
`Store` and the plain value types and functions they pass around. Names load on first use, so
that `from gitstore import yamlio` inside the library never drags the whole service graph in
(and never hides an import cycle behind this file).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Name -> the module that defines it.
_EXPORTS = {
    "Store": "gitstore.store",
    "Author": "gitstore.backend.repository",
    "LRUCache": "gitstore.backend.cache",
    "Query": "gitstore.configdb.values",
    "LoadReport": "gitstore.configdb.importer",
    "SAMPLE_DIR": "gitstore.configdb.importer",
    "Answer": "gitstore.deployment.graphs",
    "DEFAULT_GRAPH_TYPE": "gitstore.merge.graphs",
    "NODE_STATUSES": "gitstore.deployment.inventory",
    "FORGES": "gitstore.gitops.mirrors",
    "validate_repository": "gitstore.gitops.service",
    "review_repository": "gitstore.gitops.service",
    "render_markdown": "gitstore.gitops.service",
    "start_poller": "gitstore.gitops.service",
    "staged_push": "gitstore.gitops.pushes",
    "AccessFile": "gitstore.access.policy",
    "ACCESS_REQUIRED": "gitstore.access.policy",
    "ANONYMOUS_READ": "gitstore.access.policy",
    "ANY": "gitstore.access.policy",
    "ROLES": "gitstore.access.policy",
    "SERVED_HOSTS": "gitstore.access.policy",
    "Credentials": "gitstore.access.policy",
    "Identity": "gitstore.access.policy",
    "parse_grants": "gitstore.access.policy",
    "require": "gitstore.access.policy",
    "FailureLog": "gitstore.access.ratelimit",
    "token_id_of": "gitstore.access.credentials",
    "KEYSTONE": "gitstore.access.keystone",
    "KeystoneSettings": "gitstore.access.keystone",
    "KeystoneValidator": "gitstore.access.keystone",
    "CloneFile": "gitstore.secrets.local",
    "bind_reveal_rule": "gitstore.secrets.caller",
    "unbind_reveal_rule": "gitstore.secrets.caller",
    "backup": "gitstore.ops.backup",
    "restore": "gitstore.ops.backup",
    "read_manifest": "gitstore.ops.backup",
    "fsck": "gitstore.ops.fsck",
    "maintain_store": "gitstore.ops.maintenance",
    "migrate_store": "gitstore.ops.migrate",
    "hold_for_serving": "gitstore.storeformat",
    "start_maintenance": "gitstore.ops.maintenance",
    "Readiness": "gitstore.ops.health",
    "DEFAULT_MIN_FREE_DISK": "gitstore.ops.health",
    "parse_size": "gitstore.ops.health",
    "cluster_settings": "gitstore.cluster.settings",
    "run_coordinator": "gitstore.cluster.coordinator",
    "ClusterSecret": "gitstore.cluster.secret",
    "CLUSTER_KEY_FILE": "gitstore.cluster.secret",
    "create_cluster_secret": "gitstore.cluster.secret",
    "check_member_protocol": "gitstore.cluster.secret",
    "recursive_pattern": "gitstore.schema_regex",
    "PATTERN_RECURSION": "gitstore.schema_regex",
}
#: Exported under another name than the one its module gives it.
_RENAMED = {
    "DEFAULT_GRAPH_TYPE": "DEFAULT_TYPE",
    "NODE_STATUSES": "STATUSES",
    "bind_reveal_rule": "bind",
    "unbind_reveal_rule": "unbind",
    "cluster_settings": "settings",
    "run_coordinator": "run",
    "start_maintenance": "start_detached",
    "migrate_store": "migrate",
    "CLUSTER_KEY_FILE": "KEY_FILE",
    "create_cluster_secret": "create",
    "check_member_protocol": "check_protocol",
    "recursive_pattern": "recursive",
    "PATTERN_RECURSION": "RECURSION",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gitstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), _RENAMED.get(name, name))
    globals()[name] = value
    return value
